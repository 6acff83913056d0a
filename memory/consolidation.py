"""How committed turns are consolidated into the hierarchy, in memory: scenes, plotline threads,
plotlines and the plot (reading and writing them is :mod:`fabula.memory.hierarchy`'s).

A consolidation pass needs only what its turns can change, because everything else is final:

- a scene is closed once a later one opens: only the open (last) scene may grow, and the
  open scene's signature (place, day, actors, the threads it joins) decides whether a turn
  continues it;
- a plotline thread (a development, or a slot's trajectory) only gains scenes at its end,
  and only its last scene may still change: a plotline is its stored node with the scenes
  joined now appended; its summary, the first sentences of its closed scenes (kept with
  the thread, cut at ``SUMMARY_CHARS``) then its last scene's;
- plotlines are only ever added to the plot: its summary lists their titles in the order
  they were born (the turn a thread joined its second scene), the first and the latest
  that fit.

So consolidating turn by turn, in batches or all at once gives the same nodes.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field

from fabula.memory.index.general import the_place
from fabula.memory.index.terms import terms
from fabula.memory.records import Closure, Entity, Event, HierarchyNode
from fabula.memory.store import TurnText
from fabula.memory.timeref import parse_clock

PLOT_ID = "plot"
SUMMARY_LINES = 3
SUMMARY_CHARS = 400


def plotline_id(thread: str) -> str:
    """The node id of a plotline thread (``dev:<development>`` or ``slot:<subject|attr>``)."""
    return "plotline-" + "".join(c if c.isalnum() else "-" for c in thread)


@dataclass
class OpenScene:
    """The open scene's signature: its id, place, day and actors, the threads it joins."""

    scene: str
    place: str | None
    day: int | None
    actors: list[str] = field(default_factory=list)
    threads: list[str] = field(default_factory=list)

    @classmethod
    def load(cls, raw: str | None) -> OpenScene | None:
        """From its stored JSON (None: no scene yet)."""
        return None if raw is None else cls(**json.loads(raw))

    def dump(self) -> str:
        """Its stored JSON."""
        return json.dumps(asdict(self))

    def continued_by(
        self, turn: int, last_turn: int, place: str | None, day: int | None, actors: set[str]
    ) -> bool:
        """Whether a turn continues the scene: the next turn, at the same place and day (where
        both are known), its actors sharing one with the scene's (where both have any)."""
        if last_turn != turn - 1:
            return False
        if place is not None and self.place not in (None, place):
            return False
        if day is not None and self.day not in (None, day):
            return False
        return not (actors and self.actors and not actors & set(self.actors))


@dataclass
class Thread:
    """A plotline thread's bookkeeping: how many scenes it joins, the last of them, the first
    sentences of the others joined and cut at ``SUMMARY_CHARS`` (how its plotline's summary
    begins), and the turn it joined its second scene (the plotline's birth). ``before``,
    ``was_last`` and ``joined`` describe the consolidation pass at work."""

    count: int = 0
    last: str | None = None
    head: str = ""
    at: int | None = None
    before: int = 0
    was_last: str | None = None
    joined: list[str] = field(default_factory=list)

    @classmethod
    def load(cls, raw: str | None) -> Thread:
        """From its stored JSON (None: a thread not met yet)."""
        if raw is None:
            return cls()
        data = json.loads(raw)
        count, last = int(data["count"]), data["last"]
        return cls(count, last, data["head"], data["at"], before=count, was_last=last)

    def dump(self) -> str:
        """Its stored JSON."""
        return json.dumps(
            {"count": self.count, "last": self.last, "head": self.head, "at": self.at}
        )

    def join(self, scene_id: str, turn: int) -> None:
        """Join a scene (the open one) at ``turn``; joining it again changes nothing."""
        if self.last == scene_id:
            return
        self.last, self.count = scene_id, self.count + 1
        self.joined.append(scene_id)
        if self.count == 2:
            self.at = turn

    @property
    def members(self) -> list[str]:
        """The scenes of its plotline this pass writes: the last before it, those joined now."""
        return [*([self.was_last] if self.was_last else []), *self.joined]

    @property
    def fresh(self) -> list[str]:
        """The scenes its plotline gains in this pass: every one where the plotline is born
        now, else those joined now."""
        return self.members if self.before < 2 else self.joined


def as_of(entities: dict[str, Entity], turn: int) -> dict[str, Entity]:
    """The entities introduced by ``turn``: what a turn is consolidated with, whenever it is."""
    return {k: e for k, e in entities.items() if e.introduced <= turn}


def thread_names(event: Event, slots: dict[str, str], entities: dict[str, Entity]) -> list[str]:
    """The threads an event moves: its developments, and the slots (``subject|attribute``
    of its effects) whose changes join scenes — an object's facts, a character's attributes
    other than where it is (a character walking about joins nothing)."""
    out = [f"dev:{dev}" for dev in event.developments]
    for state_id in event.effects:
        slot = slots.get(state_id)
        if slot is None:
            continue
        subject, attribute = slot.split("|", 1)
        entity = entities.get(subject)
        if not (entity is not None and entity.kind == "character" and attribute == "location"):
            out.append(f"slot:{slot}")
    return out


def _extended(scene: HierarchyNode, turn: int, mine: Sequence[Event]) -> HierarchyNode:
    """``scene`` with ``turn`` and its events (``mine``) added: its children, its
    closure's events, records and spans."""
    closure = scene.closure
    return scene.model_copy(
        update={
            "last_turn": turn,
            "children": (*scene.children, *(e.id for e in mine)),
            "closure": Closure(
                events=(*closure.events, *(e.id for e in mine)),
                records=(*closure.records, *(s for e in mine for s in e.effects)),
                spans=(*closure.spans, *(e.span for e in mine)),
            ),
        }
    )


def consolidate_scenes(
    texts: Sequence[TurnText],
    events: Sequence[Event],
    slots: dict[str, str],
    entities: dict[str, Entity],
    open_scene: HierarchyNode | None,
    signature: OpenScene | None,
    threads: dict[str, Thread],
) -> tuple[dict[str, HierarchyNode], OpenScene | None]:
    """Consolidate turns into the open scene or new ones: the scenes that changed (with their
    summaries) and the open scene's signature; ``threads`` (holding every thread the events
    move) join the scenes their events happen in.

    A turn opens a new scene when its place or its date changes, or when the characters
    acting in it share none with the scene so far."""
    changed: dict[str, HierarchyNode] = {}
    for text in texts:
        mine = [e for e in events if e.turn == text.turn]
        known = as_of(entities, text.turn)
        place = _place(mine, text.scene)
        clock = parse_clock(text.clock) if text.clock else None
        day = clock.day if clock else None
        actors = _actors(mine, known)
        if (
            open_scene is None
            or signature is None
            or not signature.continued_by(text.turn, open_scene.last_turn, place, day, actors)
        ):
            open_scene = HierarchyNode(
                id=_next_scene(open_scene),
                level="scene",
                title=_title(place, text.clock, known),
                first_turn=text.turn,
                last_turn=text.turn,
            )
            signature = OpenScene(open_scene.id, place, day)
        open_scene = _extended(open_scene, text.turn, mine)
        signature.place = signature.place or place
        signature.day = signature.day or day
        signature.actors = sorted(set(signature.actors) | actors)
        changed[open_scene.id] = open_scene
        for ev in mine:
            for name in thread_names(ev, slots, known):
                threads[name].join(open_scene.id, text.turn)
                if name not in signature.threads:
                    signature.threads.append(name)
    for node_id, scene in list(changed.items()):
        quotes = [span.quote for span in scene.closure.spans]
        update = {"summary": central_lines(quotes), "summary_by": "extractive"}
        changed[node_id] = scene.model_copy(update=update)
    return changed, signature


def plotline(
    name: str,
    thread: Thread,
    old: HierarchyNode | None,
    scenes: dict[str, HierarchyNode],
    entities: dict[str, Entity],
    developments: Mapping[str, str] | None = None,
) -> HierarchyNode:
    """The plotline of a thread of two scenes or more: ``old`` (its stored node, None where
    it is born now) with the scenes joined now appended. ``scenes`` holds the thread's
    ``members`` as they are now; the thread's ``head`` takes in the scenes that stop being
    its last. A development's plotline is titled with the development's title (from
    ``developments``, id -> title), a slot's with what changes ("the location of the key")."""
    members = thread.members
    for n, scene_id in enumerate(members[:-1] if thread.joined else []):
        lead = _lead(scenes[scene_id].summary)
        if max(thread.before - 1, 0) + n == 0:  # the first scene the head holds
            thread.head = lead[:SUMMARY_CHARS]
        else:
            thread.head = f"{thread.head} / {lead}"[:SUMMARY_CHARS]
    fresh = thread.fresh
    firsts = tuple(e for m in fresh for e in scenes[m].closure.events[:1])
    last = scenes[members[-1]]
    return HierarchyNode(
        id=plotline_id(name),
        level="plotline",
        title=_line_title(name, as_of(entities, last.last_turn), developments or {}),
        summary=f"{thread.head} / {_lead(last.summary)}"[:SUMMARY_CHARS],
        children=(*old.children, *fresh) if old else tuple(fresh),
        first_turn=old.first_turn if old else scenes[members[0]].first_turn,
        last_turn=last.last_turn,
        closure=Closure(events=(*old.closure.events, *firsts) if old else firsts),
    )


def plot(
    old: HierarchyNode | None, written: Sequence[HierarchyNode], born: Sequence[HierarchyNode]
) -> HierarchyNode:
    """The plot: ``old`` (None before the first plotline) with the plotlines ``written`` now,
    of which ``born`` (in the order they were born) are new. Its summary is its plotlines'
    titles in the order they were born, the first and the latest that fit
    ``SUMMARY_CHARS``; a summary written by the model stands first in place of the titles
    it covered. With no plotline born, the plot's title and summary are as they were."""
    before = [old] if old else []
    children = tuple(sorted({*(old.children if old else ()), *(n.id for n in written)}))
    first = min(n.first_turn for n in [*before, *written])
    last = max(n.last_turn for n in [*before, *written])
    if old is not None and not born:
        return old.model_copy(update={"children": children, "first_turn": first, "last_turn": last})
    told: list[str] = []
    if old is not None and old.summary:
        # titles as consolidation wrote them (also when the model's answer was unusable: "kept"),
        # or a model's summary, which stands first as one piece
        by_extract = old.summary_by in ("extractive", "kept")
        told = old.summary.split(_TITLES) if by_extract else [old.summary]
    pieces = [p for p in told if p != _LEFT_OUT] + [line.title for line in born]
    return HierarchyNode(
        id=PLOT_ID,
        level="plot",
        title="the plot",
        summary=_first_and_latest(pieces, left_out=_LEFT_OUT in told),
        children=children,
        first_turn=first,
        last_turn=last,
    )


_TITLES = "; "
_LEFT_OUT = "…"


def _first_and_latest(pieces: Sequence[str], *, left_out: bool = False) -> str:
    """``pieces`` joined, or when they are longer than ``SUMMARY_CHARS`` (or some were
    ``left_out`` already), the first and the latest that fit with a mark of those left out
    between them: consolidating this again with more pieces gives what consolidating all at once
    gives."""
    whole = _TITLES.join(pieces)
    if (not left_out and len(whole) <= SUMMARY_CHARS) or len(pieces) < 2:
        return whole[:SUMMARY_CHARS]
    kept: list[str] = []
    room = SUMMARY_CHARS - len(pieces[0][:SUMMARY_CHARS]) - 2 * len(_TITLES) - len(_LEFT_OUT)
    for piece in reversed(pieces[1:]):
        if len(piece) + len(_TITLES) * bool(kept) > room:
            break
        room -= len(piece) + len(_TITLES) * bool(kept)
        kept.append(piece)
    return _TITLES.join([pieces[0][:SUMMARY_CHARS], _LEFT_OUT, *reversed(kept)])


def central_lines(lines: Sequence[str]) -> str:
    """The most central lines (sharing the most terms with the others), in story order;
    a line told twice (two events read from one sentence) counts once."""
    lines = list(dict.fromkeys(line.strip() for line in lines if line.strip()))
    bags = [set(terms(line)) for line in lines]
    counts: Counter[str] = Counter(t for bag in bags for t in bag)
    ranked = sorted(range(len(lines)), key=lambda i: -sum(counts[t] - 1 for t in bags[i]))
    chosen = sorted(ranked[:SUMMARY_LINES])
    return " ".join(lines[i].strip() for i in chosen)[:SUMMARY_CHARS]


def _lead(text: str) -> str:
    """A scene's share of its plotlines' summaries: its summary's first sentence."""
    return text.split(". ")[0]


def _next_scene(open_scene: HierarchyNode | None) -> str:
    """The id of the scene after ``open_scene``: scenes are numbered in story order,
    ``scene-1``, ``scene-2``, ... (a story consolidated before they were numbered so has its
    scenes named by their first turns: the next one follows the last of those)."""
    if open_scene is None:
        return "scene-1"
    return f"scene-{int(open_scene.id.rpartition('-')[2]) + 1}"


def _place(events: Sequence[Event], scene: str | None) -> str | None:
    """Where a turn's events happen: the place most of them happen in (of two as many,
    the later: a journey's scene is where it ends); the turn's scene where none has one."""
    last: dict[str, int] = {}
    for i, e in enumerate(events):
        if e.place:
            last[e.place] = i
    if not last:
        return scene
    counts = Counter(e.place for e in events if e.place)
    return max(last, key=lambda p: (counts[p], last[p]))


def _actors(events: Sequence[Event], entities: dict[str, Entity]) -> set[str]:
    return {
        p
        for e in events
        for p in (e.actor, *e.participants)
        if p and p in entities and entities[p].kind == "character"
    }


def _title(place: str | None, clock: str | None, entities: dict[str, Entity]) -> str:
    where = f" in {the_place(entities[place].name)}" if place and place in entities else ""
    when = f" on {clock}" if clock else ""
    return f"scene{where}{when}"


def _line_title(thread: str, entities: dict[str, Entity], developments: Mapping[str, str]) -> str:
    kind, _, what = thread.partition(":")
    if kind == "dev":
        return developments.get(what) or f"development {what}"
    subject, attribute = what.split("|", 1)
    entity = entities.get(subject)
    if entity is None:
        name = subject
    elif entity.kind in ("character", "group"):
        name = entity.name
    else:
        name = f"the {entity.name}"  # "the location of the brass key"
    return f"the {attribute} of {name}"
