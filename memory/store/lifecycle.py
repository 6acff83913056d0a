"""The store's lifecycle: :class:`Lifecycle`, a story made (its record, its setup turn, its
pack and its characters' own documents), marked whole, and deleted.

Creation claims the story's record first (one transaction, so two makers never both
succeed), then commits turn 0 through the commit path (:mod:`fabula.memory.store.commits`)
and writes the rest; anything that fails undoes it. Deletion marks the story deleted
first, so the commit function refuses its turns from then on, and a process still writing
it notices (:meth:`~fabula.memory.store.reads.RecordReads.was_deleted`) and removes what
it wrote; a background write checks the same with :meth:`Lifecycle.watch_alive`.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel
from redis.exceptions import WatchError

from fabula.errors import InvalidDelta, InvalidInput, StoryExists
from fabula.memory import keys
from fabula.memory.connection import transaction
from fabula.memory.delta import TurnDelta
from fabula.memory.lineage import MAIN
from fabula.memory.rules import WorldRules
from fabula.memory.schema import SCHEMA_FIELD, SCHEMA_VERSION
from fabula.memory.store.commits import Commits
from fabula.memory.store.pack import assets_json, pack_fields
from fabula.memory.validate import validate_delta


def _meta_fields(
    title: str,
    rules: WorldRules | None,
    pack: BaseModel | None,
    origin: str | None,
    assets: Mapping[str, bytes] | None,
    *,
    unfinished: bool,
    mode: str,
) -> dict[str, str]:
    """A new story's record beside its world: its title, when it was made, whether it is
    unfinished, how it advances, its rules, and its pack, origin and assets where it has
    them."""
    return {
        "title": title,
        "mode": mode,
        "created_at": f"{time.time():.3f}",
        **({"unfinished": "1"} if unfinished else {}),  # until finish() is called
        "rules": (rules or WorldRules()).model_dump_json(),
        **(pack_fields(pack.model_dump_json()) if pack is not None else {}),
        **({"origin": origin} if origin is not None else {}),
        **({"assets": assets_json(assets)} if assets else {}),
    }


class Lifecycle(Commits):
    """Creating this story (on its main branch), marking it whole, and deleting it."""

    async def create(
        self,
        setup: TurnDelta,
        *,
        world: str,
        title: str,
        rules: WorldRules | None = None,
        pack: BaseModel | None = None,
        origin: str | None = None,
        assets: Mapping[str, bytes] | None = None,
        unfinished: bool = False,
        lore: Mapping[str, str] | None = None,
        voices: Mapping[str, str] | None = None,
        mode: str = "narrative",
    ) -> None:
        """Create the story and commit its setup (turn 0). Refuses an existing story.

        ``unfinished``: the maker has more to commit before the story may be continued
        (an opening); it is marked so until :meth:`finish`.

        ``rules`` are the world's rules of knowledge (see :mod:`fabula.memory.rules`), kept
        with the story so every process that extends it applies the same ones; ``pack`` is
        the world pack it was made from (kept as a document, see
        :meth:`~fabula.memory.snapshot.Snapshot.pack_as`); ``assets`` the files it came with
        (an imported character's picture: see :meth:`assets`); ``lore`` each character's
        own lore, by character id (a document, written into that character's keyspace,
        read back only by its own Redis user: see ``CharacterMind.lore``); ``voices`` each
        character's voice exemplars the same way (``CharacterMind.voice``); ``mode`` how the
        interfaces advance it (``narrative``: a scene a turn; ``ticks``: every place at once,
        see :attr:`StoryInfo.mode`). Raises
        :class:`StoryExists` for an existing story and :class:`InvalidDelta` for a setup
        that does not validate; either way nothing is written.
        """
        if self.branch != MAIN:
            raise InvalidInput("a story is created on its main branch", story=self.story)
        if setup.turn != 0:
            raise InvalidDelta("the setup delta is turn 0", field="turn", turn=setup.turn)
        validate_delta(setup)
        for character in [*(lore or {}), *(voices or {})]:
            keys.check_id(character, "character")
        if not await self._claim(world):
            raise StoryExists(f"story {self.story!r} already exists", story=self.story)
        try:
            await self.client.delete(keys.deleted(self.story))  # made again: its turns go in
            await self.commit(setup)
            await self.client.hset(
                keys.meta(self.story),
                mapping=_meta_fields(
                    title, rules, pack, origin, assets, unfinished=unfinished, mode=mode
                ),
            )
            for character, document in (lore or {}).items():
                await self.client.set(keys.mind_lore(self.story, character), document)
            for character, document in (voices or {}).items():
                await self.client.set(keys.mind_voice(self.story, character), document)
        except BaseException:
            # never made (a setup refused, a pack that does not serialise, a write that
            # failed): what was written goes, not marked deleted, and the error is raised
            with contextlib.suppress(Exception):
                await self.delete(mark=False)
            raise
        # the list of stories is one key outside every story's slot: written after the story
        await self.client.sadd(keys.STORIES, self.story)

    async def _claim(self, world: str) -> bool:
        """Write the story's record (its world and :data:`SCHEMA_VERSION`) in one step
        unless it exists; whether it was written."""
        meta = keys.meta(self.story)
        async with transaction(self.client, meta) as pipe:
            try:
                await pipe.watch(meta)
                if await pipe.exists(meta):
                    return False
                pipe.multi()
                pipe.hset(meta, mapping={"world": world, SCHEMA_FIELD: str(SCHEMA_VERSION)})
                await pipe.execute()
            except WatchError:  # made meanwhile by another command
                return False
        return True

    async def finish(self) -> None:
        """Mark the story whole: its maker has committed all it meant to (the pack's opening,
        the characters' users). Until then :meth:`unfinished` says so, and a story whose
        maker was killed midway is refused rather than continued without its opening."""
        await self.client.hdel(keys.meta(self.story), "unfinished")

    async def delete(self, *, mark: bool = True) -> int:
        """Delete every key of the story (all branches, all minds). Returns keys removed.

        The story is marked deleted first (:func:`keys.deleted`, for :data:`keys.DELETED_S`):
        from then on the commit function refuses its turns, so a process writing the story
        meanwhile commits nothing more, and when it notices (:meth:`was_deleted`) it calls
        this again to remove what it wrote after the deletion (an index, a checkpoint).
        Without ``mark`` (a creation undone), or for no story, nothing is marked."""
        tombstone = keys.deleted(self.story)
        if mark and await self.exists():
            await self.client.set(tombstone, f"{time.time():.3f}", ex=keys.DELETED_S)
        removed = 0
        batch: list[str] = []
        # a command per thousand keys, not per key (one story's keys share one slot)
        async for key in self.client.scan_iter(match=keys.story_pattern(self.story), count=1000):
            if key == tombstone:
                continue
            batch.append(key)
            if len(batch) >= 1000:
                removed += await self.client.delete(*batch)
                batch = []
        if batch:
            removed += await self.client.delete(*batch)
        await self.client.srem(keys.STORIES, self.story)
        return removed

    async def watch_alive(self, pipe: Any) -> None:
        """``WATCH`` the story's record and deletion mark on ``pipe`` (a transaction on the
        story's slot, before its ``MULTI``), then raise :class:`StoryDeleted` if the story is
        gone or marked deleted: a background write (consolidation, a summary's bookkeeping) that
        goes on writes nothing into a deleted story, since a deletion after this check
        aborts its transaction (the mark is set, the record removed)."""
        meta, mark = keys.meta(self.story), keys.deleted(self.story)
        await pipe.watch(meta, mark)
        if await pipe.exists(mark) or not await pipe.exists(meta):
            raise self.deleted_error(meanwhile=True)
