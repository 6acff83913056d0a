"""World packs: the built-in pack loads and sets up turn 0; bad packs are refused by field."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import redis.asyncio as aredis

from fabula.errors import InvalidWorld, NotFound
from fabula.memory.projections import project_beliefs, project_developments, project_world
from fabula.memory.rules import WorldRules
from fabula.memory.store import StoryStore
from fabula.memory.validate import validate_delta
from fabula.worlds.loader import builtin_worlds, load_world, setup_delta


def good_pack() -> dict[str, Any]:
    return {
        "id": "tiny",
        "title": "Tiny",
        "premise": "Ava and Ben share a kitchen.",
        "places": [{"name": "kitchen"}, {"name": "garden"}],
        "characters": [
            {"name": "Ava", "location": "kitchen"},
            {"name": "Ben", "location": "garden"},
        ],
        "objects": [
            {"name": "crate", "location": "kitchen", "container": True},
            {"name": "apple", "location": "crate"},
        ],
        "developments": [{"kind": "goal", "title": "Ava eats", "participants": ["Ava"]}],
    }


def to_toml(data: dict[str, Any]) -> str:
    """The small subset of TOML a pack needs: scalars, string lists, arrays of tables."""
    head: list[str] = []
    tables: list[str] = []
    for key, value in data.items():
        if isinstance(value, list) and value and isinstance(value[0], dict):
            for row in value:
                tables.append(f"[[{key}]]")
                tables.extend(f"{k} = {json.dumps(v)}" for k, v in row.items())
        else:
            head.append(f"{key} = {json.dumps(value)}")
    return "\n".join([*head, *tables]) + "\n"


def write_pack(folder: Path, data: dict[str, Any]) -> Path:
    path = folder / "world.toml"
    path.write_text(to_toml(data), encoding="utf-8")
    return path


class TestBuiltinPack:
    def test_hollow_book_loads(self) -> None:
        """The built-in pack loads by name and validates."""
        assert "hollow_book" in builtin_worlds()
        pack = load_world("hollow_book")
        assert (pack.id, pack.title) == ("hollow_book", "The Hollow Book")
        assert [c.name for c in pack.characters] == ["Leo", "Mara"]
        assert [p.name for p in pack.places] == ["study", "hallway"]
        assert len(pack.opening.turns) == 3

    def test_loads_by_folder_and_file(self) -> None:
        """A pack folder or its world.toml loads the same pack as its name."""
        folder = Path(__file__).resolve().parents[2] / "worlds" / "hollow_book"
        assert load_world(folder) == load_world("hollow_book")
        assert load_world(folder / "world.toml") == load_world("hollow_book")

    def test_setup_delta_is_a_valid_turn_zero(self) -> None:
        """setup_delta is turn 0: entities, starting states and what each character sees."""
        delta = setup_delta(load_world("hollow_book"))
        assert delta.turn == 0
        validate_delta(delta)
        assert {e.id: e.kind for e in delta.entities} == {
            "study": "place",
            "hallway": "place",
            "leo": "character",
            "mara": "character",
            "desk_drawer": "object",
            "hollow_book": "object",
            "brass_key": "object",
        }
        assert [e.kind for e in delta.events] == ["setup"]
        assert {b.event for b in delta.beliefs} == {"e0.0"}
        # what each sees, and its own secret, which it alone holds
        assert {b.mode for b in delta.beliefs if b.attribute != "secret"} == {"observed"}
        secrets = {(b.holder, b.subject, b.mode) for b in delta.beliefs if b.attribute == "secret"}
        assert secrets == {(("leo",), "leo", "participated"), (("mara",), "mara", "participated")}

    async def test_setup_commits_as_turn_zero(self, aredis_client: aredis.Redis) -> None:
        """A story created from the pack holds its setup as turn 0 in W, B and D."""
        store = StoryStore(aredis_client, "hb")
        pack = load_world("hollow_book")
        await store.create(setup_delta(pack), world=pack.id, title=pack.title, rules=pack.rules)
        assert await store.head() == 0
        assert await store.rules() == WorldRules(open_containers=False)
        world = await project_world(store)
        assert world.where("leo") == "study"
        assert world.where("brass_key") == "leo"
        assert world.value("brass_key", "colour") == "dull gold"
        for character in ("leo", "mara"):
            mind = await project_beliefs(store, character)
            assert mind.where("brass_key") == "leo"
            assert mind.where("hollow_book") == "study"
        developments = await project_developments(store)
        assert {d.status for d in developments.values()} == {"opened"}
        assert len(developments) == 2
        texts = await store.turn_texts(first=0)
        assert [t.text for t in texts] == [pack.premise]
        assert sorted(await store.characters()) == ["leo", "mara"]

    async def test_setup_beliefs_follow_location(
        self, aredis_client: aredis.Redis, tmp_path: Path
    ) -> None:
        """A character knows only what is in its own place at the start, nested objects too."""
        store = StoryStore(aredis_client, "tiny")
        pack = load_world(write_pack(tmp_path, good_pack()))
        await store.create(setup_delta(pack), world=pack.id, title=pack.title)
        ava = await project_beliefs(store, "ava")
        ben = await project_beliefs(store, "ben")
        assert ava.where("apple") == "crate"
        assert ben.where("apple") is None
        assert ben.where("ben") == "garden"
        assert ava.where("ben") is None


def _without(key: str) -> dict[str, Any]:
    data = good_pack()
    del data[key]
    return data


def _with(path: tuple[str, int, str], value: Any) -> dict[str, Any]:
    data = good_pack()
    group, index, field = path
    data[group][index][field] = value
    return data


def _duplicate_names() -> dict[str, Any]:
    data = good_pack()
    data["objects"].append({"name": "Garden", "location": "kitchen"})
    return data


class TestBadPacks:
    def test_a_good_pack_loads(self, tmp_path: Path) -> None:
        """The base pack the bad cases are made from is itself valid."""
        pack = load_world(write_pack(tmp_path, good_pack()))
        assert pack.id == "tiny"

    @pytest.mark.parametrize(
        ("data", "field"),
        [
            (_without("title"), "title"),
            (_with(("characters", 1, "location"), "cellar"), "characters[1].location"),
            (_with(("objects", 1, "location"), "basket"), "objects[1].location"),
            (_with(("objects", 1, "location"), "apple"), "objects[1].location"),
            (_duplicate_names(), "objects[2].name"),
            (
                _with(("developments", 0, "participants"), ["crate"]),
                "developments[0].participants[0]",
            ),
            (_with(("developments", 0, "kind"), "wish"), "developments[0].kind"),
            (
                _with(("characters", 1, "routine"), ["kitchen", "cellar"]),
                "characters[1].routine[1]",
            ),
        ],
        ids=[
            "missing-title",
            "character-location-not-a-place",
            "object-location-unknown",
            "object-inside-a-non-container",
            "duplicate-names",
            "participant-not-a-character",
            "unknown-development-kind",
            "routine-hour-not-a-place",
        ],
    )
    def test_invalid_pack_names_the_field(
        self, tmp_path: Path, data: dict[str, Any], field: str
    ) -> None:
        """A pack that fails validation raises InvalidWorld naming the file and the field."""
        path = write_pack(tmp_path, data)
        with pytest.raises(InvalidWorld) as info:
            load_world(path)
        assert info.value.context["field"] == field
        assert info.value.context["path"] == str(path)
        assert field in str(info.value)

    def test_invalid_toml(self, tmp_path: Path) -> None:
        """A file that is not TOML raises InvalidWorld naming the file."""
        path = tmp_path / "world.toml"
        path.write_text('id = "x"\ntitle = \n', encoding="utf-8")
        with pytest.raises(InvalidWorld, match="not valid TOML") as info:
            load_world(tmp_path)
        assert info.value.context["path"] == str(path)

    def test_missing_pack(self, tmp_path: Path) -> None:
        """No such built-in name, folder or file raises NotFound listing the built-ins."""
        with pytest.raises(NotFound, match="hollow_book"):
            load_world("no_such_world")
        with pytest.raises(NotFound):
            load_world(tmp_path)  # a folder without world.toml
        with pytest.raises(NotFound):
            load_world(tmp_path / "missing.toml")
