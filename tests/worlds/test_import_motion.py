"""Imported worlds move: a card without goals, or a BookWorld preset, gets places from what
its texts name, starts each character where its text puts it, and gives it goals the
offline planner pursues; a natural goal naming a character is a goal about it, and one the
planner cannot read stays a motive, said once."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from fabula.agents.shared.goals import read_goal
from fabula.memory.records import Entity
from fabula.testing.cli import fabula as run_fabula
from fabula.worlds.goals import parse_goal
from fabula.worlds.imports import import_paths
from fabula.worlds.imports.places import named_places, place_noun

BOOKWORLD = Path("/work/shared/data/imports/bookworld")
if not BOOKWORLD.is_dir():  # the repository's copy of the shared data, when run elsewhere
    BOOKWORLD = Path(__file__).resolve().parents[3] / "shared/data/imports/bookworld"


def stock_card() -> dict[str, Any]:
    """A card as people write them: prose description, scenario naming places, a greeting
    in asterisks, a character book; no goals anywhere."""
    return {
        "spec": "chara_card_v2",
        "spec_version": "2.0",
        "data": {
            "name": "Mira",
            "description": (
                "{{char}} is the keeper of the Thornwood, a forest spirit with silver hair who "
                "tends the wounded. She carries a moonstone amulet and guards the forest."
            ),
            "personality": "gentle, protective, wry",
            "scenario": (
                "{{user}} wakes in {{char}}'s cottage at the edge of the Thornwood after an "
                "attack by wolves. Beyond the cottage lie the old chapel and the river ford."
            ),
            "first_mes": (
                "*{{char}} sets a cup of tea on the table beside the bed and smiles.* You're "
                "awake, {{user}}. The wolves nearly had you. Rest now; the cottage is safe."
            ),
            "mes_example": "<START>\n{{char}}: Drink this.",
            "creator_notes": "",
            "system_prompt": "",
            "post_history_instructions": "",
            "alternate_greetings": [],
            "tags": ["fantasy"],
            "creator": "someone",
            "character_version": "1",
            "extensions": {},
            "character_book": {
                "name": "Thornwood",
                "extensions": {},
                "entries": [
                    {
                        "keys": ["Thornwood", "forest"],
                        "content": "The Thornwood is an ancient forest of oak and thorn.",
                        "extensions": {},
                        "enabled": True,
                        "insertion_order": 10,
                        "name": "Thornwood",
                        "id": 1,
                    },
                    {
                        "keys": ["amulet", "moonstone"],
                        "content": "{{char}}'s moonstone amulet glows when danger is near.",
                        "extensions": {},
                        "enabled": True,
                        "insertion_order": 10,
                        "name": "amulet",
                        "id": 2,
                    },
                ],
            },
        },
    }


@pytest.fixture
def card(tmp_path: Path) -> Path:
    path = tmp_path / "mira.json"
    path.write_text(json.dumps(stock_card()), encoding="utf-8")
    return path


class TestPlaces:
    def test_nouns_of_places_by_wordnet(self) -> None:
        """A building, a glade, a body of water are places; a body part, furniture, a time
        are not, whatever their other senses; "edge" only before "of" is skipped, and the
        place is what follows."""
        assert all(place_noun(w, framed=False) for w in ("cottage", "chapel", "glade", "river"))
        assert not any(place_noun(w, framed=True) for w in ("hand", "bed", "night", "table"))
        found = named_places(
            [
                "She sat on the bed with her hand on the table at night, at the edge of the "
                "Thornwood, then went into the old chapel; the chapel was cold."
            ],
            [("Thornwood", ("Thornwood",), "The Thornwood is an ancient forest.")],
            ["Mira"],
        )
        assert [(p.name, p.noun) for p in found] == [
            ("Thornwood", "forest"),
            ("old chapel", "chapel"),
        ]

    def test_a_card_names_its_world(self, card: Path) -> None:
        """The card's places from its greeting, scenario, description and lore, the lore's
        place with the noun it is a kind of as an alias; Mira starts where her scenario
        puts her, and visits the others, then comes back (no goal is a motive)."""
        pack = import_paths([card]).pack
        assert [(p.name, p.aliases) for p in pack.places] == [
            ("cottage", ()),
            ("Thornwood", ("forest",)),
            ("old chapel", ()),
        ]
        mira = next(c for c in pack.characters if c.name == "Mira")
        assert [c.name for c in pack.characters if c.played] == ["User"]  # {{user}}, played
        assert mira.location == "cottage"
        assert mira.goals == (
            "visit Thornwood",  # a made-up name stands alone
            "visit the old chapel",
            "return to the cottage",
        )
        assert pack.goal_warnings == []

    def test_the_scenario_sets_the_first_scene(self, tmp_path: Path) -> None:
        """A greeting that looks back at another place ("the wolves nearly had you in the
        Thornwood") does not move the start: the scenario, which sets the scene, comes first."""
        doc = stock_card()
        doc["data"]["first_mes"] = (
            "*{{char}} sets a cup of tea beside the bed.* The wolves nearly had you in the "
            "Thornwood, {{user}}. Rest now; the cottage is safe."
        )
        path = tmp_path / "mira.json"
        path.write_text(json.dumps(doc), encoding="utf-8")
        mira = next(c for c in import_paths([path]).pack.characters if c.name == "Mira")
        assert mira.location == "cottage"

    def test_cards_that_name_no_place_keep_one(self, tmp_path: Path) -> None:
        """Nothing named: the one place ``scene``, and no goal to go anywhere."""
        doc = stock_card()
        doc["data"].update(scenario="", first_mes="Hello.", description="A quiet sort.")
        del doc["data"]["character_book"]
        path = tmp_path / "q.json"
        path.write_text(json.dumps(doc), encoding="utf-8")
        pack = import_paths([path]).pack
        assert [p.name for p in pack.places] == ["scene"] and pack.characters[0].goals == ()


class TestNaturalGoals:
    IDS = ({"map"}, {"iris", "nell", "trek_vemil", "sansa_stark"}, {"cove", "loft"})

    @pytest.mark.parametrize(
        ("text", "kind", "character"),
        [
            ("find out what Iris is hiding", "learn_secret", "iris"),
            ("uncover Iris's secrets", "learn_secret", "iris"),
            ("protect Iris at any cost", "meet", "iris"),
            ("escape from Nell", "avoid", "nell"),
            ("meet Trek·Vemil", "meet", "trek_vemil"),
            ("meet Sansa Stark", "meet", "sansa_stark"),
            ("stop Trek before it is too late", "meet", "trek_vemil"),
        ],
    )
    def test_a_goal_about_the_one_character_it_names(
        self, text: str, kind: str, character: str
    ) -> None:
        goal = parse_goal(text, *self.IDS)
        assert (goal.kind, goal.character, goal.object, goal.text) == (kind, character, None, text)

    def test_never_an_object_made_of_the_words(self) -> None:
        """Read by a mind that has not met any object, "find out what Iris is hiding" is no
        search for ``out_what_iris_is_hiding``; an object a goal names plainly still is
        one to look for; what names nothing stays a motive."""
        entities = {
            "iris": Entity(id="iris", kind="character", name="Iris"),
            "cove": Entity(id="cove", kind="place", name="cove"),
        }
        hiding = read_goal(entities, "find out what Iris is hiding")
        assert (hiding.kind, hiding.character, hiding.object) == ("learn_secret", "iris", None)
        assert parse_goal("find out what Iris is hiding").object is None
        assert read_goal(entities, "give the map to Iris").object == "map"
        assert read_goal(entities, "bring peace to the world").kind == "motive"
        assert read_goal(entities, "guard the cove").place == "cove"


class TestImportedWorldsMove:
    def test_a_stock_card_runs(
        self, redis_url: str, card: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """`fabula import CARD --id` then `run --turns 3 --auto` writes three turns (the
        greeting is turn 1, read as prose); a direction to one of its places is read."""
        monkeypatch.setenv("FABULA_HOME", str(tmp_path / "home"))
        made = run_fabula(redis_url, "import", str(card), "--id", "mira", "--json")
        assert json.loads(made.stdout)["places"] == ["cottage", "Thornwood", "old chapel"]
        ran = run_fabula(redis_url, "run", "mira", "--turns", "3", "--auto")
        assert "3 turns written" in ran.stdout and "at rest" not in ran.stdout, ran.stdout
        story = run_fabula(redis_url, "show", "mira", "story").stdout
        assert "sets a cup of tea" in story and "Mira went to Thornwood." in story
        steered = run_fabula(
            redis_url, "run", "mira", "--auto", "--direction", "Mira goes to the old chapel"
        )
        assert "1 turn written" in steered.stdout, steered.stdout
        beliefs = run_fabula(redis_url, "show", "mira", "world").stdout
        assert "old_chapel" in beliefs

    def test_a_bookworld_preset_runs(
        self, redis_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """The English preset: each role starts where its profile puts it (Lacia, the heir,
        at Eldridge Corporation), seeks those it is related to and roams the map; three
        turns are written."""
        monkeypatch.setenv("FABULA_HOME", str(tmp_path / "home"))
        preset = BOOKWORLD / "experiment_presets/example_free.json"
        pack = import_paths([preset]).pack
        assert [(c.name, c.location, c.goals[0]) for c in pack.characters] == [
            ("Lacia·Eldridge", "Eldridge Corporation", "meet Trek·Vemil"),
            ("Trek·Vemil", "Laboratory", "meet Lacia·Eldridge"),
        ]
        run_fabula(redis_url, "import", str(preset), "--id", "lab")
        ran = run_fabula(redis_url, "run", "lab", "--turns", "3", "--auto")
        assert "3 turns written" in ran.stdout and "at rest" not in ran.stdout, ran.stdout
        assert (
            "Lacia·Eldridge went to the Laboratory."
            in run_fabula(redis_url, "show", "lab", "story").stdout
        )

    def test_a_roles_motivation(
        self, redis_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """A role's ``motivation`` is its first goals: a sentence naming a character is a
        goal about it; one the planner cannot read stays a motive, which the import says
        once."""
        monkeypatch.setenv("FABULA_HOME", str(tmp_path / "home"))
        root = tmp_path / "bookworld"
        shutil.copytree(BOOKWORLD, root)
        info_path = next(root.glob("data/roles/example_world/*/role_info.json"))
        for path in root.glob("data/roles/example_world/*/role_info.json"):
            if json.loads(path.read_text(encoding="utf-8"))["role_code"] == "Lacia-en":
                info_path = path
        info = json.loads(info_path.read_text(encoding="utf-8"))
        info["motivation"] = (
            "Lacia wants to find out what Trek is hiding. He hopes to bring peace to the world."
        )
        info_path.write_text(json.dumps(info), encoding="utf-8")
        preset = root / "experiment_presets/example_free.json"
        lacia = import_paths([preset]).pack.characters[0]
        assert lacia.goals[:3] == (
            "find out what Trek is hiding",
            "bring peace to the world",
            "meet Trek·Vemil",
        )
        made = run_fabula(redis_url, "import", str(preset), "--id", "lab")
        assert made.stdout.count("'bring peace to the world' is not a goal") == 1, made.stdout
        assert "find out what Trek" not in made.stdout
        ran = run_fabula(redis_url, "run", "lab", "--turns", "2", "--auto")
        assert "2 turns written" in ran.stdout, ran.stdout
