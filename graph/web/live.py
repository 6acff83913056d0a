"""Live updates: runs started from the studio, and the event stream each story page listens to.

A run of several turns started from the studio (:class:`Runs`) stops at a turn awaiting
approval; a decision taken through :meth:`Runs.decide` (the pages' and the API's one way to
decide) lets it go on once that turn is committed.

A page of a story opens ``GET /api/stories/{story}/events?branch=B`` (server-sent events).
It hears, from this process, the progress of a run (``progress``), the writer's draft
(``draft``) and the prose a model streams (``prose``); and, from any process (the command
line, another studio, the Agent Server), a committed turn (``turn``) and a turn that starts
or stops waiting for approval (``pending``), found by looking at the branch's head and
pending turn every ``poll_s`` seconds (one small read each).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
import weakref
from collections import defaultdict
from collections.abc import AsyncIterator, Iterator
from typing import Any, Literal

from pydantic import BaseModel

from fabula.agents.contracts import Decision
from fabula.errors import FabulaError, TurnConflict
from fabula.graph.service import Fabula, TurnOutcome
from fabula.graph.service.handles import StoryRef
from fabula.graph.service.pending import TurnEvent
from fabula.graph.service.responses.turns import DecisionOut
from fabula.graph.web.remedies import studio_line
from fabula.logs import get_logger

log = get_logger(__name__)
Key = tuple[str, str]


MAX_STREAMS = 512
"""How many event streams a studio keeps open at once (each polls Redis once a second)."""


class EventHub:
    """Fans events of one (story, branch) out to every open stream in this process, and
    bounds how many streams are live: :meth:`admit` refuses one beyond ``max_streams``."""

    def __init__(self, size: int = 256, max_streams: int = MAX_STREAMS) -> None:
        self._subscribers: dict[Key, set[asyncio.Queue[dict[str, str]]]] = defaultdict(set)
        self._size = size
        self.max_streams = max_streams
        self._live = 0

    @property
    def live(self) -> int:
        """How many streams are admitted and not yet closed."""
        return self._live

    def admit(self) -> bool:
        """Take a place for one more stream; False (nothing taken) when all are taken.
        The place is given back by :meth:`release`, once, when the stream ends."""
        if self._live >= self.max_streams:
            return False
        self._live += 1
        return True

    def release(self) -> None:
        """Give back a place :meth:`admit` took."""
        self._live = max(0, self._live - 1)

    @contextlib.contextmanager
    def subscribe(self, key: Key) -> Iterator[asyncio.Queue[dict[str, str]]]:
        queue: asyncio.Queue[dict[str, str]] = asyncio.Queue(self._size)
        self._subscribers[key].add(queue)
        try:
            yield queue
        finally:
            self._subscribers[key].discard(queue)
            if not self._subscribers[key]:
                del self._subscribers[key]

    def publish(self, key: Key, event: str, data: dict[str, Any]) -> None:
        """Send ``event`` to every subscriber of ``key``; a full queue drops its oldest."""
        item = {"event": event, "data": json.dumps(data)}
        for queue in list(self._subscribers.get(key, ())):
            if queue.full():
                queue.get_nowait()
            queue.put_nowait(item)


class RunStatus(BaseModel):
    """A run started from the studio: how far it got and what it is doing."""

    story: str
    branch: str
    turns: int
    auto: bool
    done: int = 0
    turn: int | None = None
    step: str = ""
    state: Literal["running", "pending", "done", "error"] = "running"
    message: str = ""
    started: float = 0.0


class Runs:
    """Background runs, at most one per branch in this process (the lease covers others)."""

    def __init__(self, fab: Fabula, hub: EventHub) -> None:
        self.fab = fab
        self.hub = hub
        self._status: dict[Key, RunStatus] = {}
        self._tasks: dict[Key, asyncio.Task[None]] = {}
        self._directions: dict[Key, str | None] = {}

    def status(self, story: str, branch: str) -> RunStatus | None:
        return self._status.get((story, branch))

    def start(self, store: StoryRef, turns: int, *, auto: bool, direction: str | None) -> RunStatus:
        """Start writing ``turns`` turns in the background; TurnConflict if one is running
        on the branch in this process."""
        key = (store.story, store.branch)
        task = self._tasks.get(key)
        if task is not None and not task.done():
            raise TurnConflict(
                f"a run is already writing branch {store.branch!r} of {store.story!r}",
                story=store.story,
                branch=store.branch,
            )
        status = RunStatus(
            story=store.story, branch=store.branch, turns=turns, auto=auto, started=time.time()
        )
        self._status[key] = status
        self._directions[key] = direction
        self._tasks[key] = asyncio.create_task(self._go(store, status, direction))
        self.hub.publish(key, "progress", status.model_dump())
        return status

    async def decide(
        self,
        store: StoryRef,
        decision: Decision,
        *,
        force: bool = False,
        expect: str | None = None,
    ) -> DecisionOut:
        """Decide the turn awaiting approval on ``store``'s branch (the service's
        :meth:`~fabula.graph.service.Fabula.decide`, raising what it raises); when the turn
        is committed (by this decision, or already by someone else), a run of several turns
        this studio started and that stopped at it goes on with the next. The one decision
        of the studio's pages and of its API."""
        out = await self.fab.decide(store, decision, force=force, expect=expect)
        if out.outcome in ("committed", "duplicate"):
            self._resume(store)
        return out

    def _resume(self, store: StoryRef) -> RunStatus | None:
        """After a decision committed the turn a run of this branch stopped at: count it,
        and write the run's remaining turns (stopping for approval again); None when no
        run of the branch waits here. A run that has written all its turns is done."""
        key = (store.story, store.branch)
        status = self._status.get(key)
        task = self._tasks.get(key)
        if status is None or status.state != "pending" or (task is not None and not task.done()):
            return None
        status.done += 1
        if status.done >= status.turns:
            status.state, status.step = "done", ""
            self.hub.publish(key, "progress", status.model_dump())
            self.hub.publish(key, "done", status.model_dump())
            return status
        status.state = "running"
        self._tasks[key] = asyncio.create_task(
            self._go(store, status, self._directions.get(key), offset=status.done)
        )
        self.hub.publish(key, "progress", status.model_dump())
        return status

    async def _go(
        self, store: StoryRef, status: RunStatus, direction: str | None, offset: int = 0
    ) -> None:
        """Write the run's turns from the ``offset``-th on (those before are written)."""
        key = (store.story, store.branch)

        async def listener(event: TurnEvent) -> None:
            status.turn = event.turn
            if event.kind == "step":
                status.step = event.node
                self.hub.publish(key, "progress", status.model_dump())
            else:
                self.hub.publish(key, event.kind, {"turn": event.turn, "text": event.text})

        async def progress(done: int, outcome: TurnOutcome) -> None:
            status.done = offset + done
            self.hub.publish(key, "progress", status.model_dump())
            if outcome in ("committed", "duplicate"):
                self.hub.publish(key, "turn", {"head": await self.fab.read(store).head()})

        try:
            out = await self.fab.run(
                store,
                status.turns - offset,
                auto=status.auto,
                direction=direction,
                listener=listener,
                progress=progress,
            )
            status.state = "pending" if out.pending else "done"
            status.step = ""
            if out.rest is not None:  # it stopped early: nobody had anything to do
                status.message = f"at rest: {out.rest}"
            if out.pending is not None:
                self.hub.publish(key, "pending", {"turn": out.pending.turn})
        except FabulaError as exc:
            status.state, status.message = "error", studio_line(exc)
        except Exception:  # a bug: the page says so, the log has the traceback
            log.exception("run failed", story=store.story, branch=store.branch)
            status.state, status.message = "error", "the run failed (see the studio's log)"
        self.hub.publish(key, "progress", status.model_dump())
        self.hub.publish(key, "done", status.model_dump())

    async def aclose(self) -> None:
        for task in self._tasks.values():
            task.cancel()
        for task in self._tasks.values():
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task


class Admitted:
    """``events``, holding the place :meth:`EventHub.admit` took until the stream ends:
    closed by the client, by the studio stopping, or never started (the place is given
    back when the stream is dropped), and given back once only."""

    def __init__(self, hub: EventHub, events: AsyncIterator[dict[str, str]]) -> None:
        self._events = events
        self._release = weakref.finalize(self, hub.release)

    def __aiter__(self) -> Admitted:
        return self

    async def __anext__(self) -> dict[str, str]:
        try:
            return await anext(self._events)
        except BaseException:
            self._release()
            raise

    async def aclose(self) -> None:
        """End the stream and give its place back."""
        self._release()
        aclose = getattr(self._events, "aclose", None)
        if aclose is not None:
            await aclose()


async def story_events(
    fab: Fabula, hub: EventHub, store: StoryRef, poll_s: float, runs: Runs | None = None
) -> AsyncIterator[dict[str, str]]:
    """The event stream of one branch (see the module docstring); ``hello`` comes first,
    with the head, the pending turn and the status of this studio's run of the branch
    (``run``, null when none): a run that ended between rendering the page and connecting
    published its last progress to nobody."""
    key = (store.story, store.branch)
    with hub.subscribe(key) as queue:
        head = await fab.read(store).head()
        found = await fab.read(store).pending()
        pending = found.id if found else None
        status = runs.status(store.story, store.branch) if runs is not None else None
        run = status.model_dump() if status is not None else None
        hello = {"head": head, "pending": pending, "run": run}
        yield {"event": "hello", "data": json.dumps(hello)}
        next_poll = time.monotonic() + poll_s
        while True:
            timeout = max(0.0, next_poll - time.monotonic())
            try:
                yield await asyncio.wait_for(queue.get(), timeout)
                continue
            except TimeoutError:
                pass
            next_poll = time.monotonic() + poll_s
            now = await fab.read(store).head()
            if now != head:
                head = now
                yield {"event": "turn", "data": json.dumps({"head": head})}
            found = await fab.read(store).pending()
            if (found.id if found else None) != pending:
                pending = found.id if found else None
                turn = found.turn if found else None
                yield {"event": "pending", "data": json.dumps({"turn": turn, "id": pending})}
