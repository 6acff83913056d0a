"""How committed turns are consolidated into the hierarchy: inline, through RQ, or not.

Either way a turn never waits for it: ``inline`` folds in a background task of this process
(one per branch, :class:`InlineConsolidation`), ``rq`` enqueues a job for a worker.
Consolidation is idempotent and watermarked, so a fold that is late, or lost with its
process, is done by the next one.
"""

from __future__ import annotations

from fabula.graph.runtime import Consolidator
from fabula.memory.background import BranchTasks
from fabula.memory.connection import is_cluster
from fabula.memory.errors import ConfigError
from fabula.memory.store import StoryStore

__all__ = ["InlineConsolidation", "consolidator"]


class InlineConsolidation:
    """Folds committed turns into the hierarchy in this process, off the turn's path.

    Calling it schedules a fold of the branch up to its head and returns at once (one task
    per branch, :class:`~fabula.memory.background.BranchTasks`); :meth:`wait` and
    :meth:`drain` wait for the folds (before deleting a story, and before closing the
    connection the stores use).
    """

    def __init__(self) -> None:
        self._tasks = BranchTasks(self._fold, "consolidation")

    async def __call__(self, store: StoryStore, turn: int) -> None:
        self._tasks.schedule(store)

    @staticmethod
    async def _fold(store: StoryStore) -> None:
        from fabula.memory.hierarchy import consolidate

        await consolidate(store)

    def running(self) -> int:
        """How many folds are under way."""
        return self._tasks.running()

    async def wait(self, story: str) -> None:
        """Wait for the folds of one story."""
        await self._tasks.wait(story)

    async def drain(self) -> None:
        """Wait for every fold."""
        await self._tasks.drain()


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
