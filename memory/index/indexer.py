"""Indexing off the turn's path: one background task per branch, started after a commit.

A committed turn is searchable as soon as its episodes are indexed, but the turn itself
never waits for that: :meth:`Indexer.schedule` starts (or re-arms) a task
(:class:`~fabula.memory.branch_tasks.BranchTasks`) that runs
:func:`~fabula.memory.index.build.index_through` to the head, and returns at once. A
second commit while the task runs is folded into it (the task runs once more), so there is
at most one task per branch. Whoever reads the index catches up first anyway
(:func:`fabula.memory.recall.context.author_context`), so a task that is late, or lost
with its process, costs time, never correctness; :meth:`Indexer.drain` waits for every
task (call it before closing the connection the stores use).
"""

from __future__ import annotations

from fabula.memory.branch_tasks import BranchTasks
from fabula.memory.delta import TurnDelta
from fabula.memory.index.build import index_through
from fabula.memory.index.vectors import Embedder
from fabula.memory.store import StoryStore

KEEP_DELTAS = 16  # committed deltas held for the next run, per branch (older ones are read)


class Indexer:
    """Background index maintenance for the branches of one application."""

    def __init__(self, embedder: Embedder | None = None) -> None:
        self.embedder = embedder  # dense retrieval: vectors are added as episodes are
        self._known: dict[tuple[str, str], dict[int, TurnDelta]] = {}
        self._tasks = BranchTasks(self._index, "indexing")

    def schedule(self, store: StoryStore, delta: TurnDelta | None = None) -> None:
        """Index ``store``'s branch up to its head, in the background (``delta``: the turn
        just committed, which then need not be read back)."""
        if delta is not None:
            held = self._known.setdefault((store.story, store.branch), {})
            held[delta.turn] = delta
            for old in sorted(held)[:-KEEP_DELTAS]:
                del held[old]
        self._tasks.schedule(store)

    async def _index(self, store: StoryStore) -> None:
        known = self._known.pop((store.story, store.branch), {})
        await index_through(store, embedder=self.embedder, known=known)

    async def wait(self, story: str, branch: str | None = None) -> None:
        """Wait for the tasks of one story (one branch, if given)."""
        await self._tasks.wait(story, branch)

    async def drain(self) -> None:
        """Wait for every task."""
        await self._tasks.drain()
