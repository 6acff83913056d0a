"""The four views of memory — W, B[c] (and nested B[a→b→…]), D, H — at a story time on a branch.

``as_of=None`` reads the current view: one ``HGETALL`` (one round trip). ``as_of=t`` replays
the history in one server-side function call: it contains nothing from after turn ``t``.
A branch reads its parent for turns up to its fork.

A nested chain (``a→b→…``) is read from its first holder's own keyspace: the shared log of
the groups ``a`` was in, folded for the chain (:mod:`fabula.memory.tracking.nested`: one
``LRANGE`` and one ``HGETALL``), merged with any records written for that very chain.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Generic, TypeVar

from pydantic import TypeAdapter

from fabula.memory import keys
from fabula.memory.lua import fcall_ro
from fabula.memory.records import Belief, Development, Hypothesis, Memory, SharedBelief, State
from fabula.memory.store.view import StoryReads
from fabula.memory.tracking.nested import held_chain, merged, parse_shared

R = TypeVar("R", State, Belief)


class _ParseCache(Generic[R]):
    """Parsed records by their stored JSON.

    Records are immutable and a projection re-reads mostly unchanged ones from turn to turn,
    so each distinct JSON is validated once; misses are validated together in one call
    (one validation over a JSON array is ~2.5x faster than one per record).
    """

    def __init__(self, model: type[R], limit: int = 200_000) -> None:
        self._adapter = TypeAdapter(list[model])  # type: ignore[valid-type]
        self._cache: dict[str, R] = {}
        self._limit = limit

    def parse(self, values: Sequence[str]) -> list[R]:
        cache = self._cache
        missing = [v for v in values if v not in cache]
        if missing:
            if len(cache) + len(missing) > self._limit:
                # full: start again, keeping what this call reads (clearing those too made
                # the lookup below fail, in a town of 1,000 past 200,000 distinct records)
                kept = {v: cache[v] for v in values if v in cache}
                cache.clear()
                cache.update(kept)
            parsed = self._adapter.validate_json("[" + ",".join(missing) + "]")
            cache.update(zip(missing, parsed, strict=True))
        return [cache[v] for v in values]


_STATES = _ParseCache(State)
_BELIEFS = _ParseCache(Belief)


def parse_states(values: Sequence[str]) -> list[State]:
    """Stored states' JSON as states (each distinct JSON validated once)."""
    return _STATES.parse(values)


def parse_beliefs(values: Sequence[str]) -> list[Belief]:
    """Stored beliefs' JSON as beliefs (each distinct JSON validated once)."""
    return _BELIEFS.parse(values)


@dataclass(frozen=True)
class WorldView:
    """The shared world W: every current state by slot (``subject|attribute``)."""

    story: str
    branch: str
    as_of: int | None
    states: dict[str, State] = field(default_factory=dict)

    def get(self, subject: str, attribute: str) -> State | None:
        """The record of ``subject``'s ``attribute`` (None if none)."""
        return self.states.get(f"{subject}|{attribute}")

    def value(self, subject: str, attribute: str) -> str | None:
        """The value of ``subject``'s ``attribute``, if held positively (None otherwise)."""
        state = self.get(subject, attribute)
        return state.value if state is not None and state.polarity else None

    def about(self, subject: str) -> list[State]:
        """Every record about ``subject``, by attribute."""
        return sorted(
            (s for s in self.states.values() if s.subject == subject), key=lambda s: s.attribute
        )

    def where(self, subject: str) -> str | None:
        """Where ``subject`` is (None if unknown, or only where it is not)."""
        return self.value(subject, "location")

    def located_in(self, place: str) -> list[str]:
        """Subjects whose location is ``place``."""
        return sorted(
            s.subject
            for s in self.states.values()
            if s.attribute == "location" and s.value == place and s.polarity
        )


@dataclass(frozen=True)
class BeliefView:
    """B[holder]: what a holder chain believes, by slot, each belief with its access link."""

    story: str
    branch: str
    holder: tuple[str, ...]
    as_of: int | None
    beliefs: dict[str, Belief] = field(default_factory=dict)

    def get(self, subject: str, attribute: str) -> Belief | None:
        """The record of ``subject``'s ``attribute`` (None if none)."""
        return self.beliefs.get(f"{subject}|{attribute}")

    def value(self, subject: str, attribute: str) -> str | None:
        """The value of ``subject``'s ``attribute``, if held positively (None otherwise)."""
        belief = self.get(subject, attribute)
        return belief.value if belief is not None and belief.polarity else None

    def where(self, subject: str) -> str | None:
        """Where ``subject`` is (None if unknown, or only where it is not)."""
        return self.value(subject, "location")


async def project_world(store: StoryReads, as_of: int | None = None) -> WorldView:
    """W on the store's branch, now or as of turn ``as_of``."""
    if as_of is None and store.start is not None:  # a scene's store: the tick's start
        return WorldView(store.story, store.branch, None, dict(store.start.states))
    if as_of is None:
        raw = await store.client.hvals(keys.world_current(store.story, store.branch))
        return WorldView(store.story, store.branch, None, {s.slot: s for s in parse_states(raw)})
    branch = await store.branch_for(as_of)
    values = await fcall_ro(
        store.client,
        "fabula_as_of",
        [
            keys.world_records(store.story, branch),
            keys.world_from(store.story, branch),
            keys.world_current(store.story, branch),
        ],
        [as_of, ""],
    )
    states = {s.slot: s for s in parse_states(values)}
    return WorldView(store.story, store.branch, as_of, states)


def _chain_filter(holder: Sequence[str]) -> str:
    inner = ",".join(f'"{h}"' for h in holder)
    return f'"holder":[{inner}]'


async def project_beliefs(
    store: StoryReads, holder: str | Sequence[str], as_of: int | None = None
) -> BeliefView:
    """B[holder] on the store's branch, now or as of turn ``as_of``.

    ``holder`` is a character id or a chain (``["ava", "ben"]``: what Ava thinks Ben believes).
    Raises :class:`NotFound` for a character the story does not have.
    """
    chain = (holder,) if isinstance(holder, str) else tuple(holder)
    root = chain[0]
    chain_key = ">".join(chain)
    if as_of is None:
        raw = await store.client.hvals(keys.beliefs_current(store.story, store.branch, chain_key))
        own = parse_beliefs(raw)
    else:
        branch = await store.branch_for(as_of)
        values = await fcall_ro(
            store.client,
            "fabula_as_of",
            [
                keys.belief_records(store.story, branch, root),
                keys.belief_from(store.story, branch, root),
                keys.beliefs_current(store.story, branch, chain_key),
            ],
            [as_of, _chain_filter(chain)],
        )
        own = [b for b in parse_beliefs(values) if b.holder == chain]
    if held_chain(chain):
        shared = await shared_log(store, root)
        folded = merged(chain, shared, own, as_of)
        beliefs = {slot: held[-1] for slot, held in folded.items()}
    else:
        beliefs = {b.slot: b for b in own}
    if not beliefs:
        for member in set(chain):
            await store.require_character(member)
    return BeliefView(store.story, store.branch, chain, as_of, beliefs)


async def shared_log(store: StoryReads, character: str) -> list[SharedBelief]:
    """The shared beliefs of every group ``character`` was in, in story order, on the store's
    branch (a fork's log starts with its parent's up to the fork, copied when it was made).
    Two reads, both of the character's own keyspace."""
    async with store.client.pipeline(transaction=False) as pipe:
        pipe.lrange(keys.shared_log(store.story, store.branch, character), 0, -1)
        pipe.hgetall(keys.shared_groups(store.story, store.branch, character))
        lines, groups = await pipe.execute()
    return parse_shared(lines, groups) if lines else []


async def chain_history(
    store: StoryReads, chain: Sequence[str], slot: str, own: Sequence[Belief]
) -> list[Belief]:
    """Every record nested ``chain`` held on ``slot``, oldest first: from its first holder's
    shared log and the chain's own records ``own`` (on the store's branch)."""
    shared = [s for s in await shared_log(store, chain[0]) if s.slot == slot]
    return merged(chain, shared, own, history=True).get(slot, [])


async def all_beliefs_as_of(store: StoryReads, character: str, as_of: int) -> list[Belief]:
    """Every belief of every chain rooted at ``character``, as of turn ``as_of``."""
    branch = await store.branch_for(as_of)
    chains = sorted(await store.client.smembers(keys.belief_chains(store.story, branch, character)))
    values = await fcall_ro(
        store.client,
        "fabula_as_of",
        [
            keys.belief_records(store.story, branch, character),
            keys.belief_from(store.story, branch, character),
            *(keys.beliefs_current(store.story, branch, chain) for chain in chains),
        ],
        [as_of, ""],
    )
    return parse_beliefs(values)


MAX_LISTED_CHAINS = 2_000
"""The most nested chains :func:`mind_as_of` lists for one character: past it, the chains
of two (what it thinks each other character believes)."""


async def mind_as_of(
    store: StoryReads, character: str, as_of: int
) -> dict[tuple[str, ...], list[Belief]]:
    """Every chain rooted at ``character`` that holds a belief as of turn ``as_of``, with its
    beliefs: its own, the chains written record by record, and the nested chains its groups
    reach (every chain over the groups' members up to their depth, or, past
    :data:`MAX_LISTED_CHAINS` of them, the chains of two)."""
    out: dict[tuple[str, ...], list[Belief]] = {}
    own: dict[tuple[str, ...], list[Belief]] = {}
    for b in await all_beliefs_as_of(store, character, as_of):
        own.setdefault(b.holder, []).append(b)
    shared = [s for s in await shared_log(store, character) if s.valid_from <= as_of]
    others = sorted({m for s in shared for m in s.group} - {character})
    depth = max((s.depth for s in shared), default=1)
    chains: list[tuple[str, ...]] = [(character,)]
    frontier: list[tuple[str, ...]] = [(character,)]
    for _ in range(depth - 1):
        frontier = [(*c, o) for c in frontier for o in [character, *others] if o != c[-1]]
        if len(chains) + len(frontier) > MAX_LISTED_CHAINS:
            chains = [(character,), *((character, o) for o in others)]
            break
        chains.extend(frontier)
    # a chain without records of its own holds what its holders' set gives a chain of its
    # length (see fabula.memory.tracking.nested): each set and length is folded once
    by_members: dict[tuple[frozenset[str], int], list[Belief]] = {}
    for chain in sorted({*chains, *own}):
        if len(chain) == 1 or not shared:
            found = own.get(chain, [])
        elif chain in own:
            found = [held[-1] for held in merged(chain, shared, own[chain], as_of).values()]
        else:
            key = (frozenset(chain), len(chain))
            if key not in by_members:
                by_members[key] = [held[-1] for held in merged(chain, shared, [], as_of).values()]
            found = [b.model_copy(update={"holder": chain}) for b in by_members[key]]
        if found:
            out[chain] = found
    return out


async def project_developments(
    store: StoryReads, as_of: int | None = None
) -> dict[str, Development]:
    """D: every development with its status history up to ``as_of``."""
    raw = await store.client.hgetall(keys.developments(store.story, store.branch))
    out: dict[str, Development] = {}
    for dev_id, v in raw.items():
        dev: Development | None = Development.model_validate_json(v)
        if as_of is not None and dev is not None:
            dev = dev.as_of(as_of)
        if dev is not None:
            out[dev_id] = dev
    return dict(sorted(out.items()))


async def project_hypotheses(
    store: StoryReads, as_of: int | None = None, *, development: str | None = None
) -> dict[str, Hypothesis]:
    """H: hypotheses (optionally of one development) as they stood at ``as_of``."""
    raw = await store.client.hgetall(keys.hypotheses(store.story, store.branch))
    out: dict[str, Hypothesis] = {}
    for hyp_id, v in raw.items():
        hyp: Hypothesis | None = Hypothesis.model_validate_json(v)
        if as_of is not None and hyp is not None:
            hyp = hyp.as_of(as_of)
        if hyp is not None and (development is None or hyp.development == development):
            out[hyp_id] = hyp
    return dict(sorted(out.items()))


async def recall(
    store: StoryReads, character: str, *, last: int = 20, as_of: int | None = None
) -> list[Memory]:
    """The character's last ``last`` first-person memories (events it witnessed), oldest first.

    With ``as_of``, only memories of turns up to ``as_of``. A branch's list starts with its
    parent's memories up to the fork, copied when it was made.
    """
    key = keys.memories(store.story, store.branch, character)
    if as_of is None:
        raw = await store.client.lrange(key, -last, -1)
        return [Memory.model_validate_json(v) for v in raw]
    out: list[Memory] = []
    # walk back from the end in pages until the memories are older than as_of
    end = -1
    page = max(last, 50)
    while len(out) < last:
        raw = await store.client.lrange(key, end - page + 1, end)
        if not raw:
            break
        batch = [Memory.model_validate_json(v) for v in raw]
        out[:0] = [m for m in batch if m.turn <= as_of]
        if len(raw) < page:
            break
        end -= page
    return out[-last:]
