"""A tick's scenes on RQ workers (``FABULA_SCENES=rq``), exactly once under killed workers.

The coordinator (the process running the tick) enqueues one job per scene on the
``fabula`` queue (the queue consolidation uses); a worker plays the scene against the
story at the tick's start (:func:`play_scene_job`, which refuses if the branch moved) and
returns its outcome — the delta it would commit, never a write. While it plays, the worker
holds a short lease in Redis (:func:`fabula.memory.ticks.scene_lease`), renewed by a thread
of its own, so that a scene that holds the worker's event loop for seconds (a town of
1,000 on a busy machine) keeps it; a worker killed mid-scene stops renewing, its lease
expires within :data:`LEASE_S`, and the coordinator enqueues the scene again for another
worker. A live worker's scene is never handed out again. A scene is a pure function of
the story at the tick's start (the offline engine is deterministic; a model is asked the
same), so a scene played twice gives one outcome to keep, and only the coordinator
commits — the whole tick in one atomic, idempotent call (:mod:`fabula.memory.ticks`). So
a killed worker loses nothing and commits nothing twice: the tick finishes on the others.

A job carries no credentials: the story, branch, tick and scene; the worker connects with
its own environment (:func:`fabula.memory.jobs.worker_url`), once per process: a worker
keeps its event loop and its admin's connection from one scene to the next, and opens
the characters' minds for each scene.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import redis
from rq import Queue, get_current_job
from rq.job import Job, JobStatus

from fabula.agents.factory import make_roles
from fabula.agents.views import AuthorView, author_view
from fabula.errors import SceneFailed, TurnConflict
from fabula.graph.runtime import TurnContext
from fabula.graph.ticks import SceneOutcome, ScenePlayer, SceneTask, play_scene, scene_context
from fabula.logs import get_logger
from fabula.memory.acl import MindPool
from fabula.memory.connection import connect, connect_async
from fabula.memory.delta import TurnDelta
from fabula.memory.jobs import QUEUE, worker_url
from fabula.memory.leases import renewed_in_thread
from fabula.memory.store import StoryStore
from fabula.memory.ticks import last_tick, scene_lease, scene_leased
from fabula.settings import Settings

log = get_logger(__name__)

LEASE_S = 5.0
"""How long a scene's lease lasts unless renewed (its worker's renewing thread renews it
every third of this, whatever the scene is doing): a killed worker's scene is enqueued
again within about this long."""

KEPT_S = 30.0
"""How long a scene's lease outlives a scene that ended well: RQ records the job finished
after the scene returns, and until then the coordinator must not take the lease's end for
the worker's death."""

STARTING_S = 30.0
"""How long a started job may go without taking its lease (a worker importing Fabula,
connecting) before it is taken for dead."""

POLL_S = 0.1
"""How often the coordinator looks at its scenes' jobs (all of them in one round trip)."""

MAX_ATTEMPTS = 5
"""How many times a scene is enqueued (its first job and the jobs after workers died)
before the tick fails."""


def play_scene_job(task: dict[str, Any], tick: int, head: int, run: str = "") -> dict[str, Any]:
    """The job: play one scene of ``tick`` against the story at turn ``head`` (the tick's
    start), holding the scene's lease for the coordination ``run``; return its outcome as
    JSON data (the delta as its JSON). Refuses (:class:`TurnConflict`) if the branch is no
    longer at ``head``. Runs on this worker process's own event loop and connections
    (:func:`_process`); a job that fails leaves them to be made again for the next."""
    process = _process()
    try:
        return process.loop.run_until_complete(
            _play(process, SceneTask(**task), tick, head, run)  # type: ignore[typeddict-item]
        )
    except BaseException:
        _drop_process()
        raise


@dataclass
class _Process:
    """What a worker process keeps from one scene's job to the next: its event loop, the
    stories' URL (resolved, and the server's users checked, once: :func:`worker_url`), the
    admin's connection (its function library checked once) and the connection its leases
    are renewed on. A town's tick hands each worker a score of scenes, and making these
    again for each cost a scene as much as a character's whole turn. The characters' minds
    are opened per job (a story deleted meanwhile takes its users with it)."""

    env: tuple[tuple[str, str], ...]
    loop: asyncio.AbstractEventLoop
    url: str
    admin: Any
    leasing: Any


_PROCESS: _Process | None = None


def _fabula_env() -> tuple[tuple[str, str], ...]:
    return tuple(sorted((k, v) for k, v in os.environ.items() if k.startswith("FABULA_")))


def _process() -> _Process:
    """This worker process's :class:`_Process`: made on its first scene, and again when its
    ``FABULA_*`` environment changed."""
    global _PROCESS
    env = _fabula_env()
    if _PROCESS is not None and _PROCESS.env != env:
        _drop_process()
    if _PROCESS is None:
        url = worker_url()
        # the admin's client connects on its first call, on the loop it is used on
        _PROCESS = _Process(env, asyncio.new_event_loop(), url, connect_async(url), connect(url))
    return _PROCESS


def _drop_process() -> None:
    """Close this process's loop and connections (after a job that failed, or when its
    environment changed): the next scene makes them again."""
    global _PROCESS
    process, _PROCESS = _PROCESS, None
    if process is None:
        return
    with contextlib.suppress(Exception):
        process.loop.run_until_complete(process.admin.aclose())
    with contextlib.suppress(Exception):
        process.leasing.close()
    with contextlib.suppress(Exception):
        process.loop.run_until_complete(process.loop.shutdown_default_executor())
    with contextlib.suppress(Exception):
        process.loop.close()


async def _play(
    process: _Process, task: SceneTask, tick: int, head: int, run: str
) -> dict[str, Any]:
    settings = Settings.from_env()
    url, admin = process.url, process.admin
    minds = MindPool(admin, url)
    try:
        store = StoryStore(admin, task["story"], task["branch"], limits=settings.limits)
        where = (task["story"], task["branch"], tick, task["place"])
        lease = scene_lease(process.leasing, *where, LEASE_S, run)
        lease.acquire()
        _mark_leased()
        with renewed_in_thread(lease, keep_s=KEPT_S):  # gone after the job is seen finished
            view = await _view_at(store, url, tick, head)
            base = TurnContext(
                admin=admin, url=url, minds=minds, roles=make_roles(settings), settings=settings
            )
            ctx = scene_context(base, store, view, [task["turn"]])
            outcome = await play_scene(task, ctx)
    finally:
        await minds.aclose()
    delta = outcome["delta"]
    return {**outcome, "delta": delta.model_dump_json() if delta is not None else None}


_VIEW: dict[tuple[str, str, str, int, int], AuthorView] = {}
"""The author's view of the tick this worker last played a scene of, by (server, story,
branch, tick, head): a tick's scenes all read the story at its start, and a worker plays
many of them; reading every mind of a town again for each would cost the story's size."""


async def _view_at(store: StoryStore, url: str, tick: int, head: int) -> AuthorView:
    """The view of the story at the tick's start (turn ``head``): this worker's, if it
    played a scene of the same tick, else read. Refuses (:class:`TurnConflict`) if the
    branch is no longer at ``head``."""
    key = (url, store.story, store.branch, tick, head)
    now = await store.head()
    view = _VIEW.get(key) if now == head else None
    if view is None and now == head:
        view = await author_view(store)
        now = view.turn
        _VIEW.clear()  # one tick's view at a time
        if now == head:
            _VIEW[key] = view
    if view is None or now != head:
        raise TurnConflict(
            f"tick {tick} started at turn {head}, the branch is at {now}",
            story=store.story,
            branch=store.branch,
        )
    return view


def _mark_leased() -> None:
    """Tell the coordinator (in the job's meta) that this worker holds the scene's lease:
    from now on, the lease gone means the worker is gone."""
    job = get_current_job()
    if job is not None:
        job.meta["leased"] = True
        job.save_meta()  # type: ignore[no-untyped-call]


def scenes_on_rq(queue_url: str, tick: int | None = None) -> ScenePlayer:
    """A :data:`~fabula.graph.ticks.ScenePlayer` that plays a tick's scenes on the RQ
    workers of the queue at ``queue_url`` (see the module); ``tick``: the tick's number
    (by default the branch's next)."""

    async def player(
        ctx: TurnContext, store: StoryStore, view: AuthorView, tasks: Sequence[SceneTask]
    ) -> list[SceneOutcome]:
        queue = Queue(QUEUE, connection=redis.Redis.from_url(queue_url))
        number = tick
        if number is None:
            previous = await last_tick(store)
            number = previous.tick + 1 if previous is not None else 1
        return await _coordinate(queue, store, number, view.turn, tasks)

    return player


def _enqueue(queue: Queue, task: SceneTask, tick: int, head: int, attempt: int, run: str) -> Job:
    """One scene's job. Its id names the coordination ``run`` too: a story deleted and made
    again under its id plays the same ticks, whose jobs would otherwise take over the
    earlier run's (and its expiry, vanishing mid-tick). Its lease names the run and the
    attempt (:func:`_lease_of`): a scene that ended well keeps its lease for
    :data:`KEPT_S`, and an attempt made after a worker taken for dead must not wait on it."""
    job_id = f"scene-{task['story']}-{task['branch']}-{tick}-{task['place']}-{run}-{attempt}"
    lease = _lease_of(run, attempt)
    return queue.enqueue(
        play_scene_job,
        dict(task),
        tick,
        head,
        lease,
        job_id=job_id,
        result_ttl=600,
        failure_ttl=600,
    )


def _lease_of(run: str, attempt: int) -> str:
    """The name a scene's lease carries for ``attempt`` of coordination ``run``."""
    return f"{run}.{attempt}"


async def _coordinate(
    queue: Queue, store: StoryStore, tick: int, head: int, tasks: Sequence[SceneTask]
) -> list[SceneOutcome]:
    """Enqueue every scene, then gather their outcomes, enqueueing again the scene of a
    worker that died (its lease gone); a scene that failed fails the tick. An earlier
    attempt of a scene that finishes after all (its worker was only slow) is taken as
    well as the last: a scene is a pure function of the tick's start."""
    run = uuid.uuid4().hex[:8]
    jobs = {t["place"]: (_enqueue(queue, t, tick, head, 0, run), 0) for t in tasks}
    earlier: dict[str, list[Job]] = {t["place"]: [] for t in tasks}
    by_place = {t["place"]: t for t in tasks}
    done: dict[str, SceneOutcome] = {}
    while len(done) < len(tasks):
        pending = [place for place in jobs if place not in done]
        watched = [(p, j) for p in pending for j in (*earlier[p], jobs[p][0])]
        found = dict(zip(watched, _statuses(queue, [j for _, j in watched]), strict=True))
        for place in pending:
            job, attempt = jobs[place]
            status = found[(place, job)]
            ended = [j for j in (*earlier[place], job) if found[(place, j)] == JobStatus.FINISHED]
            if ended:
                done[place] = _outcome(ended[0].return_value())
            elif status == JobStatus.FAILED and not _abandoned(job):
                why = (job.latest_result().exc_string or "").strip().splitlines()  # type: ignore[union-attr]
                raise SceneFailed(
                    f"the scene at {place} failed on a worker: {why[-1] if why else '?'}; "
                    "nothing of the tick was committed",
                    story=store.story,
                    branch=store.branch,
                    place=place,
                )
            elif (
                status is None  # the job is gone (expired): its scene is played again
                or status == JobStatus.FAILED
                or (
                    status == JobStatus.STARTED
                    and await _worker_died(store, job, tick, place, _lease_of(run, attempt))
                )
            ):
                if attempt + 1 >= MAX_ATTEMPTS:
                    raise SceneFailed(
                        f"the scene at {place} lost {MAX_ATTEMPTS} workers; nothing of the "
                        "tick was committed",
                        story=store.story,
                        branch=store.branch,
                        place=place,
                    )
                log.warning("scene_requeued", story=store.story, tick=tick, place=place)
                earlier[place].append(job)
                jobs[place] = (
                    _enqueue(queue, by_place[place], tick, head, attempt + 1, run),
                    attempt + 1,
                )
        if len(done) < len(tasks):
            await asyncio.sleep(POLL_S)
    return [done[t["place"]] for t in tasks]


def _statuses(queue: Queue, jobs: Sequence[Job]) -> list[JobStatus | None]:
    """The status of each of ``jobs``, read in one round trip (None: the job is gone):
    the coordinator looks at a tick's hundred scenes many times a second, and a call per
    job would cost the machine its workers play on."""
    pipe = queue.connection.pipeline(transaction=False)
    for job in jobs:
        pipe.hget(job.key, "status")
    out: list[JobStatus | None] = []
    for raw in pipe.execute():
        text = raw.decode() if isinstance(raw, bytes) else raw
        out.append(JobStatus(text) if text else None)
    return out


def _abandoned(job: Job) -> bool:
    """Whether a failed job failed because its worker died (RQ's abandoned job)."""
    result = job.latest_result()
    text = (result.exc_string or "") if result is not None else ""
    return "AbandonedJobError" in text or "work-horse terminated" in text.lower()


async def _worker_died(store: StoryStore, job: Job, tick: int, place: str, run: str) -> bool:
    """A started job whose worker took the scene's lease and let it go (it died), or that
    never took it within :data:`STARTING_S`."""
    if await scene_leased(store, tick, place, run):
        return False
    job.refresh()  # type: ignore[no-untyped-call]  # when it started; did it take the lease
    if job.get_status(refresh=False) != JobStatus.STARTED or job.started_at is None:
        return False
    if job.meta.get("leased"):
        return True
    return time.time() - job.started_at.timestamp() > STARTING_S


def _outcome(value: Any) -> SceneOutcome:
    delta = value["delta"]
    return SceneOutcome(
        place=value["place"],
        turn=value["turn"],
        delta=TurnDelta.model_validate_json(delta) if delta is not None else None,
        errors=list(value["errors"]),
        usage=dict(value["usage"]),
    )
