"""The BigToM bench on rows of our own making (BigToM-shaped, not its stories)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from fabula.agents.memory_builder.model import ModelMemoryBuilder
from fabula.bench.bigtom import (
    assumed,
    believed,
    changed,
    load_bigtom,
    option_of,
    part_of,
    row_key,
    run_bigtom,
    thing_asked,
)
from fabula.errors import InvalidInput
from fabula.memory.records import State
from fabula.testing.model import FakeOpenAI, client_for

STORY = (
    "Tove is a potter in a quiet harbour town. She wants to sell a jug at the fair. "
    "Tove fills the jug with cold cider. Tove believes the jug is full of cider. "
    "A gull knocks the jug over, and the cider spills out, leaving the jug empty."
)
ROW = [
    STORY,
    "Tove sees the gull knock the jug over.",
    "Tove does not see the gull knock the jug over.",
    "Tove refills the jug.",
    "Tove carries the jug to the fair.",
    "Does Tove believe the jug is full of cider or empty?",
    "Does Tove want to sell a jug?",
    "What will Tove do?",
    "Tove believes the jug is empty.",
    "Tove wants to sell a jug.",
    "Tove will refill the jug.",
    "Tove believes the jug is full of cider.",
    "Tove wants to sell a jug.",
    "Tove will carry the jug to the fair.",
    "A fishing boat sails past the harbour wall.",
    "Tove watches the fishing boat sail past.",
    "Tove does not watch the fishing boat sail past.",
    "user",
    "0",
]


def write(tmp_path: Path, rows: list[list[str]]) -> Path:
    path = tmp_path / "bigtom.csv"
    path.write_text("\n".join(";".join(r) for r in rows) + "\n", encoding="utf-8")
    return path


def test_a_row_is_eight_conditions_keyed_by_its_story(tmp_path: Path) -> None:
    items = load_bigtom(write(tmp_path, [ROW]))
    assert [(i.condition, i.init) for i in items[:2]] == [("true_belief", 0), ("true_belief", 1)]
    assert len(items) == 8 and {i.key for i in items} == {row_key(STORY)}
    assert {i.part for i in items} == {part_of(row_key(STORY))}
    assert "believes" not in items[0].text and "Tove believes" in items[1].text
    control = next(i for i in items if i.condition == "false_control")
    assert "gull" not in control.text and control.text.endswith(
        "does not watch the fishing boat sail past."
    )
    assert items[0].thing == thing_asked("the jug is empty", "the jug is full of cider") == "jug"


def test_backward_belief_is_the_story_and_the_agents_action(tmp_path: Path) -> None:
    items = load_bigtom(write(tmp_path, [ROW]), "backward")
    assert [(i.condition, i.init) for i in items] == [
        ("true_belief", 0),
        ("true_belief", 1),
        ("false_belief", 0),
        ("false_belief", 1),
    ]
    assert {i.direction for i in items} == {"backward"}
    seen, unseen = items[1], items[3]
    assert seen.text.endswith(
        "knocks the jug over, and the cider spills out, leaving the "
        "jug empty. Tove refills the jug."
    )
    assert unseen.text.endswith("Tove carries the jug to the fair.")
    assert "sees" not in seen.text and "does not see" not in unseen.text
    assert seen.gold == seen.final and unseen.gold == unseen.initial


def test_a_value_maps_to_the_option_whose_own_words_it_shares(tmp_path: Path) -> None:
    item = load_bigtom(write(tmp_path, [ROW]))[0]
    assert option_of("jug empty", item) == item.final
    assert option_of("jug full of cider", item) == item.initial
    assert option_of("jug", item) is None
    # a denied value speaks against the option that says it
    assert option_of("jug not full of cider", item) == item.final
    assert option_of("jug not empty", item) == item.initial


def test_a_malformed_row_is_one_line_naming_it(tmp_path: Path) -> None:
    with pytest.raises(InvalidInput, match=r"row 1.*18 fields"):
        load_bigtom(write(tmp_path, [ROW[:-1]]))
    bad = [*ROW]
    bad[8] = "Someone else thinks so."
    with pytest.raises(InvalidInput, match=r"row 1 \(key [0-9a-f]{12}\).*belief_aware"):
        load_bigtom(write(tmp_path, [bad]))


async def test_the_run_answers_from_the_agents_mind(redis_url: str, tmp_path: Path) -> None:
    answers = tmp_path / "answers.jsonl"
    result = await run_bigtom(
        write(tmp_path, [ROW]), redis_url=redis_url, answers_out=answers, quiet=True
    )
    lines = [json.loads(line) for line in answers.read_text().splitlines()]
    assert len(lines) == 8
    assert set(lines[0]) == {"key", "condition", "init", "answer", "from", "world"}
    seen = next(x for x in lines if x["condition"] == "true_belief" and x["init"] == 1)
    unseen = next(x for x in lines if x["condition"] == "false_belief" and x["init"] == 1)
    assert seen["answer"] == "Tove believes the jug is empty." and seen["from"] == "belief"
    assert unseen["answer"] == "Tove believes the jug is full of cider."
    assert unseen["world"] == "Tove believes the jug is empty."
    assert set(result["systems"]) >= {"phased", "prose", "always_initial", "w_alone"}
    assert result["systems"]["phased"]["reader_cpu_ms_per_1000_words"] > 0
    back = result["backward"]
    assert back["items"] == 4 and set(back) >= {"phased", "always_initial", "always_final"}
    part = part_of(row_key(STORY))
    assert back["always_final"][part]["true_belief"]["accuracy"] == 1.0
    assert back["always_final"][part]["false_belief"]["accuracy"] == 0.0
    assert back["phased"][part]["all"]["n"] == 4


async def test_the_model_reads_in_the_same_run_a_few_items_a_part(
    redis_url: str, tmp_path: Path, fake_openai: FakeOpenAI
) -> None:
    """``--base-url``: the model memory-builder is a column beside the readers, on the
    first ``limit`` items of each part; asked about what the phased reader left, it says
    nothing here, so it answers as the phased reader does; a reply it cannot give is an
    unanswered item, counted."""

    def builder() -> ModelMemoryBuilder:
        return ModelMemoryBuilder(client_for(fake_openai, role="memory_builder"))

    async def run(limit: int) -> dict[str, Any]:
        path = write(tmp_path, [ROW])
        return await run_bigtom(path, redis_url=redis_url, limit=limit, model=builder, quiet=True)

    for _ in range(2):
        fake_openai.reply_json({"actions": [], "new_entities": []})
    result = await run(2)
    assert result["items"] == 2 and result["limit"] == 2
    model, phased = result["systems"]["model"], result["systems"]["phased"]
    assert fake_openai.requests and model["failed"] == []
    assert model["all"]["all"] == phased["all"]["all"]
    for _ in range(8):
        fake_openai.reply_text("not json")
    model = (await run(1))["systems"]["model"]
    assert len(model["failed"]) == 1 and model["all"]["all"]["answered"] == 0.0


def test_a_change_the_agent_did_not_see_is_not_what_it_assumes(tmp_path: Path) -> None:
    item = load_bigtom(write(tmp_path, [ROW]))[2]  # false belief, no "believes" sentence
    old = State(
        id="s1.1", subject="jug", attribute="condition", value="old", valid_from=1, event="e1.1"
    )
    emptied = State(
        id="s1.2", subject="jug", attribute="condition", value="empty", valid_from=1, event="e1.2"
    )
    at = {"e1.1": 0, "e1.2": 40}
    # the story set the jug's condition, then changed it: A, who holds nothing of it,
    # did not see the change, so not the changed state
    assert assumed([old, emptied], item, at) == item.initial
    # the only state the story gives is the first A could assume
    assert assumed([emptied], item, at) == item.final


def test_a_record_naming_the_thing_in_its_value_is_about_it(tmp_path: Path) -> None:
    item = load_bigtom(write(tmp_path, [ROW]))[0]
    hole = State(
        id="s1.1",
        subject="hole",
        attribute="condition",
        value="empty the jug",
        valid_from=1,
        event="e1.1",
    )
    elsewhere = State(
        id="s1.2", subject="hole", attribute="condition", value="empty", valid_from=1, event="e1.2"
    )
    assert believed([hole], item) == item.final
    assert believed([elsewhere], item) is None  # a hole that is empty says nothing of the jug


def _state(n: int, value: str) -> State:
    return State(
        id=f"s1.{n}",
        subject="jug",
        attribute="condition",
        value=value,
        valid_from=1,
        event=f"e1.{n}",
    )


def test_a_change_the_agent_saw_replaces_what_it_first_saw(tmp_path: Path) -> None:
    item = load_bigtom(write(tmp_path, [ROW]))[0]
    full, tipped = _state(1, "full of cider"), _state(2, "tip over")
    at = {"e1.1": 2, "e1.2": 4}  # read from the third and the fifth sentences
    # A saw the jug full, then saw it tip over, which the world holds too
    assert changed([full, tipped], [full, tipped], item, at) == item.final
    # A's own later opinion of the jug is no change in the world
    assert changed([full, tipped], [full], item, at) == item.initial
    # nor is a second reading of the same sentence
    assert changed([full, tipped], [full, tipped], item, {"e1.1": 2, "e1.2": 2}) == item.initial
