"""Who knows what, tick by tick, read from the characters' own minds; and a tick's audit.

:func:`spread` answers "what share of the town knows the news after each tick?" from B[c]
itself: a character knows a clause at a turn when one of its own (first-level) beliefs
held then — positive, valid from that turn or before and not yet closed — says it. Every
such belief carries its access link (the event it came from, told or observed), so each
step of the curve is traceable to a perception or a telling in the story.

:func:`audit_ticks` checks a story run in ticks against its tick records: *leaks* (a
character that witnessed an event of a scene it was not in, or holds a belief from one),
*duplicates* (a turn claimed by two scenes) and *lost* scenes (played, but missing from the
story). Each reads every record once, so both stay cheap for a town of a thousand.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from fabula.memory import keys
from fabula.memory.projections import parse_beliefs
from fabula.memory.records import Belief, Event, event_turn
from fabula.memory.store.view import StoryReads
from fabula.memory.ticks import tick_records


def says(belief: Belief, clause: str) -> bool:
    """Whether ``belief`` (positive) says ``clause``: the clause's words, any case, in its
    value or in its subject, attribute and value read together."""
    if not belief.polarity:
        return False
    wanted = " ".join(clause.lower().split())
    whole = f"{belief.subject} {belief.attribute} {belief.value}".lower().replace("_", " ")
    return wanted in belief.value.lower() or wanted in whole


def _held_at(belief: Belief, turn: int) -> bool:
    return belief.valid_from <= turn and (belief.valid_to is None or belief.valid_to > turn)


async def own_beliefs(store: StoryReads, character: str) -> list[Belief]:
    """Every first-level belief ``character`` has held on the store's branch, current and
    closed."""
    own = ">".join((character,))
    async with store.client.pipeline(transaction=False) as pipe:
        pipe.hvals(keys.beliefs_current(store.story, store.branch, own))
        pipe.hvals(keys.belief_records(store.story, store.branch, character))
        current, closed = await pipe.execute()
    return [b for b in parse_beliefs([*current, *closed]) if b.holder == (character,)]


@dataclass(frozen=True)
class SpreadPoint:
    """The share of characters holding the clause after one tick (tick 0: before the
    first), and who."""

    tick: int
    turn: int
    knowers: tuple[str, ...]
    characters: int

    @property
    def share(self) -> float:
        """The share of the characters who know it, 0 to 1."""
        return len(self.knowers) / self.characters if self.characters else 0.0


async def spread(store: StoryReads, clause: str) -> list[SpreadPoint]:
    """The clause's spread over the story's ticks: a point before the first tick, then
    one per tick (empty for a story that never ran a tick)."""
    ticks = await tick_records(store)
    if not ticks:
        return []
    characters = await store.characters()
    held = {c: [b for b in await own_beliefs(store, c) if says(b, clause)] for c in characters}
    marks = [(0, ticks[0].first - 1), *((t.tick, t.last) for t in ticks)]
    return [
        SpreadPoint(
            tick=tick,
            turn=turn,
            knowers=tuple(c for c in characters if any(_held_at(b, turn) for b in held[c])),
            characters=len(characters),
        )
        for tick, turn in marks
    ]


@dataclass(frozen=True)
class Audit:
    """What :func:`audit_ticks` found: ``leaks`` (each ``"who: event (place)"``),
    ``duplicates`` (turns claimed twice), ``lost`` (scenes played but missing), and the
    number of scenes played."""

    scenes: int
    leaks: tuple[str, ...]
    duplicates: tuple[int, ...]
    lost: tuple[str, ...]


async def audit_ticks(store: StoryReads) -> Audit:
    """Check the branch's ticks: nobody perceives another place's scene, no turn is two
    scenes', and every scene played is in the story (see the module)."""
    ticks = await tick_records(store)
    casts: dict[int, tuple[str, tuple[str, ...]]] = {}
    claimed: Counter[int] = Counter()
    for record in ticks:
        for scene in record.scenes:
            if scene.turn is not None:
                claimed[scene.turn] += 1
                casts[scene.turn] = (scene.place, scene.cast)
    turns = await store.client.hgetall(keys.turns(store.story, store.branch))
    lost = tuple(
        f"turn {t} ({place})" for t, (place, _) in sorted(casts.items()) if str(t) not in turns
    )
    leaks: list[str] = []
    raw = await store.client.hvals(keys.events(store.story, store.branch))
    for event in (Event.model_validate_json(r) for r in raw):
        found = casts.get(event.turn)
        if found is None:
            continue
        place, cast = found
        leaks += [f"{w}: {event.id} ({place})" for w in event.witnesses if w not in cast]
    for character in await store.characters():
        for belief in await own_beliefs(store, character):
            source = event_turn(belief.event) if belief.event.startswith("e") else None
            held = casts.get(source) if source is not None else None
            if held is not None and character not in held[1]:
                leaks.append(f"{character}: {belief.event} ({held[0]})")
    duplicates = tuple(sorted(t for t, n in claimed.items() if n > 1))
    return Audit(scenes=len(casts), leaks=tuple(leaks), duplicates=duplicates, lost=lost)
