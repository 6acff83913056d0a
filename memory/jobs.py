"""RQ job entry points: slow work kept off the turn's path.

``fabula`` enqueues :func:`consolidate` on the ``fabula`` queue after each commit when
``FABULA_CONSOLIDATE=rq``; run workers with ``rq worker fabula --url $FABULA_RQ_URL`` (the
queue's Redis: ``FABULA_REDIS_URL`` unless that is a cluster)
(``compose.yaml`` starts one). Jobs are synchronous edges that call ``asyncio.run``.

A job carries no credentials: its arguments are the story, branch and turn, and the worker
takes its connection from its own environment (:func:`worker_url`: ``FABULA_REDIS_URL``, else
the embedded server of ``FABULA_HOME``), so no secret is in the job's pickled data, its
description or the worker's log.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import redis
from rq import Queue

from fabula.memory.connection import connect_async
from fabula.memory.hierarchy import consolidate_turn
from fabula.memory.server.urls import redis_url
from fabula.memory.store import StoryStore
from fabula.settings import Settings

QUEUE = "fabula"


def worker_url() -> str:
    """The stories' Redis as the worker's own environment names it (read here: a job is an
    entry point): ``FABULA_REDIS_URL`` (checked as any configured server is), else the
    embedded server of ``FABULA_HOME``."""
    return redis_url(Settings.from_env())


def consolidate(story: str, branch: str, turn: int) -> str | None:
    """Consolidate the hierarchy up to one committed turn (idempotent, safe to run concurrently);
    returns the id of the scene that holds the turn.

    The episode index is not built here: the application indexes in the background after
    each commit, with its embedder when dense retrieval is on (a worker has none), and every
    reader catches up first (:mod:`fabula.memory.index.indexer`)."""

    url = worker_url()

    async def run() -> str | None:
        client = connect_async(url)
        try:
            store = StoryStore(client, story, branch)
            node = await consolidate_turn(store, turn)
            return node.id if node else None
        finally:
            await client.aclose()

    return asyncio.run(run())


def enqueue_consolidation(
    queue_url: str,
    story: str,
    branch: str,
    turn: int,
    *,
    then: Callable[[str, str], Any] | None = None,
) -> str:
    """Put a consolidation job on the queue at ``queue_url``; returns the job id. The job
    works on the stories of the worker's own environment (:func:`worker_url`): it carries
    no URL. ``then``, a job function taking ``(story, branch)``, is enqueued to run once
    consolidation is done (model mode's summaries step).

    RQ does not support Redis Cluster (rq 3.0: its worker needs one server's connection
    pool), so with a cluster the queue lives on a plain Redis (``FABULA_RQ_URL``).
    """
    queue = Queue(QUEUE, connection=redis.Redis.from_url(queue_url))
    job = queue.enqueue(
        consolidate, story, branch, turn, job_id=f"consolidate-{story}-{branch}-{turn}"
    )
    if then is not None:
        queue.enqueue(
            then, story, branch, depends_on=job, job_id=f"summarise-{story}-{branch}-{turn}"
        )
    return str(job.id)
