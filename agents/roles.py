"""The narrow interface of each role; the offline engine and the model back end both fit it."""

from __future__ import annotations

from typing import Protocol

from agents.contracts import CharacterBrief, Draft, Proposal, TurnPlan
from agents.views import AuthorView
from agents.writer.offline import WriteRequest
from memory.acl import CharacterMind
from memory.delta import TurnDelta
from memory.store import StoryStore

__all__ = ["BuilderRole", "CharacterRole", "PlannerRole", "WriterRole"]


class PlannerRole(Protocol):
    async def plan(
        self, view: AuthorView, *, direction: str | None = None, attempt: int = 0
    ) -> TurnPlan: ...


class CharacterRole(Protocol):
    async def propose(self, mind: CharacterMind, brief: CharacterBrief) -> Proposal: ...


class WriterRole(Protocol):
    async def write(self, request: WriteRequest, view: AuthorView) -> Draft: ...


class BuilderRole(Protocol):
    async def build(self, store: StoryStore, turn: int, text: str) -> TurnDelta: ...
