"""How committed turns are consolidated into the hierarchy: inline, through RQ, or not."""

from __future__ import annotations

from fabula.graph.runtime import Consolidator
from fabula.memory.connection import is_cluster
from fabula.memory.errors import ConfigError
from fabula.memory.store import StoryStore

__all__ = ["consolidator"]


def consolidator(url: str, mode: str, queue_url: str | None = None) -> Consolidator | None:
    """How committed turns are consolidated: ``inline``, ``rq`` (enqueued, on ``queue_url``
    or ``url``) or ``off``. Raises :class:`ConfigError` for RQ on a Redis Cluster without a
    separate queue (rq 3.0 cannot use a cluster)."""
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
    from fabula.memory.hierarchy import consolidate_turn

    async def inline(store: StoryStore, turn: int) -> None:
        await consolidate_turn(store, turn)

    return inline
