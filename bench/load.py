"""``fabula bench load``: many stories driven by several processes at once.

N stories (the loop benchmark's synthetic world of three characters, which never comes
to rest) are split over W worker processes; each
process drives its stories concurrently, T autonomous turns each, through the real graph,
checkpointer and store. Afterwards every story is checked: exactly its T turns committed
(no gap, no turn twice, no "duplicate" outcome), every event filed under its own turn, and
a character's user of one story refused another story's keys. Reported: turns per second
over the driving phase (the processes start together, after their imports) and the p50/p95
latency of one turn. The baseline in the same run is the same stories driven by one process.

JSON: ``{"benchmark": "load", "stories", "turns", "committed", "duplicates",
"turns_per_second", "p95_ms", ...}``.
"""

from __future__ import annotations

import asyncio
import json
import logging
import multiprocessing
import secrets
import tempfile
import time
from collections import Counter
from multiprocessing.synchronize import Barrier
from pathlib import Path
from typing import Any

from redis.exceptions import NoPermissionError

from fabula.bench.loop import synthetic_world
from fabula.bench.report import percentiles, print_table, write_json
from fabula.graph.service import Fabula
from fabula.logs import configure_logging
from fabula.memory import keys
from fabula.memory.connection import connect_async, declare_cluster, is_cluster
from fabula.settings import Settings


def _settings() -> Settings:
    return Settings(home=Path(tempfile.gettempdir()), consolidate="off")


def _worker(
    url: str,
    cluster: bool,
    stories: list[str],
    turns: int,
    barrier: Barrier,
    results: Any,
) -> None:
    """One process: wait for the others, then drive ``stories`` concurrently."""
    configure_logging(level=logging.WARNING)
    declare_cluster(url, cluster)
    results.put(asyncio.run(_drive(url, stories, turns, barrier)))


async def _drive(url: str, stories: list[str], turns: int, barrier: Barrier) -> dict[str, Any]:
    latencies: list[float] = []
    outcomes: Counter[str] = Counter()
    async with Fabula(url, _settings()) as fab:
        await asyncio.to_thread(barrier.wait)
        started = time.perf_counter()

        async def one(story: str) -> None:
            store = fab.store(story)
            for _ in range(turns):
                begun = time.perf_counter()
                outcome = (await fab.run(store, auto=True)).outcome or "at rest"
                latencies.append((time.perf_counter() - begun) * 1000)
                outcomes[outcome] += 1

        await asyncio.gather(*(one(s) for s in stories))
        elapsed = time.perf_counter() - started
    return {"latencies": latencies, "outcomes": dict(outcomes), "seconds": elapsed}


async def _create(url: str, stories: list[str]) -> dict[str, int]:
    """The stories, each with its opening; their heads before the run."""
    heads = {}
    async with Fabula(url, _settings()) as fab:
        for story in stories:
            store = fab.store(await fab.create_story(synthetic_world(3), story))
            heads[story] = await store.head()
    return heads


async def _check(url: str, heads: dict[str, int], turns: int) -> dict[str, int]:
    """Per story: exactly ``turns`` new turns, events under their turns; minds isolated."""
    counts = {"committed": 0, "extra": 0, "missing": 0, "misfiled": 0, "leaks": 0}
    client = connect_async(url)
    names = list(heads)
    try:
        async with Fabula(url, _settings()) as fab:
            for i, story in enumerate(names):
                head = await fab.store(story).head()
                stored = await client.hgetall(keys.turns(story, "main"))
                new = [int(t) for t in stored if int(t) > heads[story]]
                counts["committed"] += len(new)
                counts["extra"] += max(0, len(new) - turns)
                counts["missing"] += max(0, turns - len(new))
                assert head == max(int(t) for t in stored)
                for raw in stored.values():
                    for event in json.loads(raw)["events"]:
                        if not await client.hexists(keys.events(story, "main"), event):
                            counts["misfiled"] += 1
                mind = await fab.minds.mind(story, "leo")
                other = names[(i + 1) % len(names)]
                try:
                    await mind.client.hgetall(keys.belief_records(other, "main", "leo"))
                    counts["leaks"] += 1
                except NoPermissionError:
                    pass
    finally:
        await client.aclose()
    return counts


async def _delete(url: str, stories: list[str]) -> None:
    async with Fabula(url, _settings()) as fab:
        for story in stories:
            await fab.delete_story(story)


def _measure(url: str, stories: int, turns: int, workers: int) -> dict[str, Any]:
    tag = secrets.token_hex(2)
    names = [f"load-{tag}-{workers}w-{i}" for i in range(stories)]
    heads = asyncio.run(_create(url, names))
    cluster = is_cluster(url)
    ctx = multiprocessing.get_context("spawn")  # no inherited connections or event loops
    barrier = ctx.Barrier(workers + 1)
    results = ctx.Queue()
    processes = [
        ctx.Process(target=_worker, args=(url, cluster, names[w::workers], turns, barrier, results))
        for w in range(workers)
    ]
    for process in processes:
        process.start()
    barrier.wait()  # every worker has imported and connected: the clock starts
    started = time.perf_counter()
    parts = [results.get() for _ in processes]
    wall = time.perf_counter() - started
    for process in processes:
        process.join(60)
    latencies = [ms for p in parts for ms in p["latencies"]]
    outcomes: Counter[str] = Counter()
    for p in parts:
        outcomes.update(p["outcomes"])
    checked = asyncio.run(_check(url, heads, turns))
    asyncio.run(_delete(url, names))
    return {
        "workers": workers,
        "committed": checked["committed"],
        "duplicates": outcomes.get("duplicate", 0) + checked["extra"],
        "missing": checked["missing"],
        "misfiled_events": checked["misfiled"],
        "cross_story_reads": checked["leaks"],
        "outcomes": dict(outcomes),
        "seconds": round(wall, 3),
        "turns_per_second": round(checked["committed"] / wall, 2),
        "latency_ms": percentiles(latencies),
    }


def run_load(
    url: str, stories: int, turns: int, workers: int, json_out: str | None = None
) -> dict[str, Any]:
    """Run the load benchmark (and its one-process baseline); print and return the figures."""
    loaded = _measure(url, stories, turns, workers)
    baseline = _measure(url, stories, turns, 1)
    result = {
        "benchmark": "load",
        "redis": "cluster" if is_cluster(url) else "single",
        "stories": stories,
        "turns": stories * turns,
        "workers": workers,
        "committed": loaded["committed"],
        "duplicates": loaded["duplicates"],
        "turns_per_second": loaded["turns_per_second"],
        "p50_ms": loaded["latency_ms"]["p50"],
        "p95_ms": loaded["latency_ms"]["p95"],
        "run": loaded,
        "baselines": {"one_process": baseline},
    }
    print_table(
        f"fabula bench load ({result['redis']} Redis)",
        [
            "run",
            "stories",
            "turns",
            "committed",
            "duplicates",
            "cross-story",
            "turns/s",
            "p50/p95 ms",
        ],
        [
            [
                f"{r['workers']} process(es)",
                stories,
                stories * turns,
                r["committed"],
                r["duplicates"],
                r["cross_story_reads"],
                r["turns_per_second"],
                f"{r['latency_ms']['p50']}/{r['latency_ms']['p95']}",
            ]
            for r in (loaded, baseline)
        ],
    )
    write_json(json_out, result)
    return result


def run(
    url: str | None,
    stories: int,
    turns: int,
    workers: int,
    json_out: str | None,
    local_cluster: bool = False,
) -> dict[str, Any]:
    """``fabula bench load``; with ``local_cluster``, on a cluster started for the run."""
    if local_cluster:
        from fabula.testing.localcluster import LocalCluster

        with LocalCluster() as cluster:
            return run_load(cluster.url, stories, turns, workers, json_out)
    assert url is not None
    return run_load(url, stories, turns, workers, json_out)
