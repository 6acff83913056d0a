"""Work on a branch done off the turn's path: at most one background task per branch.

:meth:`BranchTasks.schedule` starts a task that runs the job on the branch and returns at
once; a call while the task runs re-arms it (the job runs once more when it ends), so commits
made meanwhile are folded into one more run. The jobs this serves (episode indexing, the
hierarchy's consolidation) are watermarked and idempotent: a run that fails or is lost with
its process is redone by the next, so a failure is logged, not raised. :meth:`wait` and
:meth:`drain` wait for the tasks (before deleting a story, and before closing the connection
the stores use).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

import structlog
from redis.exceptions import RedisError

from fabula.errors import FabulaError
from fabula.memory.store import StoryStore

log = structlog.get_logger(__name__)

Job = Callable[[StoryStore], Awaitable[None]]


class BranchTasks:
    """Runs ``job`` on a branch in the background, one task per branch (``what`` names it
    in the log when it fails)."""

    def __init__(self, job: Job, what: str) -> None:
        self.job = job
        self.what = what
        self._tasks: dict[tuple[str, str], asyncio.Task[None]] = {}
        self._again: set[tuple[str, str]] = set()

    def schedule(self, store: StoryStore) -> None:
        """Run the job on ``store``'s branch in the background (once more if it is running)."""
        key = (store.story, store.branch)
        task = self._tasks.get(key)
        if task is not None and not task.done():
            self._again.add(key)
            return
        self._tasks[key] = asyncio.create_task(self._run(store, key))

    def running(self) -> int:
        """How many tasks are under way."""
        return sum(1 for t in self._tasks.values() if not t.done())

    async def _run(self, store: StoryStore, key: tuple[str, str]) -> None:
        while True:
            self._again.discard(key)
            try:
                await self.job(store)
            except (FabulaError, RedisError) as exc:
                # the next run starts from the same watermark (and raises, if it persists)
                log.warning(
                    f"{self.what} failed", story=store.story, branch=store.branch, error=str(exc)
                )
                return
            if key not in self._again:
                return

    async def wait(self, story: str, branch: str | None = None) -> None:
        """Wait for the tasks of one story (one branch, if given)."""
        tasks = [
            t for (s, b), t in self._tasks.items() if s == story and (branch is None or b == branch)
        ]
        await asyncio.gather(*tasks)
        self._forget_done()

    async def drain(self, timeout: float | None = None) -> int:
        """Wait for every task; with a ``timeout`` (seconds), cancel those still running
        then. Returns how many were cancelled."""
        tasks = list(self._tasks.values())
        if timeout is None:
            await asyncio.gather(*tasks)
            self._forget_done()
            return 0
        _, late = await asyncio.wait(tasks, timeout=timeout) if tasks else (set(), set())
        for task in late:
            task.cancel()
        await asyncio.gather(*late, return_exceptions=True)
        self._again.clear()
        self._forget_done()
        return len(late)

    def _forget_done(self) -> None:
        self._tasks = {k: t for k, t in self._tasks.items() if not t.done()}
