"""The narrow interface of each role; the offline engine and the model back end both fit it.

Each role takes and returns the typed contracts of :mod:`fabula.agents.contracts`;
:class:`Roles` holds one object per role for a run (see :mod:`fabula.agents.factory` for
making them from settings).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from fabula.agents.contracts import (
    CharacterBrief,
    ChatRequest,
    Draft,
    Finding,
    PlanRequest,
    Proposal,
    TurnPlan,
    WriteRequest,
)
from fabula.agents.views import AuthorView
from fabula.memory.acl import CharacterMind
from fabula.memory.delta import TurnDelta
from fabula.memory.recall.plan import RecallPlan, RecallRequest
from fabula.memory.store.view import StoryReads
from fabula.memory.summarise import Summariser


class PlannerRole(Protocol):
    """Plans a turn from the author's view; a re-plan (``attempt`` > 0) sees the notes of
    the plans rejected before it."""

    async def plan(self, request: PlanRequest) -> TurnPlan:
        """The next turn's plan; raises ModelOutputError when a model gives no valid one."""
        ...

    def unread(self, view: AuthorView, text: str, kind: str = "direction") -> str | None:
        """Why this planner cannot read ``text`` — a ``kind``: a direction, or a rejection's
        note — as something to steer the turn by (one line); None when it reads it."""
        ...


class RecallPlannerRole(Protocol):
    """Plans a recall: what a request depends on (the offline planner is
    :func:`fabula.memory.recall.plan.plan_request`)."""

    async def plan(self, recall: RecallRequest) -> RecallPlan:
        """The plan for the request; raises ModelOutputError when a model gives no valid
        one."""
        ...


class CharacterRole(Protocol):
    """Proposes what one character says and does, from its own mind and brief only."""

    async def propose(self, mind: CharacterMind, brief: CharacterBrief) -> Proposal:
        """What the character says and does this turn, from its own mind only."""
        ...


class WriterRole(Protocol):
    """Writes (or revises) the turn's passage."""

    async def write(self, request: WriteRequest, view: AuthorView) -> Draft:
        """The passage for the request's plan (a revision when it carries findings)."""
        ...


class CriticRole(Protocol):
    """Checks a draft's delta against the world, the speakers' minds, story time and the plan."""

    def critique(self, view: AuthorView, delta: TurnDelta, plan: TurnPlan | None) -> list[Finding]:
        """The problems found in the draft's delta (errors send it back to the writer);
        ``plan`` holds the focal characters expected to act (None: none is)."""
        ...


class MemoryBuilderRole(Protocol):
    """Reads accepted text into the turn's delta (nothing is written)."""

    async def build(self, store: StoryReads, turn: int, text: str) -> TurnDelta:
        """The delta ``text`` commits as ``turn``, from the store's views before it."""
        ...


class ChatVoiceRole(Protocol):
    """Says a character's answer to a question in its voice, from what it knows only."""

    async def answer(self, request: ChatRequest) -> str:
        """What the character says to the request's question, from what it holds only."""
        ...


SummariserRole = Summariser
"""Writes a closed scene's or plotline's summary and title (the protocol is memory's:
consolidation calls it, :func:`fabula.memory.summarise.summarise_closed`)."""


@dataclass(frozen=True)
class Roles:
    """The role objects of one run: offline engine or model back end, same contracts."""

    planner: PlannerRole
    character: CharacterRole
    writer: WriterRole
    memory_builder: MemoryBuilderRole
    critic: CriticRole
    recall: RecallPlannerRole | None = None  # None: the offline recall planner
    summariser: SummariserRole | None = None  # None: consolidation's extractive summaries
    voice: ChatVoiceRole | None = None  # None: a chat is answered by the offline engine
