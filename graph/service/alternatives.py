"""Alternative drafts of one turn: :class:`Alternatives` writes several drafts side by
side (nothing committed), keeps them with the turn and shows them as an approver compares
them; approving one (``Decision.choice``) commits exactly it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from structlog.contextvars import bound_contextvars

from fabula.agents.contracts import Finding, TurnPlan
from fabula.errors import InvalidInput, StoryAtRest
from fabula.graph.service.changes import changes_of, sentences_of
from fabula.graph.service.core import DURABILITY, Core
from fabula.graph.service.pending import Listener, pending_in
from fabula.graph.service.responses.turns import DraftOut, DraftsOut
from fabula.graph.service.turns import Turns
from fabula.graph.state import ApprovalRequest, TurnState
from fabula.graph.threads import thread_id
from fabula.memory.delta import TurnDelta
from fabula.memory.drafts import DraftOption, read_drafts, save_drafts
from fabula.memory.store import StoryStore

if TYPE_CHECKING:  # langchain-core: loaded with the graph, when a draft is written
    from langchain_core.runnables import RunnableConfig

MAX_ALTERNATIVES = 6  # drafts of one turn asked for at once (each is a whole turn's work)


def _option(ident: str, request: ApprovalRequest) -> DraftOption:
    """A pending draft, as the story's memory keeps it beside the turn's other drafts."""
    return DraftOption(
        id=ident,
        text=request.draft.text,
        findings=[f.model_dump() for f in request.findings],
        preview=request.preview.model_dump(),
        delta=request.delta.model_dump(mode="json") if request.delta is not None else {},
        plan=request.plan.model_dump() if request.plan is not None else {},
    )


class Alternatives:
    """Alternative drafts of a branch's next turn, over the :class:`Core`; the turn itself
    is written as :class:`Turns` writes it."""

    def __init__(self, core: Core, turns: Turns) -> None:
        self.core = core
        self.turns = turns

    async def alternatives(
        self,
        store: StoryStore,
        count: int,
        *,
        direction: str | None = None,
        listener: Listener | None = None,
    ) -> DraftsOut:
        """``count`` drafts of the branch's next turn, side by side, each with its
        findings and changes; kept with the turn (:mod:`fabula.memory.drafts`), so any
        process shows them and approving one (``Decision.choice``) commits exactly it.

        The turn is written first if none is pending (stopping for approval); its pending
        draft is the first. The others are written by the same graph on scratch threads
        (nothing is committed), each planned with the next attempt — the planner's next
        choice of anchor and cast — and a draft whose text repeats an earlier one is
        dropped; ``note`` says why when fewer than ``count`` differ.
        """
        if not 1 <= count <= MAX_ALTERNATIVES:
            raise InvalidInput(
                f"alternatives: 1 to {MAX_ALTERNATIVES}, not {count}", story=store.story
            )
        await store.require()
        waiting = await self.core._pending(store)
        if waiting is None:
            outcome = await self.turns.step(
                store, auto=False, direction=direction, listener=listener
            )
            waiting = await self.core._pending(store)
            if outcome != "pending" or waiting is None:  # pragma: no cover - auto is off
                raise InvalidInput(f"turn was {outcome}, not pending", story=store.story)
        turn = waiting.turn
        main = (await self.core.graph.aget_state(self.core._config(store, turn))).values
        first = _option(f"{turn}.d1", waiting.request)
        options = [first]
        attempt = int(main.get("attempt", 0))
        tries = count + 2 * max(1, len(await store.characters()))
        note = None
        for k in range(1, tries):
            if len(options) >= count:
                break
            option = await self._scratch_draft(
                store, turn, main, attempt + k, f"{turn}.d{len(options) + 1}"
            )
            if option is None:  # at rest for that plan: the next may have something to do
                continue
            if all(o.text != option.text for o in options):
                options.append(option)
        if len(options) < count and note is None:
            note = (
                f"{len(options)} different drafts of {count} asked for: the planner's "
                "other choices wrote the same text"
            )
        await save_drafts(store, turn, options)
        return await self.drafts(store, turn, note=note)

    async def _scratch_draft(
        self, store: StoryStore, turn: int, main: Mapping[str, Any], attempt: int, ident: str
    ) -> DraftOption | None:
        """One more draft of ``turn``, planned with ``attempt``, written on a scratch thread
        up to the approval interrupt (nothing committed; the thread is deleted). None when
        the story is at rest for that plan."""
        scratch = f"{thread_id(store.story, store.branch, turn)}~{ident}"
        config: RunnableConfig = {
            "configurable": {"thread_id": scratch},
            "max_concurrency": self.core.settings.model_concurrency,
        }
        start: TurnState = {
            "story": store.story,
            "branch": store.branch,
            "turn": turn,
            "direction": main.get("direction"),
            "attempt": attempt - 1,
            "notes": list(main.get("notes", [])),
            "parts": dict(main.get("parts", {})),  # the played characters' parts as given
        }
        try:
            with bound_contextvars(story=store.story, branch=store.branch, turn=turn):
                await self.core.graph.ainvoke(
                    start, config, context=self.core.context(auto=False), durability=DURABILITY
                )
            snapshot = await self.core.graph.aget_state(config)
        except StoryAtRest:
            return None
        finally:
            await self.core.saver.adelete_thread(scratch)
        pending = pending_in(store, turn, snapshot)
        return None if pending is None else _option(ident, pending.request)

    async def drafts(
        self, store: StoryStore, turn: int | None = None, *, note: str | None = None
    ) -> DraftsOut:
        """The alternative drafts kept for ``turn`` (default: the pending turn, else the
        next), as an approver compares them."""
        await store.require()
        waiting = await self.core._pending(store)
        if turn is None:
            turn = waiting.turn if waiting is not None else await store.head() + 1
        kept = await read_drafts(store, turn)
        base = store
        out = []
        for option in kept.options:
            findings = [Finding.model_validate(f) for f in option.findings]
            delta = TurnDelta.model_validate(option.delta)
            out.append(
                DraftOut(
                    id=option.id,
                    draft=option.text,
                    sentences=sentences_of(option.text, findings),
                    findings=findings,
                    changes=await changes_of(base, delta),
                    plan=TurnPlan.model_validate(option.plan) if option.plan else None,
                )
            )
        pending_id = waiting.id if waiting is not None and waiting.turn == turn else None
        return DraftsOut(
            story=store.story,
            branch=store.branch,
            turn=turn,
            pending_id=pending_id,
            drafts=out,
            chosen=kept.chosen,
            note=note,
        )
