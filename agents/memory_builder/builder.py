"""The offline memory-builder: a turn's accepted text → a validated delta → one atomic commit.

The controlled-English extractor (:mod:`.extract`) reads the text into story actions; the
rest is memory's one build sequence (:mod:`fabula.memory.ingest`), which the model-based
builder runs too. A turn that is already committed is rebuilt from the views as of the turn
before it, so sending the same turn again yields the same delta and the commit reports
``duplicate``.
"""

from __future__ import annotations

from fabula.agents.memory_builder.extract import extract
from fabula.memory.delta import TurnDelta
from fabula.memory.ingest import basis, build_turn
from fabula.memory.store import CommitResult, StoryStore

__all__ = ["OfflineMemoryBuilder"]


class OfflineMemoryBuilder:
    """Builds and commits turns of controlled English (see :mod:`.extract`)."""

    async def build(self, store: StoryStore, turn: int, text: str) -> TurnDelta:
        """The delta of ``turn`` with ``text``, derived from the store's views before it.

        Raises :class:`~fabula.errors.NotFound` when the story does not exist.
        """
        as_of = await basis(store, turn)
        return await build_turn(store, turn, text, extract(text), as_of=as_of)

    async def commit(self, store: StoryStore, turn: int, text: str) -> CommitResult:
        """Build ``turn`` and commit it atomically (idempotent: see the module docstring)."""
        return await store.commit(await self.build(store, turn, text))
