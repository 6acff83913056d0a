"""RQ job entry points: slow work kept off the turn's path.

``fabula`` enqueues :func:`consolidate` on the ``fabula`` queue after each commit when
``FABULA_CONSOLIDATE=rq``; run workers with ``rq worker fabula --url $FABULA_REDIS_URL``
(``compose.yaml`` starts one). Jobs are synchronous edges that call ``asyncio.run``.
"""

from __future__ import annotations

import asyncio

import redis
from rq import Queue

from fabula.memory.hierarchy import consolidate_turn
from fabula.memory.index.build import index_through
from fabula.memory.server import connect_async
from fabula.memory.store import StoryStore

__all__ = ["QUEUE", "consolidate", "enqueue_consolidation"]

QUEUE = "fabula"


def consolidate(url: str, story: str, branch: str, turn: int) -> str | None:
    """Index the episodes and fold the hierarchy up to one committed turn (idempotent, safe
    to run concurrently); returns the id of the scene that holds the turn."""

    async def run() -> str | None:
        client = connect_async(url)
        try:
            store = StoryStore(client, story, branch)
            await index_through(store, turn)
            node = await consolidate_turn(store, turn)
            return node.id if node else None
        finally:
            await client.aclose()

    return asyncio.run(run())


def enqueue_consolidation(url: str, story: str, branch: str, turn: int) -> str:
    """Put a consolidation job on the queue; returns the job id."""
    queue = Queue(QUEUE, connection=redis.Redis.from_url(url))
    job = queue.enqueue(
        consolidate, url, story, branch, turn, job_id=f"consolidate-{story}-{branch}-{turn}"
    )
    return str(job.id)
