"""How committed turns are consolidated into the hierarchy: inline, through RQ, or not.

Either way a turn never waits for it: ``inline`` consolidates in a background task of this
process (one per branch, :class:`InlineConsolidation`), ``rq`` enqueues a job for a worker.
Consolidation is idempotent and watermarked, so a pass that is late, or lost with its
process, is done by the next one.

In model mode (a summariser role on a model) each consolidation pass is followed by the
summaries step (:func:`~fabula.memory.summarise.summarise_closed`: the model rewrites the
extractive summaries of the scenes and plotlines that closed), in its own background task so
that a slow model never holds up consolidation; with RQ, by :func:`summarise_job`, a job that waits
for its consolidation and builds the summariser from the worker's own settings.
"""

from __future__ import annotations

import asyncio

from fabula.agents.factory import make_summariser
from fabula.agents.roles import SummariserRole
from fabula.agents.usage import metering
from fabula.errors import ConfigError
from fabula.graph.runtime import Consolidator
from fabula.logs import get_logger
from fabula.memory.branch_tasks import BranchTasks
from fabula.memory.connection import connect_async, is_cluster
from fabula.memory.store import StoryStore
from fabula.memory.summarise import Summarised, summarise_closed
from fabula.settings import Settings

log = get_logger(__name__)

CLOSING_SUMMARIES_S = 10.0  # how long a closing process waits for its summaries step


async def summarise_metered(store: StoryStore, summariser: SummariserRole) -> Summarised:
    """The summaries step on ``store``'s branch, its model usage counted with the branch's
    usage outside turns (``fabula show usage`` lists it as ``background``)."""
    with metering() as meter:
        try:
            return await summarise_closed(store, summariser)
        finally:
            if meter.roles:
                await store.add_background_usage(meter.as_dict())


class InlineConsolidation:
    """Consolidates committed turns into the hierarchy in this process, off the turn's path.

    Calling it schedules consolidation of the branch up to its head and returns at once (one task
    per branch, :class:`~fabula.memory.branch_tasks.BranchTasks`); :meth:`wait` and
    :meth:`drain` wait for consolidation (before deleting a story, and before closing the
    connection the stores use). With a ``summariser``, each pass schedules the summaries
    step on the branch, in a second background task (waited for after consolidation).
    """

    def __init__(self, summariser: SummariserRole | None = None) -> None:
        self.summariser = summariser
        self._tasks = BranchTasks(self._consolidate, "consolidation")
        self._summaries = BranchTasks(self._summarise, "summaries")

    async def __call__(self, store: StoryStore, turn: int) -> None:
        self._tasks.schedule(store)

    async def _consolidate(self, store: StoryStore) -> None:
        from fabula.memory.hierarchy import consolidate

        await consolidate(store)
        if self.summariser is not None:
            self._summaries.schedule(store)

    async def _summarise(self, store: StoryStore) -> None:
        if self.summariser is not None:
            await summarise_metered(store, self.summariser)

    def running(self) -> int:
        """How many consolidation passes (and summaries steps) are under way."""
        return self._tasks.running() + self._summaries.running()

    async def wait(self, story: str) -> None:
        """Wait for the consolidation of one story, then for its summaries."""
        await self._tasks.wait(story)
        await self._summaries.wait(story)

    async def drain(self, summaries_s: float | None = None) -> None:
        """Wait for all consolidation, then for every summaries step: for at most
        ``summaries_s`` seconds, if given (a process closing; the summaries it leaves are
        written by the next run, since a summary is asked for until it is written)."""
        await self._tasks.drain()
        left = await self._summaries.drain(summaries_s)
        if left:
            log.info("summaries_left_for_later", branches=left, waited_s=summaries_s)


def consolidator(
    url: str,
    mode: str,
    queue_url: str | None = None,
    summariser: SummariserRole | None = None,
) -> Consolidator | None:
    """How committed turns are consolidated: ``inline`` (in a background task of this
    process), ``rq`` (enqueued, on ``queue_url`` or ``url``) or ``off``; with a
    ``summariser`` (model mode), each consolidation pass is followed by the summaries step (on RQ: a
    :func:`summarise_job` after each consolidation job). Raises :class:`ConfigError` for RQ on a
    Redis Cluster without a separate queue (rq 3.0 cannot use a cluster)."""
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

        then = summarise_job if summariser is not None else None

        async def enqueue(store: StoryStore, turn: int) -> None:
            # the job names no URL: the worker connects from its own environment
            enqueue_consolidation(queue, store.story, store.branch, turn, then=then)

        return enqueue
    return InlineConsolidation(summariser)


def summarise_job(story: str, branch: str) -> int:
    """The RQ job that follows consolidation in model mode: the summaries step on one branch,
    with the summariser and the connection built from the worker's settings
    (``FABULA_MODEL_*``, ``FABULA_REDIS_URL``, read here: a job is an entry point; it
    carries no credentials). Returns how many summaries the model wrote; a worker with no
    summariser model configured writes none (the extractive summaries stay)."""
    summariser = make_summariser(Settings.from_env())
    if summariser is None:
        return 0
    from fabula.memory.jobs import worker_url

    url = worker_url()

    async def run() -> int:
        client = connect_async(url)
        try:
            done = await summarise_metered(StoryStore(client, story, branch), summariser)
            return done.model
        finally:
            await client.aclose()

    return asyncio.run(run())
