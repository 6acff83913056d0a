"""The stories as listed: :class:`StorySummary` and :class:`PendingSummary`.

Apart from :mod:`~fabula.graph.service.responses` (its ``stories`` and ``turns`` modules
re-export them) so that a listing
(``fabula stories``) loads pydantic and nothing of the agents or the memory's models.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class PendingSummary(BaseModel):
    """Which turn of which branch waits for a decision, and which draft: ``pending_id``
    names it (a decision that carries it is refused if another draft waits by then)."""

    model_config = ConfigDict(frozen=True)

    story: str
    branch: str
    turn: int
    pending_id: str


class StorySummary(BaseModel):
    """A story as listed: its world, how far its main branch is, what waits for approval."""

    model_config = ConfigDict(frozen=True)

    id: str
    title: str
    world: str
    head: int
    branches: int
    created_at: float | None = None
    pending: list[PendingSummary] = []
