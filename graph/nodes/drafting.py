"""The turn graph's drafting nodes: the planner's plan, the characters' proposals (fanned
out, one task each, a played character's part written by its person), and the writer's
draft (revised while the critic finds errors)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from langgraph.runtime import Runtime
from langgraph.types import Overwrite, Send, interrupt

from fabula.agents.character.played import own_part, played_view
from fabula.agents.contracts import (
    Draft,
    Finding,
    PlanRequest,
    Proposal,
    TurnPlan,
    WriteRequest,
)
from fabula.agents.shared.brief import brief_for, steering
from fabula.agents.usage import metering
from fabula.agents.views import AuthorView
from fabula.agents.writer.context import writer_context
from fabula.agents.writer.model import draft_findings
from fabula.errors import (
    ModelOutputError,
    ModelTruncated,
    StoryAtRest,
)
from fabula.graph.nodes.turn import store_of, view_of
from fabula.graph.runtime import TurnContext
from fabula.graph.state import (
    CharacterTask,
    PartRequest,
    TurnState,
    part_from,
)
from fabula.logs import get_logger
from fabula.memory.index.build import behind, index_through

log = get_logger(__name__)


REVISION_KEPT = Finding(
    kind="plan",
    message=(
        "the writer's revision stopped at its token limit before a sentence ended: the "
        "draft it revised is kept, with the critic's findings on it"
    ),
    severity="warning",
)
"""The warning a turn's findings gain when a failed revision leaves the previous draft."""


async def plan(state: TurnState, runtime: Runtime[TurnContext]) -> dict[str, Any]:
    """The planner: plans the turn from the author view (a re-plan after a rejection sees its
    notes) and prepares each focal character's brief."""
    ctx = runtime.context
    view = await view_of(state, ctx)
    attempt = state.get("attempt", -1) + 1
    # an autonomous run is played by nobody: the engine plays every character, except
    # those whose parts the run was given
    given = state.get("parts", {})
    played = [
        c
        for c in await store_of(state, ctx).played()
        if c in view.characters() and (not ctx.auto or c in given)
    ]
    with metering() as meter:
        # the turns so far, for the lore's chat scan (only where the world has books)
        lore = view.pack is not None and bool(view.pack.lore.books_of(None))
        said = await store_of(state, ctx).turn_texts(1, view.turn) if lore and view.turn else []
        asked = PlanRequest(
            view,
            state.get("direction"),
            attempt,
            tuple(state.get("notes", [])),
            said=tuple(t.text for t in said),
        )
        try:
            turn_plan = await ctx.roles.planner.plan(asked)
        except StoryAtRest:
            if not played:
                raise
            # the engine's characters are at rest; the people playing are not
            goal = "the people playing act; the others are at rest"
            place = view.place_of(played[0])
            turn_plan = TurnPlan(scene_goal=goal, place=place, focal=tuple(played))
    if played:  # a played character acts every turn, first: the others answer
        focal = (*played, *(c for c in turn_plan.focal if c not in played))
        turn_plan = turn_plan.model_copy(update={"focal": focal})
    log.info("planned", role="planner", focal=turn_plan.focal, attempt=attempt, played=played)
    steer = steering(view, asked.direction, asked.notes)
    # each round of attempts through the cast asks the characters for another of their steps
    variant = attempt // max(1, len(view.characters()))
    briefs = {
        c: brief_for(view, c, turn_plan, steer=steer, variant=variant) for c in turn_plan.focal
    }
    return {
        "plan": turn_plan,
        "briefs": briefs,
        "attempt": attempt,
        "played": played,
        "proposals": Overwrite([]),  # this attempt's, as they come
        "revisions": 0,
        "findings": [],
        "draft": None,
        "usage": meter.as_dict(),
    }


def fan_out(state: TurnState) -> list[Send]:
    """One character agent per focal character, run in parallel; a played character's task
    carries the person's part when the run was given it."""
    played, parts = state.get("played", []), state.get("parts", {})
    return [
        Send(
            "character",
            CharacterTask(
                story=state["story"],
                branch=state["branch"],
                turn=state["turn"],
                attempt=state["attempt"],
                character=c,
                brief=state["briefs"][c],
                played=c in played,
                part=parts.get(c),
            ),
        )
        for c in state["plan"].focal
    ]


async def character(task: CharacterTask, runtime: Runtime[TurnContext]) -> dict[str, Any]:
    """One character agent: it is handed only its ACL-scoped mind."""
    ctx = runtime.context
    if getattr(ctx.roles.character, "recalls", False):
        # a character that reads its episode index reads it up to date (its own user
        # cannot index: the admin does, here)
        store = store_of(task, ctx)
        if ctx.indexer is not None:
            await ctx.indexer.wait(store.story, store.branch)
        if await behind(store):
            await index_through(store, embedder=ctx.embedder)
    mind = await ctx.minds.mind(task["story"], task["character"], task["branch"])
    me, words = task["character"], task.get("part")
    if task.get("played") and words:  # the person's part, given with the run
        return {"proposals": [Proposal(character=me, intent="played", words=words)]}
    with metering() as meter:
        proposal = await ctx.roles.character.propose(mind, task["brief"])
    if not task.get("played"):
        return {"proposals": [proposal], "usage": meter.as_dict()}
    # a played character: the person writes its part, shown its own view (read from its own
    # mind, nothing else) and its agent's proposal to take instead. Everything above is a
    # read, so the node starting over when resumed does no harm.
    asked = PartRequest(
        story=task["story"],
        branch=task["branch"],
        turn=task["turn"],
        character=me,
        view=await played_view(mind, task["brief"], proposal),
        suggestion=proposal,
    )
    part = part_from(interrupt(asked), story=task["story"])
    if part.accept:
        return {"proposals": [proposal], "usage": meter.as_dict()}
    words = (part.words or "").strip()
    return {
        "proposals": [Proposal(character=me, intent="played", words=words)],
        "parts": {me: words},
        "usage": meter.as_dict(),
    }


async def write(
    state: TurnState, runtime: Runtime[TurnContext], *, shown: bool = True
) -> dict[str, Any]:
    """The writer: drafts (or revises) the passage from the plan, this attempt's proposals and a
    memory context within the token budget. ``shown=False`` (a tick's scene, which nobody
    approves) assembles that context only for a writer that reads it (not the offline
    writer: :attr:`~fabula.agents.writer.offline.OfflineWriter.reads_context`); a turn's
    context is always assembled, as the approver is shown it."""
    ctx = runtime.context
    view = await view_of(state, ctx)
    turn_plan = state["plan"]
    with metering() as meter:
        context = ""
        if shown or getattr(ctx.roles.writer, "reads_context", True):
            # the recall plan is the model's too when a recall planner is configured
            assembly = await writer_context(
                store_of(state, ctx),
                view,
                turn_plan,
                ctx.settings.token_budget,
                ctx.counter,
                planner=ctx.roles.recall,
                embedder=ctx.embedder,
                lore_budget=ctx.settings.lore_budget,
            )
            context = assembly.text
        revision = state.get("revisions", 0)
        proposals, spoken_for = own_parts(state.get("proposals", []), view)
        request = WriteRequest(
            plan=turn_plan,
            proposals=tuple(proposals),
            context=context,
            notes=tuple(state.get("notes", [])),
            findings=tuple(state.get("findings", [])),
            revision=revision,
        )
        try:
            draft = await ctx.roles.writer.write(request, view)
        except ModelTruncated as e:
            previous = state.get("draft")
            if not revision or previous is None:
                raise
            # a revision that ran out of tokens before its first sentence ended: the draft
            # it revised is kept, already read and critiqued, for the approver to judge
            log.warning("revision_cut_kept", role="writer", turn=state["turn"], error=str(e))
            return {
                "revision_kept": True,
                "findings": [*state.get("findings", []), REVISION_KEPT],
                "usage": meter.as_dict(),
            }
    _refuse_too_long(draft.text, state, ctx)
    # what the writer marked (a passage cut at its token limit) goes to the critic's findings
    return {
        "draft": Draft(text=draft.text, revision=draft.revision, left_out=draft.left_out),
        "draft_findings": [*spoken_for, *draft_findings(draft)],
        "context": context,
        "revision_kept": False,
        "usage": meter.as_dict(),
    }


def own_parts(
    proposals: Sequence[Proposal], view: AuthorView
) -> tuple[list[Proposal], list[Finding]]:
    """The proposals with each played part cut to its character's own acts and speech
    (:func:`~fabula.agents.character.played.own_part`), and a warning beside each sentence
    left out: a person plays one character, and the others answer from their own minds."""
    kept: list[Proposal] = []
    found: list[Finding] = []
    for proposal in proposals:
        if not proposal.words:
            kept.append(proposal)
            continue
        part = own_part(proposal.words, proposal.character, view.entities)
        me = view.name(proposal.character)
        for sentence, others in part.others:
            them = " and ".join(view.name(o) for o in others)
            found.append(
                Finding(
                    kind="plan",
                    severity="warning",
                    quote=sentence,
                    message=f"{me}'s part speaks for {them}: left out of the passage "
                    f"(the person plays {me} only; {them} "
                    + (
                        "acts from their own mind)"
                        if len(others) == 1
                        else "act from their own minds)"
                    ),
                )
            )
        kept.append(proposal.model_copy(update={"words": part.words}))
    return kept, found


def _refuse_too_long(text: str, state: TurnState, ctx: TurnContext) -> None:
    """Refuse, here in the writer's step, a passage longer than a turn may be: a step that
    raises leaves nothing in the turn's checkpoint, where a draft it returned would stay (to
    be refused by the critic's step) until the story is deleted. The model's failure, not
    the user's: :class:`ModelOutputError`."""
    size, limit = len(text.encode("utf-8")), ctx.settings.limits.turn_text_bytes
    if size > limit:
        raise ModelOutputError(
            f"the writer's passage is {size:,} bytes, more than the {limit:,} a turn's text "
            "may have (FABULA_MAX_TURN_TEXT); nothing was kept",
            role="writer",
            story=state["story"],
            branch=state["branch"],
            turn=state["turn"],
        )


def route_after_write(state: TurnState) -> str:
    """To the critic; straight to approval when a revision failed and the draft it revised
    (critiqued already) was kept."""
    return "approve" if state.get("revision_kept") else "critique"
