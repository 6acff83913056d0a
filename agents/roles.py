"""The narrow interface of each role; the offline engine and the model back end both fit it."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

from fabula.agents.contracts import CharacterBrief, Draft, Proposal, TurnPlan
from fabula.agents.critic.symbolic import SymbolicCritic
from fabula.agents.views import AuthorView
from fabula.agents.writer.offline import WriteRequest
from fabula.memory.acl import CharacterMind
from fabula.memory.delta import TurnDelta
from fabula.memory.store import StoryStore

__all__ = ["BuilderRole", "CharacterRole", "PlannerRole", "Roles", "WriterRole", "offline_roles"]


class PlannerRole(Protocol):
    async def plan(
        self,
        view: AuthorView,
        *,
        direction: str | None = None,
        attempt: int = 0,
        notes: Sequence[str] = (),
    ) -> TurnPlan: ...


class CharacterRole(Protocol):
    async def propose(self, mind: CharacterMind, brief: CharacterBrief) -> Proposal: ...


class WriterRole(Protocol):
    async def write(self, request: WriteRequest, view: AuthorView) -> Draft: ...


class BuilderRole(Protocol):
    async def build(self, store: StoryStore, turn: int, text: str) -> TurnDelta: ...


@dataclass(frozen=True)
class Roles:
    """The role objects of one run: offline engine or model back end, same contracts."""

    planner: PlannerRole
    character: CharacterRole
    writer: WriterRole
    builder: BuilderRole
    critic: SymbolicCritic = field(default_factory=SymbolicCritic)


def offline_roles() -> Roles:
    """Every role on the deterministic offline engine."""
    from fabula.agents.character.offline import OfflineCharacter
    from fabula.agents.memory_builder.builder import OfflineMemoryBuilder
    from fabula.agents.planner.offline import OfflinePlanner
    from fabula.agents.writer.offline import OfflineWriter

    return Roles(
        planner=OfflinePlanner(),
        character=OfflineCharacter(),
        writer=OfflineWriter(),
        builder=OfflineMemoryBuilder(),
    )
