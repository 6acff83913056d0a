"""What the graph's nodes are given at run time (LangGraph's run-scoped ``context``).

Nothing here is checkpointed: connections and role objects are rebuilt by every process
that runs or resumes a turn.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

import redis.asyncio as aredis

from fabula.agents.roles import Roles
from fabula.agents.views import AuthorView
from fabula.memory.acl import MindPool
from fabula.memory.delta import TurnDelta
from fabula.memory.settings import Settings
from fabula.memory.store import StoryStore
from fabula.memory.tokens import TokenCounter, default_counter

__all__ = ["Consolidator", "Roles", "TurnContext"]  # Roles re-exported for convenience

Consolidator = Callable[[StoryStore, int], Awaitable[None]]


@dataclass(frozen=True)
class TurnContext:
    """Run-scoped dependencies of the turn graph."""

    admin: aredis.Redis
    url: str
    minds: MindPool
    roles: Roles
    settings: Settings
    auto: bool = False
    max_attempts: int = 3
    counter: TokenCounter = field(default_factory=default_counter)
    consolidate: Consolidator | None = None
    # when set, commit_text appends the memory-builder's time per committed turn (ms)
    memory_ms: list[float] | None = None
    # author views of this run by (story, branch, turn they precede); nodes of one run
    # read the same state, and commit_text re-checks the head before writing
    views: dict[tuple[str, str, int], AuthorView] = field(default_factory=dict)
    # the delta the critic read, by (story, branch, turn, text): the commit of the same
    # text on the same head reuses it (the commit function refuses it if the head moved)
    deltas: dict[tuple[str, str, int, str], tuple[TurnDelta, float]] = field(default_factory=dict)
