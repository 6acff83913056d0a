"""What every part of the application shares: :class:`Core`, one Redis, one checkpointer,
one set of roles, and the few steps each part takes on a turn's thread.

The parts (:mod:`~fabula.graph.service.stories`, :mod:`~fabula.graph.service.turns`,
:mod:`~fabula.graph.service.decisions`, :mod:`~fabula.graph.service.branches`,
:mod:`~fabula.graph.service.alternatives`) each hold the core and nothing of one another
but what they call; :class:`~fabula.graph.service.application.Fabula` is the core with its
parts. Each turn is its own checkpoint thread (``story/branch/turn``), so a turn started in
one process can be decided in another; deciding holds the turn's lock
(:meth:`Core._turn_lock`), shared by every process.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from functools import cached_property
from typing import TYPE_CHECKING, Any, Literal

from redis.exceptions import LockError, RedisError

from fabula.agents.roles import Roles
from fabula.errors import TurnConflict
from fabula.graph.runtime import CommitObserver, Consolidator, CritiqueObserver, TurnContext
from fabula.graph.service.consolidation import CLOSING_SUMMARIES_S, InlineConsolidation
from fabula.graph.service.handles import StoryRef
from fabula.graph.service.pending import (
    Pending,
    parts_in,
    pending_in_checkpoint,
    pending_in_values,
)
from fabula.graph.state import CHECKPOINT_TYPES, PartRequest
from fabula.graph.threads import thread_id
from fabula.memory.acl import MindPool, drop_character_users
from fabula.memory.connection import connect_async
from fabula.memory.index.indexer import Indexer
from fabula.memory.index.vectors import Embedder
from fabula.memory.leases import renewed
from fabula.memory.store import StoryStore
from fabula.memory.store.view import StoryReads
from fabula.memory.tokens import LazyCounter, TokenCounter, default_counter
from fabula.settings import Settings

if TYPE_CHECKING:  # the checkpointer and the graph load LangGraph and langchain-core
    from langchain_core.runnables import RunnableConfig
    from langgraph.checkpoint.base import BaseCheckpointSaver
    from langgraph.graph.state import CompiledStateGraph

    from fabula.agents.roles import ChatVoiceRole
    from fabula.graph.checkpoint import RedisCheckpointSaver
    from fabula.graph.state import TurnState

TurnOutcome = Literal["committed", "duplicate", "pending", "part", "abandoned"]

# A turn is checkpointed when its run stops — at the approval interrupt or at its end —
# not after every step: a run that dies midway starts the turn over, which is safe
# because everything before the commit is a pure read and the commit is idempotent.
DURABILITY: Literal["exit"] = "exit"


class Core:
    """One Redis, one checkpointer, one set of roles: what the application's parts share.

    ``roles`` default to the offline engine; ``consolidate`` runs after each commit;
    ``checkpointer`` defaults to a :class:`RedisCheckpointSaver` on ``url`` (made only then);
    ``on_commit`` is told of every committed turn, ``on_critique`` of every critique's
    findings.
    """

    def __init__(
        self,
        url: str,
        settings: Settings,
        roles: Roles | None = None,
        consolidate: Consolidator | None = None,
        checkpointer: BaseCheckpointSaver[Any] | None = None,
        on_commit: CommitObserver | None = None,
        embedder: Embedder | None = None,
        on_critique: CritiqueObserver | None = None,
    ) -> None:
        self.url = url
        self.settings = settings
        self.admin = connect_async(url)
        self.minds = MindPool(self.admin, url)
        # once, when first counted with: it may hash a cached tiktoken file, or decode the
        # shipped one (most of a reading command's start)
        self._counter = LazyCounter(lambda: default_counter(settings.token_counter))
        if roles is not None:
            self.roles = roles  # the cached property's value: the offline roles never made
        self._consolidate = consolidate
        self._on_commit = on_commit
        self._on_critique = on_critique
        self._embedder = embedder
        self._indexer = Indexer(embedder)
        self._own_saver: RedisCheckpointSaver | None = None
        if checkpointer is not None:
            self.saver = checkpointer  # the cached property's value: never made here
        self._wire()

    @cached_property
    def roles(self) -> Roles:
        """The roles, the offline engine's unless some were given: made when first asked
        for, so that a command that runs none (``recall``, ``pending``) loads none of
        them (the offline memory-builder alone loads the whole reader)."""
        from fabula.agents.factory import offline_roles

        return offline_roles()

    @property
    def voice(self) -> ChatVoiceRole | None:
        """The chat's voice: the given roles' (a model's), else None (the offline engine
        answers), read without making the offline roles."""
        return self.__dict__["roles"].voice if "roles" in self.__dict__ else None

    @cached_property
    def saver(self) -> BaseCheckpointSaver[Any]:
        """The checkpointer, made when first asked for unless one was given: a
        :class:`RedisCheckpointSaver` on the application's Redis. Its module loads
        LangGraph's checkpoint base and with it langchain-core (~0.3 s of CPU), which a
        command that never reads a turn's thread (``recall``, ``chat``, ``new``) need not."""
        from fabula.graph.checkpoint import RedisCheckpointSaver, RegistrySerializer

        # the turn's typed values are built again from their checkpoints, no others
        serde = RegistrySerializer(CHECKPOINT_TYPES)
        self._own_saver = RedisCheckpointSaver.from_url(self.url, serde=serde)
        return self._own_saver

    @cached_property
    def graph(self) -> CompiledStateGraph[TurnState, TurnContext, TurnState, TurnState]:
        """The turn graph on the checkpointer, compiled when first asked for: a command
        that never runs or reads a turn's graph (``recall``, ``chat``, ``new``) loads
        neither it nor LangGraph's graph and tracing modules (a third of its start)."""
        from fabula.graph.build import build_turn_graph

        return build_turn_graph(self.saver)

    @property
    def counter(self) -> TokenCounter:
        """The token counter (:func:`~fabula.memory.tokens.default_counter` for the
        settings), made when first asked for."""
        return self._counter.counter

    def _wire(self) -> None:
        """Build what rests on the core (the application's parts): nothing here."""

    async def aclose(self) -> None:
        """Close the connections this application opened (not an injected checkpointer),
        once the background indexing they serve is done."""
        await self._indexer.drain()
        if isinstance(self._consolidate, InlineConsolidation):
            # consolidation is waited for; model-written summaries only a while (the next
            # run writes what is left: a short `fabula run` does not wait for eight calls)
            await self._consolidate.drain(summaries_s=CLOSING_SUMMARIES_S)
        await self.minds.aclose()
        if self._own_saver is not None:
            await self._own_saver.aclose()
        if "_raw" in self.__dict__:
            await self._raw.aclose()
        await self.admin.aclose()

    def store(self, story: str | StoryRef, branch: str = "main") -> StoryStore:
        """Memory's store of one branch of one story (``story`` an id with ``branch``, or a
        :class:`StoryRef`; nothing is read: see ``require``). For the service's own parts,
        the tests and the benchmarks, which need memory's methods: the interfaces hold the
        :class:`StoryRef` the operations hand back and read through ``Fabula.read``."""
        if isinstance(story, StoryRef):
            return StoryStore(self.admin, story.story, story.branch, limits=self.settings.limits)
        return StoryStore(self.admin, story, branch, limits=self.settings.limits)

    def context(self, *, auto: bool) -> TurnContext:
        """The run-scoped context the turn graph's nodes are given."""
        return TurnContext(
            admin=self.admin,
            url=self.url,
            minds=self.minds,
            roles=self.roles,
            settings=self.settings,
            auto=auto,
            consolidate=self._consolidate,
            on_commit=self._on_commit,
            on_critique=self._on_critique,
            counter=self._counter,
            indexer=self._indexer,
            embedder=self._embedder,
        )

    def _config(self, store: StoryReads, turn: int) -> RunnableConfig:
        """The graph's config for turn ``turn`` of ``store``'s branch: its own thread."""
        # max_concurrency bounds the tasks of one step: the fanned-out character agents'
        # model calls (FABULA_MODEL_CONCURRENCY)
        return {
            "configurable": {"thread_id": thread_id(store.story, store.branch, turn)},
            "max_concurrency": self.settings.model_concurrency,
        }

    async def _pending(self, store: StoryReads) -> Pending | None:
        """The turn of this branch waiting for a decision, if any (its draft's id and
        request, read from the turn's checkpoint; see ``pending_details`` for the draft as
        an approver reads it). The service's parts call it; everyone else reads it through
        the read door, ``fab.read(ref).pending()``."""
        turn = await store.head() + 1
        if "saver" not in self.__dict__:  # no saver made or given yet: read without one
            from fabula.graph.checkpoint.waiting import Undecoded, waiting_at

            thread = thread_id(store.story, store.branch, turn)
            try:
                found = await waiting_at(self._raw, thread, CHECKPOINT_TYPES)
            except Undecoded:
                pass  # something the light read does not decode: the saver reads it
            else:
                if found is None:
                    return None
                return pending_in_values(store, turn, found.checkpoint, found.values)
        # from the checkpoint, not the graph's state: listing what waits compiles no graph
        saved = await self.saver.aget_tuple(self._config(store, turn))
        return pending_in_checkpoint(store, turn, saved)

    @cached_property
    def _raw(self) -> Any:
        """A connection with binary replies, made when first asked for: what waits for a
        decision is read through it without the saver (which loads LangGraph and, with it,
        langchain-core and LangSmith: most of ``fabula pending``'s start)."""
        return connect_async(self.url, decode_responses=False)

    async def _waiting_parts(self, store: StoryReads) -> list[PartRequest]:
        """The parts the branch's next turn waits for (one per played character; none when
        it waits for nothing, or for a decision), each with its character's own view. Read
        through the read door, ``fab.read(ref).waiting_parts()``."""
        turn = await store.head() + 1
        return list(parts_in(await self.graph.aget_state(self._config(store, turn))).values())

    async def quiesce(self, story: str) -> None:
        """Wait for the background work on ``story``'s derived keys (indexing, consolidation)."""
        await self._indexer.wait(story)
        if isinstance(self._consolidate, InlineConsolidation):
            await self._consolidate.wait(story)

    @contextlib.asynccontextmanager
    async def _turn_lock(
        self, store: StoryStore, turn: int, doing: str, where: dict[str, Any]
    ) -> AsyncIterator[None]:
        """Hold the turn's decision lock (shared by every process) for the body;
        TurnConflict when another holder keeps it past the lock's wait."""
        lock = store.decision_lock(turn)
        try:
            acquired = await lock.acquire()
        except LockError:
            acquired = False
        if not acquired:
            raise TurnConflict(
                f"another {doing} on turn {turn} is still running; try again", **where
            )
        async with renewed(lock):  # renewed while the decision runs, then released
            yield

    @contextlib.asynccontextmanager
    async def _sweeping(self, store: StoryStore) -> AsyncIterator[None]:
        """Raise :class:`StoryDeleted` after the block, or instead of what it raised, when
        the story was deleted meanwhile (once :meth:`_swept` removed what it wrote)."""
        try:
            yield
        except Exception:
            if await self._swept(store):
                raise store.deleted_error(meanwhile=True) from None
            raise
        if await self._swept(store):
            raise store.deleted_error(meanwhile=True)

    async def _swept(self, store: StoryStore) -> bool:
        """Whether the story was deleted while this process wrote it; if so, what it wrote
        since (index keys, checkpoints, a character's user) is removed now: the deletion
        refused its commits, not the writes around them."""
        try:
            if not await store.was_deleted():
                return False
            await self.minds.forget(store.story)
            await store.delete()
            from fabula.graph.checkpoint import delete_threads

            await delete_threads(self.saver, prefix=f"{store.story}/")
            await drop_character_users(self.admin, store.story, [])
        except RedisError:
            return False  # the server cannot say: the error met is the one to report
        return True
