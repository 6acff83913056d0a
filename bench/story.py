"""``fabula bench story``: is the offline story worth watching?

Generated world packs (random casts, places, containers, portable objects, goals written in
the packs' goal language, secrets and developments; made here from the seed, not shipped)
and the shipped packs run autonomously, offline, through the real graph and store. Per run:

- **repeat_share** — the share of written turns whose text equals one of the 5 before it;
- **filler_lines** — sentences that say nothing happened (``X thought about Y for a
  while.``, ``X waited.``);
- **action_kinds_per_10** — distinct kinds of story action (read back from the text by the
  offline reader) per window of 10 turns, averaged over windows;
- **goals_achieved** / **goals_blocked** — the share of the characters' goals the story
  achieved (judged here, from W, B and the text, by the goal's own words: see
  :func:`achieved`), and of those not achieved, the share the character itself declared
  blocked (its latest proposal naming the goal says ``blocked: <goal>``);
- **hypotheses_pursued** / **hypotheses_realised** — a fork a few turns in pursues one open
  hypothesis whose premise the world can reach (an object coming to a character who does
  not hold it); the share realised within 10 turns of the fork;
- **fidelity** — every character's belief about where every portable object is, and what
  every secret is (told, overheard, lied about), after every turn, against
  :class:`Reference`: the rules of knowledge (``memory/rules.py``) replayed here in a few
  lines over the actions the text tells. 1.0 means every probe agreed.

The JSON has exactly the issue's fields; the table adds the counts behind them.
"""

from __future__ import annotations

import asyncio
import random
import re
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from fabula.agents.contracts import CharacterBrief, Proposal
from fabula.agents.factory import offline_roles
from fabula.agents.reading.extract import extract
from fabula.agents.roles import CharacterRole
from fabula.bench.common import private_redis_url, run_id
from fabula.bench.report import print_table, write_json
from fabula.errors import FabulaError
from fabula.graph.service import Fabula
from fabula.memory.acl import CharacterMind
from fabula.memory.actions import StoryAction
from fabula.memory.projections import project_beliefs, project_hypotheses, project_world
from fabula.memory.records import SECRET, secret_text, slug
from fabula.memory.store import StoryStore
from fabula.settings import Settings
from fabula.worlds.loader import load_world
from fabula.worlds.pack import (
    CharacterSpec,
    DevelopmentSpec,
    ObjectSpec,
    Opening,
    PlaceSpec,
    WorldPack,
)

SHIPPED = ("hollow_book", "lighthouse")
REPEAT_WINDOW = 5
FORK_AFTER = 3  # autonomous turns before the hypothesis fork
PURSUE_TURNS = 10
CONCURRENCY = 4  # stories in flight at once

_FILLER = re.compile(r"\b(?:thought about .+? for a while|waited)\.")
_SENTENCE = re.compile(r'[^.!?"]*(?:"[^"]*"[^.!?"]*)*[.!?]')

_PLACES = (
    "kitchen",
    "garden",
    "attic",
    "cellar",
    "barn",
    "chapel",
    "harbour",
    "library",
    "mill",
    "orchard",
    "forge",
    "tower",
)
_BOXES = ("chest", "cupboard", "basket", "crate", "trunk", "jar", "drawer", "cabinet")
_WOODS = ("oak", "pine", "red", "tin", "iron", "blue", "old", "small")
_THINGS = (
    "ring",
    "letter",
    "map",
    "coin",
    "lantern",
    "knife",
    "locket",
    "ledger",
    "flute",
    "seal",
    "compass",
    "diary",
)
_NAMES = ("Ada", "Ben", "Cora", "Dev", "Eli", "Fay", "Gus", "Hana", "Ivo", "Jun", "Kit", "Lou")
_DEEDS = ("stole", "forged", "broke", "buried", "sold", "copied")


# -- generated packs ------------------------------------------------------------------------
def generate_pack(rng: random.Random, index: int) -> WorldPack:
    """A random world: 2-4 places with 1-2 containers each, 2-4 characters, 2-4 portable
    objects, 1-2 goals and at most one secret per character, 1-2 developments, and an
    opening turn that puts one object away."""
    places = rng.sample(_PLACES, rng.randint(2, 4))
    boxes: list[tuple[str, str]] = []
    words = rng.sample([f"{w} {b}" for w in _WOODS for b in _BOXES], 2 * len(places))
    for place in places:
        for _ in range(rng.randint(1, 2)):
            boxes.append((words.pop(), place))
    names = rng.sample(_NAMES, rng.randint(2, 4))
    homes = {n: rng.choice(places) for n in names}
    things = rng.sample(_THINGS, rng.randint(2, 4))
    where: dict[str, str] = {}
    for thing in things:
        where[thing] = rng.choice([*(b for b, _ in boxes), *names, *places])
    secrets = {
        n: f"{n} {rng.choice(_DEEDS)} the {rng.choice(things)}" for n in names if rng.random() < 0.5
    }
    characters = []
    for name in names:
        others = [n for n in names if n != name]
        goals = [_goal(rng, name, others, things, secrets, homes) for _ in range(rng.randint(1, 2))]
        characters.append(
            CharacterSpec(
                name=name,
                location=homes[name],
                goals=tuple(dict.fromkeys(goals)),
                secrets=(secrets[name],) if name in secrets else (),
            )
        )
    developments = [
        DevelopmentSpec(
            kind="conflict",
            title=f"Who gets the {thing}",
            participants=tuple(rng.sample(names, min(2, len(names)))),
        )
        for thing in things[: rng.randint(1, 2)]
    ]
    holder = next((t for t in things if where[t] in names), None)
    opening: tuple[str, ...] = ()
    if holder is not None:
        owner = where[holder]
        box = next((b for b, p in boxes if p == homes[owner]), None)
        if box is not None:
            opening = (f"{owner} put the {holder} in the {box}.",)
    return WorldPack(
        id=f"generated-{index}",
        title=f"Generated world {index}",
        premise="A household where everyone wants something someone else holds.",
        places=tuple(PlaceSpec(name=p) for p in places),
        characters=tuple(characters),
        objects=(
            *(ObjectSpec(name=b, location=p, container=True) for b, p in boxes),
            *(ObjectSpec(name=t, location=where[t]) for t in things),
        ),
        developments=tuple(developments),
        opening=Opening(turns=opening),
    )


def _goal(
    rng: random.Random,
    me: str,
    others: Sequence[str],
    things: Sequence[str],
    secrets: dict[str, str],
    homes: dict[str, str],
) -> str:
    """One goal in the packs' goal language, with arguments from this world."""
    thing, other = rng.choice(things), rng.choice(others)
    forms = [
        f"get the {thing}",
        f"find the {thing}",
        f"keep the {thing} hidden",
        f"give the {thing} to {other}",
        f"learn where the {thing} is",
        f"tell {other} where the {thing} is",
        f"hide the {thing} from {other}",
        f"avoid {other}",
    ]
    if homes[other] != homes[me]:
        forms.append(f"meet {other}")
    keepers = [n for n in others if n in secrets]
    if keepers:
        forms.append(f"learn {rng.choice(keepers)}'s secret")
    return rng.choice(forms)


# -- judging goals --------------------------------------------------------------------------
@dataclass
class Moment:
    """The story after one turn, as the judge reads it: W's locations, each character's
    believed locations, the turn's text."""

    world: dict[str, str]
    minds: dict[str, dict[str, str | None]]
    text: str
    # by holder, whose secrets it believes it knows and what it believes they are
    secrets: dict[str, dict[str, str]] = field(default_factory=dict)


def _place(world: dict[str, str], places: set[str], entity: str) -> str | None:
    seen: set[str] = set()
    current: str | None = entity
    while current is not None and current not in places and current not in seen:
        seen.add(current)
        current = world.get(current)
    return current


_GOALS: list[tuple[str, re.Pattern[str]]] = [
    (kind, re.compile(pattern))
    for kind, pattern in (
        ("get", r"^(?:get|take) the (?P<o>.+)$"),
        ("find", r"^find the (?P<o>.+)$"),
        ("keep", r"^keep the (?P<o>.+) (?:hidden|safe)$"),
        ("give", r"^give the (?P<o>.+) to (?P<c>\w+)$"),
        ("learn_where", r"^learn where the (?P<o>.+) is$"),
        ("tell_where", r"^tell (?P<c>\w+) where the (?P<o>.+) is$"),
        ("hide_from", r"^hide the (?P<o>.+) from (?P<c>\w+)$"),
        ("meet", r"^meet (?P<c>\w+)$"),
        ("avoid", r"^avoid (?P<c>\w+)$"),
        ("learn_secret", r"^learn (?P<c>\w+)'s secret$"),
        ("tell_secret", r"^tell (?P<c>\w+) (?P<w>\w+)'s secret$"),
        ("tell_own", r"^(?:tell (?P<c>\w+) my secret|confess to (?P<c2>\w+))$"),
        ("keep_secret", r"^keep my secret$"),
    )
]


def achieved(
    goal: str, me: str, moments: Sequence[Moment], places: set[str], secrets: dict[str, str]
) -> bool | None:
    """Whether the story achieved ``me``'s ``goal`` (None: a goal this judge cannot read).

    A goal to reach something (get, find, give, learn, tell, meet) is achieved if it held
    after any turn; a goal to keep something so (keep hidden, hide from, avoid) if it holds
    at the end.
    """
    text = goal.strip().rstrip(".")
    for kind, pattern in _GOALS:
        m = pattern.match(text)
        if m is None:
            continue
        groups = {k: v for k, v in m.groupdict().items() if v}
        other = slug(groups.get("c") or groups.get("c2") or "x")
        if kind in ("learn_secret", "tell_secret", "tell_own", "keep_secret"):
            return _secret_goal(kind, groups, me, other, moments, secrets)
        return _world_goal(kind, groups, me, other, moments, places)
    return None


def _secret_goal(
    kind: str,
    groups: dict[str, str],
    me: str,
    other: str,
    moments: Sequence[Moment],
    secrets: dict[str, str],
) -> bool:
    """Whether a goal about a secret was achieved: told (the listener took in the true
    secret), kept (at the end nobody else holds it true) or learned."""
    last = moments[-1]
    if kind in ("tell_secret", "tell_own"):  # the listener took in the true secret
        owner = slug(groups["w"]) if "w" in groups else me
        truth = secrets.get(owner)
        return truth is not None and any(
            w.secrets.get(other, {}).get(owner) == truth for w in moments
        )
    if kind == "keep_secret":  # at the end, nobody else holds it true
        truth = secrets.get(me)
        return truth is None or all(
            held.get(me) != truth for c, held in last.secrets.items() if c != me
        )
    secret = secrets.get(other)  # learned: it came to hold the true secret
    return secret is not None and any(w.secrets.get(me, {}).get(other) == secret for w in moments)


def _world_goal(
    kind: str,
    groups: dict[str, str],
    me: str,
    other: str,
    moments: Sequence[Moment],
    places: set[str],
) -> bool:
    """Whether a goal about objects and places was achieved, from where things were (and
    were believed to be) after each turn, and what was said."""
    last = moments[-1]
    obj = slug(groups["o"]) if "o" in groups else ""
    if kind == "get":
        return any(w.world.get(obj) == me for w in moments)
    if kind == "find":
        return any(
            w.world.get(obj) == me
            or (
                w.minds[me].get(obj) == w.world.get(obj)
                and _place(w.world, places, obj) == _place(w.world, places, me)
            )
            for w in moments
        )
    if kind == "keep":
        return last.world.get(obj) == me or (
            last.world.get(obj) not in places and last.world.get(obj) not in last.minds
        )
    if kind == "give":
        return any(w.world.get(obj) == other for w in moments)
    if kind == "learn_where":
        return any(w.minds[me].get(obj) == w.world.get(obj) for w in moments)
    if kind == "tell_where":
        told = re.compile(
            rf"\b{re.escape(me)} (?:privately )?told {re.escape(other)} that the "
            rf"{re.escape(groups['o'])} is",
            re.I,
        )
        return any(told.search(w.text) for w in moments)
    if kind == "hide_from":
        return last.world.get(obj) != other and last.minds[other].get(obj) != last.world.get(obj)
    if kind == "meet":
        return any(_place(w.world, places, me) == _place(w.world, places, other) for w in moments)
    return _place(last.world, places, me) != _place(last.world, places, other)  # avoid


# -- the rule reference -------------------------------------------------------------------
Knowledge = tuple[str, bool, tuple[int, int]]  # value, polarity, freshness


@dataclass
class Reference:
    """The rules of knowledge (``memory/rules.py``) replayed over a story's actions, for
    where each portable object is believed to be: witnessing by presence, closed (or open)
    containers, searches, private and public tellings under the trust policy."""

    places: set[str]
    containers: set[str]
    characters: list[str]
    objects: list[str]
    open_containers: bool
    trust: str
    world: dict[str, str] = field(default_factory=dict)
    minds: dict[str, dict[str, Knowledge]] = field(default_factory=dict)
    clock: tuple[int, int] = (0, 0)
    secrets: list[str] = field(default_factory=list)  # the characters who have one

    @classmethod
    def of(cls, pack: WorldPack) -> Reference:
        """The reference at turn 0 of a story made from ``pack`` (its setup)."""
        ref = cls(
            places={slug(p.name) for p in pack.places},
            containers={slug(o.name) for o in pack.objects if o.container},
            characters=[slug(c.name) for c in pack.characters],
            objects=[slug(o.name) for o in pack.objects if not o.container],
            open_containers=pack.rules.open_containers,
            trust=pack.rules.trust,
        )
        for spec in pack.characters:
            ref.world[slug(spec.name)] = slug(spec.location)
        for o in pack.objects:
            ref.world[slug(o.name)] = slug(o.location)
        for c in ref.characters:
            ref.minds[c] = {
                o: (ref.world[o], True, (0, 0)) for o in ref.objects if ref.place(o) == ref.world[c]
            }
        for spec in pack.characters:  # a secret: its owner's alone at the start
            if spec.secrets:
                owner = slug(spec.name)
                ref.secrets.append(owner)
                ref.minds[owner][_secret(owner)] = (secret_text(spec.secrets[0]), True, (0, 0))
        return ref

    def place(self, entity: str) -> str | None:
        """The place ``entity`` is in, through containers and holders."""
        return _place(self.world, self.places, entity)

    def present(self, place: str | None) -> list[str]:
        return [c for c in self.characters if self.world.get(c) == place]

    def believed(self, character: str, obj: str) -> str | None:
        """Where ``character`` believes ``obj`` is (None: it does not know)."""
        held = self.minds[character].get(obj)
        return held[0] if held is not None and held[1] else None

    def _tick(self, turn: int) -> tuple[int, int]:
        self.clock = (turn, self.clock[1] + 1) if self.clock[0] == turn else (turn, 1)
        return self.clock

    def _visible(self, place: str) -> list[tuple[str, str]]:
        out: list[tuple[str, str]] = []
        for o in self.objects:
            where = self.world.get(o)
            if where is None:
                continue
            if where == place or (
                where is not None
                and self.place(where) == place
                and (self.open_containers or where in self.characters)
            ):
                out.append((o, where))
        return out

    def _see(
        self,
        who: Sequence[str],
        obj: str,
        where: str,
        now: tuple[int, int],
        refresh: Sequence[str] | None = None,
    ) -> None:
        for w in who:
            held = self.minds[w].get(obj)
            if held is None or held[:2] != (where, True) or refresh is None or w in refresh:
                self.minds[w][obj] = (where, True, now)

    def turn(self, turn: int, text: str) -> None:
        """Apply one turn's text (actions the reference does not know change nothing)."""
        for action in extract(text):
            now = self._tick(turn)
            kind = action.kind
            actor = slug(action.actors[0]) if action.actors else None
            if kind in ("go", "enter", "exit") and actor and action.place:
                self._went(turn, kind, actor, slug(action.place), now)
            elif kind in ("put", "move", "take", "give", "drop") and actor and action.obj:
                self._moved(action, actor, now)
            elif kind == "search" and actor and action.target:
                self._searched(actor, slug(action.target), now)
            elif kind in ("tell", "inform", "claim", "say") and actor and action.clause:
                self._told(action, actor)

    def _went(self, turn: int, kind: str, actor: str, place: str, now: tuple[int, int]) -> None:
        """``actor`` went (entered, left) ``place``: what it saw where it was, and what
        everyone there sees of what is open to view where it arrives."""
        old = self.world.get(actor)
        if kind != "enter" and old in self.places and (old != place or kind == "exit"):
            if self.open_containers:
                for obj, where in self._visible(old):
                    self.minds[actor][obj] = (where, True, now)
            if kind == "exit":
                self.world.pop(actor, None)
                return
            now = self._tick(turn)
        self.world[actor] = place
        witnesses = sorted({*self.present(place), actor})
        for obj, where in self._visible(place):
            self._see(witnesses, obj, where, now, refresh=[actor])

    def _moved(self, action: StoryAction, actor: str, now: tuple[int, int]) -> None:
        """``actor`` put, moved, took, gave or dropped an object, seen by those there."""
        obj = slug(action.obj or "")
        kind = action.kind
        to: str | None
        if kind == "take":
            to = actor
        elif kind == "drop":
            to = self.place(actor)
        else:
            to = slug(action.target) if action.target else None
        if to is None:
            return
        witnesses = sorted({*self.present(self.place(actor)), actor})
        self.world[obj] = to
        if obj in self.objects:
            self._see(witnesses, obj, to, now)

    def _searched(self, actor: str, box: str, now: tuple[int, int]) -> None:
        """``actor`` looked in ``box``: those there see what is in it, and that what they
        believed in it is not."""
        witnesses = sorted({*self.present(self.place(actor)), actor})
        inside = [o for o in self.objects if self.world.get(o) == box]
        for obj in inside:
            self._see(witnesses, obj, box, now)
        missing = {o for w in witnesses for o in self.objects if self.believed(w, o) == box} - set(
            inside
        )
        for w in witnesses:
            for obj in missing:
                held = self.minds[w].get(obj)
                if held is None or held[:2] == (box, True):
                    self.minds[w][obj] = (box, False, now)

    def _told(self, action: StoryAction, actor: str) -> None:
        """``actor`` told (or said aloud) where an object is, or a secret: each listener
        who trusts it takes it in, as fresh as the speaker's own belief."""
        clause = action.clause
        assert clause is not None
        obj = slug(clause.subject)
        if clause.attribute == SECRET:  # a secret (or a lie about one)
            obj, value = _secret(obj), secret_text(clause.value)
        elif clause.attribute != "location" or obj not in self.objects:
            return
        else:
            value = slug(clause.value)
        if action.kind == "tell":
            listeners = [slug(n) for n in action.listeners]
        else:
            listeners = self.present(self.place(actor))
        spoken = self.minds[actor].get(obj)
        fresh = spoken[2] if spoken is not None else (-1, -1)
        for listener in sorted(set(listeners) - {actor}):
            if self._trusts(listener, actor, obj, value):
                self.minds[listener][obj] = (value, True, fresh)

    def _trusts(self, listener: str, speaker: str, obj: str, value: str) -> bool:
        if self.trust != "fresher":
            return self.trust == "always"
        own = self.minds[listener].get(obj)
        if own is None or (not own[1] and own[0] != value):
            return True
        theirs = self.minds[speaker].get(obj)
        return theirs is not None and theirs[2] > own[2]


def _secret(owner: str) -> str:
    """The reference's key for ``owner``'s secret (beside objects' ids)."""
    return f"{owner}|{SECRET}"


# -- one run --------------------------------------------------------------------------------
class _Recorder:
    """The offline character, with every proposal kept (by story and branch)."""

    def __init__(self, inner: CharacterRole) -> None:
        self.inner = inner
        self.proposals: dict[tuple[str, str], list[Proposal]] = {}

    async def propose(self, mind: CharacterMind, brief: CharacterBrief) -> Proposal:
        proposal = await self.inner.propose(mind, brief)
        self.proposals.setdefault((mind.story, mind.branch), []).append(proposal)
        return proposal


@dataclass
class PackResult:
    """What one pack's run measured."""

    pack: str
    written: int = 0
    repeats: int = 0
    filler: int = 0
    windows: list[int] = field(default_factory=list)
    goals: int = 0
    achieved: int = 0
    blocked: int = 0
    pursued: int = 0
    realised: int = 0
    probes: int = 0
    right: int = 0
    stopped: str = ""
    errors: list[str] = field(default_factory=list)


def _sentences(text: str) -> list[str]:
    return [s.strip() for s in _SENTENCE.findall(text) if s.strip()]


async def _moments(store: StoryStore, pack: WorldPack, first: int, head: int) -> list[Moment]:
    characters = [slug(c.name) for c in pack.characters]
    objects = [slug(o.name) for o in pack.objects if not o.container]
    texts = {t.turn: t.text for t in await store.turn_texts(1, head)}
    out = []
    for t in range(first, head + 1):
        world = await project_world(store, as_of=t)
        where = {
            s.subject: s.value
            for s in world.states.values()
            if s.attribute == "location" and s.polarity
        }
        minds: dict[str, dict[str, str | None]] = {}
        secrets: dict[str, dict[str, str]] = {}
        for c in characters:
            mind = await project_beliefs(store, c, as_of=t)
            minds[c] = {}
            for o in objects:
                b = mind.get(o, "location")
                minds[c][o] = b.value if b is not None and b.polarity else None
            secrets[c] = {
                b.subject: b.value
                for b in mind.beliefs.values()
                if b.attribute == SECRET and b.polarity
            }
        out.append(Moment(where, minds, texts.get(t, ""), secrets))
    return out


async def _run_pack(
    fab: Fabula, recorder: _Recorder, pack: WorldPack, turns: int, tag: str
) -> PackResult:
    result = PackResult(pack.id)
    story = f"bench-story-{tag}-{pack.id}"
    store = fab.store(await fab.create_story(pack, story))
    opening = len(pack.opening.turns)
    try:
        out = await fab.run(store, turns, auto=True)
        result.written = out.written
        if out.written < turns:
            result.stopped = str(out.outcome)
    except FabulaError as exc:  # a run that fails is a finding, not the end of the bench
        result.errors.append(f"{type(exc).__name__}: {exc}")
    head = await store.head()
    texts = [t.text for t in await store.turn_texts(opening + 1, head)]
    _measure_texts(result, texts)
    proposals = recorder.proposals.get((story, "main"), [])
    await _measure_goals(result, store, pack, opening, head, proposals)
    await _measure_fidelity(result, store, pack, head)
    await _measure_fork(result, fab, store, pack, opening + FORK_AFTER, head)
    await fab.delete_story(story)
    return result


def _measure_texts(result: PackResult, texts: list[str]) -> None:
    """The turns written after the opening: how many, repeated, filler sentences, and the
    kinds of action in each window of ten."""
    result.written = len(texts)
    for i, text in enumerate(texts):
        result.repeats += text in texts[max(0, i - REPEAT_WINDOW) : i]
        result.filler += sum(bool(_FILLER.search(s)) for s in _sentences(text))
    for start in range(0, len(texts), 10):
        kinds = {a.kind for text in texts[start : start + 10] for a in extract(text)}
        result.windows.append(len(kinds))


async def _measure_goals(
    result: PackResult,
    store: StoryStore,
    pack: WorldPack,
    opening: int,
    head: int,
    proposals: Sequence[Proposal],
) -> None:
    """Every character's goals, judged over every turn after the opening: achieved, or
    blocked (the character's last proposal toward it said so)."""
    moments = await _moments(store, pack, opening, head)
    places = {slug(p.name) for p in pack.places}
    secrets = {slug(c.name): secret_text(c.secrets[0]) for c in pack.characters if c.secrets}
    for c in pack.characters:
        me = slug(c.name)
        for goal in c.goals:
            got = achieved(goal, me, moments, places, secrets)
            result.goals += 1
            if got:
                result.achieved += 1
                continue
            said = [p.intent for p in proposals if p.character == me and goal in p.intent]
            result.blocked += bool(said) and f"blocked: {goal}" in said[-1]


async def _measure_fidelity(
    result: PackResult, store: StoryStore, pack: WorldPack, head: int
) -> None:
    """Belief fidelity against the reference, after every turn: each mind's belief of
    where every object is and of every secret."""
    reference = Reference.of(pack)
    all_texts = {t.turn: t.text for t in await store.turn_texts(1, head)}
    for t in range(1, head + 1):
        reference.turn(t, all_texts.get(t, ""))
        for holder in reference.characters:
            mind = await project_beliefs(store, holder, as_of=t)
            for o in reference.objects:
                b = mind.get(o, "location")
                got_value = b.value if b is not None and b.polarity else None
                result.probes += 1
                result.right += got_value == reference.believed(holder, o)
            for owner in reference.secrets:  # who believes what of each secret
                b = mind.get(owner, SECRET)
                got_value = b.value if b is not None and b.polarity else None
                result.probes += 1
                result.right += got_value == reference.believed(holder, _secret(owner))


async def _measure_fork(
    result: PackResult, fab: Fabula, store: StoryStore, pack: WorldPack, at: int, head: int
) -> None:
    """A fork at turn ``at`` pursuing the first reachable hypothesis (an open one whose
    realisation moves objects to characters): pursued, and whether it was realised."""
    if head < at:
        return
    hypotheses = await project_hypotheses(store, as_of=at)
    world = await project_world(store, as_of=at)
    for h in sorted(hypotheses.values(), key=lambda h: h.id):
        reachable = (
            h.status == "open"
            and h.realises
            and all(
                f.attribute == "location"
                and world.where(f.subject) != f.value
                and f.value in {slug(c.name) for c in pack.characters}
                for f in h.realises
            )
        )
        if not reachable:
            continue
        result.pursued += 1
        fork = fab.store(await fab.fork(store, at, realise=h.id))
        try:
            await fab.run(fork, PURSUE_TURNS, auto=True)
        except FabulaError as exc:
            result.errors.append(f"fork {h.id}: {type(exc).__name__}: {exc}")
        after = await project_hypotheses(fork)
        result.realised += after[h.id].status == "realised"
        break


def _summary(results: Sequence[PackResult], packs: int, turns: int) -> dict[str, Any]:
    written = sum(r.written for r in results)
    windows = [w for r in results for w in r.windows]
    goals = sum(r.goals for r in results)
    unachieved = goals - sum(r.achieved for r in results)
    pursued = sum(r.pursued for r in results)
    probes = sum(r.probes for r in results)
    return {
        "benchmark": "story",
        "packs": packs,
        "turns": turns,
        "repeat_share": round(sum(r.repeats for r in results) / written, 4) if written else 0.0,
        "filler_lines": sum(r.filler for r in results),
        "action_kinds_per_10": round(sum(windows) / len(windows), 2) if windows else 0.0,
        "goals_achieved": round(sum(r.achieved for r in results) / goals, 4) if goals else 0.0,
        "goals_blocked": round(sum(r.blocked for r in results) / unachieved, 4)
        if unachieved
        else 0.0,
        "hypotheses_pursued": pursued,
        "hypotheses_realised": round(sum(r.realised for r in results) / pursued, 4)
        if pursued
        else 0.0,
        "fidelity": round(sum(r.right for r in results) / probes, 4) if probes else 0.0,
    }


async def run_story_bench(
    packs: int,
    turns: int,
    seed: int,
    *,
    redis_url: str | None = None,
    json_out: str | None = None,
    quiet: bool = False,
) -> dict[str, Any]:
    """Run ``packs`` generated packs and the shipped ones for ``turns`` autonomous turns
    each; print the table, write the JSON, return it."""
    rng = random.Random(seed)
    worlds = [
        *(load_world(name) for name in SHIPPED),
        *(generate_pack(rng, i) for i in range(packs)),
    ]
    tag = run_id()
    with private_redis_url(redis_url, fsync="everysec") as url:
        recorder = _Recorder(offline_roles().character)
        roles = replace(offline_roles(), character=recorder)
        fab = Fabula(url, Settings(), roles=roles)
        gate = asyncio.Semaphore(CONCURRENCY)

        async def one(pack: WorldPack) -> PackResult:
            async with gate:
                return await _run_pack(fab, recorder, pack, turns, tag)

        try:
            results = await asyncio.gather(*(one(w) for w in worlds))
        finally:
            await fab.aclose()
    summary = _summary(results, len(worlds), turns)
    if not quiet:
        _show(summary, results)
    write_json(json_out, summary)
    return summary


def _show(summary: dict[str, Any], results: Sequence[PackResult]) -> None:
    rows = []
    for r in [*results[: len(SHIPPED)], *results[len(SHIPPED) :][:6]]:
        rows.append(
            [
                r.pack.removeprefix("generated-"),
                r.written,
                r.repeats,
                r.filler,
                f"{r.achieved}/{r.goals}",
                r.blocked,
                f"{r.realised}/{r.pursued}",
                f"{r.right}/{r.probes}",
            ]
        )
    print_table(
        "bench story: shipped packs, then the first generated",
        ["pack", "turns", "rep.", "filler", "goals", "blk", "hyp.", "probes"],
        rows,
    )
    for e in [e for r in results for e in r.errors][:5]:
        print("error:", e)
    names = {
        "packs": "packs (generated + shipped)",
        "turns": "autonomous turns per pack (at most)",
        "repeat_share": f"turns repeating one of the {REPEAT_WINDOW} before",
        "filler_lines": "filler lines",
        "action_kinds_per_10": "distinct action kinds per 10 turns",
        "goals_achieved": "goals achieved",
        "goals_blocked": "of the rest, declared blocked",
        "hypotheses_pursued": "hypotheses pursued by a fork",
        "hypotheses_realised": f"realised within {PURSUE_TURNS} turns",
        "fidelity": "belief probes agreeing with the rule reference",
    }
    print_table("fabula bench story", ["figure", "value"], [[names[k], summary[k]] for k in names])


def run(
    packs: int, turns: int, seed: int, redis_url: str | None, json_out: str | None
) -> dict[str, Any]:
    """The command's entry point (synchronous)."""
    return asyncio.run(run_story_bench(packs, turns, seed, redis_url=redis_url, json_out=json_out))
