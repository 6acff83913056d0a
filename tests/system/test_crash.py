"""Crash tests: kill -9 at random moments, then check that nothing acknowledged was lost,
nothing was written twice, and the story goes on.

- ``fabula run --auto`` killed at 20 random moments (the command runs in a forked child, so
  it starts without re-importing the stack; the child runs the real CLI entry point);
- an RQ worker killed (with its work horse) in the middle of consolidating a long story,
  its job then recovered from RQ's registries;
- the Redis server killed while turns are being committed and approved, and restarted.

The random moments come from a seeded generator (the seed is printed) so a failure can be
replayed. Together they add about 20-30 s to the suite on the development machine.
"""

from __future__ import annotations

import asyncio
import contextlib
import html
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import redis
from redis.asyncio.lock import Lock

from fabula.agents.contracts import Decision
from fabula.bench.loop import synthetic_world
from fabula.errors import Conflict, FabulaError
from fabula.graph.service import Fabula
from fabula.memory import keys
from fabula.memory.connection import connect, connect_async
from fabula.memory.leases import renewed
from fabula.memory.server import EmbeddedRedis
from fabula.memory.store import StoryStore
from fabula.settings import Settings
from fabula.testing.cli import Cli, fabula
from fabula.testing.redis import on_cluster
from fabula.testing.stories import check_story, write_turn
from fabula.testing.web import studio

SEED = int(os.environ.get("FABULA_CRASH_SEED", "7"))


def settings_for(tmp_path: Path) -> Settings:
    return Settings(home=tmp_path, consolidate="off")


# -- kill -9 of `fabula run --auto` ------------------------------------------------------


def _run_cli_in_child(url: str, home: Path, args: list[str]) -> int:
    """Fork a child that runs ``fabula ARGS`` (the real entry point); return its pid."""
    pid = os.fork()
    if pid == 0:  # the child: never returns into pytest
        code = 1
        try:
            os.environ.update({"FABULA_REDIS_URL": url, "FABULA_HOME": str(home)})
            os.environ["FABULA_CONSOLIDATE"] = "off"
            from fabula.cli import app

            with contextlib.redirect_stdout(open(os.devnull, "w")):
                app(args, standalone_mode=False)
            code = 0
        finally:
            os._exit(code)
    return pid


def _wait(pid: int, timeout_s: float) -> int:
    """The child's exit code; a child still running after ``timeout_s`` is killed (-9)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return os.waitstatus_to_exitcode(status)
        time.sleep(0.02)
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    return -9


class TestKillRun:
    def test_kill_9_of_run_auto_at_20_random_moments(self, redis_url: str, tmp_path: Path) -> None:
        """After each kill: no gap, no duplicate, events and memories consistent; then the
        story goes on."""
        asyncio.run(self._new_story(redis_url, tmp_path))
        rng = random.Random(SEED)
        heads = [check_story(redis_url, "crash")]
        for _ in range(20):
            pid = _run_cli_in_child(
                redis_url, tmp_path, ["run", "crash", "--turns", "1000", "--auto"]
            )
            time.sleep(rng.uniform(0.02, 0.6))
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            heads.append(check_story(redis_url, "crash"))
        assert heads == sorted(heads) and heads[-1] > heads[0], heads
        pid = _run_cli_in_child(redis_url, tmp_path, ["run", "crash", "--turns", "2", "--auto"])
        assert _wait(pid, 120) == 0
        assert check_story(redis_url, "crash") == heads[-1] + 2
        print(f"\nseed {SEED}: heads after each kill {heads}")

    @staticmethod
    async def _new_story(url: str, home: Path) -> None:
        async with Fabula(url, settings_for(home)) as fab:
            await fab.create_story(synthetic_world(3), "crash")  # never at rest


class TestKillNew:
    def test_kill_9_of_new_mid_opening_leaves_a_story_refused(
        self, redis_url: str, tmp_path: Path
    ) -> None:
        """`fabula new` killed while it commits a pack's opening leaves a story marked
        unfinished: running it is refused in one line naming the way out (delete it and
        make it again), nothing is written, and `fabula delete` removes it."""
        lines = "\n".join(f'  "Leo went to the {p}.",' for p in ["hallway", "study"] * 30)
        pack = (Path(__file__).parents[2] / "worlds/hollow_book/world.toml").read_text()
        start = pack.index("[opening]")
        folder = tmp_path / "long_opening"
        folder.mkdir()
        (folder / "world.toml").write_text(pack[:start] + f"[opening]\nturns = [\n{lines}\n]\n")
        client = connect(redis_url)
        pid = _run_cli_in_child(redis_url, tmp_path, ["new", "--world", str(folder), "--id", "cut"])
        head = -1
        deadline = time.monotonic() + 60
        while head < 3 and time.monotonic() < deadline:  # well into the opening's 60 turns
            head = int(client.hget(keys.head("cut", "main"), "turn") or -1)
            time.sleep(0.005)
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        stopped_at = check_story(redis_url, "cut")
        assert 3 <= stopped_at < 60, stopped_at
        run = fabula(redis_url, "run", "cut", "--turns", "1", "--auto", check=False)
        assert run.returncode == Conflict.exit_code, run.stderr
        assert len(run.stderr.strip().splitlines()) == 1, run.stderr
        assert "story 'cut' was never finished being made" in run.stderr
        assert check_story(redis_url, "cut") == stopped_at  # nothing written
        assert asyncio.run(self._refusal(redis_url, tmp_path)).startswith(
            "story 'cut' was never finished being made"
        )
        fabula(redis_url, "delete", "cut", "--yes")
        assert not client.exists(keys.meta("cut"))
        client.close()

    @staticmethod
    async def _refusal(url: str, home: Path) -> str:
        async with Fabula(url, settings_for(home)) as fab:
            try:
                await fab.run(fab.store("cut"), auto=True)
            except Conflict as exc:
                return str(exc)
        return "not refused"


# -- kill -9 of an RQ worker mid-consolidation ------------------------------------------


@contextlib.contextmanager
def rq_worker(
    url: str, stories: str, *, burst: bool, simple: bool = False
) -> Iterator[subprocess.Popen[bytes]]:
    """An ``rq worker fabula`` process on the queue at ``url``, its jobs working on the
    stories at ``stories`` (its own ``FABULA_REDIS_URL``: a job carries no URL), in its own
    process group, so its horse dies with it; ``simple``: jobs run in the worker's process
    (no fork per job)."""
    args = [sys.executable, "-m", "rq.cli", "worker", "fabula", "--url", url, "-q"]
    args += ["--burst"] if burst else []
    args += ["--worker-class", "rq.worker.SimpleWorker"] if simple else []
    proc = subprocess.Popen(
        args,
        start_new_session=True,
        env={**os.environ, "FABULA_REDIS_URL": stories},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        yield proc
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(30)


class TestKillWorker:
    def test_kill_9_of_a_worker_mid_consolidation(
        self, redis_url: str, tmp_path: Path, request: pytest.FixtureRequest
    ) -> None:
        """A worker consolidating a stream of turns (a job per 4 turns, as FABULA_CONSOLIDATE=rq
        enqueues them) is killed mid-stream: the hierarchy stays consistent, the
        abandoned job is recovered from RQ's registry, and the end is the same as an
        uninterrupted consolidation."""
        from rq import Queue
        from rq.intermediate_queue import IntermediateQueue
        from rq.registry import FailedJobRegistry, FinishedJobRegistry, StartedJobRegistry

        from fabula.memory.jobs import QUEUE, enqueue_consolidation

        # on a cluster the queue lives on a plain Redis (RQ 3.0 cannot use a cluster)
        queue_url = request.getfixturevalue("embedded_redis").url if on_cluster() else redis_url
        turns = asyncio.run(self._long_story(redis_url, tmp_path, "slow"))
        conn = redis.Redis.from_url(queue_url)
        ends = [*range(4, turns, 4), turns]
        jobs = [enqueue_consolidation(queue_url, "slow", "main", t) for t in ends]
        started = StartedJobRegistry(QUEUE, connection=conn)
        finished = FinishedJobRegistry(QUEUE, connection=conn)
        # jobs run in the worker's own process (no fork and re-import per job), so a job
        # takes milliseconds and the kill lands in the middle of the stream
        with rq_worker(queue_url, redis_url, burst=False, simple=True) as worker:
            deadline = time.monotonic() + 60
            while len(finished.get_job_ids()) < 2:
                assert worker.poll() is None, worker.stderr.read() if worker.stderr else ""
                assert time.monotonic() < deadline, "the worker never finished a job"
                time.sleep(0.002)
            time.sleep(random.Random(SEED).uniform(0.0, 0.15))
            os.killpg(worker.pid, signal.SIGKILL)
        done = len(finished.get_job_ids())
        mark = asyncio.run(self._watermark(redis_url, "slow"))
        assert 0 <= mark <= turns and done < len(jobs), (mark, done)
        asyncio.run(self._scenes_are_contiguous(redis_url, "slow", mark))
        # What RQ's maintenance does once the dead worker's heartbeat has expired (here at
        # once): a started job is failed as abandoned, a job dequeued but not yet started
        # (left in the intermediate list) too; both are requeued.
        queue = Queue(QUEUE, connection=conn)
        started.cleanup(timestamp=int(time.time()) + 10_000)
        failed = FailedJobRegistry(QUEUE, connection=conn)
        abandoned = failed.get_job_ids()
        for job_id in abandoned:
            failed.requeue(job_id)
        between = IntermediateQueue(queue.key, connection=conn)
        stuck = [j for j in between.get_job_ids() if j not in started]
        for job_id in stuck:
            between.remove(job_id)
            queue.enqueue_job(queue.fetch_job(job_id))  # type: ignore[arg-type]
        assert queue.count == len(jobs) - done
        with rq_worker(queue_url, redis_url, burst=True, simple=True) as worker:
            assert worker.wait(120) == 0
        assert asyncio.run(self._watermark(redis_url, "slow")) == turns
        # the same as consolidating the same story in one go, uninterrupted
        asyncio.run(self._long_story(redis_url, tmp_path, "calm"))
        expected = asyncio.run(self._consolidated(redis_url, "calm"))
        assert asyncio.run(self._scene_spans(redis_url, "slow")) == expected
        conn.close()
        print(
            f"\nworker killed after {done} of {len(jobs)} jobs, watermark {mark} of {turns} "
            f"turns; requeued {len(abandoned)} abandoned and {len(stuck)} dequeued-not-started"
        )

    @staticmethod
    async def _long_story(url: str, home: Path, story: str) -> int:
        async with Fabula(url, settings_for(home)) as fab:
            store = fab.store(await fab.create_story("hollow_book", story))
            lines = [
                "Leo went to the hallway.",
                "Leo went to the study.",
                "Mara went to the hallway.",
                "Mara went to the study.",
            ]
            for i in range(120):
                await fab.commit_scripted(store, lines[i % len(lines)])
            return await store.head()

    @staticmethod
    async def _watermark(url: str, story: str) -> int:
        client = connect_async(url)
        raw = await client.hget(keys.hierarchy_threads(story, "main"), "@through")
        await client.aclose()
        return 0 if raw is None else int(raw)

    @staticmethod
    async def _scene_spans(url: str, story: str) -> list[tuple[int, int, str]]:
        from fabula.memory.hierarchy import scenes
        from fabula.memory.store import StoryStore

        client = connect_async(url)
        try:
            found = await scenes(StoryStore(client, story))
            return [(n.first_turn, n.last_turn, n.summary) for n in found]
        finally:
            await client.aclose()

    @classmethod
    async def _scenes_are_contiguous(cls, url: str, story: str, mark: int) -> None:
        spans = await cls._scene_spans(url, story)
        covered = [t for first, last, _ in spans for t in range(first, last + 1)]
        assert covered == sorted(set(covered)), "scenes overlap"
        assert not covered or covered[0] == 1

    @classmethod
    async def _consolidated(cls, url: str, story: str) -> list[tuple[int, int, str]]:
        from fabula.memory.hierarchy import consolidate
        from fabula.memory.store import StoryStore

        client = connect_async(url)
        try:
            await consolidate(StoryStore(client, story))
        finally:
            await client.aclose()
        return await cls._scene_spans(url, story)


# -- kill -9 of Redis mid-commit ---------------------------------------------------------


@pytest.fixture()
def private_server() -> Iterator[EmbeddedRedis]:
    directory = Path(tempfile.mkdtemp(prefix="fk-", dir="/tmp"))
    server = EmbeddedRedis(directory / "r")
    server.ensure_started()
    yield server
    server.stop()
    shutil.rmtree(directory, ignore_errors=True)


class TestKillRedis:
    def test_kill_9_of_redis_mid_commit(
        self, private_server: EmbeddedRedis, tmp_path: Path
    ) -> None:
        """Turns committed autonomously and approved by a human while Redis is killed 5
        times: every acknowledged turn survives with its text, and the story goes on."""
        url = private_server.url
        asyncio.run(self._new_story(url, tmp_path))
        rng = random.Random(SEED)
        acknowledged: dict[int, str] = {}
        for round_ in range(5):
            stop = threading.Event()
            writer = threading.Thread(
                target=asyncio.run, args=(self._write(url, tmp_path, acknowledged, stop),)
            )
            writer.start()
            time.sleep(rng.uniform(0.4, 1.2))
            pid = int(private_server.pidfile.read_text())
            os.kill(pid, signal.SIGKILL)
            for _ in range(500):
                if not private_server.is_running():
                    break
                time.sleep(0.01)
            # restarted at once: a writer whose commit reply was lost learns what happened
            private_server.ensure_started()
            stop.set()
            writer.join(120)
            assert not writer.is_alive()
            head = check_story(url, "dur")
            texts = asyncio.run(self._texts(url))
            lost = {t: x for t, x in acknowledged.items() if texts.get(t) != x}
            assert not lost, f"round {round_}: acknowledged turns lost or changed: {lost}"
            assert max(acknowledged, default=0) <= head
        assert acknowledged  # at least one per run on the development machine: 5-8
        head = check_story(url, "dur")
        asyncio.run(self._one_more(url, tmp_path))
        assert check_story(url, "dur") == head + 1
        print(f"\n{len(acknowledged)} acknowledged turns survived 5 kills of Redis")

    @staticmethod
    async def _one_more(url: str, home: Path) -> None:
        async with Fabula(url, settings_for(home)) as fab:
            store = fab.store("dur")
            outcome = (await fab.run(store, auto=True)).outcome
            if outcome == "pending":  # a human's turn awaited approval when Redis died: kept
                outcome = (await fab.decide(store, Decision(action="approve"))).outcome
            assert outcome == "committed"

    @staticmethod
    async def _new_story(url: str, home: Path) -> None:
        async with Fabula(url, settings_for(home)) as fab:
            await fab.create_story(synthetic_world(3), "dur")  # never at rest

    @staticmethod
    async def _texts(url: str) -> dict[int, str]:
        client = connect_async(url)
        raw = await client.hgetall(keys.turns("dur", "main"))
        await client.aclose()
        return {int(t): json.loads(v)["text"] for t, v in raw.items()}

    @staticmethod
    async def _write(url: str, home: Path, acked: dict[int, str], stop: threading.Event) -> None:
        """Alternate autonomous turns and human approvals until Redis dies."""
        try:
            async with Fabula(url, settings_for(home)) as fab:
                store = fab.store("dur")
                while not stop.is_set():
                    human = (await store.head()) % 2 == 0
                    await write_turn(fab, store, acked, human=human)
        except (FabulaError, redis.RedisError, OSError):
            return  # the server died under us: what was acknowledged is in `acked`


class TestDurableApproval:
    async def test_an_approval_waits_for_the_append_only_file(
        self, redis_url: str, tmp_path: Path
    ) -> None:
        """A human approval is acknowledged after WAITAOF confirmed the fsync; an
        autonomous turn does not wait."""
        sync = connect(redis_url)

        def waitaofs() -> int:
            if hasattr(sync, "get_nodes"):  # a cluster: the primary that holds the story
                node = sync.get_node_from_key(keys.head("sync", "main"))
                stats = sync.info("commandstats", target_nodes=node)
            else:
                stats = sync.info("commandstats")
            return int(stats.get("cmdstat_waitaof", {}).get("calls", 0))

        async with Fabula(redis_url, settings_for(tmp_path)) as fab:
            store = fab.store(await fab.create_story("hollow_book", "sync"))
            before = waitaofs()
            assert (await fab.run(store, auto=True)).outcome == "committed"
            assert waitaofs() == before
            assert (await fab.run(store, auto=False)).outcome == "pending"
            assert (await fab.decide(store, Decision(action="approve"))).outcome == "committed"
            assert waitaofs() == before + 1
            head = await store.head()
            assert sync.hget(keys.head("sync", "main"), "durable") == str(head)
            assert (await fab.run(store, auto=False)).outcome == "pending"
            done = await fab.decide(store, Decision(action="approve"))
            assert (done.outcome, done.durable, done.unsynced) == ("committed", True, None)
        sync.close()

    def test_make_durable_says_why_it_could_not_confirm(
        self, private_server: EmbeddedRedis
    ) -> None:
        """make_durable: None once fsynced; the reason when the fsync does not come in time
        (``appendfsync no`` never fsyncs on its own) or the server keeps no append-only file."""

        async def go() -> list[str | None]:
            client = connect_async(private_server.url)
            store = StoryStore(client, "d")
            try:
                reasons = [await store.make_durable(1)]
                await client.config_set("appendfsync", "no")
                reasons.append(await store.make_durable(2, timeout_ms=50))
                await client.config_set("appendonly", "no")
                reasons.append(await store.make_durable(3, timeout_ms=50))
            finally:
                await client.aclose()
            return reasons

        assert asyncio.run(go()) == [
            None,
            "the server did not fsync within 50 ms",
            "the server keeps no append-only file (appendonly no)",
        ]

    def test_an_approval_not_confirmed_on_disk_is_reported_unsynced(
        self, private_server: EmbeddedRedis, tmp_path: Path
    ) -> None:
        """When WAITAOF cannot confirm an approval (here: the server keeps no append-only
        file), the turn is committed and reported so, never as on disk, with why: the CLI
        line (exit 0: the story has the turn), the studio's notice, the JSON API."""
        admin = connect(private_server.url)
        admin.config_set("appendonly", "no")
        admin.close()
        why = "the server keeps no append-only file (appendonly no)"
        cli = Cli(private_server.url, tmp_path)
        assert cli("new", "--world", "hollow_book", "--id", "tale").exit_code == 0
        assert cli("run", "tale").exit_code == 0
        result = cli("approve", "tale", COLUMNS="200")
        assert result.exit_code == 0, result.output
        line = result.stdout.strip().splitlines()[-1]
        assert line == f"tale [main]: committed (not confirmed on disk: {why})", line
        assert check_story(private_server.url, "tale") == 4

        async def in_the_studio() -> None:
            with studio(private_server.url, tmp_path) as base:
                async with httpx.AsyncClient(base_url=base, timeout=60) as client:
                    await client.get("/")  # the CSRF cookie
                    form = {"csrf_token": client.cookies["fabula_csrf"], "branch": "main"}
                    ran = await client.post("/api/stories/tale/run", json={"turns": 1})
                    assert ran.json()["pending"] is not None, ran.text
                    page = await client.post(
                        "/stories/tale/approve", data=form, follow_redirects=True
                    )
                    assert page.status_code == 200, page.text
                    notice = f"Turn 5 committed, but not confirmed on disk: {why}."
                    assert html.escape(notice, quote=False) in page.text, page.text
                    await client.post("/api/stories/tale/run", json={"turns": 1})
                    api = await client.post("/api/stories/tale/approve", json={})
                    out = api.json()
                    assert (out["outcome"], out["head"], out["durable"]) == ("committed", 6, False)
                    assert out["unsynced"] == why

        asyncio.run(in_the_studio())
        assert check_story(private_server.url, "tale") == 6


class TestDecisionLock:
    async def test_a_held_lock_is_renewed_and_a_dead_holders_expires(
        self, aredis_client: Any
    ) -> None:
        """A decision's lock lives past its timeout while its holder works (renewed), and is
        free at once after; a holder that dies (never renews, never releases: killed, or
        its server restarted under it) frees it within the timeout, not ten minutes."""
        held = Lock(aredis_client, "fab:test:lock", timeout=0.3)
        assert await held.acquire(blocking=False)
        async with renewed(held):
            await asyncio.sleep(1.0)  # over three timeouts
            other = Lock(aredis_client, "fab:test:lock", timeout=0.3)
            assert not await other.acquire(blocking=False)
        assert await other.acquire(blocking=False)  # released at once
        # `other` now dies holding it: the next gets it once its timeout is over
        waiter = Lock(aredis_client, "fab:test:lock", timeout=0.3, blocking_timeout=5)
        assert await waiter.acquire()
        await waiter.release()
