"""The turn graph's reading nodes: a draft read once into the delta it would commit and
checked by the critic (``critique``), and an approver's edit read and checked the same way
(``reread``); the approver is shown a :func:`preview` of the delta."""

from __future__ import annotations

from typing import Any

from langgraph.runtime import Runtime

from fabula.agents.contracts import (
    Draft,
    Finding,
    TurnPlan,
)
from fabula.agents.memory_builder.model import second_readings
from fabula.agents.usage import metering
from fabula.agents.views import AuthorView
from fabula.errors import (
    FabulaError,
    InvalidInput,
)
from fabula.graph.commit import CommitPath, read_text
from fabula.graph.nodes.turn import store_of, view_of
from fabula.graph.runtime import TurnContext
from fabula.graph.state import (
    HypothesesPreview,
    Preview,
    TurnState,
)
from fabula.logs import get_logger
from fabula.memory.delta import TurnDelta

log = get_logger(__name__)


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
    store = store_of(state, ctx)
    view = await view_of(state, ctx)
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
        **_read_update(delta, findings, build_ms, await view_of(state, ctx)),
        "revisions": state.get("revisions", 0) + (1 if errors else 0),
        "usage": meter.as_dict(),
    }


def route_after_critique(state: TurnState, runtime: Runtime[TurnContext]) -> str:
    """Back to the writer while the draft has errors and revisions are left; else to approval."""
    errors = [f for f in state.get("findings", []) if f.severity == "error"]
    if errors and state.get("revisions", 0) <= runtime.context.settings.max_revisions:
        return "write"
    return "approve"


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
        **_read_update(delta, findings, build_ms, await view_of(state, ctx)),
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
