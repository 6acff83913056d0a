"""LangChain's human-in-the-loop shape (fabula.graph.hitl): the request an approval
interrupt carries, and how a HITLResponse's decisions become Fabula's. The run through
``langgraph dev`` with the SDK is in test_agent_server.py."""

from __future__ import annotations

from typing import Any

import pytest

from fabula.agents.contracts import Decision
from fabula.errors import InvalidInput
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
    arguments = {"story": "tale", "branch": "main", "turn": 4, "text": "Leo opened the drawer."}
    assert action == {"name": "commit_turn", "arguments": arguments}
    assert review["allowed_decisions"] == ["approve", "edit", "reject"]
    assert "Leo has no key" in review["description"]
    assert review["arguments_schema"]["required"] == ["text"]


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
                "edited_action": {"name": "commit_turn", "arguments": {"text": "New."}},
            },
            Decision(action="edit", text="New.", now=True),
        ),
        (
            {
                "type": "edit",
                "edited_action": {
                    "name": "commit_turn",
                    "arguments": {"text": "New.", "force": True},
                },
            },
            Decision(action="edit", text="New.", now=True, force=True),
        ),
        (
            {
                "type": "edit",
                "edited_action": {
                    "name": "commit_turn",
                    "arguments": {"text": "", "choice": "4.d2"},
                },
            },
            Decision(action="approve", choice="4.d2"),
        ),
    ],
)
def test_each_decision_maps_onto_fabulas(given: dict[str, Any], expected: Decision) -> None:
    assert decision_from({"decisions": [given]}, story="tale") == expected


@pytest.mark.parametrize(
    ("decisions", "where"),
    [
        ([], "exactly one decision (got 0)"),
        ([{"type": "approve"}, {"type": "approve"}], "exactly one decision (got 2)"),
        ("approve", "exactly one decision (got not a list)"),
        ([{"type": "respond"}], "decisions[0].type"),
        ([{"type": "edit"}], "edited_action.arguments: missing"),
        ([{"type": "edit", "edited_action": {"name": "x", "arguments": {"text": "a"}}}], ".name"),
        ([{"type": "edit", "edited_action": {"arguments": {"text": "  "}}}], "needs the new text"),
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
    pending = await fab.pending(store)
    assert pending is not None
    (action,) = pending.request.action_requests
    assert action["arguments"]["text"] == pending.request.draft.text
    assert pending.request.review_configs[0]["allowed_decisions"] == ["approve", "edit", "reject"]
    head = await store.head()
    await fab.decide(store, Decision(action="approve"))
    assert await store.head() == head + 1
