"""How committed turns are consolidated into the hierarchy: inline, through RQ, or not.

Either way a turn never waits for it: ``inline`` folds in a background task of this process
(one per branch, :class:`InlineConsolidation`), ``rq`` enqueues a job for a worker.
Consolidation is idempotent and watermarked, so a fold that is late, or lost with its
process, is done by the next one.
"""

from __future__ import annotations

import asyncio

import structlog
from redis.exceptions import RedisError

from fabula.graph.runtime import Consolidator
from fabula.memory.connection import is_cluster
from fabula.memory.errors import ConfigError, FabulaError
from fabula.memory.store import StoryStore

__all__ = ["InlineConsolidation", "consolidator"]

log = structlog.get_logger(__name__)


class InlineConsolidation:
    """Folds committed turns into the hierarchy in this process, off the turn's path.

    Calling it starts (or re-arms) a task that consolidates the branch up to its head and
    returns at once; a commit while the task runs is folded into it (it runs once more), so
    there is at most one task per branch. :meth:`wait` and :meth:`drain` wait for the tasks
    (before deleting a story, and before closing the connection the stores use).
    """

    def __init__(self) -> None:
        self._tasks: dict[tuple[str, str], asyncio.Task[None]] = {}
        self._again: set[tuple[str, str]] = set()

    async def __call__(self, store: StoryStore, turn: int) -> None:
        key = (store.story, store.branch)
        task = self._tasks.get(key)
        if task is not None and not task.done():
            self._again.add(key)
            return
        self._tasks[key] = asyncio.create_task(self._run(store, key))

    async def _run(self, store: StoryStore, key: tuple[str, str]) -> None:
        from fabula.memory.hierarchy import consolidate

        while True:
            self._again.discard(key)
            try:
                await consolidate(store)
            except (FabulaError, RedisError) as exc:
                # the next commit's fold starts from the same watermark
                log.warning("consolidation failed", story=store.story, branch=store.branch,
                            error=str(exc))  # fmt: skip
                return
            if key not in self._again:
                return

    async def wait(self, story: str) -> None:
        """Wait for the folds of one story."""
        await asyncio.gather(*(t for (s, _), t in self._tasks.items() if s == story))
        self._forget_done()

    async def drain(self) -> None:
        """Wait for every fold."""
        await asyncio.gather(*self._tasks.values())
        self._forget_done()

    def _forget_done(self) -> None:
        self._tasks = {k: t for k, t in self._tasks.items() if not t.done()}


def consolidator(url: str, mode: str, queue_url: str | None = None) -> Consolidator | None:
    """How committed turns are consolidated: ``inline`` (in a background task of this
    process), ``rq`` (enqueued, on ``queue_url`` or ``url``) or ``off``. Raises
    :class:`ConfigError` for RQ on a Redis Cluster without a separate queue (rq 3.0 cannot
    use a cluster)."""
    if mode == "off":
        return None
    if mode == "rq":
        from fabula.memory.jobs import enqueue_consolidation

        if queue_url is None and is_cluster(url):
            raise ConfigError(
                "RQ does not support Redis Cluster (rq 3.0's worker needs a single server's "
                "connection pool): set FABULA_RQ_URL to a plain Redis for the queue, or "
                "FABULA_CONSOLIDATE=inline"
            )
        queue = queue_url or url

        async def enqueue(store: StoryStore, turn: int) -> None:
            enqueue_consolidation(url, store.story, store.branch, turn, queue_url=queue)

        return enqueue
    return InlineConsolidation()
