"""A tick's scenes on real RQ worker processes (``FABULA_SCENES=rq``) on the embedded Redis:
the same deltas as in one process, and a worker killed with ``kill -9`` in the middle of
a scene loses nothing and commits nothing twice: the tick finishes on another worker."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator

import redis
from rq import Queue
from rq.job import Job, JobStatus

from fabula.graph.scene_jobs import scenes_on_rq
from fabula.graph.service import Fabula
from fabula.graph.ticks import commit_scenes, play_tick, run_tick
from fabula.memory import keys
from fabula.memory.jobs import QUEUE
from fabula.memory.leases import renewed_in_thread
from fabula.memory.spread import audit_ticks
from fabula.memory.ticks import scene_lease, tick_records
from fabula.worlds.loader import load_world


@contextlib.contextmanager
def scene_worker(url: str) -> Iterator[subprocess.Popen[bytes]]:
    """An ``rq worker fabula`` process (jobs run in its own process) playing scenes of the
    stories at ``url``, killed with its process group at the end."""
    args = [sys.executable, "-m", "rq.cli", "worker", QUEUE, "--url", url, "-q"]
    args += ["--worker-class", "rq.worker.SimpleWorker"]
    proc = subprocess.Popen(
        args,
        start_new_session=True,
        env={**os.environ, "FABULA_REDIS_URL": url},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        yield proc
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(30)


def _queue(url: str) -> Queue:
    return Queue(QUEUE, connection=redis.Redis.from_url(url))


class TestScenesOnWorkers:
    async def test_workers_play_the_same_tick_as_one_process(
        self, offline_fab: Fabula, redis_url: str
    ) -> None:
        """The scenes played on two worker processes are the scenes played here: the same
        deltas, digest for digest; the tick then commits once."""
        store = offline_fab.store(
            await offline_fab.create_story(load_world("town"), "town-rq", opening=False)
        )
        ctx = offline_fab.context(auto=True)
        _, here = await play_tick(ctx, store)
        with scene_worker(redis_url), scene_worker(redis_url):
            plan, there = await asyncio.wait_for(
                play_tick(ctx, store, scenes_on_rq(redis_url, 1)), 120
            )
        assert [d.digest() for d in there] == [d.digest() for d in here]
        assert (await commit_scenes(ctx, store, plan, there)).status == "committed"

    async def test_a_worker_killed_mid_scene_loses_nothing(
        self, offline_fab: Fabula, redis_url: str
    ) -> None:
        """``kill -9`` of the worker playing a scene (its lease taken): the scene is played
        again by another worker, the tick commits once with every scene, as one process
        would have played it; nothing leaks, nothing is duplicated or lost."""
        store = offline_fab.store(
            await offline_fab.create_story(load_world("town"), "town-kill", opening=False)
        )
        ctx = offline_fab.context(auto=True)
        _, reference = await play_tick(ctx, store)
        queue = _queue(redis_url)
        with scene_worker(redis_url) as doomed:
            ticking = asyncio.create_task(run_tick(ctx, store, scenes_on_rq(redis_url, 1)))
            victim = await _leased_job(queue, store.story)
            os.killpg(doomed.pid, signal.SIGKILL)
            doomed.wait(30)
        assert victim.get_status(refresh=True) == JobStatus.STARTED  # killed mid-scene
        with scene_worker(redis_url):
            result = await asyncio.wait_for(ticking, 120)
        assert result.status == "committed"
        assert [d.digest() for d in result.deltas] == [d.digest() for d in reference]
        place = victim.args[0]["place"]
        again = Job.fetch(victim.id.removesuffix("-0") + "-1", connection=queue.connection)
        assert again.get_status() == JobStatus.FINISHED and again.args[0]["place"] == place
        assert len(await tick_records(store)) == 1
        audit = await audit_ticks(store)
        assert audit.leaks == () and audit.duplicates == () and audit.lost == ()
        assert audit.scenes == len(reference)
        turns = await store.client.hlen(keys.turns(store.story, store.branch))
        assert turns == 1 + len(reference)  # the setup turn and each scene's, once

    async def test_a_story_made_again_under_its_id_gets_its_own_jobs(
        self, offline_fab: Fabula, redis_url: str
    ) -> None:
        """Two runs of tick 1 of one story id in one Redis (the story deleted and made
        again between them, as two bench runs do): each run's scene jobs have ids of their
        own, so the second neither takes over the first's jobs (and their expiry) nor
        loses one of its own mid-tick; both ticks commit every scene."""
        queue = _queue(redis_url)
        ids: list[set[str]] = []
        with scene_worker(redis_url), scene_worker(redis_url):
            for _ in range(2):
                await offline_fab.delete_story("town-again")
                store = offline_fab.store(
                    await offline_fab.create_story(load_world("town"), "town-again", opening=False)
                )
                ctx = offline_fab.context(auto=True)
                before = set(queue.finished_job_registry.get_job_ids())
                result = await asyncio.wait_for(
                    run_tick(ctx, store, scenes_on_rq(redis_url, 1)), 120
                )
                assert result.status == "committed"
                mine = {
                    j
                    for j in set(queue.finished_job_registry.get_job_ids()) - before
                    if j.startswith("scene-town-again-")
                }
                places = [Job.fetch(j, connection=queue.connection).args[0]["place"] for j in mine]
                # one finished job per scene played (a scene may go quiet: no delta)
                assert len(set(places)) == len(places) >= len(result.deltas)
                ids.append(mine)
        first, second = ids
        assert first and not first & second
        for job_id in first:  # the first run's jobs are still its own, with their results
            job = Job.fetch(job_id, connection=queue.connection)
            assert job.get_status() == JobStatus.FINISHED and job.return_value() is not None


class TestSceneLease:
    def test_a_lease_outlives_a_blocked_loop_and_a_dead_holders_lapses(
        self, redis_url: str
    ) -> None:
        """A scene's lease (1 s) is renewed by its own thread: held through 2.5 s in which
        the holder's thread does nothing else (a scene holding its event loop); released
        at the end, or, after a scene that ended well, kept 2 s more, then gone."""
        client = redis.Redis.from_url(redis_url)
        name = keys.scene_lease("lease-story", "main", 1, "mill")
        lease = scene_lease(client, "lease-story", "main", 1, "mill", 1.0)
        assert lease.acquire(blocking=False)
        with renewed_in_thread(lease):
            time.sleep(2.5)  # no coroutine, no renewal from here
            assert client.exists(name)
        assert not client.exists(name)
        kept = scene_lease(client, "lease-story", "main", 1, "mill", 1.0)
        assert kept.acquire(blocking=False)
        with renewed_in_thread(kept, keep_s=2.0):
            time.sleep(1.5)
        time.sleep(1.2)  # past its own timeout: kept for the result to be seen first
        assert client.exists(name)
        time.sleep(1.2)
        assert not client.exists(name)


async def _leased_job(queue: Queue, story: str, wait_s: float = 60.0) -> Job:
    """The first scene job of ``story`` whose worker holds its lease."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + wait_s
    while loop.time() < deadline:
        for job_id in queue.started_job_registry.get_job_ids():
            if not job_id.startswith(f"scene-{story}-"):
                continue
            job = Job.fetch(job_id, connection=queue.connection)
            if job.meta.get("leased"):
                return job
        await asyncio.sleep(0.005)
    raise AssertionError("no scene job was started by the worker")
