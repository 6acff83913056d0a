"""``fabula bench town``: a town run in ticks, offline, with the narrative loop as baseline.

The town is the shipped pack at 25 characters in 10 places, else a generated one of the
same make (:func:`town_world`, drawn from a seed): one character holds a piece of news (a
harvest party), everyone keeps a daily routine (home, work, a haunt), friends work side by
side, and whoever holds the news tells it on to those it meets. The tick run plays
``--ticks`` ticks (fewer when the town comes to rest) through :func:`run_tick` — every
place's scene concurrently, each tick committed whole — and reports ticks and scenes per
second, p50/p95 tick time, the story's Redis memory (in all and per character), the audit
(leaks: a character holding an event of another place's scene; duplicates; lost scenes)
and the spread of the news, one share per tick, read from the characters' own minds.

The baseline, in the same run on the same pack, is the narrative loop (one scene a turn,
where the planner looks) for as many turns as the tick run played scenes: turns per second,
p50/p95 turn time, and the share of the town that knows the news at its end.

With ``--workers W`` the scenes are played on W ``rq worker`` processes started here (as
``FABULA_SCENES=rq`` plays them); ``--kill-worker`` kills one with ``kill -9`` while it
plays a scene of the first tick, and the audit says what that lost or doubled (nothing,
when the tick finishes on the others).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import random
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from typing import Any

import redis
from rq import Queue
from rq.job import Job

from fabula.bench.report import percentiles, print_table, write_json
from fabula.bench.scale import _story_bytes
from fabula.errors import InvalidInput, StoryAtRest
from fabula.graph.scene_jobs import scenes_on_rq
from fabula.graph.service import Fabula
from fabula.graph.ticks import ScenePlayer, run_tick, scenes_here
from fabula.memory.jobs import QUEUE
from fabula.memory.spread import audit_ticks, own_beliefs, says
from fabula.memory.store import StoryStore
from fabula.settings import Settings
from fabula.worlds.loader import load_world
from fabula.worlds.pack import CharacterSpec, PlaceSpec, WorldPack

NEWS = "harvest party"
"""The clause whose spread is measured (the holder's secret says it)."""

FAN_OUT = 3
"""How many others the holder of a generated town's news starts beside, and wants it told
to."""


DAY = 6
"""Hours in a generated town's day: each character's routine has one place per hour."""

SEED = 7
"""The seed a generated town is drawn from (the same seed, the same town)."""


def town_world(characters: int, places: int, seed: int = SEED) -> WorldPack:
    """The shipped town at 25 characters in 10 places; else a town drawn from ``seed``:
    ``Agent0`` holds the news (a harvest party) with ``Agent1..3`` beside it and wants it
    told to them; everyone has a home, a work place and a haunt, and a day of
    :data:`DAY` hours among them (home, work, haunt), begun at a drawn hour, so that some
    move every hour; friends (pairs, ``Agent2j`` and ``Agent2j+1``) work in one place (no
    relationship developments: every scene's reading weighs each event against every open
    development, which a town of 500 pairs makes the whole cost of a tick); and
    everyone but ``Agent0`` wants to visit its haunt once (what the narrative baseline has
    them do). In ticks, whoever holds the news tells it on to those it meets."""
    if (characters, places) == (25, 10):
        return load_world("town")
    if characters < 4 or places < 1:
        raise InvalidInput(
            f"bench town needs 4 or more characters and 1 or more places, got {characters} "
            f"and {places}"
        )
    rng = random.Random(seed)
    names = [f"yard {j}" for j in range(places)]
    works = [rng.choice(names) for _ in range((characters + 1) // 2)]
    chars = []
    for i in range(characters):
        home = names[0] if i <= FAN_OUT else names[i % places]
        work, haunt = works[i // 2], rng.choice(names)
        day = [home, home, work, work, haunt, work]
        begin = 0 if i <= FAN_OUT else rng.randrange(DAY)  # the news's first four together
        routine = tuple(day[begin:] + day[:begin])
        if i == 0:
            goals = tuple(f"tell Agent{k} my secret" for k in range(1, FAN_OUT + 1))
        else:
            goals = (f"visit the {haunt}",)
        chars.append(
            CharacterSpec(
                name=f"Agent{i}",
                location=routine[0],
                goals=goals,
                routine=routine,
                news=("Agent0 is holding a harvest party at the mill on Saturday",)
                if i == 0
                else (),
            )
        )
    return WorldPack(
        id="town_bench",
        title="A generated town",
        premise="A town where one piece of news travels from mouth to mouth.",
        places=tuple(PlaceSpec(name=n) for n in names),
        characters=tuple(chars),
    )


async def _knowing(store: StoryStore) -> float:
    characters = await store.characters()
    known = 0
    for c in characters:
        if any(says(b, NEWS) and b.valid_to is None for b in await own_beliefs(store, c)):
            known += 1
    return known / len(characters)


@contextlib.contextmanager
def _workers(url: str, count: int, prefix: str) -> Iterator[list[subprocess.Popen[bytes]]]:
    """``count`` ``rq worker fabula`` processes (jobs in the worker's own process, named
    ``<prefix><i>``) on the stories at ``url``, killed with their groups at the end. The
    prefix is drawn per run: RQ refuses to start a worker under the name of one a run
    before killed (registered until its heartbeat lapses), and the tick would wait on
    workers that never came."""
    procs = []
    try:
        for i in range(count):
            args = [sys.executable, "-m", "rq.cli", "worker", QUEUE, "--url", url, "-q"]
            args += ["--worker-class", "rq.worker.SimpleWorker", "--name", f"{prefix}{i}"]
            procs.append(
                subprocess.Popen(
                    args,
                    start_new_session=True,
                    env={**os.environ, "FABULA_REDIS_URL": url},
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                )
            )
        yield procs
    finally:
        for proc in procs:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(30)


async def _kill_mid_scene(
    url: str, story: str, procs: list[subprocess.Popen[bytes]], prefix: str
) -> int:
    """Wait for a worker (named ``<prefix><i>``: :func:`_workers`) to hold a scene's lease,
    then ``kill -9`` it; 1 once done."""
    queue = Queue(QUEUE, connection=redis.Redis.from_url(url))
    while True:
        for job_id in queue.started_job_registry.get_job_ids():
            if not job_id.startswith(f"scene-{story}-"):
                continue
            job = Job.fetch(job_id, connection=queue.connection)
            name = job.worker_name or ""
            if job.meta.get("leased") and name.startswith(prefix):
                proc = procs[int(name.removeprefix(prefix))]
                os.killpg(proc.pid, signal.SIGKILL)
                return 1
        await asyncio.sleep(0.005)


async def _ticks(
    fab: Fabula,
    pack: WorldPack,
    ticks: int,
    workers: int,
    kill_worker: bool,
    time_budget: float | None = None,
) -> dict[str, Any]:
    story = f"bench-town-{len(pack.characters)}"
    await fab.delete_story(story)
    store = fab.store(await fab.create_story(pack, story, opening=False))
    prefix = f"bench-town-{uuid.uuid4().hex[:8]}-"
    with _workers(fab.url, workers, prefix) as procs:
        return await _run_ticks(
            fab, store, ticks, procs if workers else None, kill_worker, time_budget, prefix
        )


async def _run_ticks(
    fab: Fabula,
    store: StoryStore,
    ticks: int,
    procs: list[subprocess.Popen[bytes]] | None,
    kill_worker: bool,
    time_budget: float | None = None,
    prefix: str = "bench-town-",
) -> dict[str, Any]:
    from fabula.memory.spread import spread

    story = store.story
    ctx = fab.context(auto=True)
    player: ScenePlayer = scenes_here if procs is None else scenes_on_rq(fab.url)
    killer = (
        asyncio.create_task(_kill_mid_scene(fab.url, story, procs, prefix))
        if procs is not None and kill_worker
        else None
    )
    tick_ms: list[float] = []
    scenes = 0
    rest: str | None = None
    start = time.perf_counter()
    for _ in range(ticks):
        began = time.perf_counter()
        if time_budget is not None and began - start > time_budget:
            rest = f"the time budget ({time_budget:g} s) ran out"
            break
        try:
            result = await run_tick(ctx, store, player)
        except StoryAtRest as at_rest:
            rest = at_rest.message
            break
        tick_ms.append((time.perf_counter() - began) * 1000)
        scenes += len(result.deltas)
    seconds = time.perf_counter() - start
    killed = 0
    if killer is not None:
        killed = killer.result() if killer.done() else 0
        killer.cancel()
    audit = await audit_ticks(store)
    curve = await spread(store, NEWS)
    story_bytes = await _story_bytes(fab.admin, story)
    cast = len(await store.characters())
    await fab.delete_story(story)
    done = len(tick_ms)
    return {
        "completed_ticks": done,
        "killed_workers": killed,
        "rest": rest,
        "scenes": scenes,
        "seconds": round(seconds, 3),
        "ticks_per_second": round(done / seconds, 3) if seconds else 0.0,
        "scenes_per_second": round(scenes / seconds, 2) if seconds else 0.0,
        "tick_ms": percentiles(tick_ms),
        "leaks": len(audit.leaks),
        "leak_examples": list(audit.leaks[:5]),
        "duplicates": len(audit.duplicates),
        "lost": len(audit.lost),
        "spread": [round(p.share, 4) for p in curve[1:]],
        "spread_start": round(curve[0].share, 4) if curve else None,
        "redis_bytes": story_bytes,
        "bytes_per_character": story_bytes // cast,
    }


async def _narrative(fab: Fabula, pack: WorldPack, turns: int) -> dict[str, Any]:
    story = f"bench-town-{len(pack.characters)}-narrative"
    await fab.delete_story(story)
    store = fab.store(await fab.create_story(pack, story, opening=False))
    turn_ms: list[float] = []
    committed = 0
    start = time.perf_counter()
    for _ in range(turns):
        began = time.perf_counter()
        out = await fab.run(store, auto=True)
        if out.rest is not None:
            break
        turn_ms.append((time.perf_counter() - began) * 1000)
        committed += 1 if out.outcome == "committed" else 0
    seconds = time.perf_counter() - start
    share = await _knowing(store)
    story_bytes = await _story_bytes(fab.admin, story)
    await fab.delete_story(story)
    return {
        "turns": turns,
        "committed": committed,
        "seconds": round(seconds, 3),
        "turns_per_second": round(len(turn_ms) / seconds, 3) if seconds else 0.0,
        "turn_ms": percentiles(turn_ms),
        "spread_end": round(share, 4),
        "redis_bytes": story_bytes,
    }


async def run_town(
    url: str,
    characters: int,
    places: int,
    ticks: int,
    workers: int,
    kill_worker: bool,
    json_out: str | None,
    baseline_turns: int | None = None,
    time_budget: float | None = None,
) -> dict[str, Any]:
    """Run the tick run (no tick started after ``time_budget`` seconds, if given) and its
    narrative baseline (``baseline_turns`` turns; by default as many as the ticks played
    scenes, which a town of 1,000 makes long); print the table, write the JSON."""
    if kill_worker and workers < 2:
        raise InvalidInput(
            f"--kill-worker needs --workers 2 or more (the tick finishes on the others), "
            f"got {workers}"
        )
    pack = town_world(characters, places)
    async with Fabula(url, Settings()) as fab:
        town = await _ticks(fab, pack, ticks, workers, kill_worker, time_budget)
        turns = baseline_turns if baseline_turns is not None else max(1, town["scenes"])
        baseline = await _narrative(fab, pack, turns)
    result: dict[str, Any] = {
        "benchmark": "town",
        "characters": characters,
        "places": places,
        "ticks": ticks,
        "workers": workers,
        **town,
        "baseline": {"narrative_loop": baseline},
    }
    print_table(
        f"fabula bench town ({characters} characters, {places} places)",
        ["run", "ticks", "scenes/turns", "per s", "p50/p95 ms", "news share", "redis bytes"],
        [
            [
                "ticks",
                f"{town['completed_ticks']}/{ticks}",
                town["scenes"],
                town["scenes_per_second"],
                f"{town['tick_ms']['p50']}/{town['tick_ms']['p95']}",
                town["spread"][-1] if town["spread"] else "-",
                town["redis_bytes"],
            ],
            [
                "narrative loop",
                "-",
                baseline["committed"],
                baseline["turns_per_second"],
                f"{baseline['turn_ms']['p50']}/{baseline['turn_ms']['p95']}",
                baseline["spread_end"],
                baseline["redis_bytes"],
            ],
        ],
    )
    write_json(json_out, result)
    return result


def run(
    url: str,
    characters: int,
    places: int,
    ticks: int,
    workers: int,
    kill_worker: bool,
    json_out: str | None,
    baseline_turns: int | None = None,
    time_budget: float | None = None,
) -> dict[str, Any]:
    """:func:`run_town` on its own event loop."""
    return asyncio.run(
        run_town(
            url,
            characters,
            places,
            ticks,
            workers,
            kill_worker,
            json_out,
            baseline_turns,
            time_budget,
        )
    )
