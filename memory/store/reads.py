"""The store's record reads: :class:`RecordReads`, what one branch of a story holds —
whether it exists, what it was created with, its entities, its head, its turns' texts and
its events.

These are the reads every view of a story starts from (the projections, the roles, the
service's :class:`~fabula.graph.service.reader.Reader`); none writes. A character's store
(``viewer``) reads the entities it knows of, from its own mind. Entities are parsed once
per process (:func:`_entity`): they are immutable, and every view of every turn reads them
all again.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass

import redis.asyncio as aredis

from fabula.errors import NotFound, StoryDeleted
from fabula.memory import keys
from fabula.memory.lineage import MAIN, branch_for
from fabula.memory.records import Entity, EntityKind, Event, event_turn, slug
from fabula.memory.schema import SCHEMA_FIELD, SCHEMA_VERSION, check_version, stored_version
from fabula.memory.store.lineage import LineageReads


@dataclass(frozen=True)
class TurnText:
    """The accepted text of one turn, its events' ids, and the scene it ends in."""

    turn: int
    text: str
    events: tuple[str, ...]
    scene: str | None = None
    clock: str | None = None
    committed_at: float | None = None  # write time (Unix seconds), not story time

    @classmethod
    def from_stored(cls, turn: int, stored: str) -> TurnText:
        """A turn's entry as the commit function stores it."""
        info = json.loads(stored)
        when = info.get("committed_at")
        return cls(
            turn,
            info["text"],
            tuple(info["events"]),
            info.get("scene"),
            info.get("clock"),
            float(when) if when is not None else None,
        )


@dataclass(frozen=True)
class StoryInfo:
    """What a story was created with: its world's id, its title, when (Unix seconds)."""

    story: str
    world: str
    title: str
    created_at: float | None = None
    origin: str | None = None  # what made it, when not a person (e.g. "demo")
    mode: str = "narrative"  # how the interfaces advance it: "narrative" or "ticks"


async def list_stories(client: aredis.Redis) -> list[str]:
    """Every story id on this server, sorted."""
    return sorted(await client.smembers(keys.STORIES))


Naming = tuple[Collection[str], Collection[str]]
"""What a turn may name, to cut a character's known entities to (:meth:`RecordReads.
known_entities`): the ids it names itself, and the words of what it reads
(:func:`naming_words`)."""


def naming_words(texts: Iterable[str]) -> set[str]:
    """The words ``texts`` hold as an id's words are made (:func:`~fabula.memory.records.
    slug`'s, split at ``_``): a name a text says has its words among them."""
    out: set[str] = set()
    for text in texts:
        with contextlib.suppress(ValueError):  # nothing to make words of
            out.update(slug(text).split("_"))
    return out


_ENTITY_MEMO = 50_000


_entities_parsed: dict[str, Entity] = {}


_known_parsed: dict[str, tuple[int, Entity]] = {}


def _known_entity(raw: str) -> tuple[int, Entity]:
    """An entry of a character's known entities (the turn it knew of it from, and the
    entity), parsed once per process as :func:`_entity` is: in a town, every character
    knows the whole cast, and each of its turns reads it again."""
    known = _known_parsed.get(raw)
    if known is None:
        if len(_known_parsed) >= _ENTITY_MEMO:
            _known_parsed.clear()
        data = json.loads(raw)
        entity = Entity.model_validate(data["entity"])
        known = _known_parsed[raw] = (int(data["known_from"]), entity)
    return known


def _entity(raw: str) -> Entity:
    """An entity from its stored JSON, parsed once per process: entities are immutable
    records, and every view of every turn reads them all again."""
    entity = _entities_parsed.get(raw)
    if entity is None:
        if len(_entities_parsed) >= _ENTITY_MEMO:
            _entities_parsed.clear()
        entity = _entities_parsed[raw] = Entity.model_validate_json(raw)
    return entity


class RecordReads(LineageReads):
    """One branch's records as stored: existence and creation, entities, turns, events."""

    # -- the story's existence ----------------------------------------------------------
    async def exists(self) -> bool:
        """Whether the story exists (any branch)."""
        return bool(await self.client.exists(keys.meta(self.story)))

    async def outdated(self) -> bool:
        """Whether the story exists and was stored by an older Fabula (see
        :mod:`fabula.memory.schema`): :meth:`require` refuses it."""
        world, schema = await self.client.hmget(keys.meta(self.story), ["world", SCHEMA_FIELD])
        return world is not None and stored_version(schema, self.story) < SCHEMA_VERSION

    async def unfinished(self) -> bool:
        """Whether the story was left unfinished by its maker (created, never marked whole;
        a story made before the mark existed is whole)."""
        fields = ["unfinished", "created_at"]
        marked, created = await self.client.hmget(keys.meta(self.story), fields)
        # no creation time: its maker stopped before it wrote even that
        return marked is not None or (created is None and await self.exists())

    async def require(self, *, any_version: bool = False) -> None:
        """Raise :class:`NotFound` unless the story and this branch exist
        (:class:`StoryDeleted` for a story deleted within :data:`~keys.DELETED_S`), and
        :class:`StoryOutdated` for a story stored by an older Fabula (see
        :mod:`fabula.memory.schema`) unless ``any_version`` (deleting it reads nothing)."""
        world, schema = await self.client.hmget(keys.meta(self.story), ["world", SCHEMA_FIELD])
        if world is None:
            if await self.was_deleted():
                raise self.deleted_error(meanwhile=False)
            raise NotFound(f"story {self.story!r} does not exist", story=self.story)
        if not any_version:  # an older story, a newer one, or one with no version it reads
            check_version(self.story, schema)
        if self.branch != MAIN and not await self.client.hexists(
            keys.branches(self.story), self.branch
        ):
            raise NotFound(
                f"story {self.story!r} has no branch {self.branch!r}",
                story=self.story,
                branch=self.branch,
            )

    async def was_deleted(self) -> bool:
        """Whether the story was deleted (within :data:`keys.DELETED_S`, and not made again)."""
        return bool(await self.client.exists(keys.deleted(self.story)))

    def deleted_error(self, *, meanwhile: bool) -> StoryDeleted:
        """The error saying the story was deleted; ``meanwhile``: by another command while
        this one was writing it."""
        if meanwhile:
            return StoryDeleted(
                f"story {self.story!r} was deleted by another command while this one was "
                "writing it; nothing more was written",
                story=self.story,
                branch=self.branch,
            )
        return StoryDeleted(
            f"story {self.story!r} does not exist: it was deleted", story=self.story
        )

    async def info(self) -> StoryInfo:
        """What the story was created with. Raises :class:`NotFound` if it does not exist."""
        await self.require()
        world, title, created, origin, mode = await self.client.hmget(
            keys.meta(self.story), ["world", "title", "created_at", "origin", "mode"]
        )
        return StoryInfo(
            self.story,
            world,
            title or self.story,
            None if created is None else float(created),
            origin,
            mode or "narrative",  # a story made before modes: narrative, as it was
        )

    # -- entities -----------------------------------------------------------------------
    async def head(self) -> int:
        """The last committed turn of this branch (-1 if none)."""
        raw = await self.client.hget(self._layout["head"], "turn")
        return -1 if raw is None else int(raw)

    async def entities(self, as_of: int | None = None) -> dict[str, Entity]:
        """Every entity of the story (introduced by turn ``as_of``, if given), by id; for a
        character's store (``viewer``), the entities it knows of (:meth:`known_entities`)."""
        if self.viewer is not None:
            return await self.known_entities(self.viewer, as_of)
        if as_of is None and self.start is not None:  # a scene's store: the tick's start
            return dict(self.start.entities)
        raw = await self.client.hgetall(keys.entities(self.story))
        out = {k: _entity(v) for k, v in raw.items()}
        if as_of is not None:
            out = {k: e for k, e in out.items() if e.introduced <= as_of}
        return out

    async def known_entities(
        self, character: str, as_of: int | None = None, *, naming: Naming | None = None
    ) -> dict[str, Entity]:
        """The entities ``character`` knows of on this branch (by turn ``as_of``, if given),
        by id: those its beliefs and the events it witnessed name, and the pack's places and
        cast; read from its own mind, so a character's connection may read it.

        With ``naming`` (ids, words), only those a turn reading those words may name: every
        one that is not a character, and of the characters those of ``ids`` and those one
        of whose id's words (:func:`naming_words`) is among ``words`` — a character whose
        name none of the words holds cannot be named by them. A town's character knows of
        the whole cast, and a turn names a few: reading the hash is cheap, every step of a
        turn that goes through what it knows of is not. The entries keep the order of the
        full read."""
        raw = await self.client.hgetall(keys.known_entities(self.story, self.branch, character))
        ids, words = (set(naming[0]), set(naming[1])) if naming is not None else (set(), set())
        out: dict[str, Entity] = {}
        for ident, value in raw.items():
            known_from, entity = _known_entity(value)
            if as_of is not None and known_from > as_of:
                continue
            if (
                naming is None
                or entity.kind != "character"
                or ident in ids
                or not words.isdisjoint(ident.split("_"))
            ):
                out[ident] = entity
        return out

    async def characters(self) -> list[str]:
        """Every character's id, sorted."""
        return sorted(e.id for e in (await self.entities()).values() if e.kind == "character")

    async def resolve(self, name: str, kind: EntityKind | None = None) -> Entity:
        """The entity ``name`` designates: its id or its name, case-insensitively.

        ``kind`` restricts the match (e.g. ``"character"``). Raises :class:`NotFound`
        naming what the story has of that kind when nothing matches.
        """
        wanted = name.strip().casefold()
        candidates = [e for e in (await self.entities()).values() if kind is None or e.kind == kind]
        for entity in candidates:
            if wanted in (entity.id.casefold(), entity.name.casefold()):
                return entity
        with contextlib.suppress(ValueError):
            ident = slug(name)
            for entity in candidates:
                if entity.id == ident:
                    return entity
        what = kind or "entity"
        known = ", ".join(sorted(e.id for e in candidates)[:12]) or "none"
        raise NotFound(
            f"story {self.story!r} has no {what} {name!r} (its {what}s: {known})",
            story=self.story,
            **{what: name},
        )

    async def require_character(self, character: str) -> Entity:
        """The characters entity; raises :class:`NotFound` if the story has no such character
        (for a character's store: none it knows of)."""
        entity: Entity | None
        if self.viewer is not None:
            entity = (await self.known_entities(self.viewer)).get(character)
        else:
            raw = await self.client.hget(keys.entities(self.story), character)
            entity = None if raw is None else Entity.model_validate_json(raw)
        if entity is None or entity.kind != "character":
            raise NotFound(
                f"story {self.story!r} has no character {character!r}",
                story=self.story,
                character=character,
            )
        return entity

    # -- turns and events ---------------------------------------------------------------
    async def turn_texts(self, first: int = 1, last: int | None = None) -> list[TurnText]:
        """The accepted text of turns ``first..last`` as this branch sees them."""
        ancestry = await self.ancestry()
        if last is None:
            last = await self.head()
        out: list[TurnText] = []
        by_branch: dict[str, list[int]] = {}
        for turn in range(first, last + 1):
            by_branch.setdefault(branch_for(self.branch, ancestry, turn), []).append(turn)
        fetched: dict[int, str] = {}
        for branch, turn_list in by_branch.items():
            if not turn_list:
                continue
            values = await self.client.hmget(
                keys.turns(self.story, branch), [str(t) for t in turn_list]
            )
            for t, v in zip(turn_list, values, strict=True):
                if v is not None:
                    fetched[t] = v
        for turn in range(first, last + 1):
            if turn in fetched:
                out.append(TurnText.from_stored(turn, fetched[turn]))
        return out

    async def events(self, ids: Sequence[str]) -> list[Event]:
        """Events by id, looked up on this branch and its ancestors."""
        if not ids:
            return []
        ancestry = await self.ancestry()
        by_branch: dict[str, list[str]] = {}
        for event_id in ids:
            source = branch_for(self.branch, ancestry, event_turn(event_id))
            by_branch.setdefault(source, []).append(event_id)
        found: dict[str, Event] = {}
        for branch, id_list in by_branch.items():
            values = await self.client.hmget(keys.events(self.story, branch), id_list)
            for event_id, v in zip(id_list, values, strict=True):
                if v is not None:
                    found[event_id] = Event.model_validate_json(v)
        return [found[i] for i in ids if i in found]
