"""Branches of a story: :class:`Branches` forks a branch, rewinds it to an earlier turn
(the later turns kept on a branch of their own) and edits a committed turn on a new branch
(a retcon). Nothing is ever deleted; each refuses, writing nothing, while a turn of the
branch awaits a decision where that matters."""

from __future__ import annotations

from typing import Any

from fabula.agents.contracts import TurnPlan
from fabula.agents.memory_builder.narrative import enrich
from fabula.agents.views import author_view
from fabula.errors import Conflict, EditRefused, InvalidInput, Remedy
from fabula.graph.commit import CommitPath, commit_delta
from fabula.graph.service.core import Core
from fabula.graph.service.responses.turns import RetconOut, RewindOut
from fabula.graph.threads import thread_id
from fabula.memory import hierarchy
from fabula.memory.branching import fork
from fabula.memory.index.build import index_through
from fabula.memory.projections import project_hypotheses
from fabula.memory.rewind import drop_branch, rewind
from fabula.memory.store import StoryStore


async def _free_name(store: StoryStore, base: str) -> str:
    """``base``, or ``base-2``, ``base-3``, ... : the first name no branch has."""
    taken = set(await store.branches())
    name, n = base[:60], 2
    while name in taken:
        name, n = f"{base[:56]}-{n}", n + 1
    return name


class Branches:
    """Fork, rewind and retcon, over the application's :class:`Core`."""

    def __init__(self, core: Core) -> None:
        self.core = core

    async def fork(
        self, store: StoryStore, at_turn: int, branch: str | None = None, realise: str | None = None
    ) -> StoryStore:
        """Fork ``store``'s branch at ``at_turn``; with ``realise``, pursue that hypothesis."""
        await store.require()
        if realise is not None:
            hyps = await project_hypotheses(store, as_of=at_turn)
            hyp = hyps.get(realise)
            if hyp is None or hyp.status != "open":
                raise InvalidInput(
                    f"no open hypothesis {realise!r} at turn {at_turn}", story=store.story
                )
        name = branch or (f"{realise.replace('.', '-')}" if realise else f"fork-{at_turn}")
        return await fork(store, at_turn, name, pursue=realise)

    async def _refuse_if_pending(self, store: StoryStore, doing: str) -> None:
        """Conflict while a turn of the branch awaits a decision (nothing is written)."""
        waiting = await self.core._pending(store)
        if waiting is not None:
            raise Conflict(
                f"cannot {doing} branch {store.branch!r} of {store.story!r}: turn "
                f"{waiting.turn} awaits a decision (approve, edit or reject it first)",
                story=store.story,
                branch=store.branch,
                turn=waiting.turn,
            )

    async def _plan_of(self, store: StoryStore, turn: int) -> TurnPlan:
        """The plan committed turn ``turn`` was written to (kept in its thread), or, for a
        turn written without one (scripted), a plan with every character in focus."""
        state = await self.core.graph.aget_state(self.core._config(store, turn))
        plan = state.values.get("plan") if state.values else None
        if plan:  # a TurnPlan; a checkpoint older than the typed state holds its JSON
            return TurnPlan.model_validate(plan)
        focal = tuple(await store.characters()) or ("nobody",)
        return TurnPlan(scene_goal=f"turn {turn}, as edited", focal=focal)

    async def rewind(self, store: StoryStore, to_turn: int, keep: str | None = None) -> RewindOut:
        """Make turn ``to_turn`` the head of the branch; the turns after it are kept as
        branch ``keep`` (default ``<branch>-after-<turn>``), forked from it at ``to_turn``.

        Nothing is deleted. Refused, nothing written: (:class:`Conflict`) while a turn of the
        branch awaits a decision, when a branch was forked from it after ``to_turn``, or
        (:class:`InvalidInput`) for a turn that is not one of its own before its head (see
        :func:`fabula.memory.rewind.rewind`). Its episode index and hierarchy are derived
        again from its turns; the kept branch's index from its own.
        """
        await store.require()
        await self._refuse_if_pending(store, "rewind")
        keep = keep or await _free_name(store, f"{store.branch}-after-{to_turn}")
        # background work on the story's derived keys is done before they are replaced
        await self.core.quiesce(store.story)
        done = await rewind(store, to_turn, keep)
        # the turns after the new head had threads of this branch: they are the kept
        # branch's now (its texts); the next turn here starts afresh
        for turn in range(to_turn + 1, done.old_head + 2):
            await self.core.saver.adelete_thread(thread_id(store.story, store.branch, turn))
        kept = store.on_branch(keep)
        for branch in (store, kept):
            await index_through(branch, embedder=self.core._embedder)
            await hierarchy.consolidate(branch)
        return RewindOut(
            story=store.story,
            branch=store.branch,
            head=await store.head(),
            kept=keep,
            kept_head=await kept.head(),
        )

    async def retcon(
        self,
        store: StoryStore,
        turn: int,
        text: str,
        *,
        branch: str | None = None,
        force: bool = False,
    ) -> RetconOut:
        """Edit committed turn ``turn``: a new branch (default ``<branch>-edit-<turn>``)
        forks the store's branch at ``turn - 1`` and commits ``text`` as its turn ``turn``,
        read by the memory-builder and checked by the critic, so memory is derived again
        from there. The store's branch is not touched.

        The critic's errors refuse it (:class:`EditRefused`, the new branch is removed
        again: nothing remains) unless ``force``; :class:`InvalidInput` for a turn that is
        not committed (a turn awaiting approval is edited with :meth:`decide`) or empty
        text, :class:`LimitExceeded` for text over the limit.
        """
        await store.require()
        where = {"story": store.story, "branch": store.branch, "turn": turn}
        text = await self._edit_text(store, turn, text, where)
        name = branch or await _free_name(store, f"{store.branch}-edit-{turn}")
        child = await fork(store, turn - 1, name)
        try:
            view = await author_view(child)
            delta = enrich(view, await self.core.roles.memory_builder.build(child, turn, text))
            findings = self.core.roles.critic.critique(
                view, delta, await self._plan_of(store, turn)
            )
            errors = [f for f in findings if f.severity == "error"]
            if errors and not force:
                listed = "; ".join(
                    f"{f.kind}: {f.message}" + (f" ({f.quote!r})" if f.quote else "")
                    for f in errors
                )
                raise EditRefused(
                    f"the critic found {len(errors)} error(s) in the new turn {turn}: {listed} "
                    "— nothing was written",
                    remedy=Remedy("force"),
                    **where,
                )
            await commit_delta(CommitPath.of(self.core.context(auto=False)), child, delta)
        except BaseException:
            await drop_branch(child)
            raise
        return RetconOut(
            story=store.story,
            parent=store.branch,
            branch=name,
            turn=turn,
            head=await child.head(),
            findings=findings,
        )

    async def _edit_text(
        self, store: StoryStore, turn: int, text: str, where: dict[str, Any]
    ) -> str:
        """The retcon's text stripped; :class:`InvalidInput` when it is empty or ``turn`` is
        not committed, :class:`LimitExceeded` when it is over the limit."""
        text = text.strip()
        if not text:
            raise InvalidInput("an edit needs the new text", **where)
        self.core.settings.limits.check_text(text, **where)
        head = await store.head()
        if not 1 <= turn <= head:
            raise InvalidInput(
                f"cannot edit turn {turn} of branch {store.branch!r}: its committed turns "
                f"are 1..{head}",
                remedy=Remedy("edit_pending") if turn == head + 1 else None,
                **where,
            )
        return text
