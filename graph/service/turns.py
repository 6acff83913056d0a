"""Writing turns: :class:`Turns` runs the turn graph for a branch's next turn, stopping
for a played character's part or for approval, and relays the graph to a listener."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any, Literal

from structlog.contextvars import bound_contextvars

from fabula.agents.views import author_view
from fabula.errors import Conflict, InvalidInput, Remedy, StoryAtRest, StoryDeleted, TurnConflict
from fabula.graph.service.core import DURABILITY, Core, TurnOutcome
from fabula.graph.service.pending import Listener, check_bounds, parts_in, pending_in, tell
from fabula.graph.service.responses.turns import PendingSummary, RunOut
from fabula.graph.state import Part, PartRequest, TurnState
from fabula.graph.threads import thread_id
from fabula.logs import get_logger
from fabula.memory.store import StoryStore

if TYPE_CHECKING:  # LangGraph's types module loads its tracing: only when a turn runs
    from langchain_core.runnables import RunnableConfig
    from langgraph.types import Command, StateSnapshot

log = get_logger(__name__)


async def _require_finished(store: StoryStore) -> None:
    """Raise :class:`Conflict` (one line) for a story its maker never finished (killed
    while it committed the opening): continued, it would lack its opening. The request
    is sound; the story's state refuses it."""
    if await store.unfinished():
        raise Conflict(
            f"story {store.story!r} was never finished being made (its maker stopped "
            "before its opening was committed)",
            remedy=Remedy("remake_story", {"story": store.story}),
            story=store.story,
        )


class Turns:
    """The branch's next turns written through the turn graph, over the :class:`Core`."""

    def __init__(self, core: Core) -> None:
        self.core = core

    async def run(
        self,
        store: StoryStore,
        turns: int = 1,
        *,
        auto: bool,
        direction: str | None = None,
        listener: Listener | None = None,
        progress: Callable[[int, TurnOutcome], Awaitable[None]] | None = None,
        parts: Mapping[str, Part] | None = None,
    ) -> RunOut:
        """Write up to ``turns`` turns (one by default); without ``auto``, stop at the first
        awaiting approval. With played characters, stop at the first turn that waits for a
        part; ``parts`` are the first turn's (see :meth:`step`). ``outcome`` is the last
        turn's (:data:`TurnOutcome`).

        ``progress(done, outcome)`` is called after each turn. A story whose characters
        have nothing left to do stops early, with ``rest`` saying why.
        """
        if turns < 1:
            raise InvalidInput(f"turns must be at least 1, not {turns}", story=store.story)
        await store.require()
        written = 0
        outcome: TurnOutcome | None = None
        rest: str | None = None
        for _ in range(turns):
            try:
                outcome = await self.step(
                    store, auto=auto, direction=direction, listener=listener, parts=parts
                )
                parts = None  # the parts given are the first turn's
            except StoryAtRest as stopped:
                rest = stopped.message
                break
            except StoryDeleted:  # the story was there when the run began
                await self.core._swept(store)
                raise store.deleted_error(meanwhile=True) from None
            if outcome in ("committed", "duplicate"):
                written += 1
            if progress is not None:
                await progress(written, outcome)
            if outcome in ("pending", "part"):
                break
        found = await self.core._pending(store)
        return RunOut(
            story=store.story,
            branch=store.branch,
            written=written,
            outcome=outcome,
            head=await store.head(),
            rest=rest,
            pending=None
            if found is None
            else PendingSummary(
                story=store.story, branch=store.branch, turn=found.turn, pending_id=found.id
            ),
        )

    async def step(
        self,
        store: StoryStore,
        *,
        auto: bool,
        direction: str | None = None,
        listener: Listener | None = None,
        parts: Mapping[str, Part] | None = None,
    ) -> TurnOutcome:
        """Write the branch's next turn, its outcome; stop at approval unless ``auto``.
        What :meth:`run` does once per turn, raising where :meth:`run` reports.

        A story with played characters (``set_played``) takes each one's part of the turn
        from ``parts`` (by character id or name); a turn that lacks one stops before its
        draft, ``"part"``, asking for it (see :meth:`Reader.waiting_parts`), and a run given
        the parts it waits for goes on from there. An ``auto`` run is played by nobody: the
        engine plays each played character whose part it was not given.

        ``listener`` hears each node finish and the prose as it is written. (A run takes no
        lock: a run killed midway must not hold up the next; two runs of one turn commit it
        once, the commit being idempotent.)

        Raises :class:`StoryAtRest` when no character has anything to do: a plan whose
        characters all turn out idle is planned again with the next anchor, once for each
        character, before the story is declared at rest.

        A turn whose last run failed (a model's reply that never validated, say: the error
        is raised and the story left as it was) is run again as its next attempt, planned
        anew as after a rejection: at temperature 0 the same attempt would fail the same
        way, every time. The attempt is read from the turn's checkpoint, not the story.
        """
        await store.require()
        await _require_finished(store)
        turn = await store.head() + 1
        config = self.core._config(store, turn)
        snapshot = await self.core.graph.aget_state(config)
        if pending_in(store, turn, snapshot) is not None:
            if not await self._decided_meanwhile(store, turn):
                return "pending"
            # a decision of the turn was in flight: go on from what it left
            return await self.step(
                store, auto=auto, direction=direction, listener=listener, parts=parts
            )
        given = await self._parts(store, parts or {})
        if waiting := parts_in(snapshot):
            return await self._answer_parts(store, turn, waiting, given, auto, listener)
        if any(p.accept for p in given.values()):
            raise InvalidInput(
                "a part can take the engine's proposal only when the turn has asked for it "
                "(and shown it): give the part's words",
                story=store.story,
            )
        if direction:  # refused before anything runs (a failed run would be run again)
            await self.check_steering(store, direction)
        first = await self._first_attempt(store, turn, snapshot)
        return await self._attempts(store, turn, first, direction, given, auto, listener)

    async def _decided_meanwhile(self, store: StoryStore, turn: int) -> bool:
        """Whether a decision of ``turn`` was in flight (another process held the turn's
        decision lock) when a run found the turn waiting; if so, once it has ended. A run
        that stopped there reported the draft as waiting when the decision was about to
        commit or replace it: the id it printed was stale by the time it was read."""
        if not await store.decision_lock(turn).locked():
            return False
        where = {"story": store.story, "branch": store.branch, "turn": turn}
        async with self.core._turn_lock(store, turn, "decision", where):
            log.info("run_waited_for_decision", **where)
        return True

    async def _first_attempt(self, store: StoryStore, turn: int, snapshot: StateSnapshot) -> int:
        """The attempt a turn's run begins at: 0, after clearing an earlier run that ended
        without a commit (abandoned); after a failed run, the attempt its plan began at, or
        the next one if it failed while planning (the state still holds the one before)."""
        first = 0
        if snapshot.values and not snapshot.next:
            # an earlier run of this turn ended without a commit (abandoned): start afresh
            await self.core.saver.adelete_thread(thread_id(store.story, store.branch, turn))
        elif snapshot.next and isinstance(last := snapshot.values.get("attempt"), int):
            # an earlier run of this turn failed: at the attempt its plan began, or at the
            # next one if it failed while planning (the state still holds the one before)
            first = last + (2 if "plan" in snapshot.next else 1)
            log.warning(
                "turn_run_again",
                story=store.story,
                branch=store.branch,
                turn=turn,
                attempt=first,
                failed_at=list(snapshot.next),
            )
        return first

    async def _attempts(
        self,
        store: StoryStore,
        turn: int,
        first: int,
        direction: str | None,
        given: Mapping[str, Part],
        auto: bool,
        listener: Listener | None,
    ) -> TurnOutcome:
        """Run the turn from attempt ``first``, planned anew with the next anchor each time
        its characters all turn out idle, once for each character; then :class:`StoryAtRest`."""
        tries = max(1, len(await store.characters()))
        for attempt in range(first, first + tries):
            start: TurnState = {
                "story": store.story,
                "branch": store.branch,
                "turn": turn,
                "direction": direction,
                "attempt": attempt - 1,
                "parts": {c: p.words or "" for c, p in given.items()},
            }
            try:
                return await self.drive(start, store, turn, auto=auto, listener=listener)
            except StoryAtRest as rest:
                await self.core.saver.adelete_thread(thread_id(store.story, store.branch, turn))
                if not rest.idle or attempt == first + tries - 1:
                    raise StoryAtRest(rest.message, **rest.context) from None
        raise AssertionError("unreachable")  # pragma: no cover

    async def adopt(self, store: StoryStore, turn: int, values: dict[str, Any]) -> None:
        """Put turn ``turn``, drafted elsewhere (the Agent Server's own run), on the branch's
        own thread waiting on approval, as ``values`` hold it: every interface then lists
        and decides it as one of this service's pending turns."""
        config = self.core._config(store, turn)
        await self.core.graph.aupdate_state(config, values, as_node="reread")
        await self.core.graph.ainvoke(None, config, context=self.core.context(auto=False))

    async def check_steering(
        self, store: StoryStore, text: str, kind: Literal["direction", "note"] = "direction"
    ) -> None:
        """Raise :class:`InvalidInput` (one line; nothing changes) when the story's planner
        cannot read ``text`` — a direction for the next turn, or a rejection's ``note`` —
        as something to steer the turn by (the offline planner reads a character and a
        goal; a model reads plain words)."""
        if kind == "direction":
            check_bounds(direction=text)
        else:
            check_bounds(note=text)
        why = self.core.roles.planner.unread(await author_view(store), text, kind)
        if why is not None:
            raise InvalidInput(why, story=store.story, branch=store.branch)

    async def drive(
        self,
        graph_input: TurnState | Command[Any],
        store: StoryStore,
        turn: int,
        *,
        auto: bool,
        listener: Listener | None,
    ) -> TurnOutcome:
        """Run the turn's graph from ``graph_input`` until it ends or waits for approval.

        A story deleted meanwhile (by another command) raises :class:`StoryDeleted`, once
        what this turn wrote after the deletion is removed too (see :meth:`Core._swept`)."""
        async with self.core._sweeping(store):
            config = self.core._config(store, turn)
            context = self.core.context(auto=auto)
            with bound_contextvars(story=store.story, branch=store.branch, turn=turn):
                if listener is None:
                    result = await self.core.graph.ainvoke(
                        graph_input, config, context=context, durability=DURABILITY
                    )
                    if result.get("__interrupt__"):
                        return await self._waiting(config)
                    outcome: TurnOutcome = result.get("outcome", "abandoned")
                    return outcome
                interrupted = False
                async for mode, chunk in self.core.graph.astream(
                    graph_input,
                    config,
                    context=context,
                    durability=DURABILITY,
                    stream_mode=["updates", "messages", "custom"],
                ):
                    interrupted |= await tell(listener, store, turn, mode, chunk)
            if interrupted:
                return await self._waiting(config)
            final: TurnOutcome = (await self.core.graph.aget_state(config)).values.get(
                "outcome", "abandoned"
            )
            return final

    async def _waiting(self, config: RunnableConfig) -> TurnOutcome:
        """What an interrupted turn waits for: a played character's part, or a decision."""
        return "part" if parts_in(await self.core.graph.aget_state(config)) else "pending"

    async def _parts(self, store: StoryStore, parts: Mapping[str, Part]) -> dict[str, Part]:
        """``parts`` by character id, each for a played character; InvalidInput (one line)
        for another character, NotFound for no such character."""
        played = await store.played()
        given: dict[str, Part] = {}
        for who, part in parts.items():
            ident = (await store.resolve(who, "character")).id
            if ident not in played:
                raise InvalidInput(
                    f"{who!r} is not played in story {store.story!r} (played: "
                    f"{', '.join(played) or 'none'})",
                    remedy=Remedy("play_character", {"story": store.story, "character": ident}),
                    story=store.story,
                )
            given[ident] = part
        return given

    async def _answer_parts(
        self,
        store: StoryStore,
        turn: int,
        waiting: Mapping[str, PartRequest],
        given: Mapping[str, Part],
        auto: bool,
        listener: Listener | None,
    ) -> TurnOutcome:
        """Resume the turn waiting for played characters' parts with those ``given``
        (``"part"`` again while one is still missing)."""
        answers = {i: given[r.character] for i, r in waiting.items() if r.character in given}
        if auto:  # an autonomous run plays the parts it was not given: each agent's proposal
            answers |= {i: Part(accept=True) for i in waiting if i not in answers}
        if not answers:
            return "part"
        where = {"story": store.story, "branch": store.branch, "turn": turn}
        async with self.core._turn_lock(store, turn, "part", where):
            state = await self.core.graph.aget_state(self.core._config(store, turn))
            if parts_in(state) != waiting:
                raise TurnConflict(
                    f"turn {turn}'s parts were given by another run meanwhile; yours changed "
                    "nothing",
                    **where,
                )
            from langgraph.types import Command  # with the graph: see Core.graph

            resume = {i: p.model_dump(exclude_defaults=True) for i, p in answers.items()}
            return await self.drive(
                Command(resume=resume), store, turn, auto=auto, listener=listener
            )
