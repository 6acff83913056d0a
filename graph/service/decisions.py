"""Deciding on turns: :class:`Decisions` finds the turns awaiting a decision, shows one as
an approver reads it, and resumes it with the human's decision (approve, edit, reject)."""

from __future__ import annotations

from typing import Any, TypedDict, Unpack

from fabula.agents.contracts import Decision
from fabula.agents.memory_builder.narrative import enrich
from fabula.agents.views import author_view
from fabula.errors import InvalidInput, NotFound, Remedy, TurnConflict
from fabula.graph.service.changes import changes_of, sentences_of
from fabula.graph.service.core import Core
from fabula.graph.service.pending import (
    Listener,
    Pending,
    check_bounds,
    edit_problem,
    raise_if_edit_not_taken,
)
from fabula.graph.service.responses.turns import (
    DecisionOut,
    Outcome,
    PendingListed,
    PendingTurn,
)
from fabula.graph.service.turns import Turns
from fabula.memory.delta import TurnDelta
from fabula.memory.drafts import TurnDrafts, choose_draft, read_drafts
from fabula.memory.store import StoryStore, list_stories
from fabula.memory.text import normalised


class Deciding(TypedDict, total=False):
    """How :meth:`Decisions.decide` acts on a decision."""

    force: bool
    """Commit an edit the critic finds errors in (the human commits it explicitly)."""
    expect: str | None
    """The id of the draft the decision's maker read (:attr:`Pending.id`)."""
    listener: Listener | None
    """Hears the turn's graph as a run's does."""


class Decisions:
    """Turns awaiting a decision, and decisions on them, over the :class:`Core`; a decision
    resumes the turn's graph as :class:`Turns` runs it."""

    def __init__(self, core: Core, turns: Turns) -> None:
        self.core = core
        self.turns = turns

    async def decide(
        self, store: StoryStore, decision: Decision, **deciding: Unpack[Deciding]
    ) -> DecisionOut:
        """Resume the pending turn with a human decision (approve, edit or reject), as
        ``deciding`` says (:class:`Deciding`: ``force``, ``expect``, ``listener``).

        Approval commits the delta the approver was shown (from the checkpoint: it is never
        read again), and returns once the server confirms it is on disk (``WAITAOF``); if
        the server cannot confirm it, the outcome is still ``"committed"`` (the turn is in
        the story) and the answer says it is not durable, and why. An edit is read once, by
        the memory-builder and the critic: it then awaits a decision again (``"pending"``,
        shown with its findings), or, with ``decision.now``, is committed. An edit the
        critic finds errors in raises :class:`EditRefused` listing them, unless ``force``
        (the human commits it explicitly, at once); an edit that cannot be read, or without
        text, raises :class:`InvalidInput`. Either way the turn still awaits a decision, as
        it was, and nothing is written.

        One decision at a time resumes a turn (a lock shared by every process): a decision
        that finds the turn decided meanwhile, or its draft rejected and rewritten, raises
        :class:`TurnConflict` instead of acting on what its maker did not see. An edit's
        text longer than the settings' limit raises :class:`LimitExceeded` before the turn
        is touched. ``expect`` is the id of the draft the decision's maker read
        (:attr:`Pending.id`): another draft, or none, is :class:`TurnConflict` too. When a
        rewind took the committed turn off the branch meanwhile, ``moved_to`` names the
        branch that holds it.
        """
        expect = deciding.get("expect")
        seen = await self._awaiting(store, decision, expect)
        where = {"story": store.story, "branch": store.branch, "turn": seen.turn}
        kept = await read_drafts(store, seen.turn)
        decision = self._settled(decision, kept, seen, where, force=bool(deciding.get("force")))
        async with self.core._turn_lock(store, seen.turn, "decision", where):
            await self._still_waiting(store, seen, decision, where)
            from langgraph.types import Command  # with the graph: see Core.graph

            outcome = await self.turns.drive(
                Command(resume=decision.model_dump()),
                store,
                seen.turn,
                auto=False,
                listener=deciding.get("listener"),
            )
            if outcome == "pending" and decision.action == "edit":
                back = await self.core._pending(store)
                raise_if_edit_not_taken(back.request if back else None, where)
            moved_to = None
            if outcome == "committed":
                texts = {o.text for o in kept.options} | {seen.request.draft.text}
                if decision.text:
                    texts |= {decision.text, decision.text.strip()}
                moved_to = await self._moved_to(store, seen.turn, texts, kept)
        return await self._answer(store, seen.turn, decision, outcome, moved_to)

    async def _answer(
        self,
        store: StoryStore,
        turn: int,
        decision: Decision,
        outcome: Outcome,
        moved_to: str | None,
    ) -> DecisionOut:
        """What the decision did; for a commit, whether the server confirmed it on disk."""
        unsynced = None
        if outcome == "committed":
            state = await self.core.graph.aget_state(self.core._config(store, turn))
            unsynced = state.values.get("unsynced")
        return DecisionOut(
            story=store.story,
            branch=store.branch,
            turn=turn,
            action=decision.action,
            outcome=outcome,
            head=await store.head(),
            durable=None if outcome != "committed" else unsynced is None,
            unsynced=unsynced,
            moved_to=moved_to,
        )

    async def _awaiting(self, store: StoryStore, decision: Decision, expect: str | None) -> Pending:
        """The decision checked before the turn is touched, and the turn it is about: an
        edit's text present and within the limit, the bounds, the story there, a turn
        waiting, and the draft ``expect`` names the one waiting."""
        if decision.action == "edit" and not (decision.text or "").strip():
            raise InvalidInput("an edit needs the new text", story=store.story)
        check_bounds(note=decision.note, expect=expect)
        await store.require()
        if decision.action == "edit" and decision.text:
            self.core.settings.limits.check_text(
                decision.text, story=store.story, branch=store.branch
            )
        seen = await self.core._pending(store)
        if expect is not None and (seen is None or seen.id != expect):
            raise await self._decided(store, expect, decision, seen)
        if seen is None:
            raise NotFound(
                f"story {store.story!r} has no turn awaiting approval on branch {store.branch!r}",
                story=store.story,
                branch=store.branch,
            )
        return seen

    @staticmethod
    def _settled(
        decision: Decision, kept: TurnDrafts, seen: Pending, where: dict[str, Any], *, force: bool
    ) -> Decision:
        """The decision with the draft it chooses named by its kept id (InvalidInput when
        the turn has no such draft, or the decision is not an approval) and ``force``."""
        if decision.choice is not None:
            option = kept.get(decision.choice) if decision.action == "approve" else None
            if option is None:
                listed = ", ".join(o.id for o in kept.options) or "none"
                raise InvalidInput(
                    f"turn {seen.turn} has no draft {decision.choice!r} to choose (its drafts: "
                    f"{listed})",
                    remedy=Remedy("write_alternatives"),
                    **where,
                )
            decision = decision.model_copy(update={"choice": option.id})
        if force:
            decision = decision.model_copy(update={"force": True})
        return decision

    async def _still_waiting(
        self, store: StoryStore, seen: Pending, decision: Decision, where: dict[str, Any]
    ) -> None:
        """TurnConflict, under the turn's lock, when the draft ``seen`` no longer waits:
        decided by another decision meanwhile, or rejected and written again."""
        now = await self.core._pending(store)
        if now is None or now.turn != seen.turn:
            head = await store.head()
            what = "committed" if head >= seen.turn else "abandoned"
            raise TurnConflict(
                f"turn {seen.turn} was decided by another decision meanwhile ({what}); "
                f"yours ({decision.action}) changed nothing",
                **where,
            )
        if now.checkpoint != seen.checkpoint:
            raise TurnConflict(
                f"turn {seen.turn}'s draft was rejected and written again meanwhile; "
                f"yours ({decision.action}) changed nothing",
                remedy=Remedy("review_pending"),
                **where,
            )

    async def _moved_to(
        self, store: StoryStore, turn: int, texts: set[str], kept: TurnDrafts
    ) -> str | None:
        """The branch now holding turn ``turn``, just committed on ``store``'s branch, when
        a rewind took it off that branch the moment it was committed (None: it is where it
        was decided, or that is not known). The turn's drafts stay with it: the holder
        records which one it is (an edit: none)."""
        holder = await self._holder(store, turn, texts)
        if holder is None:
            return None
        if kept.options:
            text = (await holder.turn_texts(turn, turn))[0].text
            chosen = next((o.id for o in kept.options if normalised(o.text) == text), None)
            if chosen is not None:
                await choose_draft(holder, turn, chosen)
        return holder.branch if holder.branch != store.branch else None

    async def _holder(self, store: StoryStore, turn: int, texts: set[str]) -> StoryStore | None:
        """The branch holding turn ``turn`` that a decision just committed on ``store``'s
        branch (its text one of ``texts``): that branch, or, when a rewind took the turn off
        it meanwhile, the branch that kept it (forked from it before ``turn``); failing a
        text (an edit reworded), ``store``'s branch if it has the turn, else the one branch
        that does; None if that is not known."""
        table = await store.branches()
        kept = [
            store.on_branch(name)
            for name, b in table.items()
            if b.parent == store.branch and b.fork_turn is not None and b.fork_turn < turn
        ]
        holding = [b for b in (store, *kept) if await b.head() >= turn]
        for branch in holding:
            if (await branch.turn_texts(turn, turn))[0].text in texts:
                return branch
        if holding and holding[0] is store:
            return store
        return holding[0] if len(holding) == 1 else None

    async def _decided(
        self, store: StoryStore, expect: str, decision: Decision, waiting: Pending | None
    ) -> TurnConflict | NotFound:
        """The conflict of a decision about draft ``expect``, which no longer waits
        (``waiting`` is the draft that does, if any); :class:`NotFound` for an ``expect``
        that is no draft's id at all (``TURN.ID``): "nonsense" used to be told "turn ? was
        already decided" (issue 45)."""
        turn_text, dot, rest = expect.partition(".")
        turn = int(turn_text) if turn_text.isascii() and turn_text.isdigit() else None
        if turn is None or not dot or not rest:
            now = f"the one waiting is {waiting.id}" if waiting is not None else "none waits"
            return NotFound(
                f"no draft {expect!r} in story {store.story!r} (a draft's id is TURN.ID, as the "
                f"pending drafts show it; {now}); yours ({decision.action}) changed nothing",
                story=store.story,
                branch=store.branch,
            )
        if waiting is not None and waiting.turn == turn:
            return TurnConflict(
                f"turn {turn}'s draft {expect} is no longer the one waiting (it was rejected "
                f"or edited, and {waiting.id} waits now); yours ({decision.action}) changed "
                "nothing",
                remedy=Remedy("review_pending"),
                story=store.story,
                branch=store.branch,
                turn=turn,
            )
        if turn is not None and await store.head() >= turn:
            what = f"turn {turn} was already committed"
        else:
            what = f"turn {turn if turn is not None else '?'} was already decided"
        return TurnConflict(
            f"{what} by another decision; yours ({decision.action}) changed nothing",
            story=store.story,
            branch=store.branch,
            turn=turn,
        )

    async def pending_details(self, store: StoryStore) -> PendingTurn:
        """The pending turn as an approver reads it (draft, findings, changes), where
        ``pending`` only says which draft waits; raises NotFound when nothing waits."""
        await store.require()
        pending = await self.core._pending(store)
        if pending is None:
            raise NotFound(
                f"story {store.story!r} has no turn awaiting approval on branch {store.branch!r}",
                story=store.story,
                branch=store.branch,
            )
        request = pending.request
        draft, findings = request.draft, request.findings
        delta = await self._pending_delta(store, pending)
        return PendingTurn(
            id=pending.id,
            story=store.story,
            branch=store.branch,
            turn=pending.turn,
            draft=draft.text,
            revision=draft.revision,
            sentences=sentences_of(draft.text, findings),
            findings=findings,
            changes=await changes_of(store, delta),
            plan=request.plan,
            edit_problem=edit_problem(request),
        )

    async def _pending_delta(self, store: StoryStore, pending: Pending) -> TurnDelta:
        """The delta approving ``pending`` would commit: the one kept with the draft, else
        (a checkpoint older than the kept delta) built again from the draft (the same,
        with the offline engine)."""
        if pending.request.delta is not None:
            return pending.request.delta
        view = await author_view(store)
        text = pending.request.draft.text
        return enrich(view, await self.core.roles.memory_builder.build(store, pending.turn, text))

    async def all_pending(self) -> list[PendingListed]:
        """Every turn awaiting approval, on every branch of every story, each as
        :meth:`pending_details` reads it (what the command line's and the API's pending
        lists show)."""
        listed = []
        for story in await list_stories(self.core.admin):
            store = self.core.store(story)
            if await store.outdated():
                continue  # refused until `migrate` brings it up to date
            for branch in await store.branches():
                if await self.core._pending(store.on_branch(branch)) is None:
                    continue
                details = await self.pending_details(store.on_branch(branch))
                listed.append(PendingListed(**details.model_dump(), pending_id=details.id))
        return listed
