"""The nodes of the turn graph: plan, characters (fanned out), write, critique, approve, commit.

Every node returns only what it changes. The nodes of one run share one author view of the
store (built once per turn, see :class:`fabula.graph.runtime.TurnContext`), and the commit reuses
the delta the critic read when the text is unchanged; the commit function itself refuses it
if the story moved on meanwhile. ``approve`` calls :func:`langgraph.types.interrupt`;
everything before that call is a pure read, so a resumed node that starts over does no harm.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from langgraph.runtime import Runtime
from langgraph.types import Overwrite, Send, interrupt

from fabula.agents.character.played import own_part, played_view
from fabula.agents.contracts import (
    Decision,
    Draft,
    Finding,
    PlanRequest,
    Proposal,
    TurnPlan,
    WriteRequest,
)
from fabula.agents.memory_builder.model import second_readings
from fabula.agents.shared.brief import brief_for, steering
from fabula.agents.usage import metering
from fabula.agents.views import AuthorView, author_view
from fabula.agents.writer.context import writer_context
from fabula.agents.writer.model import draft_findings
from fabula.errors import (
    FabulaError,
    InvalidInput,
    ModelOutputError,
    ModelTruncated,
    StoryAtRest,
    TurnConflict,
)
from fabula.graph.commit import CommitPath, another_writer, commit_delta, read_text
from fabula.graph.hitl import answer_schema, decision_from, hitl_request
from fabula.graph.runtime import TurnContext
from fabula.graph.state import (
    ApprovalRequest,
    CharacterTask,
    HypothesesPreview,
    PartRequest,
    Preview,
    TurnState,
    part_from,
)
from fabula.logs import get_logger
from fabula.memory.delta import TurnDelta
from fabula.memory.drafts import read_drafts
from fabula.memory.index.build import behind, index_through
from fabula.memory.store import StoryStore

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


def _store(state: TurnState | CharacterTask, ctx: TurnContext) -> StoryStore:
    """The run's store of the state's branch (built once, :attr:`RunCache.stores`)."""
    key = (state["story"], state["branch"])
    store = ctx.cache.stores.get(key)
    if store is None:
        store = StoryStore(ctx.admin, *key, limits=ctx.settings.limits)
        ctx.cache.stores[key] = store
    return store


async def _view(state: TurnState, ctx: TurnContext) -> AuthorView:
    key = (state["story"], state["branch"], state["turn"])
    if key in ctx.cache.views:
        return ctx.cache.views[key]
    store = _store(state, ctx)
    view = await author_view(store)
    if view.turn >= state["turn"]:  # moved on since this turn began
        raise another_writer(store, state["turn"])
    if view.turn + 1 != state["turn"]:  # a gap: the branch was rewound since
        raise TurnConflict(
            f"turn {state['turn']} cannot be written: the branch is at turn {view.turn}",
            story=state["story"],
            branch=state["branch"],
            turn=state["turn"],
        )
    ctx.cache.views.clear()  # one turn at a time: keep only the newest
    ctx.cache.views[key] = view
    return view


async def plan(state: TurnState, runtime: Runtime[TurnContext]) -> dict[str, Any]:
    """The planner: plans the turn from the author view (a re-plan after a rejection sees its
    notes) and prepares each focal character's brief."""
    ctx = runtime.context
    view = await _view(state, ctx)
    attempt = state.get("attempt", -1) + 1
    # an autonomous run is played by nobody: the engine plays every character, except
    # those whose parts the run was given
    given = state.get("parts", {})
    played = [
        c
        for c in await _store(state, ctx).played()
        if c in view.characters() and (not ctx.auto or c in given)
    ]
    with metering() as meter:
        # the turns so far, for the lore's chat scan (only where the world has books)
        lore = view.pack is not None and bool(view.pack.lore.books_of(None))
        said = await _store(state, ctx).turn_texts(1, view.turn) if lore and view.turn else []
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
        store = _store(task, ctx)
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


async def write(state: TurnState, runtime: Runtime[TurnContext]) -> dict[str, Any]:
    """The writer: drafts (or revises) the passage from the plan, this attempt's proposals and a
    memory context within the token budget."""
    ctx = runtime.context
    view = await _view(state, ctx)
    turn_plan = state["plan"]
    with metering() as meter:
        # the recall plan is the model's too when a recall planner is configured
        assembly = await writer_context(
            _store(state, ctx),
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
                    f"(the person plays {me} only; {them} act from their own minds)",
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


def preview(delta: TurnDelta, view: AuthorView) -> Preview:
    """A readable summary of the delta a draft would commit (for the approver)."""
    return Preview(
        events=[f"{e.kind}: {e.span.quote}" for e in delta.events],
        world=[
            f"{view.name(s.subject)}.{s.attribute} = {view.name(s.value)}"
            + ("" if s.polarity else " (not)")
            for s in delta.states
        ],
        beliefs=[
            f"{' > '.join(view.name(h) for h in b.holder)}: {view.name(b.subject)}.{b.attribute}"
            f" = {view.name(b.value)}{'' if b.polarity else ' (not)'} [{b.mode}]"
            for b in delta.beliefs
        ],
        developments=[f"{d.id}: {d.change.status}" for d in delta.developments],
        hypotheses=HypothesesPreview(
            proposed=[h.premise for h in delta.hypotheses],
            realised=[h.id for h in delta.realised],
        ),
    )


async def _read(
    state: TurnState, ctx: TurnContext, text: str
) -> tuple[TurnDelta, list[Finding], float]:
    """The delta ``text`` would commit (the memory-builder reads it once, here) and the
    critic's findings on it, with the milliseconds the reading took."""
    store = _store(state, ctx)
    view = await _view(state, ctx)
    with second_readings() as readings:  # the model's other reading of a parsed sentence
        delta, build_ms = await read_text(CommitPath.of(ctx), store, state["turn"], text, view)
    turn_plan = state["plan"]
    # a focal character that proposed nothing chose to stay out, one whose action the
    # writer left out on purpose was kept out, and a played one did what its person wrote
    # (words the reader could not read are a finding of their own): only one that meant to
    # act and does nothing in the text is worth a finding
    proposals = state.get("proposals", [])
    idle = {p.character for p in proposals if not p.actions and not p.words}
    excused: set[str] = set()
    draft = state.get("draft")
    if draft is not None and draft.text == text:
        excused = set(draft.left_out) | {p.character for p in proposals if p.words}
    kept_out = idle | excused
    acting = tuple(c for c in turn_plan.focal if c not in kept_out)
    plan: TurnPlan | None = turn_plan
    if acting and kept_out:
        plan = turn_plan.model_copy(update={"focal": acting})
    elif not acting and excused:
        plan = None  # each did what was written, or was kept out on purpose
    return delta, [*ctx.roles.critic.critique(view, delta, plan), *readings], build_ms


def _read_update(
    delta: TurnDelta, findings: list[Finding], build_ms: float, view: AuthorView
) -> dict[str, Any]:
    return {
        "findings": findings,
        "preview": preview(delta, view),
        "delta": delta,
        "build_ms": build_ms,
    }


async def critique(state: TurnState, runtime: Runtime[TurnContext]) -> dict[str, Any]:
    """Read the draft into the delta it would commit, once, and check it."""
    ctx = runtime.context
    draft = state["draft"]
    if draft is None:  # pragma: no cover - the writer always writes one first
        raise InvalidInput("the critic has no draft to read", story=state["story"])
    with metering() as meter:
        delta, findings, build_ms = await _read(state, ctx, draft.text)
    findings = [*state.get("draft_findings", []), *findings]
    errors = [f for f in findings if f.severity == "error"]
    log.info(
        "critiqued",
        role="critic",
        revision=draft.revision,
        errors=len(errors),
        warnings=len(findings) - len(errors),
        kinds=sorted({f.kind for f in errors}),
        first=errors[0].message[:200] if errors else None,
    )
    if ctx.on_critique is not None:
        ctx.on_critique(state["turn"], findings)
    return {
        **_read_update(delta, findings, build_ms, await _view(state, ctx)),
        "revisions": state.get("revisions", 0) + (1 if errors else 0),
        "usage": meter.as_dict(),
    }


def route_after_critique(state: TurnState, runtime: Runtime[TurnContext]) -> str:
    """Back to the writer while the draft has errors and revisions are left; else to approval."""
    errors = [f for f in state.get("findings", []) if f.severity == "error"]
    if errors and state.get("revisions", 0) <= runtime.context.settings.max_revisions:
        return "write"
    return "approve"


async def approve(state: TurnState, runtime: Runtime[TurnContext]) -> dict[str, Any]:
    """Ask the human (``interrupt``), or decide alone in autonomous mode.

    The payload (:class:`ApprovalRequest`) shows the draft, the critic's findings, a
    readable preview and the very delta an approval commits, and why an edit could not be
    read; it also carries LangChain's ``HITLRequest`` and takes its ``decisions``
    (:mod:`fabula.graph.hitl`). An approval that chooses one of the turn's alternative
    drafts (``choice``) puts that draft in place, with its findings, preview and delta:
    that delta is what is committed.
    """
    ctx = runtime.context
    errors = [f for f in state.get("findings", []) if f.severity == "error"]
    if ctx.auto:
        if errors:
            decision = Decision(action="reject", note="; ".join(f.message for f in errors))
        else:
            decision = Decision(action="approve")
    else:
        decision = _asked(state)
    update: dict[str, Any] = {
        "decision": decision,
        "edit_error": None,
        "edit_refused": None,
    }
    if decision.action == "reject":
        update["notes"] = [*state.get("notes", []), decision.note or "rejected"]
    if decision.action == "edit":
        update["edit"] = (decision.text or "").strip()
    if decision.action == "approve" and decision.choice:
        update |= await _chosen_draft(state, ctx, decision.choice)
    return update


def _asked(state: TurnState) -> Decision:
    """The human's decision on the turn's draft: the request shown (``interrupt``), the
    answer read (an edit without text is :class:`InvalidInput`)."""
    draft = state["draft"]
    if draft is None:  # pragma: no cover - the writer always writes one first
        raise InvalidInput("there is no draft to approve", story=state["story"])
    request = ApprovalRequest(
        story=state["story"],
        branch=state["branch"],
        turn=state["turn"],
        draft=draft,
        findings=state.get("findings", []),
        preview=state.get("preview") or Preview(),
        delta=state.get("delta"),
        plan=state["plan"],
        edit_error=state.get("edit_error"),
        edit_refused=state.get("edit_refused"),
    )
    # LangChain's HITLRequest beside Fabula's own fields (fabula.graph.hitl); a resume is
    # checked against answer_schema before LangGraph keeps it, so a malformed one is refused
    # alone and the turn keeps waiting on this same interrupt
    asked = hitl_request(request.model_dump(mode="json"))
    answer = interrupt(
        request.model_copy(update=dict(asked)), response_schema=answer_schema(state["story"])
    )
    decision = decision_from(answer, story=state["story"])
    if decision.action == "edit" and not (decision.text or "").strip():
        raise InvalidInput("an edit needs the new text", story=state["story"])
    return decision


async def _chosen_draft(state: TurnState, ctx: TurnContext, choice: str) -> dict[str, Any]:
    """The update that puts the alternative draft ``choice`` in place, with its findings,
    preview, delta and plan: that delta is what is committed."""
    kept = await read_drafts(_store(state, ctx), state["turn"])
    option = kept.get(choice)
    if option is None:  # the service checks first; a draft gone meanwhile
        raise InvalidInput(
            f"turn {state['turn']} has no draft {choice!r}",
            story=state["story"],
            turn=state["turn"],
        )
    # the drafts are kept in the story's memory as JSON: read into their types here
    return {
        "draft": Draft(text=option.text),
        "findings": [Finding.model_validate(f) for f in option.findings],
        "preview": Preview.model_validate(option.preview),
        "delta": TurnDelta.model_validate(option.delta),
        "plan": TurnPlan.model_validate(option.plan) if option.plan else state["plan"],
    }


def route_after_approve(state: TurnState, runtime: Runtime[TurnContext]) -> str:
    """An edit is read again, an approval committed; a rejection plans again, or gives up after the
    last attempt."""
    decision = state["decision"]
    if decision.action == "edit":
        return "reread"
    if decision.action != "reject":
        return "commit"
    if state.get("attempt", 0) + 1 >= runtime.context.max_attempts:
        return "abandon"
    return "plan"


async def reread(state: TurnState, runtime: Runtime[TurnContext]) -> dict[str, Any]:
    """Read an approver's edit into its delta, once, and let the critic check it. If it
    cannot be read (``edit_error``), or the critic finds errors and the approver did not
    force it (``edit_refused``), nothing else changes: the turn goes back to the approver
    with its draft and delta as they were."""
    ctx = runtime.context
    text = state.get("edit") or ""
    draft = state["draft"]
    revision = (draft.revision if draft is not None else 0) + 1
    with metering() as meter:
        try:
            delta, findings, build_ms = await _read(state, ctx, text)
        except FabulaError as error:
            log.warning("edit_not_read", role="memory-builder", error=str(error))
            problem = f"{type(error).__name__}: {error.message}"
            return {**_dropped(state), "edit_error": problem, "usage": meter.as_dict()}
    errors = [f for f in findings if f.severity == "error"]
    if errors and not state["decision"].force:
        # refused: the approver gets the turn back as it was, and is told why
        return {**_dropped(state), "edit_refused": errors, "usage": meter.as_dict()}
    return {
        **_read_update(delta, findings, build_ms, await _view(state, ctx)),
        "draft": Draft(text=text, revision=revision),
        "draft_findings": [],
        "edit": None,
        "usage": meter.as_dict(),
    }


def _dropped(state: TurnState) -> dict[str, Any]:
    """The update that forgets an edit not taken: its text is kept neither as the edit nor
    in the decision (a refused 10 MB edit does not stay in the checkpoint)."""
    return {"edit": None, "decision": state["decision"].model_copy(update={"text": None})}


def route_after_reread(state: TurnState) -> str:
    """A read, unrefused edit with ``now`` (or ``force``) is committed; any other goes back
    to the approver: shown for approval, or as it was if the edit was not taken."""
    decision = state["decision"]
    taken = state.get("edit_error") is None and not state.get("edit_refused")
    if taken and (decision.now or decision.force):
        return "commit"
    return "approve"


async def commit(state: TurnState, runtime: Runtime[TurnContext]) -> dict[str, Any]:
    """Commit the delta the approver saw, verbatim (never read again)."""
    ctx = runtime.context
    delta = state["delta"]
    if delta is None:  # pragma: no cover - the critic reads every draft before approval
        raise InvalidInput("there is no delta to commit", story=state["story"])
    store = _store(state, ctx)
    usage = state.get("usage") or None
    done = await commit_delta(CommitPath.of(ctx), store, delta, state.get("build_ms", 0.0), usage)
    log.info("committed", role="memory-builder", status=done.status, usage=state.get("usage"))
    return {"outcome": done.status, "unsynced": done.unsynced}


def abandon(state: TurnState) -> dict[str, Any]:
    """The turn ends without a commit (every attempt was rejected)."""
    return {"outcome": "abandoned"}
