"""The state of one turn as it moves through the graph (checkpointed in Redis).

Values are plain JSON-able data (role contracts are stored as ``model_dump()`` dicts and
validated again where they are read), so checkpoints stay readable and portable.
"""

from __future__ import annotations

from typing import Annotated, Any, TypedDict

from fabula.agents.usage import add_usage

__all__ = ["CharacterTask", "TurnState", "merge_proposals"]


def merge_proposals(
    old: dict[str, list[dict[str, Any]]] | None, new: dict[str, list[dict[str, Any]]] | None
) -> dict[str, list[dict[str, Any]]]:
    """Proposals by plan attempt: the fanned-out character agents' answers accumulate."""
    out = {k: list(v) for k, v in (old or {}).items()}
    for attempt, proposals in (new or {}).items():
        out.setdefault(attempt, []).extend(proposals)
    return out


class TurnState(TypedDict, total=False):
    """One turn of one branch of one story: plan → proposals → draft → findings → decision."""

    story: str
    branch: str
    turn: int
    direction: str | None
    attempt: int
    plan: dict[str, Any]
    briefs: dict[str, dict[str, Any]]
    proposals: Annotated[dict[str, list[dict[str, Any]]], merge_proposals]
    draft: dict[str, Any]
    context: str
    findings: list[dict[str, Any]]
    # what the writer marked in its draft (a passage cut at its token limit), for the critic
    draft_findings: list[dict[str, Any]]
    preview: dict[str, Any]
    # the delta the draft commits (TurnDelta.model_dump(mode="json")), computed once when
    # the critic reads the draft and committed verbatim on approval, from any process
    delta: dict[str, Any]
    build_ms: float
    edit: str | None  # an approver's edited text, to be read
    edit_error: str | None  # why the last edit could not be read (the turn stays pending)
    edit_refused: list[dict[str, Any]] | None  # the critic's errors that refused it
    # model usage by role, summed over the turn's nodes (rejected attempts included)
    usage: Annotated[dict[str, dict[str, int | str]], add_usage]
    revisions: int
    notes: list[str]
    decision: dict[str, Any]
    outcome: str
    # a human's approval committed but not confirmed on disk (WAITAOF): why; else absent
    unsynced: str | None


class CharacterTask(TypedDict):
    """What the fan-out sends to one character agent."""

    story: str
    branch: str
    turn: int
    attempt: int
    character: str
    brief: dict[str, Any]
