"""The saver: LangGraph's checkpointer interface, each method one operation run by one of
two drivers (the synchronous client's or the asyncio client's)."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from functools import partial
from typing import Any, TypeVar, cast

import redis
import redis.asyncio as aredis
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    BaseCheckpointSaver,
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
)
from langgraph.checkpoint.serde.base import SerializerProtocol
from redis.exceptions import WatchError

from fabula.errors import ConfigError, FabulaError
from fabula.graph.checkpoint.batches import ListQuery, Op, as_text
from fabula.graph.checkpoint.migrations import (
    CHECKPOINT_VERSION,
    CheckpointsMigrated,
    migrate_thread,
    plan_thread,
)
from fabula.graph.checkpoint.writes import Operations, everything, of_runs, prune_selector
from fabula.memory.connection import connect, connect_async, transaction

_PAGE = 64
_EVERY_THREAD = ListQuery(None, None, None, None, {}, None)
_WATCH_ATTEMPTS = 16
_R = TypeVar("_R")


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
        self._ops = Operations(self.serde)
        self._owns_clients = False

    @classmethod
    def from_url(cls, url: str, *, serde: SerializerProtocol | None = None) -> RedisCheckpointSaver:
        """A saver with its own synchronous and asyncio clients on ``url``."""
        saver = cls(
            connect(url, decode_responses=False),
            connect_async(url, decode_responses=False),
            serde=serde,
        )
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
        return self._run(partial(self._ops.get, config))

    async def aget_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        """Async :meth:`get_tuple`."""
        return await self._arun(partial(self._ops.get, config))

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
        query = ListQuery.build(config, filter, before, limit)
        remaining = limit
        if remaining is not None and remaining <= 0:
            return
        for thread_id in self._run(partial(self._ops.threads, query)):
            refs = self._run(partial(self._ops.refs, query, thread_id))
            for start in range(0, len(refs), _PAGE):
                page = refs[start : start + _PAGE]
                for found in self._run(partial(self._ops.load, thread_id, page, query.filter)):
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
        query = ListQuery.build(config, filter, before, limit)
        remaining = limit
        if remaining is not None and remaining <= 0:
            return
        for thread_id in await self._arun(partial(self._ops.threads, query)):
            refs = await self._arun(partial(self._ops.refs, query, thread_id))
            for start in range(0, len(refs), _PAGE):
                page = refs[start : start + _PAGE]
                loaded = await self._arun(partial(self._ops.load, thread_id, page, query.filter))
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
        return self._run(partial(self._ops.put, config, checkpoint, metadata, new_versions))

    async def aput(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        """Async :meth:`put`."""
        return await self._arun(partial(self._ops.put, config, checkpoint, metadata, new_versions))

    def put_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        """Store a task's pending writes on ``config``'s checkpoint, atomically."""
        self._run(partial(self._ops.put_writes, config, writes, task_id, task_path))

    async def aput_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        """Async :meth:`put_writes`."""
        await self._arun(partial(self._ops.put_writes, config, writes, task_id, task_path))

    def delete_thread(self, thread_id: str) -> None:
        """Delete every checkpoint and write of ``thread_id``, in all namespaces."""
        self._run(partial(self._ops.remove, thread_id, everything))

    async def adelete_thread(self, thread_id: str) -> None:
        """Async :meth:`delete_thread`."""
        await self._arun(partial(self._ops.remove, thread_id, everything))

    async def adelete_threads(self, *, prefix: str) -> None:
        """Delete every thread whose id starts with ``prefix`` (e.g. all turns of a story)."""
        for thread_id in await self._arun(partial(self._ops.threads, _EVERY_THREAD)):
            if thread_id.startswith(prefix):
                await self._arun(partial(self._ops.remove, thread_id, everything))

    def delete_for_runs(self, run_ids: Sequence[str]) -> None:
        """Delete the checkpoints (and their writes) made by any of ``run_ids``."""
        select = partial(of_runs, frozenset(run_ids))
        for thread_id in self._run(partial(self._ops.run_threads, run_ids)):
            self._run(partial(self._ops.remove, thread_id, select))
        self._run(partial(self._ops.forget_runs, run_ids))

    async def adelete_for_runs(self, run_ids: Sequence[str]) -> None:
        """Async :meth:`delete_for_runs`."""
        select = partial(of_runs, frozenset(run_ids))
        for thread_id in await self._arun(partial(self._ops.run_threads, run_ids)):
            await self._arun(partial(self._ops.remove, thread_id, select))
        await self._arun(partial(self._ops.forget_runs, run_ids))

    def copy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        """Copy every checkpoint and write of one thread into another (same ids)."""
        self._run(partial(self._ops.copy, source_thread_id, target_thread_id))

    async def acopy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        """Async :meth:`copy_thread`."""
        await self._arun(partial(self._ops.copy, source_thread_id, target_thread_id))

    def prune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        """Keep only the newest checkpoint per namespace (``keep_latest``), or none (``delete``).

        Values the kept checkpoint inherits are copied into it first.
        Raises :class:`InvalidInput` for another strategy.
        """
        select = prune_selector(strategy)
        for thread_id in thread_ids:
            self._run(partial(self._ops.remove, thread_id, select))

    async def aprune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        """Async :meth:`prune`."""
        select = prune_selector(strategy)
        for thread_id in thread_ids:
            await self._arun(partial(self._ops.remove, thread_id, select))

    # --- the checkpointer's own versions (fabula.graph.checkpoint.migrations) ---

    def migrate(self, *, prefix: str = "") -> CheckpointsMigrated:
        """Bring every thread whose id starts with ``prefix`` (a story's turns: ``story/``)
        to :data:`CHECKPOINT_VERSION`, one transaction per thread; every thread is read and
        its migration computed first, so a newer or unreadable one refuses them all with
        nothing written. Running it again does nothing twice."""
        threads = self._run(partial(self._ops.threads, _EVERY_THREAD))
        chosen = [t for t in threads if t.startswith(prefix)]
        plans = [self._run(partial(plan_thread, self.serde, t)) for t in chosen]
        done = [
            self._run(partial(migrate_thread, self.serde, p.thread))
            for p in plans
            if p.was < CHECKPOINT_VERSION
        ]
        return CheckpointsMigrated.of(done)

    async def amigrate(self, *, prefix: str = "") -> CheckpointsMigrated:
        """Async :meth:`migrate`."""
        threads = await self._arun(partial(self._ops.threads, _EVERY_THREAD))
        plans = [
            await self._arun(partial(plan_thread, self.serde, t))
            for t in threads
            if t.startswith(prefix)
        ]
        done = [
            await self._arun(partial(migrate_thread, self.serde, p.thread))
            for p in plans
            if p.was < CHECKPOINT_VERSION
        ]
        return CheckpointsMigrated.of(done)

    # --- drivers ---

    def _run(self, make_op: Callable[[], Op[_R]]) -> _R:
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

    async def _arun(self, make_op: Callable[[], Op[_R]]) -> _R:
        if self._aclient is None:
            raise ConfigError("this checkpointer has no asyncio Redis client")
        client = self._aclient
        for _attempt in range(_WATCH_ATTEMPTS):
            op = make_op()
            async with contextlib.AsyncExitStack() as stack:
                # opened at the first watch or atomic batch, on the node that owns its
                # thread's slot when the Redis is a cluster (memory.connection.transaction)
                watched: Any = None
                try:
                    batch = next(op)
                    while True:
                        if watched is None and (batch.watch or batch.atomic):
                            slot_key = batch.watch[0] if batch.watch else batch.commands[0][1]
                            watched = await stack.enter_async_context(
                                transaction(client, as_text(slot_key))
                            )
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
