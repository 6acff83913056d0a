"""The store's pack view: what a story keeps of its world pack beside its turns — the pack
document and its digest, the world's rules of knowledge, the files it came with, each
character's voice document, and which characters a person plays.

:class:`PackReads` reads them (every role and the service's read side do);
:class:`PackWrites` changes the two a story's settings may change after its creation (its
World Info settings, kept in its pack, and who is played). The whole pack is written once,
when the story is created (:mod:`fabula.memory.store.lifecycle`).
"""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Iterable, Mapping

from redis.exceptions import WatchError

from fabula.errors import Conflict, NotFound
from fabula.memory import keys
from fabula.memory.connection import transaction
from fabula.memory.rules import WorldRules
from fabula.memory.store.handle import StoreHandle
from fabula.memory.store.reads import RecordReads


def pack_fields(document: str) -> dict[str, str]:
    """The story record's fields for a pack ``document``: it and its SHA-256."""
    return {"pack": document, "pack_digest": hashlib.sha256(document.encode()).hexdigest()}


def assets_json(assets: Mapping[str, bytes]) -> str:
    """The story record's field for the files it came with, by name (base64 in JSON)."""
    return json.dumps({k: base64.b64encode(v).decode("ascii") for k, v in assets.items()})


class PackReads(StoreHandle):
    """The story's pack, rules, files, voices and played characters, as stored."""

    async def pack_document(self) -> str | None:
        """The world pack the story was created with, as stored (JSON), or None."""
        raw: str | None = await self.client.hget(keys.meta(self.story), "pack")
        return raw

    async def pack_digest(self) -> str | None:
        """The SHA-256 of :meth:`pack_document` (hex), kept beside it when the story was
        created (a pack is written once), so that what was read from the pack can be
        reused without reading it again; None without a pack (or from before digests)."""
        raw: str | None = await self.client.hget(keys.meta(self.story), "pack_digest")
        return raw

    async def rules(self) -> WorldRules:
        """The world's rules of knowledge stored with the story (the defaults if none)."""
        raw = await self.client.hget(keys.meta(self.story), "rules")
        return WorldRules() if raw is None else WorldRules.model_validate_json(raw)

    async def assets(self) -> dict[str, bytes]:
        """The files the story was created with (imported pictures), by name; kept apart
        from the pack so that no snapshot reads them."""
        raw = await self.client.hget(keys.meta(self.story), "assets")
        if raw is None:
            return {}
        return {k: base64.b64decode(v) for k, v in json.loads(raw).items()}

    async def voice(self, character: str) -> str | None:
        """``character``'s voice document (see :meth:`create`), as the author reads it; None
        if it has none. A character reads its own through ``CharacterMind.voice``."""
        raw: str | None = await self.client.get(keys.mind_voice(self.story, character))
        return raw

    async def played(self) -> list[str]:
        """The ids of the characters a person plays in this story (sorted; none: []).

        Kept with the story, for every branch: a played character's part of each turn is
        written by a person, not proposed by the engine (see ``fabula.graph.nodes``)."""
        raw = await self.client.hget(keys.meta(self.story), "played")
        return sorted(json.loads(raw)) if raw else []


class PackWrites(RecordReads):
    """The changes a story's settings take after its creation: who is played, and the
    pack's World Info settings."""

    async def set_played(self, characters: Iterable[str]) -> None:
        """Make ``characters`` (ids of this story's characters) the ones a person plays;
        an empty set plays none. Raises :class:`NotFound` for an unknown story or
        character; nothing is written then."""
        await self.require()
        wanted = sorted(set(characters))
        cast = set(await self.characters())
        unknown = [c for c in wanted if c not in cast]
        if unknown:
            raise NotFound(
                f"story {self.story!r} has no character {unknown[0]!r} (its characters: "
                f"{', '.join(sorted(cast))})",
                story=self.story,
            )
        if wanted:
            await self.client.hset(keys.meta(self.story), "played", json.dumps(wanted))
        else:
            await self.client.hdel(keys.meta(self.story), "played")

    async def replace_pack(
        self, digest: str, document: str, lore: Mapping[str, str | None]
    ) -> None:
        """Replace the story's pack document, whose digest was ``digest`` when it was read,
        with ``document``, and the named characters' own lore documents with ``lore``'s (by
        character id; None: it has none now), all in one transaction: a change of the
        story's settings kept in its pack (its World Info settings), which every reader
        then reads. Raises :class:`Conflict` when the pack changed since it was read, and
        nothing is written then."""
        meta = keys.meta(self.story)
        for character in lore:
            keys.check_id(character, "character")
        async with transaction(self.client, meta) as pipe:
            try:
                await pipe.watch(meta)
                if await pipe.hget(meta, "pack_digest") != digest:
                    raise Conflict(
                        "the story's pack changed meanwhile: read it again", story=self.story
                    )
                pipe.multi()
                pipe.hset(meta, mapping=pack_fields(document))
                for character, own in lore.items():
                    if own is None:
                        pipe.delete(keys.mind_lore(self.story, character))
                    else:
                        pipe.set(keys.mind_lore(self.story, character), own)
                await pipe.execute()
            except WatchError:
                raise Conflict(
                    "the story's pack changed meanwhile: read it again", story=self.story
                ) from None
