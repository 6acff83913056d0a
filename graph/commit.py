"""The one commit path: a turn's text, or the delta read from it, into memory.

Every commit takes it: the turn graph's commit node, the service's scripted turns and
imported branches, the benchmarks, :mod:`fabula.testing` and the tests. A commit of text
checks the text's size, has the memory-builder read it, enriches the delta (development
links and steps, hypotheses realised and proposed); a commit of a delta writes it in one
atomic call (idempotent: the same turn again is a ``duplicate``), waits for the disk when a
human is waiting on it, then indexes the turn's episodes and consolidates the hierarchy.
The roles only read (:class:`~fabula.agents.roles.MemoryBuilderRole` builds, never commits).
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field

from fabula.agents.memory_builder.narrative import enrich
from fabula.agents.roles import MemoryBuilderRole
from fabula.agents.views import AuthorView, author_view
from fabula.errors import TurnConflict
from fabula.graph.runtime import CommitObserver, Committed, Consolidator, TurnContext
from fabula.limits import Limits
from fabula.memory.delta import TurnDelta
from fabula.memory.index.build import index_through
from fabula.memory.index.indexer import Indexer
from fabula.memory.index.vectors import Embedder
from fabula.memory.store import StoryStore
from fabula.memory.text import normalised


def _offline_builder() -> MemoryBuilderRole:
    """The offline memory-builder, loaded when a commit path without one is made (its
    module is the whole reader, which a command that commits nothing never needs)."""
    from fabula.agents.memory_builder.offline import OfflineMemoryBuilder

    return OfflineMemoryBuilder()


@dataclass(frozen=True)
class CommitPath:
    """What a commit needs besides the store; by default the offline memory-builder, the
    default limits, no wait for the disk, the episode index built inline and no
    consolidation (a benchmark passes :func:`fabula.memory.hierarchy.consolidate`, as the
    application does by default). :meth:`of` is the turn graph's own."""

    memory_builder: MemoryBuilderRole = field(default_factory=_offline_builder)
    limits: Limits = field(default_factory=Limits)
    durable: bool = False  # wait until the turn is on disk (a human's approval)
    consolidate: Consolidator | None = None
    indexer: Indexer | None = None  # episode indexing off the commit's path (None: inline)
    embedder: Embedder | None = None  # dense retrieval (None: off)
    on_commit: CommitObserver | None = None  # told of every commit (e.g. a benchmark)

    @classmethod
    def of(cls, ctx: TurnContext) -> CommitPath:
        """The commit path of a run of the turn graph (a human's turn waits for the disk)."""
        return cls(
            memory_builder=ctx.roles.memory_builder,
            limits=ctx.settings.limits,
            durable=not ctx.auto,
            consolidate=ctx.consolidate,
            indexer=ctx.indexer,
            embedder=ctx.embedder,
            on_commit=ctx.on_commit,
        )


def another_writer(store: StoryStore, turn: int) -> TurnConflict:
    """The conflict of a turn that another process committed first (two runs of one story
    at once): the story is consistent, this process's turn is not written."""
    return TurnConflict(
        f"another process is writing this story: it committed turn {turn} first, with other "
        "text; this one stopped and wrote nothing of its own turn",
        story=store.story,
        branch=store.branch,
        turn=turn,
    )


async def _committed_before(store: StoryStore, turn: int, text: str) -> Committed | None:
    """The duplicate-turn check of every commit: None while the branch has not reached
    ``turn``; a ``"duplicate"`` when it holds ``text`` as ``turn`` already (the same turn
    sent again: a no-op); :func:`another_writer`'s conflict when it holds other text."""
    if await store.head() < turn:
        return None
    done = await store.turn_texts(turn, turn)
    if done and done[0].text == text:
        return Committed(store.story, store.branch, turn, "duplicate", 0.0)
    raise another_writer(store, turn)


async def commit_delta(
    path: CommitPath,
    store: StoryStore,
    delta: TurnDelta,
    build_ms: float = 0.0,
    usage: Mapping[str, Mapping[str, object]] | None = None,
) -> Committed:
    """Commit ``delta`` exactly once: re-sending the committed turn is a no-op. ``usage``
    (the model usage that made it) is written with it, in the same atomic call.

    The result's status is ``"committed"`` or ``"duplicate"``; other text for a committed
    turn raises :class:`TurnConflict` (and the commit function refuses a delta whose story
    moved on). A durable commit is waited for until it is on disk; its ``unsynced`` says
    why, when the server did not confirm it.
    """
    turn = delta.turn
    duplicate = await _committed_before(store, turn, delta.text)
    if duplicate is not None:
        return duplicate
    started = time.perf_counter()
    try:
        result = await store.commit(delta, usage=usage)
    except TurnConflict:
        if await store.head() >= turn:  # committed by another process meanwhile
            raise another_writer(store, turn) from None
        raise
    # a human's approval is acknowledged only once its turn is on disk (a power loss after
    # "committed" must not lose it); autonomous turns skip the wait
    unsynced = await store.make_durable(turn) if path.durable else None
    memory_ms = build_ms + (time.perf_counter() - started) * 1000
    committed = Committed(store.story, store.branch, turn, result.status, memory_ms, unsynced)
    if path.on_commit is not None:
        path.on_commit(committed)
    if result.status == "committed":
        # after the commit is acknowledged: the episode index (in the background when the
        # application keeps an indexer; readers catch up anyway), then the hierarchy (in a
        # background task of this process, or on RQ): the turn waits for neither
        if path.indexer is not None:
            path.indexer.schedule(store, delta)
        else:
            await index_through(store, turn, embedder=path.embedder)
        if path.consolidate is not None:
            await path.consolidate(store, turn)
    return committed


async def commit_text(
    path: CommitPath, store: StoryStore, turn: int, text: str, view: AuthorView | None = None
) -> Committed:
    """Read ``text`` and commit it as ``turn`` (scripted turns: no approval, no critic).
    ``view``: the author's view before the turn, when the caller has it already.

    The status is ``"committed"`` or ``"duplicate"``; other text for a committed turn
    raises :class:`TurnConflict` before it is read, text longer than a turn may be
    :class:`~fabula.errors.LimitExceeded` (nothing written).
    """
    # the text as the memory-builder stores it; nothing is read when the turn is committed
    duplicate = await _committed_before(store, turn, normalised(text))
    if duplicate is not None:
        return duplicate
    delta, build_ms = await read_text(path, store, turn, text, view)
    return await commit_delta(path, store, delta, build_ms)


async def read_text(
    path: CommitPath, store: StoryStore, turn: int, text: str, view: AuthorView | None = None
) -> tuple[TurnDelta, float]:
    """The delta ``text`` commits as ``turn`` (read by the memory-builder, enriched), and
    the milliseconds the reading took; nothing is written. ``view``: the author's view
    before the turn, when the caller has it already. Text longer than a turn may be raises
    :class:`~fabula.errors.LimitExceeded` before it is read (its time grows with the text).
    """
    path.limits.check_text(text, story=store.story, branch=store.branch, turn=turn)
    started = time.perf_counter()
    if view is None:
        view = await author_view(store)
    delta = enrich(view, await path.memory_builder.build(store, turn, text))
    return delta, (time.perf_counter() - started) * 1000
