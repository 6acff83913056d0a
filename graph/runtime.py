"""What the graph's nodes are given at run time (LangGraph's run-scoped ``context``).

Nothing here is checkpointed: connections and role objects are rebuilt by every process
that runs or resumes a turn. :class:`TurnContext` is fixed for a run; what the nodes of one
run share as they go (the author's view, the delta the critic read) is kept in its
:class:`RunCache`, which is mutable on purpose.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Literal

import redis.asyncio as aredis

from fabula.agents.contracts import Finding
from fabula.agents.roles import Roles
from fabula.agents.views import AuthorView
from fabula.memory.acl import MindPool
from fabula.memory.index.indexer import Indexer
from fabula.memory.index.vectors import Embedder
from fabula.memory.store import StoryStore
from fabula.memory.tokens import TokenCounter, default_counter
from fabula.settings import Settings

Consolidator = Callable[[StoryStore, int], Awaitable[None]]


@dataclass(frozen=True)
class Committed:
    """A turn that reached memory. ``memory_ms`` is the memory-builder's whole share of it:
    building the delta (possibly done for the critic already) and committing it.
    ``unsynced``: why a human's approval is not confirmed on disk (None when it is, and for
    autonomous turns, which are not waited for)."""

    story: str
    branch: str
    turn: int
    status: Literal["committed", "duplicate"]
    memory_ms: float
    unsynced: str | None = None


CommitObserver = Callable[[Committed], None]
CritiqueObserver = Callable[[int, list[Finding]], None]
"""Told of each critique: the turn and every finding on its draft (a benchmark counts what
sends drafts back)."""


@dataclass
class RunCache:
    """What the nodes of one run share as they go (one turn at a time: only the newest).

    ``views``: author views by (story, branch, turn they precede); nodes of one run read
    the same state, and the commit re-checks the head before writing. (The delta the critic
    read is not here: it is in the checkpointed turn state, so any process commits it.)
    """

    views: dict[tuple[str, str, int], AuthorView] = field(default_factory=dict)
    stores: dict[tuple[str, str], StoryStore] = field(default_factory=dict)
    """The story stores the nodes write through, by (story, branch): one per branch a run
    touches, built by its first node (a store keeps what it read of its branch's
    ancestry)."""


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
    on_commit: CommitObserver | None = None  # told of every commit (e.g. a benchmark)
    on_critique: CritiqueObserver | None = None  # told of every critique's findings
    indexer: Indexer | None = None  # episode indexing off the turn's path (None: inline)
    embedder: Embedder | None = None  # dense retrieval (None: off)
    cache: RunCache = field(default_factory=RunCache)
