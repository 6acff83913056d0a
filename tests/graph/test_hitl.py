"""LangChain's human-in-the-loop shape (fabula.graph.hitl): the request an approval
interrupt carries, and how a HITLResponse's decisions become Fabula's. The run through
``langgraph dev`` with the SDK is in test_agent_server.py."""

from __future__ import annotations

from typing import Any

import pytest
from structlog.testing import capture_logs

from fabula.agents.contracts import Decision
from fabula.errors import InvalidInput
from fabula.graph import hitl
from fabula.graph.hitl import decision_from, hitl_request
from fabula.graph.service import Fabula
from fabula.testing.model import STORY, FakeOpenAI, script_turn

PAYLOAD: dict[str, Any] = {
    "story": "tale",
    "branch": "main",
    "turn": 4,
    "draft": {"text": "Leo opened the drawer."},
    "findings": [{"severity": "warning", "message": "Leo has no key"}],
}


def test_the_request_names_the_turn_its_draft_and_its_findings() -> None:
    request = hitl_request(PAYLOAD)
    (action,) = request["action_requests"]
    (review,) = request["review_configs"]
    args = {"story": "tale", "branch": "main", "turn": 4, "text": "Leo opened the drawer."}
    assert (action["name"], action["args"]) == ("commit_turn", args)
    assert "Leo has no key" in action.get("description", "")
    assert review["action_name"] == "commit_turn"
    assert review["allowed_decisions"] == ["approve", "edit", "reject"]
    assert review.get("args_schema", {})["required"] == ["text"]


@pytest.mark.parametrize(
    ("ours", "released"),
    [
        (hitl.Action, "Action"),
        (hitl.ActionRequest, "ActionRequest"),
        (hitl.ReviewConfig, "ReviewConfig"),
        (hitl.HITLRequest, "HITLRequest"),
        (hitl.ApproveDecision, "ApproveDecision"),
        (hitl.EditDecision, "EditDecision"),
        (hitl.RejectDecision, "RejectDecision"),
        (hitl.HITLResponse, "HITLResponse"),
    ],
)
def test_the_types_mirror_langchains_released_ones(ours: Any, released: str) -> None:
    """Field for field, required and optional alike, as langchain's middleware has them."""
    module = pytest.importorskip("langchain.agents.middleware.human_in_the_loop")
    theirs = getattr(module, released)
    assert ours.__required_keys__ == theirs.__required_keys__
    assert ours.__optional_keys__ == theirs.__optional_keys__


def test_fabulas_own_decision_still_resumes() -> None:
    assert decision_from({"action": "reject", "note": "no"}, story="tale") == Decision(
        action="reject", note="no"
    )


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        ({"type": "approve"}, Decision(action="approve")),
        ({"type": "reject"}, Decision(action="reject")),
        ({"type": "reject", "message": "slower"}, Decision(action="reject", note="slower")),
        (
            {
                "type": "edit",
                "edited_action": {"name": "commit_turn", "args": {"text": "New."}},
            },
            Decision(action="edit", text="New.", now=True),
        ),
        (
            {
                "type": "edit",
                "edited_action": {
                    "name": "commit_turn",
                    "args": {"text": "New.", "force": True},
                },
            },
            Decision(action="edit", text="New.", now=True, force=True),
        ),
        (
            {
                "type": "edit",
                "edited_action": {
                    "name": "commit_turn",
                    "args": {"text": "", "choice": "4.d2"},
                },
            },
            Decision(action="approve", choice="4.d2"),
        ),
    ],
)
def test_each_decision_maps_onto_fabulas(given: dict[str, Any], expected: Decision) -> None:
    assert decision_from({"decisions": [given]}, story="tale") == expected


def test_the_pre_release_shape_is_read_with_a_deprecation_line() -> None:
    """``edited_action.arguments`` (the pre-release shape) still edits, for one version,
    and says in the log what to send instead."""
    edit = {"type": "edit", "edited_action": {"name": "commit_turn", "arguments": {"text": "New."}}}
    with capture_logs() as logs:
        decision = decision_from({"decisions": [edit]}, story="tale")
    assert decision == Decision(action="edit", text="New.", now=True)
    (line,) = [e for e in logs if e["log_level"] == "warning"]
    assert "deprecated" in line["event"] and "edited_action.args" in line["event"]


@pytest.mark.parametrize("answer", [{"action": "frob"}, "approve", {"action": "edit", "text": 3}])
def test_a_malformed_fabula_decision_is_one_line_too(answer: Any) -> None:
    with pytest.raises(InvalidInput) as caught:
        decision_from(answer, story="tale")
    assert "\n" not in str(caught.value)


@pytest.mark.parametrize(
    ("decisions", "where"),
    [
        ([], "exactly one decision (got 0)"),
        ([{"type": "approve"}, {"type": "approve"}], "exactly one decision (got 2)"),
        ("approve", "exactly one decision (got not a list)"),
        ([{"type": "respond"}], "decisions[0].type"),
        ([{"type": "edit"}], "decisions[0].edited_action: missing"),
        (
            [{"type": "edit", "edited_action": {"name": "commit_turn"}}],
            "edited_action.args: missing",
        ),
        ([{"type": "edit", "edited_action": {"name": "x", "args": {"text": "a"}}}], ".name"),
        ([{"type": "edit", "edited_action": {"args": {"text": "  "}}}], "needs the new text"),
        ([{"type": "reject", "message": 3}], "message: must be text"),
    ],
)
def test_a_malformed_response_is_one_line_naming_the_field(decisions: Any, where: str) -> None:
    with pytest.raises(InvalidInput) as caught:
        decision_from({"decisions": decisions}, story="tale")
    assert where in str(caught.value) and "\n" not in str(caught.value)


async def test_the_pending_payload_carries_the_request(
    fab: Fabula, fake_openai: FakeOpenAI
) -> None:
    """The checkpointed interrupt every process reads (the CLI, the studio, the SDK) holds
    the HITLRequest beside Fabula's keys, and Fabula's own approval still commits it."""
    script_turn(fake_openai)
    store = fab.store(STORY)
    assert (await fab.run(store, auto=False)).outcome == "pending"
    pending = await fab.read(store).pending()
    assert pending is not None
    (action,) = pending.request.action_requests
    assert action["args"]["text"] == pending.request.draft.text
    assert pending.request.review_configs[0]["allowed_decisions"] == ["approve", "edit", "reject"]
    head = await store.head()
    await fab.decide(store, Decision(action="approve"))
    assert await store.head() == head + 1
