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
from fabula.testing import imports as fx
from fabula.testing.cli import fabula as run_fabula
from fabula.worlds.cardtext import has_markup, narrated
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
        """A building, a glade, a body of water are places where a text puts something at
        them; a looser kind ("post", "road") only after a preposition that can only mean
        where; a body part, furniture, a time never; nothing unframed."""
        places = ("cottage", "chapel", "glade", "river")
        assert all(place_noun(w, framed="toward") for w in places)
        assert not any(place_noun(w, framed="") for w in places)
        assert not any(place_noun(w, framed="toward") for w in ("post", "road", "scene"))
        assert place_noun("watchtower", framed="where")
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

    @pytest.mark.parametrize(
        ("text", "places"),
        [
            ("Marta throws a rope to the post.", []),  # an object after "to" is no place
            ("You are far from the road, User.", []),
            ("User has lost the road at dusk.", []),  # named, but nothing put there
            ("Seraphina carried User to her glade.", [("glade", "glade")]),
            ("User was hurt in the forest of Eldoria.", [("Eldoria", "forest")]),
            (
                "The boat is on the rocks below Greyhaven lighthouse.",
                [("Greyhaven lighthouse", "lighthouse")],
            ),
            ("User waits at the landing at Sable Crossing.", [("Sable Crossing", "crossing")]),
            ("Flux lives on the rooftops of the harbour town.", [("harbour town", "town")]),
            ("User sits beside Old Tom at Christmas.", []),  # a person, a time
            # issue 44: an inverted sentence of place puts what follows its verb there
            (
                "Beyond the cottage lie the old chapel and the inn.",
                [("cottage", "cottage"), ("old chapel", "chapel"), ("inn", "inn")],
            ),
            ("In the yard stands a stable.", [("yard", "yard"), ("stable", "stable")]),
            ("Beyond the hills lies a great danger.", [("hill", "hill")]),  # no kind of place
            ("The book lies open on the table.", []),  # no sentence of place
        ],
    )
    def test_a_place_is_where_a_text_puts_something(
        self, text: str, places: list[tuple[str, str]]
    ) -> None:
        found = named_places([text], (), ["User", "Old Tom", "Marta", "Seraphina", "Flux"])
        assert [(p.name, p.noun) for p in found] == places

    @pytest.mark.parametrize(
        ("card", "places", "home"),
        [
            ("wpp", ["watchtower", "Thornwood"], "Thornwood"),
            ("plist", ["forge", "Eastmere"], "forge"),
            ("alichat", ["Greyhaven lighthouse"], "Greyhaven lighthouse"),
            ("prose", ["Sable Crossing"], "Sable Crossing"),
            ("seraphina", ["glade", "Eldoria"], "glade"),
            ("flux", ["harbour town"], "harbour town"),
        ],
    )
    def test_cards_in_every_format_name_their_places(
        self, tmp_path: Path, card: str, places: list[str], home: str
    ) -> None:
        """W++ (both shapes), PList, Ali:Chat and prose cards: the places their texts put
        someone in (never "the road", "the post" or "scene"), the character where its
        scenario puts it (carried to the glade: the glade), with no goal: it attends to
        the player, who starts beside it."""
        cards = {**fx.evening_cards(), "seraphina": fx.seraphina_card(), "flux": fx.wpp_card()}
        pack = import_paths([fx.write_json(tmp_path / f"{card}.json", cards[card])]).pack
        assert [p.name for p in pack.places] == places
        assert [(c.location, c.goals) for c in pack.characters] == [(home, ()), (home, ())]

    def test_a_card_names_its_world(self, card: Path) -> None:
        """The card's places from its greeting, scenario, description and lore, the lore's
        place with the noun it is a kind of as an alias; Mira starts where her scenario
        puts her and has no goal (she attends to the player); what lies beyond the cottage
        ("beyond the cottage lie the old chapel and the river ford") is where it is: the
        chapel a place (issue 44), the ford (no kind of place in WordNet) not."""
        pack = import_paths([card]).pack
        assert [(p.name, p.aliases) for p in pack.places] == [
            ("cottage", ()),
            ("Thornwood", ("forest",)),
            ("old chapel", ()),
        ]
        mira = next(c for c in pack.characters if c.name == "Mira")
        assert [c.name for c in pack.characters if c.played] == ["User"]  # {{user}}, played
        assert (mira.location, mira.goals) == ("cottage", ())
        assert pack.goal_warnings == [] and pack.idle_warning is None  # the player is there

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

    def test_a_scenario_that_is_a_setting_names_the_one_place(self, tmp_path: Path) -> None:
        """A scenario that puts nobody anywhere but sets the scene ("A storm-bound island")
        names the card's one place."""
        doc = stock_card()
        doc["data"].update(scenario="A storm-bound island at dusk.", first_mes="Hello.")
        doc["data"].update(description="A quiet sort.")
        del doc["data"]["character_book"]
        path = tmp_path / "q.json"
        path.write_text(json.dumps(doc), encoding="utf-8")
        pack = import_paths([path]).pack
        assert [p.name for p in pack.places] == ["storm-bound island"]

    def test_cards_that_name_no_place_keep_one(self, tmp_path: Path) -> None:
        """Nothing named at all: the one place ``scene``, and no goal to go anywhere."""
        doc = stock_card()
        doc["data"].update(scenario="", first_mes="Hello.", description="A quiet sort.")
        del doc["data"]["character_book"]
        path = tmp_path / "q.json"
        path.write_text(json.dumps(doc), encoding="utf-8")
        pack = import_paths([path]).pack
        assert [p.name for p in pack.places] == ["scene"] and pack.characters[0].goals == ()


class TestGreetings:
    @pytest.mark.parametrize(
        ("raw", "told"),
        [
            (
                '*Ilsa drapes a blanket over your shoulders.* "You\'re lucky, User."',
                "Ilsa drapes a blanket over User's shoulders. \"You're lucky, User.\"",
            ),
            ("*smiles softly*", "Seraphina smiles softly."),
            (
                "*You wake on a bed of moss. A woman kneels beside you.* Easy.",
                'User wakes on a bed of moss. A woman kneels beside User. "Easy."',
            ),
            ("*She laughs.* Mrrp.", 'Seraphina laughs. "Mrrp."'),
            ("Afternoon, User.", "Afternoon, User."),  # no markup: as written
        ],
    )
    def test_actions_are_narration(self, raw: str, told: str) -> None:
        """A greeting's ``*actions*`` are narration (the player named, the character named
        for a bare verb or a pronoun), its words quoted; no asterisk is left."""
        assert narrated(raw, "Seraphina", "User") == told

    def test_the_first_turn_has_no_markup(self, tmp_path: Path) -> None:
        """An Ali:Chat card's and a W++ card's greeting, imported: no asterisk reaches it."""
        cards = fx.evening_cards()
        for name in ("alichat", "wpp"):
            pack = import_paths([fx.write_json(tmp_path / f"{name}.json", cards[name])]).pack
            text = pack.opening.greetings[0].text
            assert "*" not in text and has_markup(text) is None, text
        assert text.startswith("A tall woman in a green cloak steps out from behind")


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
            ("ask Trek·Vemil about the enigmatic signal", "ask_about", "trek_vemil"),
            ("talk to Iris about Nell", "ask_about", "iris"),
        ],
    )
    def test_a_goal_about_the_one_character_it_names(
        self, text: str, kind: str, character: str
    ) -> None:
        goal = parse_goal(text, *self.IDS)
        assert (goal.kind, goal.character, goal.object, goal.text) == (kind, character, None, text)
        if kind == "ask_about":  # what it asks about is words, kept as written
            assert goal.topic == text.split(" about ", 1)[1]

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
    def test_a_stock_card_attends_to_the_player(
        self, redis_url: str, card: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """`fabula import CARD --id`: the greeting is turn 1, told as narration; Mira, with
        no goal, wanders nowhere on her own (`run --auto` writes nothing: she waits for the
        player), answers where she is by her own place, and a direction to one of her
        places is read."""
        monkeypatch.setenv("FABULA_HOME", str(tmp_path / "home"))
        made = run_fabula(redis_url, "import", str(card), "--id", "mira", "--json")
        assert json.loads(made.stdout)["places"] == ["cottage", "Thornwood", "old chapel"]
        ran = run_fabula(redis_url, "run", "mira", "--turns", "3", "--auto")
        assert "0 turns written" in ran.stdout and "Mira: no goals" in ran.stdout, ran.stdout
        run_fabula(redis_url, "run", "mira", "--as", "User: Where are we?")
        run_fabula(redis_url, "approve", "mira")
        run_fabula(redis_url, "run", "mira", "--as", "User: Thank you.")
        run_fabula(redis_url, "approve", "mira")
        story = run_fabula(redis_url, "show", "mira", "story").stdout
        assert "Mira sets a cup of tea on the table beside the bed and smiles." in story
        assert "*" not in story and "We are in the cottage" in story, story
        assert "Mira went to" not in story
        steered = run_fabula(
            redis_url, "run", "mira", "--auto", "--direction", "Mira goes to Thornwood"
        )
        assert "1 turn written" in steered.stdout, steered.stdout
        assert "thornwood" in run_fabula(redis_url, "show", "mira", "world").stdout

    def test_a_bookworld_preset_runs_ten_turns(
        self, redis_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """The English preset: each role starts where its profile puts it (Lacia, the heir,
        at Eldridge Corporation), seeks the one it is related to and asks it about the
        others it is related to and what the story opens on, which the one asked answers
        from its own lore; `run --turns 10 --auto` writes ten turns, none at rest."""
        monkeypatch.setenv("FABULA_HOME", str(tmp_path / "home"))
        preset = BOOKWORLD / "experiment_presets/example_free.json"
        pack = import_paths([preset]).pack
        assert [(c.name, c.location, c.goals[:3]) for c in pack.characters] == [
            (
                "Lacia·Eldridge",
                "Eldridge Corporation",
                (
                    "meet Trek·Vemil",
                    "ask Trek·Vemil about Falko·Weiss",
                    "ask Trek·Vemil about the enigmatic signal",
                ),
            ),
            (
                "Trek·Vemil",
                "Laboratory",
                (
                    "meet Lacia·Eldridge",
                    "ask Lacia·Eldridge about the enigmatic signal",
                    "ask Lacia·Eldridge about the Laboratory",
                ),
            ),
        ]
        assert pack.goal_warnings == [] and pack.idle_warning is None
        run_fabula(redis_url, "import", str(preset), "--id", "lab")
        ran = run_fabula(redis_url, "run", "lab", "--turns", "10", "--auto")
        assert "10 turns written" in ran.stdout and "at rest" not in ran.stdout, ran.stdout
        story = run_fabula(redis_url, "show", "lab", "story").stdout
        flat = " ".join(story.split())
        assert "Lacia·Eldridge went to the Laboratory." in flat
        # asked once (done once asked), then answered
        assert flat.count('"What do you make of Falko·Weiss?" said Lacia·Eldridge.') == 1
        # answered, Trek's own view said as his own (issue 44: not "To Trek, Falko is …")
        assert "Falko is a dedicated and helpful senior colleague" in flat
        assert "To Trek," not in flat

    def test_a_preset_that_gives_nobody_anything_to_do_says_so_once(
        self, redis_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """One role, no relation, no motivation, one place: the import says, once, that
        nobody has anything to do."""
        monkeypatch.setenv("FABULA_HOME", str(tmp_path / "home"))
        preset = fx.bookworld_preset(tmp_path / "bw")
        assert import_paths([preset]).pack.characters[0].goals == ()
        made = run_fabula(redis_url, "import", str(preset), "--id", "isle")
        assert made.stdout.count("nobody has anything to do") == 1, made.stdout

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
