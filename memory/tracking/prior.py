"""What the tracker knows before a turn: the prior view, holder chains and their knowledge.

:class:`PriorView` is read from the store by the memory-builder (entities, W, the part of B
the turn can touch, the current scene); :func:`touched_slots` says which part of B that is.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache

from fabula.memory.actions import StoryAction
from fabula.memory.records import Entity, State, event_position, slug

Chain = tuple[str, ...]  # a holder chain: ("ava", "ben") is what Ava thinks Ben believes


@dataclass(frozen=True)
class Knowledge:
    """What one holder chain holds about one slot; ``source`` is the event id as of which the
    information is current (its freshness), None when it has no first-hand origin."""

    value: str
    polarity: bool = True
    source: str | None = None


@dataclass
class PriorView:
    """What the tracker needs from the store before a turn: entities, W, the relevant B."""

    entities: dict[str, Entity]
    world: dict[str, State]
    beliefs: dict[Chain, dict[str, Knowledge]] = field(default_factory=dict)
    scene: str | None = None


@lru_cache(maxsize=256)
def chains_over(holders: tuple[str, ...], depth: int) -> tuple[Chain, ...]:
    """Every chain of ``holders`` with distinct adjacent members, length 1..``depth``.

    With ``n`` holders that is ``n·Σ(n−1)^k`` for ``k < depth`` chains (n=2: 2·depth;
    n=3, depth=4: 45; n=5, depth=4: 425).
    """
    out: list[Chain] = [(h,) for h in holders]
    frontier = list(out)
    for _ in range(depth - 1):
        frontier = [(*c, h) for c in frontier for h in holders if h != c[-1]]
        out.extend(frontier)
    return tuple(out)


def initial_scene(world: Mapping[str, State], entities: Mapping[str, Entity]) -> str | None:
    """A fallback scene from W alone: the place of the latest entry still standing."""
    best: tuple[tuple[int, int], str] | None = None
    for state in world.values():
        if state.attribute != "location" or not state.polarity or state.event is None:
            continue
        subject = entities.get(state.subject)
        place = entities.get(state.value)
        if subject is None or subject.kind != "character" or place is None:
            continue
        moment = event_position(state.event)
        if place.kind == "place" and (best is None or moment > best[0]):
            best = (moment, state.value)
    return None if best is None else best[1]


def name_id(name: str | None) -> str | None:
    """The identifier a name as written would get, or None (no name, or none can be made)."""
    try:
        return slug(name) if name else None
    except ValueError:
        return None


def touched_slots(actions: Sequence[StoryAction], prior: PriorView) -> set[str]:
    """Object slots this turn's actions may change in some mind (what the builder reads of B).

    A superset is harmless (a read too many); a slot missed only costs a redundant write.
    """
    slots: set[str] = set()
    places: set[str] = set()
    for action in actions:
        for name in (action.obj, action.target):
            sid = name_id(name)
            if sid:
                slots.add(f"{sid}|location")
        if action.kind == "search" and action.target:
            box = name_id(action.target)
            slots.update(
                s.slot for s in prior.world.values() if s.attribute == "location" and s.value == box
            )
        if action.clause is not None:
            sid = name_id(action.clause.subject)
            attr = action.clause.attribute
            if sid:
                slots.add(f"{sid}|{attr}")
        pid = name_id(action.place)
        if pid:
            places.add(pid)
    if places:
        located = {
            s.subject: s.value
            for s in prior.world.values()
            if s.attribute == "location" and s.polarity
        }
        for subject, where in located.items():
            if where in places or located.get(where) in places:
                slots.add(f"{subject}|location")
    return slots
