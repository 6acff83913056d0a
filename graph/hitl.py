"""LangChain v1's human-in-the-loop contract for the approval interrupt.

The approval interrupt's value carries, beside Fabula's own keys (draft, findings, preview,
delta, plan, ...), a LangChain ``HITLRequest`` exactly as
``langchain.agents.middleware.human_in_the_loop.HumanInTheLoopMiddleware`` writes it:
``action_requests`` (one :class:`ActionRequest`, :data:`ACTION`, whose ``args`` are the
turn and its draft, with a ``description``) and ``review_configs`` (one
:class:`ReviewConfig`: approve, edit, reject, and the ``args_schema`` of an edit). So a
client written for that middleware (Agent Chat UI, Agent Inbox, the SDK) can show and steer
a Fabula turn. The types below mirror the released ones field for field (a test compares
them with ``langchain``'s own), so Fabula does not need ``langchain`` installed to run.

A run resumes with a :class:`HITLResponse` (``{"decisions": [{"type": "approve"}]}``) or
with Fabula's own :class:`~fabula.agents.contracts.Decision` (``{"action": "approve"}``);
:func:`decision_from` reads both. A ``HITLResponse``'s one decision maps onto Fabula's:

- ``approve`` approves the draft;
- ``edit`` commits ``edited_action.args.text`` as soon as the critic finds no error in it
  (LangChain's edit runs the edited action; with ``force`` true, whatever the critic
  finds); ``edited_action.args.choice`` approves an alternative draft instead;
- ``reject`` rejects with ``message`` as the planner's note.

The pre-release shape (``edited_action.arguments``) is still read, for one version, with a
deprecation line in the log. :func:`answer_schema` is the ``response_schema`` the approval
interrupt is raised with: LangGraph checks a resume against it *before* keeping it, so a
malformed decision fails that resume alone and the turn keeps waiting on the same interrupt.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, Literal, NotRequired

from pydantic import PlainValidator
from typing_extensions import TypedDict

from fabula.agents.contracts import Decision
from fabula.errors import InvalidInput
from fabula.logs import get_logger

log = get_logger(__name__)

ACTION = "commit_turn"
"""The name of the one action a Fabula approval asks about."""

DecisionType = Literal["approve", "edit", "reject"]
"""The decisions a Fabula approval allows (LangChain's ``respond`` has no meaning here)."""


class Action(TypedDict):
    """An action with its arguments (LangChain's ``Action``): what an edit sends back."""

    name: str
    """The action's name: always :data:`ACTION`."""
    args: dict[str, Any]
    """The action's arguments: ``text`` (and optionally ``choice``, ``force``)."""


class ActionRequest(TypedDict):
    """One action asked about (LangChain's ``ActionRequest``)."""

    name: str
    """The action's name: :data:`ACTION`."""
    args: dict[str, Any]
    """The turn it commits: ``story``, ``branch``, ``turn`` and the draft's ``text``."""
    description: NotRequired[str]
    """What the reviewer is asked, with the critic's findings."""


class ReviewConfig(TypedDict):
    """How an action may be answered (LangChain's ``ReviewConfig``)."""

    action_name: str
    """The action this applies to: :data:`ACTION`."""
    allowed_decisions: list[DecisionType]
    """Approve, edit, reject."""
    args_schema: NotRequired[dict[str, Any]]
    """The JSON schema of an edit's ``args``."""


class HITLRequest(TypedDict):
    """The request an approval interrupt carries (LangChain's ``HITLRequest``)."""

    action_requests: list[ActionRequest]
    """The one action asked about."""
    review_configs: list[ReviewConfig]
    """How it may be answered."""


class ApproveDecision(TypedDict):
    """Approve the draft (LangChain's ``ApproveDecision``)."""

    type: Literal["approve"]


class EditDecision(TypedDict):
    """Commit an edited text instead (LangChain's ``EditDecision``)."""

    type: Literal["edit"]
    edited_action: Action


class RejectDecision(TypedDict):
    """Reject the draft; the planner plans again with ``message`` (LangChain's)."""

    type: Literal["reject"]
    message: NotRequired[str]


class HITLResponse(TypedDict):
    """A resume value: exactly one decision for the one action (LangChain's)."""

    decisions: list[ApproveDecision | EditDecision | RejectDecision]


ARGS_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "text": {"type": "string", "description": "The turn's prose, as it will be committed."},
        "choice": {"type": ["string", "null"], "description": "An alternative draft's id."},
        "force": {"type": "boolean", "description": "Commit the edit whatever the critic finds."},
    },
    "required": ["text"],
}
"""The JSON schema of an edit's ``edited_action.args``."""


def hitl_request(payload: Mapping[str, Any]) -> HITLRequest:
    """The :class:`HITLRequest` for an approval interrupt's ``payload`` (story, branch,
    turn, draft, findings)."""
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
    action: ActionRequest = {
        "name": ACTION,
        "args": {
            "story": payload["story"],
            "branch": payload["branch"],
            "turn": payload["turn"],
            "text": (payload.get("draft") or {}).get("text", ""),
        },
        "description": description,
    }
    review: ReviewConfig = {
        "action_name": ACTION,
        "allowed_decisions": ["approve", "edit", "reject"],
        "args_schema": ARGS_SCHEMA,
    }
    return {"action_requests": [action], "review_configs": [review]}


def decision_from(answer: Any, *, story: str) -> Decision:
    """Fabula's decision from a resume value: a :class:`Decision`'s fields, or a
    :class:`HITLResponse` with exactly one decision. A malformed answer is an
    :class:`~fabula.errors.InvalidInput` of one line naming the field."""
    if not (isinstance(answer, Mapping) and "decisions" in answer):
        if not isinstance(answer, Mapping):
            raise InvalidInput(
                "resume: a HITLResponse {decisions: [...]} or a decision {action: ...}, "
                f"not {type(answer).__name__}",
                story=story,
            )
        try:
            return Decision.model_validate(answer)
        except ValueError as exc:  # pydantic's ValidationError: its first error, one line
            first = exc.errors()[0] if hasattr(exc, "errors") else {"loc": (), "msg": str(exc)}
            where = ".".join(str(p) for p in first["loc"]) or "resume"
            raise InvalidInput(f"{where}: {first['msg']}", story=story) from None
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
        return _edit(given.get("edited_action"), story=story)
    raise InvalidInput(
        f"decisions[0].type: must be approve, edit or reject (got {kind!r})", story=story
    )


def _edit(action: Any, *, story: str) -> Decision:
    """An ``edit`` decision's ``edited_action`` read into Fabula's decision."""
    if not isinstance(action, Mapping):
        raise InvalidInput("decisions[0].edited_action: missing", story=story)
    arguments = action.get("args")
    if arguments is None and "arguments" in action:
        log.warning(
            "deprecated: edited_action.arguments is the pre-release shape; send "
            "edited_action.args (LangChain's released HITLResponse)",
            story=story,
        )
        arguments = action.get("arguments")
    if not isinstance(arguments, Mapping):
        raise InvalidInput("decisions[0].edited_action.args: missing", story=story)
    if action.get("name", ACTION) != ACTION:
        raise InvalidInput(f"decisions[0].edited_action.name: must be {ACTION!r}", story=story)
    text, choice = arguments.get("text"), arguments.get("choice")
    if choice:
        if not isinstance(choice, str):
            raise InvalidInput("decisions[0].edited_action.args.choice: must be text", story=story)
        return Decision(action="approve", choice=choice)
    if not isinstance(text, str) or not text.strip():
        raise InvalidInput(
            "decisions[0].edited_action.args.text: an edit needs the new text", story=story
        )
    return Decision(action="edit", text=text, now=True, force=bool(arguments.get("force")))


def answer_schema(story: str) -> Any:
    """The approval interrupt's ``response_schema`` for ``story``: a resume value, kept
    unchanged once :func:`decision_from` reads it without an error (published to clients
    as the JSON schema of a :class:`HITLResponse` or a Fabula decision). LangGraph checks a
    resume against it before keeping it, so a malformed one is refused alone."""

    def checked(answer: Any) -> Any:
        decision_from(answer, story=story)
        return answer

    return Annotated[Any, PlainValidator(checked, json_schema_input_type=HITLResponse | Decision)]
