"""Every Redis key Fabula uses is built here, and only here.

All keys of a story carry the hash tag ``{story}`` so they share one cluster slot: a turn's
multi-key commit stays atomic on Redis Cluster, and stories spread across nodes.

Layout (``S`` story, ``B`` branch, ``C`` character, ``H`` a holder chain such as ``ava>ben``)::

    fab:{S}:meta                      hash   story metadata (world, schema, title, created)
    fab:{S}:common:entities           hash   id -> Entity          (every entity: the admin's)
    fab:{S}:common:branches           hash   branch -> {"parent", "fork_turn"} (readable by
                                             every character)
    fab:{S}:b:B:head                  hash   turn (last committed), count
    fab:{S}:b:B:turns                 hash   turn -> {"text", "digest", "events"}
    fab:{S}:b:B:events                hash   event id -> Event
    fab:{S}:b:B:w:cur                 hash   "subject|attribute" -> current State
    fab:{S}:b:B:w:rec                 hash   state id -> closed State (the current: in cur)
    fab:{S}:b:B:w:from                zset   state id scored by valid_from (every state)
    fab:{S}:b:B:d                     hash   development id -> Development
    fab:{S}:b:B:h                     hash   hypothesis id -> Hypothesis
    fab:{S}:b:B:tree                  hash   hierarchy node id -> HierarchyNode (scenes, ...)
    fab:{S}:b:B:tree:s                zset   scene id scored by its first turn
    fab:{S}:b:B:tree:u                hash   scene id -> the plotlines it belongs to
    fab:{S}:b:B:tree:n                hash   consolidation's watermark, open scene, threads
    fab:{S}:b:B:tree:m                hash   model summaries' watermark, plotlines waiting
    fab:{S}:b:B:tree:c:N              string claim on node N while a model summarises it
    fab:{S}:b:B:decide:T              string lock held while a decision resumes turn T
    fab:{S}:b:B:fence:T               set    commit attempts of turn T given up for lost (expires)
    fab:{S}:b:B:drafts:T              hash   the alternative drafts of turn T: id -> Draft
                                             (with findings and preview), "chosen" -> id
    fab:{S}:b:B:ticks                 hash   tick -> {"turns", "scenes"}: a tick's scenes (turns)
    fab:{S}:b:B:lease:T:P             string held by the worker playing place P's scene of tick T
    fab:{S}:b:B:usage                 hash   turn -> model usage by role (tokens, calls, retries)
    fab:{S}:b:B:usage:background      hash   "role|count" -> model usage outside turns (summaries)
    fab:{S}:c:C:B:cur:H               hash   "subject|attribute" -> current Belief of chain H
    fab:{S}:c:C:B:rec                 hash   belief id -> closed Belief, every chain rooted at C
    fab:{S}:c:C:B:from                zset   belief id scored by valid_from (every belief)
    fab:{S}:c:C:B:chains              set    chains rooted at C that hold beliefs
    fab:{S}:c:C:B:mem                 list   C's first-person memories: the events C witnessed
    fab:{S}:c:C:B:ent                 hash   id -> {"known_from", "entity"}: what C knows of
    fab:{S}:b:B:xG:...                the episode index of a branch (see :class:`EpisodeKeys`;
                                      G its generation, ``INDEX_GENERATION``)
    fab:{S}:c:C:B:xG:...              the episode index of what C witnessed on a branch
    fab:{S}:acl:C                     string the secret of C's read-only Redis user
    fab:stories                       set    story ids (the only key outside a story's slot)

Everything under ``fab:{S}:c:C:`` is C's mind; a Redis ACL user per (story, character) may
read only that and ``fab:{S}:common:``. The Lua functions receive the keys they touch from
:func:`commit_layout`, so the layout is written down once.
"""

from __future__ import annotations

import re

from fabula.errors import InvalidId

STORIES = "fab:stories"
_ID_RE = re.compile(r"^[a-z0-9][a-z0-9_\-]{0,63}$")


def check_id(value: str, what: str) -> str:
    """Return ``value`` if it is a safe identifier (``[a-z0-9_-]``, ≤ 64), else
    :class:`InvalidId` (a ``ValueError`` too).

    Identifiers appear inside keys and ACL patterns, so glob and tag characters are refused.
    """
    if not _ID_RE.match(value):
        raise InvalidId(
            f"{what} {value!r} is not a valid id: lowercase letters, digits, '-' and '_', "
            "starting with a letter or digit, at most 64"
        )
    return value


def _s(story: str) -> str:
    return f"fab:{{{story}}}"


def meta(story: str) -> str:
    return f"{_s(story)}:meta"


def branches(story: str) -> str:
    return f"{_s(story)}:common:branches"


def entities(story: str) -> str:
    return f"{_s(story)}:common:entities"


def head(story: str, branch: str) -> str:
    return f"{_s(story)}:b:{branch}:head"


def turns(story: str, branch: str) -> str:
    return f"{_s(story)}:b:{branch}:turns"


def events(story: str, branch: str) -> str:
    return f"{_s(story)}:b:{branch}:events"


def world_current(story: str, branch: str) -> str:
    return f"{_s(story)}:b:{branch}:w:cur"


def world_records(story: str, branch: str) -> str:
    return f"{_s(story)}:b:{branch}:w:rec"


def world_from(story: str, branch: str) -> str:
    return f"{_s(story)}:b:{branch}:w:from"


def developments(story: str, branch: str) -> str:
    return f"{_s(story)}:b:{branch}:d"


def hypotheses(story: str, branch: str) -> str:
    return f"{_s(story)}:b:{branch}:h"


def hierarchy(story: str, branch: str) -> str:
    return f"{_s(story)}:b:{branch}:tree"


def hierarchy_scenes(story: str, branch: str) -> str:
    """The branch's scene ids scored by their first turn: the scene holding a turn is one
    ZRANGE away (recall reads the scenes of the episodes it ranks, never all of them)."""
    return f"{_s(story)}:b:{branch}:tree:s"


def hierarchy_up(story: str, branch: str) -> str:
    """Scene id -> the JSON list of the plotlines it belongs to."""
    return f"{_s(story)}:b:{branch}:tree:u"


def hierarchy_threads(story: str, branch: str) -> str:
    """Consolidation's bookkeeping: the watermark (``@through``), the layout (``@format``),
    the open scene's signature (``@open``), each plotline thread's state (by thread)."""
    return f"{_s(story)}:b:{branch}:tree:n"


def hierarchy_summaries(story: str, branch: str) -> str:
    """The model summaries' bookkeeping: the first turn of the last closed scene they are
    done with, and the plotlines waiting for one (see :mod:`fabula.memory.summarise`)."""
    return f"{_s(story)}:b:{branch}:tree:m"


def summary_claim(story: str, branch: str, node: str) -> str:
    """Held (with an expiry) by the one run that asks a model to summarise ``node``."""
    return f"{_s(story)}:b:{branch}:tree:c:{node}"


def drafts(story: str, branch: str, turn: int) -> str:
    """The alternative drafts of ``turn`` on ``branch``, kept with the turn once it is
    decided (see :mod:`fabula.memory.drafts`)."""
    return f"{_s(story)}:b:{branch}:drafts:{turn}"


def decision_lock(story: str, branch: str, turn: int) -> str:
    """The lock held while a human decision resumes one turn (see StoryStore)."""
    return f"{_s(story)}:b:{branch}:decide:{turn}"


def deleted(story: str) -> str:
    """Set when the story is deleted, for :data:`DELETED_S` (or until it is made again):
    the commit function refuses every turn of a story marked so, and a process that was
    writing it removes what it wrote after the deletion (see ``StoryStore.delete``)."""
    return f"{_s(story)}:deleted"


DELETED_S = 3600
"""How long a deleted story's mark lasts: longer than any run takes to notice it."""


def fence(story: str, branch: str, turn: int) -> str:
    """The commit attempts of ``turn`` on ``branch`` whose lost reply was settled as "not
    committed": the commit function refuses them (see :mod:`fabula.memory.settle`)."""
    return f"{_s(story)}:b:{branch}:fence:{turn}"


def ticks(story: str, branch: str) -> str:
    return f"{_s(story)}:b:{branch}:ticks"


def pending_tick(story: str, branch: str) -> str:
    """A tick played and kept for a person's decision (see memory/ticks.py)."""
    return f"{_s(story)}:b:{branch}:pending_tick"


def scene_lease(story: str, branch: str, tick: int, place: str, run: str = "") -> str:
    """Held (and renewed) by the worker playing ``place``'s scene of ``tick`` for the
    coordination ``run`` (a story made again under its id plays the same ticks): gone when
    that worker dies."""
    return f"{_s(story)}:b:{branch}:lease:{tick}:{place}" + (f":{run}" if run else "")


def usage(story: str, branch: str) -> str:
    """The model usage of each committed turn of a branch (see StoryStore.turn_usage)."""
    return f"{_s(story)}:b:{branch}:usage"


def background_usage(story: str, branch: str) -> str:
    """The model usage of a branch's work outside its turns, the summaries step's (see
    StoryStore.background_usage): ``<role>|<count>`` fields."""
    return f"{_s(story)}:b:{branch}:usage:background"


def mind_prefix(story: str, character: str) -> str:
    return f"{_s(story)}:c:{character}:"


def mind_lore(story: str, character: str) -> str:
    """A character's own lore (its card's book, and the lore an author made known to it):
    one document, written when the story is created, the same on every branch (a branch
    id cannot begin with ``_``)."""
    return f"{mind_prefix(story, character)}_lore"


def mind_voice(story: str, character: str) -> str:
    """A character's voice exemplars (its card's example dialogues, its BookWorld lines):
    one document, written when the story is created, the same on every branch."""
    return f"{mind_prefix(story, character)}_voice"


def beliefs_current(story: str, branch: str, chain: str) -> str:
    root = chain.split(">", 1)[0]
    return f"{mind_prefix(story, root)}{branch}:cur:{chain}"


def belief_records(story: str, branch: str, character: str) -> str:
    return f"{mind_prefix(story, character)}{branch}:rec"


def belief_from(story: str, branch: str, character: str) -> str:
    return f"{mind_prefix(story, character)}{branch}:from"


def belief_chains(story: str, branch: str, character: str) -> str:
    return f"{mind_prefix(story, character)}{branch}:chains"


def shared_log(story: str, branch: str, character: str) -> str:
    """A character's shared log: the shared beliefs of the groups it was in, in story order
    (a list; see :mod:`fabula.memory.tracking.nested`)."""
    return f"{mind_prefix(story, character)}{branch}:shared"


def shared_groups(story: str, branch: str, character: str) -> str:
    """A character's table of the groups its shared log names: group id -> members."""
    return f"{mind_prefix(story, character)}{branch}:groups"


def memories(story: str, branch: str, character: str) -> str:
    return f"{mind_prefix(story, character)}{branch}:mem"


def known_entities(story: str, branch: str, character: str) -> str:
    """The entities ``character`` knows of on ``branch`` (its own copy of each record, with
    the turn it came to know of it): what its roster is read from."""
    return f"{mind_prefix(story, character)}{branch}:ent"


INDEX_GENERATION = 2
"""The layout of the episode indexes. An index is derived data (it is rebuilt from the
committed turns), so when what it holds changes — its keys, its postings, what a witness
remembers of an event — this number goes up: a branch is then indexed again under the new
generation's keys, and the older generations' keys are dropped
(:func:`fabula.memory.index.build.index_through`). Generation 1 (no number in the key)
had no windows in the minds' indexes, and kept a script line's quotes as all its words."""


def index_prefix(story: str, branch: str, character: str | None, generation: int) -> str:
    """The prefix of every key of one episode index of ``generation``."""
    base = f"{_s(story)}:b:" if character is None else mind_prefix(story, character)
    return f"{base}{branch}:x{'' if generation == 1 else generation}:"


class EpisodeKeys:
    """The keys of one episode index: a branch's (every episode) or one character's (the
    episodes it witnessed, in its own keyspace, so its read-only user can search them)::

        <prefix>ep          hash   episode id -> Episode
        <prefix>n           hash   "episodes", "length", "wlength" and "glength" (term
                                   counts of the episodes, of their windows and of their
                                   general terms), "turn" (last turn indexed)
        <prefix>t:<term>    zset   episode id scored by the term's BM25 weight in it
        <prefix>w:<term>    zset   the same for the episode's window (its turn's lines
                                   around it that this index holds)
        <prefix>g:<term>    zset   the same for the general terms of its nouns (what they
                                   are kinds of, :mod:`fabula.memory.index.general`; a
                                   branch's index only)
        <prefix>e:<entity>  zset   episode id scored by story time (turn * 10000 + seq)
        <prefix>time        zset   episode id scored by story time
        <prefix>day         zset   episode id scored by the day number of its date
        <prefix>vec         vset   episode id -> its text's embedding (optional; a branch's)
        <prefix>vec:missing set    episodes whose embedding failed, to be embedded again
    """

    __slots__ = ("prefix",)

    def __init__(
        self,
        story: str,
        branch: str,
        character: str | None = None,
        generation: int = INDEX_GENERATION,
    ) -> None:
        self.prefix = index_prefix(story, branch, character, generation)

    @property
    def episodes(self) -> str:
        return f"{self.prefix}ep"

    @property
    def stats(self) -> str:
        return f"{self.prefix}n"

    def term(self, term: str) -> str:
        return f"{self.prefix}t:{term}"

    def window(self, term: str) -> str:
        return f"{self.prefix}w:{term}"

    def general(self, term: str) -> str:
        return f"{self.prefix}g:{term}"

    def entity(self, entity: str) -> str:
        return f"{self.prefix}e:{entity}"

    @property
    def time(self) -> str:
        return f"{self.prefix}time"

    @property
    def day(self) -> str:
        return f"{self.prefix}day"

    @property
    def vectors(self) -> str:
        return f"{self.prefix}vec"

    @property
    def unembedded(self) -> str:
        return f"{self.prefix}vec:missing"

    def layout(self) -> dict[str, str]:
        """This index's keys for the Lua functions (``<T>`` a term, ``<E>`` an entity)."""
        return {
            "n": self.stats,
            "ep": self.episodes,
            "time": self.time,
            "day": self.day,
            "t": self.term("<T>"),
            "w": self.window("<T>"),
            "g": self.general("<T>"),
            "e": self.entity("<E>"),
        }


def index_layout(story: str, branch: str) -> dict[str, object]:
    """The keys ``fabula_index`` uses: the branch's head, its index and a mind's (``<C>``)."""
    return {
        "head": head(story, branch),
        "branch": EpisodeKeys(story, branch).layout(),
        "mind": EpisodeKeys(story, branch, "<C>").layout(),
    }


def acl_secret(story: str, character: str) -> str:
    return f"{_s(story)}:acl:{character}"


def acl_user(story: str, character: str) -> str:
    """The Redis ACL user name of one character of one story."""
    return f"fabula.{story}.{character}"


def mind_pattern(story: str, character: str) -> str:
    """ACL key pattern of one character's whole mind (every branch)."""
    return f"{mind_prefix(story, character)}*"


def common_pattern(story: str) -> str:
    """ACL key pattern of a story's common knowledge."""
    return f"{_s(story)}:common:*"


def story_pattern(story: str) -> str:
    """SCAN pattern of every key of one story (for deletion only)."""
    return f"{_s(story)}:*"


def commit_layout(story: str, branch: str) -> dict[str, str]:
    """The keys the Lua functions use for one branch; ``<C>``/``<H>``/``<T>`` are filled in
    by Lua."""
    return {
        "head": head(story, branch),
        "turns": turns(story, branch),
        "events": events(story, branch),
        "entities": entities(story),
        "w_cur": world_current(story, branch),
        "w_rec": world_records(story, branch),
        "w_from": world_from(story, branch),
        "d": developments(story, branch),
        "h": hypotheses(story, branch),
        "b_cur": f"{mind_prefix(story, '<C>')}{branch}:cur:<H>",
        "b_rec": belief_records(story, branch, "<C>"),
        "b_from": belief_from(story, branch, "<C>"),
        "b_chains": belief_chains(story, branch, "<C>"),
        "s_log": shared_log(story, branch, "<C>"),
        "s_groups": shared_groups(story, branch, "<C>"),
        "mem": memories(story, branch, "<C>"),
        "known": known_entities(story, branch, "<C>"),
        "usage": usage(story, branch),
        "fence": f"{_s(story)}:b:{branch}:fence:<T>",  # keys.fence of the turn committed
        "deleted": deleted(story),
    }


def beliefs_layout(story: str, branch: str) -> dict[str, str]:
    """The keys ``fabula_beliefs`` reads: a chain's current beliefs (``<C>`` its first
    holder, ``<K>`` the chain) and a character's set of chains (``<C>``)."""
    return {
        "cur": f"{mind_prefix(story, '<C>')}{branch}:cur:<K>",
        "chains": belief_chains(story, branch, "<C>"),
    }


def snapshot_layout(story: str, branch: str) -> dict[str, str]:
    """The keys ``fabula_snapshot`` reads for one branch; ``<C>`` is filled in by Lua."""
    return {
        "head": head(story, branch),
        "meta": meta(story),
        "branches": branches(story),
        "entities": entities(story),
        "w_cur": world_current(story, branch),
        "d": developments(story, branch),
        "h": hypotheses(story, branch),
        "turns": turns(story, branch),
        "b_cur": f"{mind_prefix(story, '<C>')}{branch}:cur:<C>",
    }
