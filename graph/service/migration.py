"""``fabula migrate``: a story stored by an older Fabula brought up to date, once.

A story records the version of its shape (:mod:`fabula.memory.schema`); every door to it
refuses an older one, so nothing on a hot path reads an old shape. :func:`migrate_story`
brings one story to :data:`~fabula.memory.schema.SCHEMA_VERSION` and its checkpoints to
the checkpointer's own version, each store migrating itself:

0. the checkpointer's own migration (``RedisCheckpointSaver.amigrate``, its ``MIGRATIONS``
   in :mod:`fabula.graph.checkpoint.migrations`), for every story, whatever its schema;
1. for a story of schema 1, its turns' checkpoints are typed in place
   (:func:`type_checkpoints`): a checkpoint written before the turn's values were typed
   holds plain JSON (``model_dump()`` dicts, proposals keyed by ``str(attempt)``, an
   approval payload whose ``delta`` was the preview and whose ``turn_delta`` the delta,
   ``{}`` for no value); each such value is validated into its type and stored again, one
   transaction per thread, and a typed value is left as it is;
2. its own keys (:func:`~fabula.memory.migrate.migrate_records`): the missing rosters
   rebuilt and the new version written, in one transaction on the story's slot.

Each step does nothing twice, so a migration stopped midway is finished by running it
again; until the second step the story keeps its old version and stays refused.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import redis.asyncio as aredis
from langgraph.checkpoint.serde.base import SerializerProtocol
from langgraph.types import Interrupt, Send
from pydantic import TypeAdapter, ValidationError

from fabula.agents.contracts import CharacterBrief, Decision, Draft, Finding, Proposal, TurnPlan
from fabula.errors import FabulaError, InvalidInput
from fabula.graph.checkpoint import RedisCheckpointSaver, RegistrySerializer
from fabula.graph.checkpoint.batches import pack, unpack
from fabula.graph.checkpoint.keys import THREADS, ThreadKeys
from fabula.graph.checkpoint.migrations import CheckpointsMigrated
from fabula.graph.state import CHECKPOINT_TYPES, ApprovalRequest, Preview
from fabula.graph.threads import story_threads
from fabula.memory.connection import connect_async, transaction
from fabula.memory.delta import TurnDelta
from fabula.memory.migrate import migrate_records, story_version
from fabula.memory.schema import SCHEMA_VERSION, newer
from fabula.memory.store import list_stories


@dataclass(frozen=True)
class Migrated:
    """What :func:`migrate_story` did to one story, in each store (:meth:`line` says it)."""

    story: str
    was: int
    """The version the story was stored at."""
    checkpoints: CheckpointsMigrated
    """What the checkpointer's own migration did to the story's threads."""
    values: int = 0
    """How many checkpoint values (and pending writes) were typed."""
    rosters: int = 0
    """How many characters' rosters (one per branch) were rebuilt."""

    def line(self) -> str:
        """One line for the person who ran the migration: the story's store, then the
        checkpointer's."""
        if self.was >= SCHEMA_VERSION:
            story = f"already at schema {SCHEMA_VERSION}"
        else:
            story = (
                f"schema {self.was} -> {SCHEMA_VERSION} ({self.values} checkpoint "
                f"value{'' if self.values == 1 else 's'} typed, {self.rosters} "
                f"roster{'' if self.rosters == 1 else 's'} rebuilt)"
            )
        return f"{self.story}: {story}; {self.checkpoints.line()}"


async def migrate_stories(
    url: str, stories: Sequence[str] | None
) -> AsyncIterator[tuple[str, Migrated | FabulaError]]:
    """Migrate ``stories`` (None: every story on the server at ``url``), one after the
    other: each story's :class:`Migrated`, or the error that stopped it (the others go on)."""
    admin = connect_async(url)
    raw = connect_async(url, decode_responses=False)
    saver = RedisCheckpointSaver(raw, raw, serde=RegistrySerializer(CHECKPOINT_TYPES))
    try:
        for story in await list_stories(admin) if stories is None else stories:
            try:
                yield story, await migrate_story(admin, raw, saver, story)
            except FabulaError as exc:
                yield story, exc
            except _UNREADABLE as exc:  # stored data no reader here makes sense of
                yield story, unreadable(story, exc)
    finally:
        await raw.aclose()
        await admin.aclose()


async def migrate_story(
    admin: aredis.Redis, raw: aredis.Redis, saver: RedisCheckpointSaver, story: str
) -> Migrated:
    """Bring ``story`` to :data:`SCHEMA_VERSION` and its checkpoints to the checkpointer's
    version (see the module): each store migrates itself. ``admin`` answers text, ``raw``
    bytes (the saver's client).

    Raises :class:`~fabula.errors.NotFound` for no story, :class:`~fabula.errors.Conflict`
    for a story (or a thread of it) stored by a newer Fabula or changed meanwhile, and
    :class:`InvalidInput` naming the story and the checkpoint for a value that cannot be
    typed (nothing of that thread is written)."""
    was = await story_version(admin, story)
    if was > SCHEMA_VERSION:
        raise newer(story, was)
    checkpoints = await saver.amigrate(prefix=story_threads(story))
    if was == SCHEMA_VERSION:
        return Migrated(story, was, checkpoints)
    values = await type_checkpoints(raw, saver.serde, story)
    records = await migrate_records(admin, story)
    return Migrated(story, was, checkpoints, values=values, rosters=records.rosters)


# what reading a stored value that is not what this Fabula wrote raises: a field that is no
# number, a checkpoint that does not unpack or decode, a value missing its parts
_UNREADABLE = (ValueError, TypeError, KeyError, IndexError, AttributeError)


def unreadable(story: str, exc: BaseException) -> InvalidInput:
    """The one-line report of ``story``, whose stored data could not be read (``exc``):
    nothing of it was written; ``migrate --all`` goes on with the next story."""
    detail = str(exc).splitlines()[0][:160] if str(exc) else type(exc).__name__
    return InvalidInput(
        f"story {story!r} cannot be migrated: its stored data cannot be read ({detail}); "
        "nothing of it was written",
        story=story,
    )


async def type_checkpoints(client: aredis.Redis, serde: SerializerProtocol, story: str) -> int:
    """Type every untyped value of ``story``'s checkpoints in place; how many were.

    Every thread is read and typed before anything is written: a story with one value it
    cannot read or type is refused whole, nothing of it written."""
    threads: list[tuple[str, list[tuple[str, bytes, bytes]]]] = []
    async for raw in client.sscan_iter(THREADS, match=f"{story}/*"):
        thread = raw.decode() if isinstance(raw, bytes) else raw
        codec = _Codec(serde, story, thread)
        threads.append((thread, await _typed_thread(client, codec, ThreadKeys(thread))))
    for _, updates in threads:
        if updates:  # every key of a thread shares its slot: one transaction each
            async with transaction(client, updates[0][0]) as pipe:
                for key, field, value in updates:
                    pipe.hset(key, field, value)
                await pipe.execute()
    return sum(len(updates) for _, updates in threads)


@dataclass(frozen=True)
class _Codec:
    """Reads and stores one thread's values as the saver does (:func:`pack`)."""

    serde: SerializerProtocol
    story: str
    thread: str

    def loads(self, raw: bytes) -> tuple[list[str], Any]:
        head, payload = unpack(raw)
        return head, self.serde.loads_typed((head[-1], payload))

    def dumps(self, head: list[str], value: Any) -> bytes:
        kind, payload = self.serde.dumps_typed(value)
        return pack([*head[:-1], kind], payload)

    def refused(self, where: str, exc: ValidationError) -> InvalidInput:
        first = exc.errors()[0]
        at = ".".join(str(p) for p in first["loc"])
        return InvalidInput(
            f"story {self.story!r} cannot be migrated: checkpoint {self.thread} {where}: "
            f"{at + ': ' if at else ''}{first['msg']}",
            story=self.story,
        )


async def _typed_thread(
    client: aredis.Redis, codec: _Codec, keys: ThreadKeys
) -> list[tuple[str, bytes, bytes]]:
    """One thread's checkpoints and pending writes typed: (key, field, value) to store."""
    updates: list[tuple[str, bytes, bytes]] = []
    for raw_ns in await client.smembers(keys.namespaces):
        ns = raw_ns.decode() if isinstance(raw_ns, bytes) else raw_ns
        for raw_id in await client.zrange(keys.index(ns), 0, -1):
            checkpoint = raw_id.decode() if isinstance(raw_id, bytes) else raw_id
            key = keys.checkpoint(ns, checkpoint)
            record = await client.hgetall(key)
            attempt = await _attempt(client, codec, keys, ns, record)
            for field, value in _typed_values(codec, checkpoint, record, attempt):
                updates.append((key, field, value))
            writes_key = keys.writes(ns, checkpoint)
            for field, value in _typed_writes(codec, checkpoint, await client.hgetall(writes_key)):
                updates.append((writes_key, field, value))
    return updates


async def _attempt(
    client: aredis.Redis, codec: _Codec, keys: ThreadKeys, ns: str, record: dict[bytes, bytes]
) -> int:
    """The turn's attempt at a checkpoint: stored in it, or in the one that owns it."""
    raw = record.get(b"value:attempt")
    if raw is None:
        owner = json.loads(record.get(b"owners") or b"{}").get("attempt")
        if owner is not None:
            raw = await client.hget(keys.checkpoint(ns, owner), "value:attempt")
    return 0 if raw is None else int(codec.loads(raw)[1])


def _typed_values(
    codec: _Codec, checkpoint: str, record: Mapping[bytes, bytes], attempt: int
) -> list[tuple[bytes, bytes]]:
    """The fields of a checkpoint's hash whose untyped value was typed, stored again."""
    out = []
    for field, raw in record.items():
        channel = field.decode().removeprefix("value:")
        if not field.startswith(b"value:") or channel not in _FIELDS:
            continue
        head, value = codec.loads(raw)
        if not _untyped(value):
            continue
        if channel == "proposals" and isinstance(value, dict):  # by str(attempt): this one's
            value = value.get(str(attempt), [])
        try:
            out.append((field, codec.dumps(head, _typed(channel, value))))
        except ValidationError as exc:
            raise codec.refused(f"{checkpoint} {channel}", exc) from None
    return out


def _typed_writes(
    codec: _Codec, checkpoint: str, stored: Mapping[bytes, bytes]
) -> list[tuple[bytes, bytes]]:
    """The pending writes of a checkpoint whose untyped value was typed, stored again: a
    channel's value, an old approval payload (an interrupt), a character's task (a send)."""
    out = []
    for field, raw in stored.items():
        head, value = codec.loads(raw)
        channel = head[1]
        try:
            new = _typed_write(channel, value)
        except ValidationError as exc:
            raise codec.refused(f"{checkpoint} write to {channel}", exc) from None
        if new is not value:
            out.append((field, codec.dumps(head, new)))
    return out


def _typed_write(channel: str, value: Any) -> Any:
    """``value`` written to ``channel``, typed; ``value`` itself when it was typed already."""
    if channel in _FIELDS and _untyped(value):
        if channel == "proposals" and isinstance(value, dict):  # one attempt's, by str(attempt)
            value = [p for ps in value.values() for p in ps]
        return _typed(channel, value)
    if isinstance(value, list | tuple) and any(isinstance(v, Interrupt) for v in value):
        new = [_typed_interrupt(v) if isinstance(v, Interrupt) else v for v in value]
        return value if all(a is b for a, b in zip(new, value, strict=True)) else type(value)(new)
    if isinstance(value, Send) and isinstance(value.arg, dict) and _untyped(value.arg.get("brief")):
        return Send(value.node, {**value.arg, "brief": _typed("brief", value.arg["brief"])})
    return value


def _typed_interrupt(intr: Interrupt) -> Interrupt:
    """An interrupt asking for an approval with an old payload (a dict), its request typed:
    ``delta`` (the preview) and ``turn_delta`` (the delta) land in ``preview`` and ``delta``;
    an empty ``{}`` is no value. A played character's question is left as it is."""
    data = intr.value
    if not isinstance(data, dict) or data.get("kind") == "part" or "draft" not in data:
        return intr
    if "turn_delta" in data:
        data = {**data, "preview": data.get("delta") or {}, "delta": data["turn_delta"]}
        data.pop("turn_delta")
    data = {k: v for k, v in data.items() if not (k in _EMPTY_IS_NONE and v == {})}
    return dataclasses.replace(intr, value=ApprovalRequest.model_validate(data))


_FIELDS: dict[str, TypeAdapter[Any]] = {
    "plan": TypeAdapter(TurnPlan),
    "briefs": TypeAdapter(dict[str, CharacterBrief]),
    "brief": TypeAdapter(CharacterBrief),
    "draft": TypeAdapter(Draft | None),
    "findings": TypeAdapter(list[Finding]),
    "draft_findings": TypeAdapter(list[Finding]),
    "preview": TypeAdapter(Preview | None),
    "delta": TypeAdapter(TurnDelta | None),
    "edit_refused": TypeAdapter(list[Finding] | None),
    "decision": TypeAdapter(Decision),
    "proposals": TypeAdapter(list[Proposal]),
}
"""The turn's values an untyped checkpoint held as plain JSON, and their types."""

_EMPTY_IS_NONE = ("draft", "preview", "delta", "plan")
"""Values an untyped checkpoint held as ``{}`` when they had none."""


def _untyped(value: Any) -> bool:
    """Whether ``value`` is plain JSON where a typed value belongs."""
    if isinstance(value, dict):
        return True
    return isinstance(value, list) and any(isinstance(v, dict) for v in value)


def _typed(channel: str, value: Any) -> Any:
    """``value`` of ``channel`` validated into its type (``{}`` is no value where it can be)."""
    return _FIELDS[channel].validate_python(
        None if value == {} and channel in _EMPTY_IS_NONE else value
    )
