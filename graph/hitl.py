"""LangChain's human-in-the-loop shape for the approval interrupt.

The approval interrupt's value carries, beside Fabula's own keys (draft, findings, delta,
...), a LangChain ``HITLRequest``: ``action_requests`` (one action, :data:`ACTION`, whose
arguments are the turn and its draft) and ``review_configs`` (approve, edit, reject), so a
client written for LangChain's ``HumanInTheLoopMiddleware`` (Agent Chat UI, Agent Inbox)
can show and steer a Fabula turn. The run resumes with either Fabula's own
:class:`~fabula.agents.contracts.Decision` (``{"action": "approve"}``) or a ``HITLResponse``
(``{"decisions": [{"type": "approve"}]}``); :func:`decision_from` reads both.

A ``HITLResponse``'s decisions map onto Fabula's: ``approve`` approves the draft (its
arguments may name an alternative draft, ``choice``); ``edit`` commits
``edited_action.arguments.text`` as soon as the critic finds no error in it (LangChain's
edit runs the edited action; with ``force`` true, whatever the critic finds); ``reject``
rejects with ``message`` as the note.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from fabula.agents.contracts import Decision
from fabula.errors import InvalidInput

ACTION = "commit_turn"
"""The name of the one action a Fabula approval asks about."""

_ARGUMENTS_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "text": {"type": "string", "description": "The turn's prose, as it will be committed."},
        "choice": {"type": ["string", "null"], "description": "An alternative draft's id."},
        "force": {"type": "boolean", "description": "Commit the edit whatever the critic finds."},
    },
    "required": ["text"],
}


def hitl_request(payload: Mapping[str, Any]) -> dict[str, Any]:
    """The ``HITLRequest`` (``action_requests``, ``review_configs``) for an approval
    interrupt's ``payload`` (story, branch, turn, draft, findings)."""
    where = f"turn {payload['turn']} of {payload['story']!r} [{payload['branch']}]"
    findings = [
        f"- {f.get('severity', 'note')}: {f.get('message', '')}"
        for f in payload.get("findings", [])
    ]
    description = "\n".join(
        [
            f"Commit {where}? Approve the draft, edit its text, or reject it with a note.",
            *(["Critic findings:", *findings] if findings else []),
        ]
    )
    action = {
        "name": ACTION,
        "arguments": {
            "story": payload["story"],
            "branch": payload["branch"],
            "turn": payload["turn"],
            "text": (payload.get("draft") or {}).get("text", ""),
        },
    }
    review = {
        "action_name": ACTION,
        "allowed_decisions": ["approve", "edit", "reject"],
        "description": description,
        "arguments_schema": _ARGUMENTS_SCHEMA,
    }
    return {"action_requests": [action], "review_configs": [review]}


def decision_from(answer: Any, *, story: str) -> Decision:
    """Fabula's decision from a resume value: a :class:`Decision`'s fields, or a LangChain
    ``HITLResponse`` with exactly one decision. A malformed answer is an
    :class:`~fabula.errors.InvalidInput` naming what is wrong."""
    if not (isinstance(answer, Mapping) and "decisions" in answer):
        return Decision.model_validate(answer)
    decisions = answer["decisions"]
    if not isinstance(decisions, list) or len(decisions) != 1:
        count = len(decisions) if isinstance(decisions, list) else "not a list"
        raise InvalidInput(
            f"decisions: a turn takes exactly one decision (got {count})", story=story
        )
    (given,) = decisions
    kind = given.get("type") if isinstance(given, Mapping) else None
    if kind == "approve":
        return Decision(action="approve")
    if kind == "reject":
        message = given.get("message") or ""
        if not isinstance(message, str):
            raise InvalidInput("decisions[0].message: must be text", story=story)
        return Decision(action="reject", note=message)
    if kind == "edit":
        action = given.get("edited_action")
        arguments = action.get("arguments") if isinstance(action, Mapping) else None
        if not isinstance(arguments, Mapping):
            raise InvalidInput("decisions[0].edited_action.arguments: missing", story=story)
        if action.get("name", ACTION) != ACTION:
            raise InvalidInput(f"decisions[0].edited_action.name: must be {ACTION!r}", story=story)
        text, choice = arguments.get("text"), arguments.get("choice")
        if choice:
            if not isinstance(choice, str):
                raise InvalidInput("decisions[0]...arguments.choice: must be text", story=story)
            return Decision(action="approve", choice=choice)
        if not isinstance(text, str) or not text.strip():
            raise InvalidInput(
                "decisions[0].edited_action.arguments.text: an edit needs the new text", story=story
            )
        return Decision(action="edit", text=text, now=True, force=bool(arguments.get("force")))
    raise InvalidInput(
        f"decisions[0].type: must be approve, edit or reject (got {kind!r})", story=story
    )
