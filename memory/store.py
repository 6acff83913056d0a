"""The story store: creation, atomic idempotent commits, forks, and raw reads.

One :class:`StoryStore` addresses one branch of one story. ``commit`` sends the whole delta
in one Redis function call (one round trip); the function checks turn order, idempotency
and every reference before its first write, so a delta is committed whole or not at all.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import json
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import redis.asyncio as aredis
from pydantic import BaseModel
from redis.asyncio.lock import Lock
from redis.exceptions import RedisError, ResponseError, WatchError

from fabula.errors import (
    Conflict,
    FabulaError,
    InvalidDelta,
    InvalidInput,
    NotFound,
    StoryDeleted,
    StoryExists,
    TurnConflict,
)
from fabula.limits import Limits
from fabula.logs import get_logger
from fabula.memory import keys
from fabula.memory.connection import node_client, transaction
from fabula.memory.delta import TurnDelta
from fabula.memory.lineage import MAIN, Ancestor, Branch, branch_for
from fabula.memory.lua import fcall
from fabula.memory.payload import CommitCall, encode_commit
from fabula.memory.records import Entity, EntityKind, Event, event_turn, slug
from fabula.memory.rules import WorldRules
from fabula.memory.schema import SCHEMA_FIELD, SCHEMA_VERSION, check_version, stored_version
from fabula.memory.server.disk import FULL_REASONS, disk_error
from fabula.memory.settle import Status, send_commit
from fabula.memory.validate import validate_delta

log = get_logger(__name__)


@dataclass(frozen=True)
class CommitResult:
    """The outcome of a commit: ``committed`` (written) or ``duplicate`` (already there, a
    no-op)."""

    turn: int
    status: Status


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


async def list_stories(client: aredis.Redis) -> list[str]:
    """Every story id on this server, sorted."""
    return sorted(await client.smembers(keys.STORIES))


def _meta_fields(
    title: str,
    rules: WorldRules | None,
    pack: BaseModel | None,
    origin: str | None,
    assets: Mapping[str, bytes] | None,
    *,
    unfinished: bool,
) -> dict[str, str]:
    """A new story's record beside its world: its title, when it was made, whether it is
    unfinished, its rules, and its pack, origin and assets where it has them."""
    return {
        "title": title,
        "created_at": f"{time.time():.3f}",
        **({"unfinished": "1"} if unfinished else {}),  # until finish() is called
        "rules": (rules or WorldRules()).model_dump_json(),
        **(_pack_fields(pack.model_dump_json()) if pack is not None else {}),
        **({"origin": origin} if origin is not None else {}),
        **({"assets": _assets_json(assets)} if assets else {}),
    }


def _pack_fields(document: str) -> dict[str, str]:
    return {"pack": document, "pack_digest": hashlib.sha256(document.encode()).hexdigest()}


def _assets_json(assets: Mapping[str, bytes]) -> str:
    return json.dumps({k: base64.b64encode(v).decode("ascii") for k, v in assets.items()})


def _payload_bytes(limit: int, *parts: str) -> int:
    chars = sum(len(p) for p in parts)
    # encoding megabytes to count bytes costs time: only when non-ASCII could tip the balance
    return chars if chars * 4 <= limit else sum(len(p.encode()) for p in parts)


DECISION_LOCK_S = 15.0
"""How long a decision's lock outlives its holder's last renewal (see ``decision_lock``)."""


def _waitaof_refusal(exc: Exception) -> str:
    """Why the server refused the durable mark or ``WAITAOF``, in a person's words."""
    message = str(exc)
    if "appendonly is disabled" in message:
        return "the server keeps no append-only file (appendonly no)"
    if message.startswith("MISCONF"):  # committed in memory, not yet written: a disk error
        reason = message.partition("AOF file: ")[2].partition(" script:")[0] or message
        full = "the disk is full: " if reason in FULL_REASONS else ""
        return f"{full}Redis cannot write its append-only file ({reason})"
    return f"the server refused WAITAOF ({message})"


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


class StoryStore:
    """One branch of one story in Redis."""

    def __init__(
        self,
        client: aredis.Redis,
        story: str,
        branch: str = MAIN,
        *,
        limits: Limits | None = None,
        viewer: str | None = None,
        holders: Sequence[str] | None = None,
    ) -> None:
        self.client = client
        # a character's store (on its own connection): its entities are what it knows of
        self.viewer = viewer
        # a scene's store: the only characters whose minds a turn read through it can touch
        self.holders: tuple[str, ...] | None = None if holders is None else tuple(holders)
        self.limits = limits or Limits()
        self.story = keys.check_id(story, "story")
        self.branch = keys.check_id(branch, "branch")
        self._layout = keys.commit_layout(story, branch)
        self._layout_json = json.dumps(self._layout)
        self._ancestry: list[Ancestor] | None = None

    def on_branch(self, branch: str) -> StoryStore:
        """The same story, another branch."""
        return StoryStore(
            self.client,
            self.story,
            branch,
            limits=self.limits,
            viewer=self.viewer,
            holders=self.holders,
        )

    def for_scene(self, cast: Sequence[str]) -> StoryStore:
        """The same branch, for a scene whose ``cast`` is everyone there: a turn read
        through it reads the prior minds of ``cast`` only (:func:`fabula.memory.ingest.
        read_prior`), so its cost grows with the scene, not with the story. Only for a
        turn whose every witness is in ``cast`` (a tick's scene, whose delta is confined
        to its cast): a mind left unread is taken to hold nothing."""
        scoped = StoryStore(
            self.client,
            self.story,
            self.branch,
            limits=self.limits,
            viewer=self.viewer,
            holders=cast,
        )
        scoped._ancestry = self._ancestry  # the same branch: what was read of it holds
        return scoped

    # -- lifecycle ------------------------------------------------------------------
    async def exists(self) -> bool:
        """Whether the story exists (any branch)."""
        return bool(await self.client.exists(keys.meta(self.story)))

    async def outdated(self) -> bool:
        """Whether the story exists and was stored by an older Fabula (see
        :mod:`fabula.memory.schema`): :meth:`require` refuses it."""
        world, schema = await self.client.hmget(keys.meta(self.story), ["world", SCHEMA_FIELD])
        return world is not None and stored_version(schema, self.story) < SCHEMA_VERSION

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
        character's voice exemplars the same way (``CharacterMind.voice``). Raises
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
                mapping=_meta_fields(title, rules, pack, origin, assets, unfinished=unfinished),
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

    async def voice(self, character: str) -> str | None:
        """``character``'s voice document (see :meth:`create`), as the author reads it; None
        if it has none. A character reads its own through ``CharacterMind.voice``."""
        raw: str | None = await self.client.get(keys.mind_voice(self.story, character))
        return raw

    async def finish(self) -> None:
        """Mark the story whole: its maker has committed all it meant to (the pack's opening,
        the characters' users). Until then :meth:`unfinished` says so, and a story whose
        maker was killed midway is refused rather than continued without its opening."""
        await self.client.hdel(keys.meta(self.story), "unfinished")

    async def unfinished(self) -> bool:
        """Whether the story was left unfinished by its maker (created, never marked whole;
        a story made before the mark existed is whole)."""
        fields = ["unfinished", "created_at"]
        marked, created = await self.client.hmget(keys.meta(self.story), fields)
        # no creation time: its maker stopped before it wrote even that
        return marked is not None or (created is None and await self.exists())

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
        world, title, created, origin = await self.client.hmget(
            keys.meta(self.story), ["world", "title", "created_at", "origin"]
        )
        return StoryInfo(
            self.story,
            world,
            title or self.story,
            None if created is None else float(created),
            origin,
        )

    async def played(self) -> list[str]:
        """The ids of the characters a person plays in this story (sorted; none: []).

        Kept with the story, for every branch: a played character's part of each turn is
        written by a person, not proposed by the engine (see ``fabula.graph.nodes``)."""
        raw = await self.client.hget(keys.meta(self.story), "played")
        return sorted(json.loads(raw)) if raw else []

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
                pipe.hset(meta, mapping=_pack_fields(document))
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

    async def assets(self) -> dict[str, bytes]:
        """The files the story was created with (imported pictures), by name; kept apart
        from the pack so that no snapshot reads them."""
        raw = await self.client.hget(keys.meta(self.story), "assets")
        if raw is None:
            return {}
        return {k: base64.b64decode(v) for k, v in json.loads(raw).items()}

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

    # -- branches -------------------------------------------------------------------
    async def ancestry(self) -> list[Ancestor]:
        """This branch's ancestors, nearest first (cached: a branch's parentage never changes).

        Raises :class:`NotFound` if the branch (or one on its way to main) does not exist.
        """
        if self._ancestry is None:
            chain: list[Ancestor] = []
            branch = self.branch
            through: int | None = None
            while branch != MAIN:
                raw = await self.client.hget(keys.branches(self.story), branch)
                if raw is None:
                    raise NotFound(
                        f"story {self.story!r} has no branch {branch!r}",
                        story=self.story,
                        branch=branch,
                    )
                info = Branch.from_stored(branch, raw)
                parent, fork_turn = info.parent or MAIN, info.fork_turn or 0
                # a grandparent is read only up to the earliest fork on the way to it
                through = fork_turn if through is None else min(through, fork_turn)
                chain.append(Ancestor(parent, through))
                branch = parent
            self._ancestry = chain
        return self._ancestry

    async def branch_for(self, turn: int) -> str:
        """The branch that holds ``turn`` as this branch sees it (see :func:`branch_for`)."""
        return branch_for(self.branch, await self.ancestry(), turn)

    async def branches(self) -> dict[str, Branch]:
        """Every branch of the story by name, main first, with its parent and fork turn."""
        raw = await self.client.hgetall(keys.branches(self.story))
        out = {MAIN: Branch(MAIN)}
        out.update({name: Branch.from_stored(name, v) for name, v in sorted(raw.items())})
        return out

    # -- commit ---------------------------------------------------------------------
    async def commit(
        self, delta: TurnDelta, *, usage: Mapping[str, Mapping[str, object]] | None = None
    ) -> CommitResult:
        """Commit one turn atomically and idempotently (one round trip).

        ``usage``, the model usage that made the turn (by role: tokens, calls, retries), is
        written in the same call (see :meth:`turn_usage`); a duplicate leaves the first's.

        The same turn sent twice is a no-op (``status='duplicate'``); a turn that is not the
        next one, or a committed turn re-sent with other content, raises
        :class:`TurnConflict`; an invalid delta raises :class:`InvalidDelta`. Either way
        nothing is written. A text or payload above :attr:`limits` raises
        :class:`LimitExceeded` before anything is sent. A lost reply is settled with the
        server (see :func:`~fabula.memory.settle.send_commit`): ``committed`` if the turn is in with
        this digest, else :class:`CommitFailed`, after which this attempt can no longer
        commit (a call still on its way is refused).
        """
        call = await self.prepare_commit(delta, usage=usage)

        async def send() -> Status:
            reply = await fcall(self.client, "fabula_commit", call.keys, call.args)
            return "duplicate" if reply == "duplicate" else "committed"  # the function's 'ok'

        try:
            status = await send_commit(
                self.client,
                send,
                call,
                story=self.story,
                branch=self.branch,
            )
        except ResponseError as exc:
            raise self._translate(exc, delta.turn) from None
        return CommitResult(turn=delta.turn, status=status)

    async def prepare_commit(
        self, delta: TurnDelta, *, usage: Mapping[str, Mapping[str, object]] | None = None
    ) -> CommitCall:
        """The ``fabula_commit`` call :meth:`commit` sends for ``delta``: checked against
        :attr:`limits` and validated (raising as :meth:`commit` does, nothing sent), as a new
        attempt (see :mod:`fabula.memory.payload`)."""
        where = {"story": self.story, "branch": self.branch, "turn": delta.turn}
        self.limits.check_text(delta.text, **where)
        refs = validate_delta(delta)
        ancestry = await self.ancestry()
        turn_key = keys.turns(self.story, branch_for(self.branch, ancestry, delta.turn))
        call = encode_commit(
            delta,
            refs,
            layout=self._layout_json,
            head_key=self._layout["head"],
            turn_key=turn_key,
            fence_key=keys.fence(self.story, self.branch, delta.turn),
            events_of=lambda turn: keys.events(self.story, branch_for(self.branch, ancestry, turn)),
            committed_at=time.time(),
            usage=usage,
        )
        size = _payload_bytes(self.limits.delta_bytes, call.header, call.records)
        self.limits.check_delta(size, **where)
        return call

    async def make_durable(self, turn: int, timeout_ms: int = 4000) -> str | None:
        """Wait until the server has fsynced its append-only file past ``turn``'s commit.

        Returns None once the server confirms it, else why it did not: the server has no
        append-only file, refused, did not confirm within ``timeout_ms``, or could not be
        asked (the turn is committed either way; it is only not known to be on disk).

        ``WAITAOF`` waits for the writes of the connection it is sent on, so a small write
        (the head's ``durable`` mark) goes first on the same connection: the file is
        written in order, so once that write is on disk the commit before it is too.
        """
        node = node_client(self.client, self._layout["head"])  # a cluster: the key's primary
        try:
            async with (node or self.client).pipeline(transaction=False) as pipe:
                pipe.hset(self._layout["head"], "durable", turn)
                pipe.execute_command("WAITAOF", 1, 0, timeout_ms)
                marked, confirmed = await pipe.execute(raise_on_error=False)
        except RedisError as exc:
            return self._not_durable(turn, f"the server could not be asked ({exc})")
        finally:
            if node is not None:
                await node.aclose()
        for answer in (marked, confirmed):
            if isinstance(answer, Exception):
                return self._not_durable(turn, _waitaof_refusal(answer))
        if int(confirmed[0]) < 1:
            return self._not_durable(turn, f"the server did not fsync within {timeout_ms} ms")
        return None

    def _not_durable(self, turn: int, reason: str) -> str:
        # the caller reports it (the command line, the studio): a log line at info only
        log.info("commit_not_fsynced", story=self.story, turn=turn, reason=reason)
        return reason

    def translate_refusal(self, exc: ResponseError, turn: int) -> FabulaError:
        """The error of a commit the server refused (``exc``) at ``turn``, in Fabula's
        hierarchy (also for a tick's commit, :mod:`fabula.memory.ticks`)."""
        return self._translate(exc, turn)

    def _translate(self, exc: ResponseError, turn: int) -> FabulaError:
        disk = disk_error(exc, self.client, turn, story=self.story, branch=self.branch)
        if disk is not None:
            return disk
        message = str(exc)
        if message.startswith("FABULA_INVALID "):
            field, _, detail = message.removeprefix("FABULA_INVALID ").partition(" ")
            return InvalidDelta(
                f"{field}: {detail}", story=self.story, branch=self.branch, turn=turn, field=field
            )
        if message.startswith("FABULA_DELETED "):
            return self.deleted_error(meanwhile=True)
        if message.startswith("FABULA_CONFLICT "):
            return TurnConflict(
                message.removeprefix("FABULA_CONFLICT "),
                story=self.story,
                branch=self.branch,
                turn=turn,
            )
        return FabulaError(f"redis refused the commit: {message}", story=self.story, turn=turn)

    # -- raw reads ------------------------------------------------------------------
    async def head(self) -> int:
        """The last committed turn of this branch (-1 if none)."""
        raw = await self.client.hget(self._layout["head"], "turn")
        return -1 if raw is None else int(raw)

    async def entities(self, as_of: int | None = None) -> dict[str, Entity]:
        """Every entity of the story (introduced by turn ``as_of``, if given), by id; for a
        character's store (``viewer``), the entities it knows of (:meth:`known_entities`)."""
        if self.viewer is not None:
            return await self.known_entities(self.viewer, as_of)
        raw = await self.client.hgetall(keys.entities(self.story))
        out = {k: _entity(v) for k, v in raw.items()}
        if as_of is not None:
            out = {k: e for k, e in out.items() if e.introduced <= as_of}
        return out

    async def known_entities(self, character: str, as_of: int | None = None) -> dict[str, Entity]:
        """The entities ``character`` knows of on this branch (by turn ``as_of``, if given),
        by id: those its beliefs and the events it witnessed name, and the pack's places and
        cast; read from its own mind, so a character's connection may read it."""
        raw = await self.client.hgetall(keys.known_entities(self.story, self.branch, character))
        out: dict[str, Entity] = {}
        for ident, value in raw.items():
            known_from, entity = _known_entity(value)
            if as_of is None or known_from <= as_of:
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

    async def turn_usage(self) -> dict[int, dict[str, dict[str, object]]]:
        """The model usage of every turn of this branch that has one, by turn (written with
        the turn, by :meth:`commit`)."""
        raw = await self.client.hgetall(keys.usage(self.story, self.branch))
        return {int(turn): json.loads(raw[turn]) for turn in sorted(raw, key=int)}

    async def add_background_usage(self, by_role: Mapping[str, Mapping[str, int | str]]) -> None:
        """Count model usage made for this branch outside its turns (the summaries step,
        which runs after consolidation): each count is added with HINCRBY, so runs in any
        number of processes add up; a role's model is the last one named."""
        key = keys.background_usage(self.story, self.branch)
        async with self.client.pipeline(transaction=False) as pipe:
            for role, usage in by_role.items():
                for name, value in usage.items():
                    if isinstance(value, int) and value:
                        pipe.hincrby(key, f"{role}|{name}", value)
                    elif isinstance(value, str) and value:
                        pipe.hset(key, f"{role}|{name}", value)
            await pipe.execute()

    async def background_usage(self) -> dict[str, dict[str, int | str]]:
        """The model usage of this branch's work outside its turns, by role (see
        :meth:`add_background_usage`)."""
        raw = await self.client.hgetall(keys.background_usage(self.story, self.branch))
        out: dict[str, dict[str, int | str]] = {}
        for field, value in sorted(raw.items()):
            role, _, name = field.partition("|")
            out.setdefault(role, {})[name] = value if name == "model" else int(value)
        return out

    def decision_lock(self, turn: int, wait_s: float = 60.0) -> Lock:
        """A lock on deciding ``turn`` of this branch, shared by every process.

        Held while one approval, edit or rejection resumes the turn, so two decisions never
        resume it at once; a second waits up to ``wait_s`` (then ``LockError``). It lives
        :data:`DECISION_LOCK_S` seconds unless its holder renews it
        (:func:`fabula.memory.leases.renewed`), so a holder that dies frees it that soon.
        """
        return Lock(
            self.client,
            keys.decision_lock(self.story, self.branch, turn),
            timeout=DECISION_LOCK_S,
            blocking_timeout=wait_s,
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
