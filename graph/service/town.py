"""The town of a story run in ticks, as the interfaces draw it: every place, who is there
at a tick, and what its scene made of the tick.

At tick ``t`` (1 to the last), a place's people are its scene's cast, everyone there as
the tick began (the tick's own record, :class:`~fabula.memory.ticks.SceneRecord`), with
the turn that holds the scene's text (none for a quiet scene). At tick 0 (before the
first, or a story that has run none) they are where W puts them at that turn, which is
where the first tick will find them. A character that is in no place at that tick (W
knows nowhere for it) is listed apart, so that everyone of the cast is shown once.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from fabula.errors import NotFound
from fabula.memory.places import place_of
from fabula.memory.projections import project_world
from fabula.memory.records import Entity
from fabula.memory.store.view import StoryReads
from fabula.memory.ticks import TickRecord, last_tick, tick_records


class Person(BaseModel):
    """A character as the town names it: its id and its name."""

    model_config = ConfigDict(frozen=True)

    id: str
    name: str


class TownPlace(BaseModel):
    """One place at the tick shown: who is there, and the turn of its scene (None: nobody
    there, a quiet scene, or tick 0) with that turn's text."""

    model_config = ConfigDict(frozen=True)

    id: str
    name: str
    people: list[Person]
    turn: int | None = None
    text: str | None = None


class TownOut(BaseModel):
    """The town at one tick: every place of the story (in the order of their ids), and the
    characters in none."""

    model_config = ConfigDict(frozen=True)

    story: str
    branch: str
    tick: int
    """The tick shown: 1 to ``last``, or 0 (before the first tick)."""
    last: int
    """The branch's last committed tick (0: none yet)."""
    places: list[TownPlace]
    elsewhere: list[Person]
    """Characters in no place at that tick."""


async def town_view(store: StoryReads, tick: int | None = None) -> TownOut:
    """The town at ``tick`` (default: the last tick, or 0 for a story that has run none).

    Raises :class:`NotFound` for a story or branch that does not exist, and for a tick the
    branch has not run (naming the ticks it has).
    """
    await store.require()
    ticks = await tick_records(store)
    last = ticks[-1].tick if ticks else 0
    shown = last if tick is None else tick
    if not 0 <= shown <= last:
        have = f"ticks 0 to {last}" if last else "only tick 0 (it has run no tick)"
        raise NotFound(
            f"branch {store.branch!r} has no tick {shown}: it has {have}", story=store.story
        )
    entities = await store.entities()
    record = next((t for t in ticks if t.tick == shown), None)
    if record is not None:
        where, turns = _cast_of(record), {s.place: s.turn for s in record.scenes}
    else:
        # tick 0: where the first tick finds them (the turn before it), or now
        before = ticks[0].first - 1 if ticks else None
        where, turns = await _placed(store, entities, before), {}
    texts = await _texts(store, record)
    people: dict[str, list[Person]] = {}
    elsewhere: list[Person] = []
    for character in await store.characters():
        person = _person(entities, character)
        place = where.get(character)
        if place is None:
            elsewhere.append(person)
        else:
            people.setdefault(place, []).append(person)
    places = sorted(
        {*(e.id for e in entities.values() if e.kind == "place"), *people}  # a place named only
    )
    return TownOut(
        story=store.story,
        branch=store.branch,
        tick=shown,
        last=last,
        places=[
            TownPlace(
                id=p,
                name=entities[p].name if p in entities else p,
                people=sorted(people.get(p, []), key=lambda x: x.name),
                turn=turns.get(p),
                text=_text_of(texts, turns.get(p)),
            )
            for p in places
        ],
        elsewhere=sorted(elsewhere, key=lambda x: x.name),
    )


async def last_tick_of(store: StoryReads) -> int:
    """The branch's last committed tick (0: it has run none)."""
    found = await last_tick(store)
    return found.tick if found is not None else 0


def _person(entities: dict[str, Entity], character: str) -> Person:
    found = entities.get(character)
    return Person(id=character, name=found.name if found is not None else character)


def _cast_of(record: TickRecord) -> dict[str, str]:
    """Each character of a tick's scenes: the place of its scene."""
    return {c: s.place for s in record.scenes for c in s.cast}


async def _placed(
    store: StoryReads, entities: dict[str, Entity], as_of: int | None
) -> dict[str, str]:
    """Each character W places somewhere at ``as_of`` (now when None): its place."""
    world = await project_world(store, as_of=as_of)
    found: dict[str, str] = {}
    for character in await store.characters():
        place = place_of(character, world.where, lambda e: _is_place(entities, e))
        if place is not None:
            found[character] = place
    return found


def _is_place(entities: dict[str, Entity], entity: str) -> bool:
    found = entities.get(entity)
    return found is not None and found.kind == "place"


def _text_of(texts: dict[int, str], turn: int | None) -> str | None:
    return texts.get(turn) if turn is not None else None


async def _texts(store: StoryReads, record: TickRecord | None) -> dict[int, str]:
    """The texts of a tick's played scenes, by turn."""
    if record is None or record.first > record.last:
        return {}
    return {t.turn: t.text for t in await store.turn_texts(record.first, record.last)}
