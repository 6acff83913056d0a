"""Indexing off the turn's path: one background task per branch, started after a commit.

A committed turn is searchable as soon as its episodes are indexed, but the turn itself
never waits for that: :meth:`Indexer.schedule` starts (or re-arms) a task that runs
:func:`~fabula.memory.index.build.index_through` to the head, and returns at once. A
second commit while the task runs is folded into it (the task runs once more), so there is
at most one task per branch. Whoever reads the index catches up first anyway
(:func:`fabula.memory.retrieval.context.author_context`), so a task that is late, or lost
with its process, costs time, never correctness; :meth:`Indexer.drain` waits for every
task (call it before closing the connection the stores use).
"""

from __future__ import annotations

import asyncio

import structlog
from redis.exceptions import RedisError

from fabula.memory.delta import TurnDelta
from fabula.memory.errors import FabulaError
from fabula.memory.index.build import index_through
from fabula.memory.index.vectors import Embedder
from fabula.memory.store import StoryStore

__all__ = ["Indexer"]

log = structlog.get_logger(__name__)

KEEP_DELTAS = 16  # committed deltas held for the next run, per branch (older ones are read)


class Indexer:
    """Background index maintenance for the branches of one application."""

    def __init__(self, embedder: Embedder | None = None) -> None:
        self.embedder = embedder  # dense retrieval: vectors are added as episodes are
        self._tasks: dict[tuple[str, str], asyncio.Task[None]] = {}
        self._again: set[tuple[str, str]] = set()
        self._known: dict[tuple[str, str], dict[int, TurnDelta]] = {}

    def schedule(self, store: StoryStore, delta: TurnDelta | None = None) -> None:
        """Index ``store``'s branch up to its head, in the background (``delta``: the turn
        just committed, which then need not be read back)."""
        key = (store.story, store.branch)
        if delta is not None:
            held = self._known.setdefault(key, {})
            held[delta.turn] = delta
            for old in sorted(held)[:-KEEP_DELTAS]:
                del held[old]
        task = self._tasks.get(key)
        if task is not None and not task.done():
            self._again.add(key)
            return
        self._tasks[key] = asyncio.create_task(self._run(store, key))

    async def _run(self, store: StoryStore, key: tuple[str, str]) -> None:
        while True:
            self._again.discard(key)
            known = self._known.pop(key, {})
            try:
                await index_through(store, embedder=self.embedder, known=known)
            except (FabulaError, RedisError) as exc:
                # the next reader catches up (and raises, if the cause persists)
                log.warning("indexing failed", story=store.story, branch=store.branch,
                            error=str(exc))  # fmt: skip
                return
            if key not in self._again:
                return

    async def wait(self, story: str, branch: str | None = None) -> None:
        """Wait for the tasks of one story (one branch, if given)."""
        tasks = [t for (s, b), t in self._tasks.items()
                 if s == story and (branch is None or b == branch)]  # fmt: skip
        await asyncio.gather(*tasks)
        self._forget_done()

    async def drain(self) -> None:
        """Wait for every task."""
        await asyncio.gather(*self._tasks.values())
        self._forget_done()

    def _forget_done(self) -> None:
        self._tasks = {k: t for k, t in self._tasks.items() if not t.done()}
