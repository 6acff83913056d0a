"""The turn graph's approval and its end: ``approve`` asks the human (LangGraph's
``interrupt``; everything before it is a pure read, so a resumed node that starts over does
no harm) or decides alone in autonomous mode; ``commit`` writes the delta the approver saw,
verbatim; ``abandon`` ends a turn rejected too often."""

from __future__ import annotations

from typing import Any

from langgraph.runtime import Runtime
from langgraph.types import interrupt

from fabula.agents.contracts import (
    Decision,
    Draft,
    Finding,
    TurnPlan,
)
from fabula.errors import (
    InvalidInput,
)
from fabula.graph.commit import CommitPath, commit_delta
from fabula.graph.hitl import answer_schema, decision_from, hitl_request
from fabula.graph.nodes.turn import store_of
from fabula.graph.runtime import TurnContext
from fabula.graph.state import (
    ApprovalRequest,
    Preview,
    TurnState,
)
from fabula.logs import get_logger
from fabula.memory.delta import TurnDelta
from fabula.memory.drafts import read_drafts

log = get_logger(__name__)


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
    kept = await read_drafts(store_of(state, ctx), state["turn"])
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


async def commit(state: TurnState, runtime: Runtime[TurnContext]) -> dict[str, Any]:
    """Commit the delta the approver saw, verbatim (never read again)."""
    ctx = runtime.context
    delta = state["delta"]
    if delta is None:  # pragma: no cover - the critic reads every draft before approval
        raise InvalidInput("there is no delta to commit", story=state["story"])
    store = store_of(state, ctx)
    usage = state.get("usage") or None
    done = await commit_delta(CommitPath.of(ctx), store, delta, state.get("build_ms", 0.0), usage)
    log.info("committed", role="memory-builder", status=done.status, usage=state.get("usage"))
    return {"outcome": done.status, "unsynced": done.unsynced}


def abandon(state: TurnState) -> dict[str, Any]:
    """The turn ends without a commit (every attempt was rejected)."""
    return {"outcome": "abandoned"}
