"""Fuzz: 1,000 malformed model outputs through the memory-builder and the planner.

Each case sends one malformed reply over HTTP to the real client (bad JSON, wrong types,
unknown or wrong-kind referents, spans outside the text, missing fields, truncation,
refusals, tool calls with wrong arguments to a server without json_schema), followed by a
good reply (a *corrected retry*: the result must be the good one) or by another malformed
one (the call must end in a clear :class:`FabulaError` of one line, and the story must be
exactly as it was: a full snapshot of its keys, compared after every failed case). The
memory-builder's failures go through ``commit``, so a reading that slipped through would
have been written. Cases come from a fixed seed, so a failure names its case number.

Runtime: about 25 s for the 1,000 cases on the shared two-core machine (17 s of CPU: the
real client costs some 8 ms a request); the strict schemas are made once per type.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable

from fabula.agents.contracts import PlanRequest
from fabula.agents.llm import make_client
from fabula.agents.memory_builder.model import ModelMemoryBuilder
from fabula.agents.memory_builder.offline import read_controlled
from fabula.agents.planner.model import ModelPlanner
from fabula.agents.views import author_view
from fabula.bench.model import story_snapshot
from fabula.errors import FabulaError
from fabula.graph.commit import CommitPath, commit_text
from fabula.graph.service import Fabula
from fabula.settings import Settings
from fabula.testing.model import PLAN, STORY, FakeOpenAI, Reply, action

CASES = 1000
TEXT = "Leo walked into the study. Mara lifted the brass key."  # free prose: the model reads
GOOD_ACTIONS = {
    "actions": [
        action("go", 0, 26, actors=["Leo"], place="study"),
        action("take", 27, len(TEXT), actors=["Mara"], obj="brass key"),
    ],
    "new_entities": [],
}

Breaker = Callable[[random.Random], Reply]


def _json(value: object) -> Reply:
    return Reply(content=json.dumps(value))


def _with_action(rng: random.Random, **change: object) -> Reply:
    actions = json.loads(json.dumps(GOOD_ACTIONS["actions"]))
    actions[rng.randrange(len(actions))].update(change)
    return _json({"actions": actions, "new_entities": []})


def _missing(rng: random.Random) -> Reply:
    """An action without a field its kind needs (a journey without a place, ...)."""
    actions = json.loads(json.dumps(GOOD_ACTIONS["actions"]))
    i = rng.randrange(len(actions))
    actions[i].update({"place": None} if actions[i]["kind"] == "go" else {"obj": None})
    return _json({"actions": actions, "new_entities": []})


EXTRACTION_BREAKERS: dict[str, Breaker] = {
    "bad json": lambda r: Reply(content=json.dumps(GOOD_ACTIONS)[: r.randrange(1, 120)]),
    "not json": lambda r: Reply(content=r.choice(["sure!", "", "null", "[]", "{}", "42"])),
    "wrong type": lambda r: _with_action(
        r, **r.choice([{"start": "zero"}, {"actors": "Leo"}, {"kind": 3}, {"clause": "x"}])
    ),
    "unknown referent": lambda r: _with_action(
        r, **r.choice([{"actors": ["Ghost"]}, {"place": "attic"}, {"obj": "golden key"}])
    ),
    "wrong kind": lambda r: _with_action(
        r, **r.choice([{"place": "Mara"}, {"actors": ["study"]}, {"obj": "Leo"}])
    ),
    "span outside": lambda r: _with_action(r, start=r.randrange(40, 90), end=r.randrange(91, 500)),
    "missing field": lambda r: _missing(r),
    "truncated": lambda r: Reply(content=json.dumps(GOOD_ACTIONS)[:60], finish_reason="length"),
    "refusal": lambda r: Reply(refusal="I can't help with that."),
    "tool call wrong arguments": lambda r: Reply(
        tool_arguments=r.choice(['{"actions": "all"}', '{"acts": []}', "{", '{"actions": [1]}'])
    ),
}
PLAN_BREAKERS: dict[str, Breaker] = {
    "bad json": lambda r: Reply(content=json.dumps(PLAN)[: r.randrange(1, 80)]),
    "wrong type": lambda r: _json(
        PLAN | r.choice([{"focal": "leo"}, {"beats": 3}, {"scene_goal": None}])
    ),
    "unknown referent": lambda r: _json(
        PLAN | r.choice([{"focal": ["ben"]}, {"place": "cellar"}, {"developments": ["d9"]}])
    ),
    "wrong kind": lambda r: _json(PLAN | r.choice([{"focal": ["study"]}, {"place": "leo"}])),
    "too many": lambda r: _json(PLAN | {"focal": ["leo", "mara", "leo", "mara", "x"]}),
    "truncated": lambda r: Reply(content=json.dumps(PLAN)[:40], finish_reason="length"),
    "refusal": lambda r: Reply(refusal="No."),
    "tool call wrong arguments": lambda r: Reply(tool_arguments='{"focal": []}'),
}


async def test_malformed_outputs_end_in_a_clear_error_or_a_corrected_retry(
    fab: Fabula, fake_openai: FakeOpenAI, settings: Settings
) -> None:
    rng = random.Random(8)
    two = settings.model.model_copy(update={"max_attempts": 2, "max_tokens": 300})
    store = fab.store(STORY)
    view = await author_view(store)
    before = await story_snapshot(store.client, STORY)
    outcomes: dict[str, int] = {}
    clients = {role: make_client(two, role) for role in ("planner", "memory_builder")}
    planner = ModelPlanner(clients["planner"])
    # the model reads every prose sentence: the offline reader first is controlled English
    builder = ModelMemoryBuilder(clients["memory_builder"], reader=read_controlled)
    for case in range(CASES):
        planner_case = case % 5 == 4
        breakers = PLAN_BREAKERS if planner_case else EXTRACTION_BREAKERS
        kind = rng.choice(sorted(breakers))
        fake_openai.clear()
        fake_openai.reject_json_schema = kind == "tool call wrong arguments"
        corrected = rng.random() < 0.5 and kind not in ("refusal", "truncated")
        fake_openai.queue(breakers[kind](rng))
        good = PLAN if planner_case else GOOD_ACTIONS
        if fake_openai.reject_json_schema:
            second = Reply(tool_arguments=json.dumps(good)) if corrected else breakers[kind](rng)
        else:
            second = Reply(content=json.dumps(good)) if corrected else breakers[kind](rng)
        fake_openai.queue(second)
        role = "planner" if planner_case else "memory_builder"
        clients[role].method = "json_schema"  # each case finds out for itself
        where = f"case {case} ({role}, {kind}, {'corrected' if corrected else 'failing'})"
        try:
            if planner_case:
                plan = await planner.plan(PlanRequest(view))
                assert plan.focal == ("leo", "mara"), where
            elif corrected:
                delta = await builder.build(store, 4, TEXT)
                moved = {(s.subject, s.value) for s in delta.states}
                assert {("leo", "study"), ("brass_key", "mara")} <= moved, where
            else:
                await commit_text(CommitPath(memory_builder=builder), store, 4, TEXT)
            outcome = "corrected"
            assert corrected, f"{where}: a malformed reply was accepted"
        except FabulaError as error:
            outcome = type(error).__name__
            assert not corrected, f"{where}: {error}"
            assert "\n" not in str(error), f"{where}: {error}"
            assert await story_snapshot(store.client, STORY) == before, where
        outcomes[outcome] = outcomes.get(outcome, 0) + 1
    assert sum(outcomes.values()) == CASES
    assert set(outcomes) == {
        "corrected",
        "ModelOutputError",
        "ModelRefused",
        "ModelTruncated",
    }, outcomes
