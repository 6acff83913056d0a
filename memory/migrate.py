"""A story's own keys brought up to :data:`~fabula.memory.schema.SCHEMA_VERSION`.

``fabula migrate`` (``fabula.graph.service.migration``) types the story's checkpoints first,
then calls :func:`migrate_records`: what the story's slot lacks (the rosters of a story made
before rosters, :func:`~fabula.memory.roster.missing_roster`) is computed, then written
together with the new version in one transaction on the story's slot, so a story is either
still at its old version (run it again: nothing done twice) or whole at the new one.
"""

from __future__ import annotations

from dataclasses import dataclass

import redis.asyncio as aredis
from redis.exceptions import WatchError

from fabula.errors import Conflict, NotFound, Remedy
from fabula.memory import keys
from fabula.memory.connection import transaction
from fabula.memory.roster import missing_roster
from fabula.memory.schema import SCHEMA_FIELD, SCHEMA_VERSION, newer, stored_version
from fabula.memory.store import StoryStore


@dataclass(frozen=True)
class RecordsMigrated:
    """What :func:`migrate_records` did to one story."""

    story: str
    was: int
    """The version the story was stored at."""
    rosters: int = 0
    """How many characters' rosters (one per branch) were rebuilt."""


async def story_version(admin: aredis.Redis, story: str) -> int:
    """The schema version ``story`` is stored at; :class:`NotFound` if there is no story."""
    keys.check_id(story, "story")
    world, raw = await admin.hmget(keys.meta(story), ["world", SCHEMA_FIELD])
    if world is None:
        raise NotFound(f"story {story!r} does not exist", story=story)
    return stored_version(raw, story)


async def migrate_records(admin: aredis.Redis, story: str) -> RecordsMigrated:
    """Bring ``story``'s own keys to :data:`SCHEMA_VERSION` in one transaction (nothing if
    they are there already). Raises :class:`NotFound` for no story and :class:`Conflict`
    when the story changed while its missing parts were read (nothing is written then)."""
    was = await story_version(admin, story)
    if was > SCHEMA_VERSION:
        raise newer(story, was)
    if was == SCHEMA_VERSION:
        return RecordsMigrated(story, was)
    rosters = await _missing_rosters(admin, story)
    meta = keys.meta(story)
    async with transaction(admin, meta) as pipe:
        try:
            await pipe.watch(meta, *rosters)
            if stored_version(await pipe.hget(meta, SCHEMA_FIELD), story) >= SCHEMA_VERSION:
                return RecordsMigrated(story, SCHEMA_VERSION)  # migrated meanwhile
            pipe.multi()
            for key, roster in rosters.items():
                pipe.hset(key, mapping=roster)
            pipe.hset(meta, SCHEMA_FIELD, str(SCHEMA_VERSION))
            await pipe.execute()
        except WatchError:
            raise Conflict(
                f"story {story!r} changed while it was being migrated; nothing was written",
                story=story,
                remedy=Remedy("migrate_story", {"story": story}),
            ) from None
    return RecordsMigrated(story, was, rosters=len(rosters))


async def _missing_rosters(admin: aredis.Redis, story: str) -> dict[str, dict[str, str]]:
    """Every missing roster of the story (each branch, each character), by its key."""
    store = StoryStore(admin, story)
    out: dict[str, dict[str, str]] = {}
    for branch in await store.branches():
        for character in await store.characters():
            roster = await missing_roster(admin, story, character, branch)
            if roster:
                out[keys.known_entities(story, branch, character)] = roster
    return out
