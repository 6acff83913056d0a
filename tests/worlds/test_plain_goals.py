"""Goals and directions in plain words: "get the silver spoon back" is having the spoon;
a direction reads a character's whole name, however many words it has."""

from __future__ import annotations

from pathlib import Path

import pytest

from fabula.agents.shared.goals import directed_goal
from fabula.memory.records import Entity
from fabula.testing import imports as fx
from fabula.worlds.goals import parse_goal
from fabula.worlds.imports import import_paths
from fabula.worlds.loader import load_world

OBJECTS = {"silver_spoon", "key"}


@pytest.mark.parametrize(
    "text",
    ["get the silver spoon back", "get back the silver spoon", "take the silver spoon again"],
)
def test_getting_a_thing_back_is_having_it(text: str) -> None:
    goal = parse_goal(text, objects=OBJECTS, characters=set(), places=set())
    assert (goal.kind, goal.object) == ("get", "silver_spoon")


def _entities() -> dict[str, Entity]:
    made = [
        Entity(id="alice_liddell", kind="character", name="Alice Liddell"),
        Entity(id="alice", kind="character", name="Alice"),
        Entity(id="hatter", kind="character", name="Hatter"),
        Entity(id="tea_party", kind="place", name="tea party"),
        Entity(id="silver_spoon", kind="object", name="silver spoon"),
    ]
    return {e.id: e for e in made}


@pytest.mark.parametrize(
    ("direction", "who", "kind"),
    [
        ("Alice Liddell meets Hatter", "alice_liddell", "meet"),
        ("Alice meets Hatter.", "alice", "meet"),
        ("Hatter goes to the tea party", "hatter", "go"),
        ("Alice Liddell gets the silver spoon back", "alice_liddell", "get"),
    ],
)
def test_a_direction_reads_a_name_of_any_length(direction: str, who: str, kind: str) -> None:
    found = directed_goal(direction, _entities())
    assert found is not None
    assert (found[0], found[1].kind) == (who, kind)


def test_a_direction_naming_no_character_is_none() -> None:
    assert directed_goal("The Queen meets Hatter", _entities()) is None
    assert directed_goal("tea party meets Hatter", _entities()) is None


class TestIdleAtImport:
    def test_a_world_where_nobody_has_anything_to_do_says_so(self, tmp_path: Path) -> None:
        """A lone card whose texts never name the user: no goals, nobody played: said once
        by the pack; a card that brings the user in (who plays) is not idle."""
        card = fx.v2_card("Ben", book=False)
        card["data"] |= {"first_mes": "Evening.", "scenario": "The cove at night."}
        card["data"]["alternate_greetings"] = []
        card["data"]["system_prompt"] = ""
        card["data"]["mes_example"] = ""
        lone = import_paths([fx.write_json(tmp_path / "ben.json", card)]).pack
        assert not any(c.played for c in lone.characters)
        assert lone.idle_warning is not None
        assert "nobody has anything to do" in lone.idle_warning
        sera = import_paths([fx.write_json(tmp_path / "sera.json", fx.seraphina_card())]).pack
        assert sera.idle_warning is None
        assert load_world("hollow_book").idle_warning is None
