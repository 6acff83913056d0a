"""A LangGraph checkpointer on plain Redis 8: hashes, sorted sets and sets, nothing else.

No RedisJSON and no RediSearch: the embedded server is a bare Redis, so the layout below is
built from core types only, and metadata filters are evaluated by the client.

Key layout (``T`` thread, ``N`` checkpoint namespace, ``C`` checkpoint id, ``R`` run id;
each percent-encoded, so ``:``, ``{`` and ``}`` never appear inside a part)::

    fab:ckpt:{T}:namespaces           set    namespaces of T that hold checkpoints
    fab:ckpt:{T}:index:N              zset   checkpoint ids of (T, N), all scored 0
    fab:ckpt:{T}:checkpoint:N:C       hash   one checkpoint (fields below)
    fab:ckpt:{T}:writes:N:C           hash   pending writes of C: [task, idx] -> write
    fab:ckpt:threads                  set    thread ids            (outside every thread's slot)
    fab:ckpt:run:R                    set    threads written by R  (outside every thread's slot)

A checkpoint hash holds ``checkpoint`` (the checkpoint less its channel values), ``metadata``,
``parent``, ``run_id``, ``owners`` and one ``value:<channel>`` field per channel whose new
version this checkpoint stored. Every key of a thread carries the hash tag ``{T}``, so one
checkpoint's writes go to a single cluster slot in one MULTI/EXEC; the two global sets only
index threads, are written just before that transaction and may over-approximate.

Checkpoint ids are uuid6 strings, which sort in creation order, so the zset read with
``ZREVRANGEBYLEX`` gives newest first, and ``before`` is an exclusive lexicographic bound.

Forks never overwrite each other. Savers that key channel values by ``(channel, version)``
lose a value when two checkpoints that share a parent each write the same channel: both
branches produce the same next version, and the second write replaces the first. Here a value
is stored in the checkpoint that wrote it, and ``owners`` maps each channel to the checkpoint
holding its current value (itself, or an ancestor's entry copied from the parent when the
checkpoint is put). A put writes only its own checkpoint's hash, so siblings cannot disturb
each other; removing a checkpoint (prune, runs) first copies the values survivors inherit from
it into the survivors.

Pending writes follow LangGraph: a regular write is set only if its ``(task, idx)`` is new
(``HSETNX``, so a retried task adds nothing); the special channels of ``WRITES_IDX_MAP``
(errors, interrupts, resumes) take negative indexes and overwrite. No key has a TTL.

Each operation is written once, as a generator that yields batches of commands and receives
their replies; one driver runs it on the synchronous client, the other on the asyncio client.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable, Generator, Iterator, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any, TypeAlias, TypeVar, cast
from urllib.parse import quote

import redis
import redis.asyncio as aredis
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    WRITES_IDX_MAP,
    BaseCheckpointSaver,
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
    PendingWrite,
    get_serializable_checkpoint_metadata,
    writes_sort_key,
)
from langgraph.checkpoint.serde.base import SerializerProtocol
from redis.exceptions import WatchError

from fabula.memory.errors import ConfigError, FabulaError, InvalidInput

__all__ = ["THREADS", "RedisCheckpointSaver", "delete_threads"]

THREADS = "fab:ckpt:threads"
_PAGE = 64
_WATCH_ATTEMPTS = 16
_R = TypeVar("_R")


def _part(value: str) -> str:
    return quote(value, safe="")


def run_key(run_id: str) -> str:
    return f"fab:ckpt:run:{_part(run_id)}"


@dataclass(frozen=True)
class ThreadKeys:
    """The keys of one thread; all share the hash tag ``{thread}``."""

    thread_id: str

    @property
    def prefix(self) -> str:
        return f"fab:ckpt:{{{_part(self.thread_id)}}}"

    @property
    def namespaces(self) -> str:
        return f"{self.prefix}:namespaces"

    def index(self, ns: str) -> str:
        return f"{self.prefix}:index:{_part(ns)}"

    def checkpoint(self, ns: str, checkpoint_id: str) -> str:
        return f"{self.prefix}:checkpoint:{_part(ns)}:{_part(checkpoint_id)}"

    def writes(self, ns: str, checkpoint_id: str) -> str:
        return f"{self.prefix}:writes:{_part(ns)}:{_part(checkpoint_id)}"


@dataclass(frozen=True)
class _Batch:
    """Commands sent in one round trip.

    ``watch`` keys are watched (on the connection that later runs the atomic batch) before the
    commands are sent; ``atomic`` batches run in MULTI/EXEC on that connection.
    """

    commands: tuple[tuple[Any, ...], ...]
    atomic: bool = False
    watch: tuple[str, ...] = ()


# An operation: yields batches, receives each batch's replies, returns its result.
_Op: TypeAlias = Generator[_Batch, list[Any], _R]
_Ref: TypeAlias = tuple[str, str]  # (namespace, checkpoint id)
_Refs: TypeAlias = list[_Ref]
_Names: TypeAlias = list[str]
_Tuples: TypeAlias = list[CheckpointTuple]
_Writes: TypeAlias = list[PendingWrite]
_Commands: TypeAlias = list[tuple[Any, ...]]
_Replies: TypeAlias = list[Any]
# Per namespace, the (id, run id) of its checkpoints oldest first -> the ids to remove.
_Selector: TypeAlias = Callable[[list[tuple[str, str | None]]], set[str]]


@dataclass(frozen=True)
class _ListQuery:
    thread_id: str | None
    namespace: str | None
    checkpoint_id: str | None
    before: str | None
    filter: dict[str, Any]
    limit: int | None

    @classmethod
    def build(
        cls,
        config: RunnableConfig | None,
        filter: dict[str, Any] | None,
        before: RunnableConfig | None,
        limit: int | None,
    ) -> _ListQuery:
        conf = (config or {}).get("configurable", {})
        return cls(
            thread_id=conf.get("thread_id"),
            namespace=conf.get("checkpoint_ns"),
            checkpoint_id=conf.get("checkpoint_id"),
            before=(before or {}).get("configurable", {}).get("checkpoint_id"),
            filter=dict(filter or {}),
            limit=limit,
        )


def _text(raw: bytes | str) -> str:
    return raw.decode() if isinstance(raw, bytes) else raw


def _pack(head: Sequence[str], payload: bytes) -> bytes:
    # JSON never contains a raw newline, so the first one ends the head.
    return json.dumps(list(head)).encode() + b"\n" + payload


def _unpack(raw: bytes) -> tuple[list[str], bytes]:
    head, _, payload = raw.partition(b"\n")
    return list(json.loads(head)), payload


def _flatten(mapping: dict[Any, Any]) -> tuple[Any, ...]:
    return tuple(item for pair in mapping.items() for item in pair)


def _target(thread_id: str, ns: str, checkpoint_id: str) -> RunnableConfig:
    return {
        "configurable": {
            "thread_id": thread_id,
            "checkpoint_ns": ns,
            "checkpoint_id": checkpoint_id,
        }
    }


class RedisCheckpointSaver(BaseCheckpointSaver[int]):
    """Checkpoints of LangGraph graphs in plain Redis (layout in the module docstring).

    Pass a synchronous client, an asyncio client or both, each with binary responses
    (``decode_responses=False``); the synchronous methods use the first, the ``a``-methods
    the second. :meth:`from_url` makes both and :meth:`close` / :meth:`aclose` close them.

    Raises :class:`ConfigError` for a missing client or one that decodes responses.
    """

    def __init__(
        self,
        client: redis.Redis | None = None,
        aclient: aredis.Redis | None = None,
        *,
        serde: SerializerProtocol | None = None,
    ) -> None:
        super().__init__(serde=serde)
        if client is None and aclient is None:
            raise ConfigError("RedisCheckpointSaver needs a Redis client")
        for given in (client, aclient):
            if given is not None and given.get_connection_kwargs().get("decode_responses"):
                raise ConfigError("the checkpointer's Redis client must return bytes")
        self._client = client
        self._aclient = aclient
        self._owns_clients = False

    @classmethod
    def from_url(cls, url: str, *, serde: SerializerProtocol | None = None) -> RedisCheckpointSaver:
        """A saver with its own synchronous and asyncio clients on ``url``."""
        saver = cls(redis.Redis.from_url(url), aredis.Redis.from_url(url), serde=serde)
        saver._owns_clients = True
        return saver

    def close(self) -> None:
        """Close the synchronous client if this saver created it."""
        if self._owns_clients and self._client is not None:
            self._client.close()

    async def aclose(self) -> None:
        """Close the asyncio client if this saver created it."""
        if self._owns_clients and self._aclient is not None:
            await self._aclient.aclose()

    # --- the public API: each method runs one operation with one driver ---

    def get_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        """The checkpoint named by ``config``, or the newest of its thread and namespace."""
        return self._run(partial(self._get_op, config))

    async def aget_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        """Async :meth:`get_tuple`."""
        return await self._arun(partial(self._get_op, config))

    def list(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> Iterator[CheckpointTuple]:
        """Checkpoints newest first, per thread, across namespaces unless ``config`` names one.

        ``filter`` keeps checkpoints whose metadata has every given key with an equal value;
        ``before`` keeps ids strictly older than its checkpoint id; ``limit`` bounds the count.
        A ``config`` of None lists every thread.
        """
        query = _ListQuery.build(config, filter, before, limit)
        remaining = limit
        if remaining is not None and remaining <= 0:
            return
        for thread_id in self._run(partial(self._threads_op, query)):
            refs = self._run(partial(self._refs_op, query, thread_id))
            for start in range(0, len(refs), _PAGE):
                page = refs[start : start + _PAGE]
                for found in self._run(partial(self._load_op, thread_id, page, query.filter)):
                    yield found
                    if remaining is not None:
                        remaining -= 1
                        if not remaining:
                            return

    async def alist(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> AsyncIterator[CheckpointTuple]:
        """Async :meth:`list`."""
        query = _ListQuery.build(config, filter, before, limit)
        remaining = limit
        if remaining is not None and remaining <= 0:
            return
        for thread_id in await self._arun(partial(self._threads_op, query)):
            refs = await self._arun(partial(self._refs_op, query, thread_id))
            for start in range(0, len(refs), _PAGE):
                page = refs[start : start + _PAGE]
                loaded = await self._arun(partial(self._load_op, thread_id, page, query.filter))
                for found in loaded:
                    yield found
                    if remaining is not None:
                        remaining -= 1
                        if not remaining:
                            return

    def put(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        """Store ``checkpoint`` as a child of ``config``'s checkpoint; return its config."""
        return self._run(partial(self._put_op, config, checkpoint, metadata, new_versions))

    async def aput(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        """Async :meth:`put`."""
        return await self._arun(partial(self._put_op, config, checkpoint, metadata, new_versions))

    def put_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        """Store a task's pending writes on ``config``'s checkpoint, atomically."""
        self._run(partial(self._put_writes_op, config, writes, task_id, task_path))

    async def aput_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        """Async :meth:`put_writes`."""
        await self._arun(partial(self._put_writes_op, config, writes, task_id, task_path))

    def delete_thread(self, thread_id: str) -> None:
        """Delete every checkpoint and write of ``thread_id``, in all namespaces."""
        self._run(partial(self._remove_op, thread_id, _everything))

    async def adelete_thread(self, thread_id: str) -> None:
        """Async :meth:`delete_thread`."""
        await self._arun(partial(self._remove_op, thread_id, _everything))

    async def adelete_threads(self, *, prefix: str) -> None:
        """Delete every thread whose id starts with ``prefix`` (e.g. all turns of a story)."""
        everyone = _ListQuery(None, None, None, None, {}, None)
        for thread_id in await self._arun(partial(self._threads_op, everyone)):
            if thread_id.startswith(prefix):
                await self._arun(partial(self._remove_op, thread_id, _everything))

    def delete_for_runs(self, run_ids: Sequence[str]) -> None:
        """Delete the checkpoints (and their writes) made by any of ``run_ids``."""
        select = partial(_of_runs, frozenset(run_ids))
        for thread_id in self._run(partial(self._run_threads_op, run_ids)):
            self._run(partial(self._remove_op, thread_id, select))
        self._run(partial(self._forget_runs_op, run_ids))

    async def adelete_for_runs(self, run_ids: Sequence[str]) -> None:
        """Async :meth:`delete_for_runs`."""
        select = partial(_of_runs, frozenset(run_ids))
        for thread_id in await self._arun(partial(self._run_threads_op, run_ids)):
            await self._arun(partial(self._remove_op, thread_id, select))
        await self._arun(partial(self._forget_runs_op, run_ids))

    def copy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        """Copy every checkpoint and write of one thread into another (same ids)."""
        self._run(partial(self._copy_op, source_thread_id, target_thread_id))

    async def acopy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        """Async :meth:`copy_thread`."""
        await self._arun(partial(self._copy_op, source_thread_id, target_thread_id))

    def prune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        """Keep only the newest checkpoint per namespace (``keep_latest``), or none (``delete``).

        Values the kept checkpoint inherits are copied into it first.
        Raises :class:`InvalidInput` for another strategy.
        """
        select = _prune_selector(strategy)
        for thread_id in thread_ids:
            self._run(partial(self._remove_op, thread_id, select))

    async def aprune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        """Async :meth:`prune`."""
        select = _prune_selector(strategy)
        for thread_id in thread_ids:
            await self._arun(partial(self._remove_op, thread_id, select))

    # --- drivers ---

    def _run(self, make_op: Callable[[], _Op[_R]]) -> _R:
        if self._client is None:
            raise ConfigError("this checkpointer has no synchronous Redis client")
        client = self._client
        for _attempt in range(_WATCH_ATTEMPTS):
            op = make_op()
            with client.pipeline(transaction=True) as watched:
                try:
                    batch = next(op)
                    while True:
                        if batch.watch:
                            watched.watch(*batch.watch)
                        if batch.atomic:
                            watched.multi()
                            for command in batch.commands:
                                watched.execute_command(*command)
                            replies = watched.execute()
                        else:
                            with client.pipeline(transaction=False) as pipe:
                                for command in batch.commands:
                                    pipe.execute_command(*command)
                                replies = pipe.execute()
                        batch = op.send(replies)
                except StopIteration as done:
                    return cast(_R, done.value)
                except WatchError:
                    op.close()
        raise FabulaError("checkpoints kept changing during an update", attempts=_WATCH_ATTEMPTS)

    async def _arun(self, make_op: Callable[[], _Op[_R]]) -> _R:
        if self._aclient is None:
            raise ConfigError("this checkpointer has no asyncio Redis client")
        client = self._aclient
        for _attempt in range(_WATCH_ATTEMPTS):
            op = make_op()
            async with client.pipeline(transaction=True) as watched:
                try:
                    batch = next(op)
                    while True:
                        if batch.watch:
                            await watched.watch(*batch.watch)
                        if batch.atomic:
                            watched.multi()
                            for command in batch.commands:
                                watched.execute_command(*command)
                            replies = await watched.execute()
                        else:
                            async with client.pipeline(transaction=False) as pipe:
                                for command in batch.commands:
                                    pipe.execute_command(*command)
                                replies = await pipe.execute()
                        batch = op.send(replies)
                except StopIteration as done:
                    return cast(_R, done.value)
                except WatchError:
                    op.close()
        raise FabulaError("checkpoints kept changing during an update", attempts=_WATCH_ATTEMPTS)

    # --- operations: generators of batches, shared by both drivers ---

    def _get_op(self, config: RunnableConfig) -> _Op[CheckpointTuple | None]:
        conf = config["configurable"]
        thread_id, ns = conf["thread_id"], conf.get("checkpoint_ns", "")
        checkpoint_id: str | None = conf.get("checkpoint_id")
        if not checkpoint_id:
            index = ThreadKeys(thread_id).index(ns)
            (newest,) = yield _Batch((("ZREVRANGEBYLEX", index, "+", "-", "LIMIT", 0, 1),))
            if not newest:
                return None
            checkpoint_id = _text(newest[0])
        found = yield from self._load_op(thread_id, [(ns, checkpoint_id)], {})
        return found[0] if found else None

    def _threads_op(self, query: _ListQuery) -> _Op[_Names]:
        if query.thread_id is not None:
            return [query.thread_id]
        (members,) = yield _Batch((("SMEMBERS", THREADS),))
        return sorted(_text(member) for member in members)

    def _refs_op(self, query: _ListQuery, thread_id: str) -> _Op[_Refs]:
        """The (namespace, id) of the thread's candidate checkpoints, newest first."""
        keys = ThreadKeys(thread_id)
        if query.namespace is not None:
            namespaces = [query.namespace]
        else:
            (members,) = yield _Batch((("SMEMBERS", keys.namespaces),))
            namespaces = sorted(_text(member) for member in members)
        if not namespaces:
            return []
        if query.checkpoint_id is not None:
            wanted = query.checkpoint_id
            if query.before is not None and wanted >= query.before:
                return []
            scores = yield _Batch(tuple(("ZSCORE", keys.index(ns), wanted) for ns in namespaces))
            present = zip(namespaces, scores, strict=True)
            return [(ns, wanted) for ns, score in present if score is not None]
        upper = "(" + query.before if query.before is not None else "+"
        # Without a filter the first `limit` of each namespace are enough for the merge.
        window = ("LIMIT", 0, query.limit) if query.limit and not query.filter else ()
        replies = yield _Batch(
            tuple(("ZREVRANGEBYLEX", keys.index(ns), upper, "-", *window) for ns in namespaces)
        )
        merged = sorted(
            ((_text(raw), ns) for ns, ids in zip(namespaces, replies, strict=True) for raw in ids),
            reverse=True,
        )
        return [(ns, checkpoint_id) for checkpoint_id, ns in merged]

    def _load_op(
        self, thread_id: str, refs: Sequence[tuple[str, str]], filter: dict[str, Any]
    ) -> _Op[_Tuples]:
        """Read checkpoints with their values and writes; those whose metadata fails ``filter``
        or that no longer exist are left out."""
        keys = ThreadKeys(thread_id)
        if filter and refs:
            raws = yield _Batch(tuple(("HGET", keys.checkpoint(*ref), "metadata") for ref in refs))
            refs = [
                ref
                for ref, raw in zip(refs, raws, strict=True)
                if raw is not None and _matches(self._loads(raw), filter)
            ]
        if not refs:
            return []
        replies = yield _Batch(
            tuple(
                command
                for ref in refs
                for command in (("HGETALL", keys.checkpoint(*ref)), ("HGETALL", keys.writes(*ref)))
            )
        )
        records = [
            (ref, replies[2 * i], replies[2 * i + 1])
            for i, ref in enumerate(refs)
            if b"checkpoint" in replies[2 * i]
        ]
        # Values a checkpoint inherits live in the checkpoint that wrote them.
        inherited = [
            (i, channel, owner)
            for i, ((ns, checkpoint_id), record, _) in enumerate(records)
            for channel, owner in json.loads(record[b"owners"]).items()
            if owner != checkpoint_id
        ]
        fetched: _Replies = []
        if inherited:
            fetched = yield _Batch(
                tuple(
                    ("HGET", keys.checkpoint(records[i][0][0], owner), "value:" + channel)
                    for i, channel, owner in inherited
                )
            )
        extra: dict[int, dict[str, bytes]] = {}
        for (i, channel, _), raw in zip(inherited, fetched, strict=True):
            if raw is not None:
                extra.setdefault(i, {})[channel] = raw
        return [
            self._assemble(thread_id, ref, record, writes, extra.get(i, {}))
            for i, (ref, record, writes) in enumerate(records)
        ]

    def _assemble(
        self,
        thread_id: str,
        ref: tuple[str, str],
        record: dict[bytes, bytes],
        writes: dict[bytes, bytes],
        inherited: dict[str, bytes],
    ) -> CheckpointTuple:
        ns, checkpoint_id = ref
        values = {
            name.decode().removeprefix("value:"): self._loads(raw)
            for name, raw in record.items()
            if name.startswith(b"value:")
        }
        values.update((channel, self._loads(raw)) for channel, raw in inherited.items())
        checkpoint = cast(
            Checkpoint, {**self._loads(record[b"checkpoint"]), "channel_values": values}
        )
        parent = record.get(b"parent")
        return CheckpointTuple(
            config=_target(thread_id, ns, checkpoint_id),
            checkpoint=checkpoint,
            metadata=cast(CheckpointMetadata, self._loads(record[b"metadata"])),
            parent_config=_target(thread_id, ns, parent.decode()) if parent else None,
            pending_writes=self._pending_writes(writes),
        )

    def _pending_writes(self, stored: dict[bytes, bytes]) -> _Writes:
        rows = []
        for field, raw in stored.items():
            task_id, idx = json.loads(field)
            (task_path, channel, kind), payload = _unpack(raw)
            value = self.serde.loads_typed((kind, payload))
            rows.append((writes_sort_key(task_path, task_id, idx), (task_id, channel, value)))
        rows.sort(key=lambda row: row[0])
        return [write for _, write in rows]

    def _put_op(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> _Op[RunnableConfig]:
        conf = config["configurable"]
        thread_id, ns = conf["thread_id"], conf.get("checkpoint_ns", "")
        checkpoint_id = checkpoint["id"]
        parent_id = conf.get("checkpoint_id")
        if parent_id == checkpoint_id:
            parent_id = None
        keys = ThreadKeys(thread_id)
        meta = get_serializable_checkpoint_metadata(config, metadata)
        run_id = meta.get("run_id")
        values = checkpoint["channel_values"]
        inherited = [ch for ch in checkpoint["channel_versions"] if ch not in new_versions]

        prelude: _Commands = [("SADD", THREADS, thread_id)]
        if run_id:
            prelude.append(("SADD", run_key(str(run_id)), thread_id))
        if parent_id and inherited:
            prelude.append(("HGET", keys.checkpoint(ns, parent_id), "owners"))
        replies = yield _Batch(tuple(prelude))
        parent_owners = json.loads(replies[-1] or "{}") if parent_id and inherited else {}

        fields: dict[str, bytes | str] = {
            "checkpoint": self._dumps(
                {k: v for k, v in checkpoint.items() if k != "channel_values"}
            ),
            "metadata": self._dumps(meta),
        }
        owners: dict[str, str] = {}
        for channel in inherited:
            if channel in parent_owners:
                owners[channel] = parent_owners[channel]
            elif channel in values:
                # An owner the parent does not know: keep the value that was handed in.
                fields["value:" + channel] = self._dumps(values[channel])
                owners[channel] = checkpoint_id
        for channel in new_versions:
            if channel in values:
                fields["value:" + channel] = self._dumps(values[channel])
                owners[channel] = checkpoint_id
        fields["owners"] = json.dumps(owners)
        if parent_id:
            fields["parent"] = parent_id
        if run_id:
            fields["run_id"] = str(run_id)
        record = keys.checkpoint(ns, checkpoint_id)
        # No DEL first: putting an id again must not drop a value a child inherits from it.
        stale = [name for name in ("parent", "run_id") if name not in fields]
        yield _Batch(
            (
                *((("HDEL", record, *stale),) if stale else ()),
                ("HSET", record, *_flatten(fields)),
                ("ZADD", keys.index(ns), 0, checkpoint_id),
                ("SADD", keys.namespaces, ns),
            ),
            atomic=True,
        )
        return _target(thread_id, ns, checkpoint_id)

    def _put_writes_op(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str,
    ) -> _Op[None]:
        conf = config["configurable"]
        if not conf.get("checkpoint_id"):
            raise InvalidInput("pending writes need the checkpoint_id they belong to", task=task_id)
        key = ThreadKeys(conf["thread_id"]).writes(
            conf.get("checkpoint_ns", ""), conf["checkpoint_id"]
        )
        commands = []
        for idx, (channel, value) in enumerate(writes):
            slot = WRITES_IDX_MAP.get(channel, idx)
            kind, payload = self.serde.dumps_typed(value)
            field = json.dumps([task_id, slot])
            # Special writes (negative slots) replace; a retried task's regular writes do not.
            verb = "HSET" if slot < 0 else "HSETNX"
            commands.append((verb, key, field, _pack([task_path, channel, kind], payload)))
        if commands:
            yield _Batch(tuple(commands), atomic=True)

    def _remove_op(self, thread_id: str, select: _Selector) -> _Op[None]:
        """Remove the checkpoints ``select`` picks, copying inherited values into survivors."""
        keys = ThreadKeys(thread_id)
        (members,) = yield _Batch((("SMEMBERS", keys.namespaces),), watch=(keys.namespaces,))
        namespaces = sorted(_text(member) for member in members)
        indexes = tuple(keys.index(ns) for ns in namespaces)
        listed = yield _Batch(tuple(("ZRANGE", ix, 0, -1) for ix in indexes), watch=indexes)
        refs = [(ns, _text(raw)) for ns, ids in zip(namespaces, listed, strict=True) for raw in ids]
        infos = yield _Batch(
            tuple(("HMGET", keys.checkpoint(*ref), "run_id", "owners") for ref in refs)
        )
        run_of = {
            ref: _text(run) if run else None for ref, (run, _) in zip(refs, infos, strict=True)
        }
        owners_of = {
            ref: json.loads(raw or "{}") for ref, (_, raw) in zip(refs, infos, strict=True)
        }
        doomed: set[tuple[str, str]] = set()
        for ns in namespaces:
            entries = [(cid, run_of[(n, cid)]) for n, cid in refs if n == ns]
            doomed.update((ns, cid) for cid in select(entries))
        survivors = [ref for ref in refs if ref not in doomed]

        rescues = [
            (ref, channel, owner)
            for ref in survivors
            for channel, owner in owners_of[ref].items()
            if (ref[0], owner) in doomed
        ]
        rescued: _Replies = []
        if rescues:
            rescued = yield _Batch(
                tuple(
                    ("HGET", keys.checkpoint(ref[0], owner), "value:" + channel)
                    for ref, channel, owner in rescues
                )
            )
        commands = _adopt(
            keys,
            owners_of,
            [(r, ch, raw) for (r, ch, _), raw in zip(rescues, rescued, strict=True)],
        )
        for ns, cid in sorted(doomed):
            commands.append(("DEL", keys.checkpoint(ns, cid), keys.writes(ns, cid)))
            commands.append(("ZREM", keys.index(ns), cid))
        for ns in namespaces:
            if not any(ref[0] == ns for ref in survivors):
                commands.append(("SREM", keys.namespaces, ns))
        if commands:
            yield _Batch(tuple(commands), atomic=True)

        gone_runs = {run_of[ref] for ref in doomed} - {run_of[ref] for ref in survivors}
        cleanup: _Commands = [
            ("SREM", run_key(run), thread_id) for run in sorted(r for r in gone_runs if r)
        ]
        if not survivors:
            cleanup.append(("SREM", THREADS, thread_id))
        if cleanup:
            yield _Batch(tuple(cleanup))

    def _run_threads_op(self, run_ids: Sequence[str]) -> _Op[_Names]:
        if not run_ids:
            return []
        replies = yield _Batch(tuple(("SMEMBERS", run_key(run)) for run in run_ids))
        return sorted({_text(member) for members in replies for member in members})

    def _forget_runs_op(self, run_ids: Sequence[str]) -> _Op[None]:
        if run_ids:
            yield _Batch((("DEL", *(run_key(run) for run in run_ids)),))

    def _copy_op(self, source: str, target: str) -> _Op[None]:
        src, dst = ThreadKeys(source), ThreadKeys(target)
        (members,) = yield _Batch((("SMEMBERS", src.namespaces),))
        namespaces = sorted(_text(member) for member in members)
        if not namespaces:
            return
        listed = yield _Batch(tuple(("ZRANGE", src.index(ns), 0, -1) for ns in namespaces))
        refs = [(ns, _text(raw)) for ns, ids in zip(namespaces, listed, strict=True) for raw in ids]
        replies = yield _Batch(
            tuple(
                command
                for ref in refs
                for command in (("HGETALL", src.checkpoint(*ref)), ("HGETALL", src.writes(*ref)))
            )
        )
        commands: _Commands = []
        runs: set[str] = set()
        for i, (ns, cid) in enumerate(refs):
            record, writes = replies[2 * i], replies[2 * i + 1]
            if b"checkpoint" not in record:
                continue
            # Owners name checkpoint ids, which the copy keeps, so records copy verbatim.
            commands += [
                ("DEL", dst.checkpoint(ns, cid), dst.writes(ns, cid)),
                ("HSET", dst.checkpoint(ns, cid), *_flatten(record)),
                ("ZADD", dst.index(ns), 0, cid),
                ("SADD", dst.namespaces, ns),
            ]
            if writes:
                commands.append(("HSET", dst.writes(ns, cid), *_flatten(writes)))
            if b"run_id" in record:
                runs.add(_text(record[b"run_id"]))
        if not commands:
            return
        yield _Batch((("SADD", THREADS, target), *(("SADD", run_key(r), target) for r in runs)))
        yield _Batch(tuple(commands), atomic=True)

    # --- serialisation ---

    def _dumps(self, value: Any) -> bytes:
        kind, payload = self.serde.dumps_typed(value)
        return _pack([kind], payload)

    def _loads(self, raw: bytes) -> Any:
        (kind,), payload = _unpack(raw)
        return self.serde.loads_typed((kind, payload))


def _adopt(
    keys: ThreadKeys,
    owners_of: dict[_Ref, dict[str, str]],
    rescued: Sequence[tuple[_Ref, str, bytes | None]],
) -> _Commands:
    """Commands that store each rescued value in the survivor that inherited it and make the
    survivor its owner (a value already gone is dropped from the owners)."""
    commands: _Commands = []
    changed: dict[_Ref, dict[str, str]] = {}
    for ref, channel, raw in rescued:
        owners = changed.setdefault(ref, owners_of[ref])
        if raw is None:
            del owners[channel]
        else:
            owners[channel] = ref[1]
            commands.append(("HSET", keys.checkpoint(*ref), "value:" + channel, raw))
    for ref, owners in changed.items():
        commands.append(("HSET", keys.checkpoint(*ref), "owners", json.dumps(owners)))
    return commands


def _matches(metadata: dict[str, Any], filter: dict[str, Any]) -> bool:
    return all(metadata.get(key) == value for key, value in filter.items())


def _everything(entries: list[tuple[str, str | None]]) -> set[str]:
    return {cid for cid, _ in entries}


def _all_but_newest(entries: list[tuple[str, str | None]]) -> set[str]:
    ids = {cid for cid, _ in entries}
    return ids - {max(ids)} if ids else set()


def _of_runs(run_ids: frozenset[str], entries: list[tuple[str, str | None]]) -> set[str]:
    return {cid for cid, run in entries if run in run_ids}


def _prune_selector(strategy: str) -> _Selector:
    if strategy == "keep_latest":
        return _all_but_newest
    if strategy == "delete":
        return _everything
    raise InvalidInput("unknown prune strategy; use 'keep_latest' or 'delete'", strategy=strategy)


async def delete_threads(saver: BaseCheckpointSaver[Any], *, prefix: str) -> None:
    """Delete every thread of ``saver`` whose id starts with ``prefix``, on any saver
    (a :class:`RedisCheckpointSaver` reads its thread index; others list their checkpoints)."""
    if isinstance(saver, RedisCheckpointSaver):
        await saver.adelete_threads(prefix=prefix)
        return
    threads = {str(t.config["configurable"]["thread_id"]) async for t in saver.alist(None)}
    for thread_id in sorted(threads):
        if thread_id.startswith(prefix):
            await saver.adelete_thread(thread_id)
