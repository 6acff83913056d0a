"""Export and back: a character as a V3 card holding what it believes, the world as a
lorebook_v3; imported again they give the same characters, world, lore and beliefs, and
unknown extensions byte for byte."""

from __future__ import annotations

import base64
import json
import subprocess
import time
from pathlib import Path
from typing import Any

from fabula.errors import InvalidInput
from fabula.graph.service import Fabula
from fabula.graph.service.cards import ICON_MEMBER, card_export, charx_export, lorebook_export
from fabula.memory.projections import project_beliefs, project_world
from fabula.settings import Settings
from fabula.testing import imports as fx
from fabula.testing.cli import fabula as run_fabula
from fabula.worlds.imports import import_paths
from fabula.worlds.imports.cards import MAPPED, TEXTS
from fabula.worlds.imports.charx import read_charx
from fabula.worlds.imports.limits import ImportLimits
from fabula.worlds.imports.png import read_text_chunks
from fabula.worlds.loader import load_world
from fabula.worlds.lore import BELIEF_EXTENSION, extension


def _belief_rows(beliefs: Any) -> set[tuple[Any, ...]]:
    return {(b.subject, b.attribute, b.value, b.polarity, b.mode, b.attitude) for b in beliefs}


class TestRoundTrip:
    async def test_story_out_and_back(self, redis_url: str, tmp_path: Path) -> None:
        """hollow_book after its opening, exported as two cards and a lorebook and imported
        again: the same cast (names, descriptions, voices), places, objects and where they
        are, and each character believing what it believed (how it learned it too)."""
        async with Fabula(redis_url, Settings(home=tmp_path)) as fab:
            store = fab.store(await fab.create_story("hollow_book", "tale"))
            head = await store.head()
            paths = []
            for who in ("leo", "mara"):
                data, kind = await card_export(store, who, head)
                assert kind == "json"
                paths.append(tmp_path / f"{who}.json")
                paths[-1].write_bytes(data)
            (tmp_path / "world.json").write_bytes(await lorebook_export(store, head))
            paths.append(tmp_path / "world.json")
            card = json.loads(paths[0].read_text())
            entries = card["data"]["character_book"]["entries"]
            held = [e["extensions"][BELIEF_EXTENSION] for e in entries]
            assert held and all({"valid_from", "valid_to", "mode", "event"} <= set(h) for h in held)

            pack = import_paths(paths, story_id="again").pack
            original = store
            source = load_world("hollow_book")
            assert [(c.name, c.description, c.voice) for c in pack.characters] == [
                (c.name, c.description, c.voice) for c in source.characters
            ]
            assert {p.name for p in pack.places} == {p.name for p in source.places}
            assert {o.name for o in pack.objects} == {o.name for o in source.objects}
            again = fab.store(await fab.create_story(pack, "again"))
            w_before = await project_world(original, as_of=head)
            w_after = await project_world(again)
            assert {(s.subject, s.attribute, s.value) for s in w_after.states.values()} == {
                (s.subject, s.attribute, s.value) for s in w_before.states.values()
            }
            for who in ("leo", "mara"):
                before = await project_beliefs(original, [who], as_of=head)
                after = await project_beliefs(again, [who])
                assert _belief_rows(after.beliefs.values()) == _belief_rows(before.beliefs.values())

    async def test_card_extensions_survive_byte_for_byte(
        self, redis_url: str, tmp_path: Path
    ) -> None:
        """A V2 card with a picture, made a story and exported: a PNG with a ccv3 chunk whose
        unknown extensions (card, book and entry) are byte for byte the card's, and whose
        re-import gives the same character and lore."""
        card = fx.v2_card()
        png = tmp_path / "ben.png"
        png.write_bytes(fx.card_png({"chara": fx.b64(card)}))
        first = import_paths([png], story_id="cove")
        async with Fabula(redis_url, Settings(home=tmp_path)) as fab:
            store = fab.store(await fab.create_story(first.pack, "cove", assets=first.assets))
            data, kind = await card_export(store, "Ben", None)
        assert kind == "png"
        exported = json.loads(base64.b64decode(read_text_chunks(data)["ccv3"]))
        ext, book = exported["data"]["extensions"], exported["data"]["character_book"]
        for key in card["data"]["extensions"]:
            assert json.dumps(ext[key]) == json.dumps(card["data"]["extensions"][key])
        original = card["data"]["character_book"]
        assert json.dumps(book["extensions"]["x_book"]) == json.dumps(
            original["extensions"]["x_book"]
        )
        assert json.dumps(book["entries"][0]["extensions"]) == json.dumps(
            original["entries"][0]["extensions"]
        )
        assert (
            exported["data"]["x_field_from_the_future"] == card["data"]["x_field_from_the_future"]
        )
        # the V3 spec's modification date: when the turn it holds was written, in seconds
        stamp = exported["data"]["modification_date"]
        assert isinstance(stamp, int) and abs(stamp - time.time()) < 600
        back = tmp_path / "back.png"
        back.write_bytes(data)
        second = import_paths([back]).pack
        assert second.characters[0].model_dump(exclude={"image"}) == first.pack.characters[
            0
        ].model_dump(exclude={"image"})
        own = [e for e in second.lore.books[0].entries if extension(e, BELIEF_EXTENSION) is None]
        assert own == list(first.pack.lore.books[0].entries)
        assert second.lore.cards[0].data["extensions"] == card["data"]["extensions"]

    async def test_a_card_exported_again_keeps_its_books_macros(
        self, redis_url: str, tmp_path: Path
    ) -> None:
        """The card's own lorebook entries come back as they came ({{char}}, {{user}}),
        while the story holds them as read; imported again, the same entries."""
        card = fx.v2_card()
        (entry,) = card["data"]["character_book"]["entries"]
        assert "{{char}}" in entry["content"]
        first = import_paths([fx.write_json(tmp_path / "ben.json", card)], story_id="cove")
        assert all("{{" not in e.content for b in first.pack.lore.books for e in b.entries)
        async with Fabula(redis_url, Settings(home=tmp_path)) as fab:
            store = fab.store(await fab.create_story(first.pack, "cove"))
            data, _ = await card_export(store, "Ben", None)
        contents = [e["content"] for e in json.loads(data)["data"]["character_book"]["entries"]]
        assert entry["content"] in contents
        second = import_paths([fx.write_json(tmp_path / "again.json", json.loads(data))]).pack
        own = [e.content for b in second.lore.books for e in b.entries]
        assert next(e.content for b in first.pack.lore.books for e in b.entries) in own

    async def test_a_card_exported_again_keeps_its_macros_and_empty_fields(
        self, redis_url: str, tmp_path: Path
    ) -> None:
        """A card with {{user}} and {{char}} in its texts and an empty scenario, imported and
        exported untouched: the same texts (macros, empty scenario, its greetings); a text
        the story changed is the story's; imported again, the same character."""
        card = fx.v2_card(book=False)
        card["data"]["scenario"] = ""
        card["data"]["personality"] = "{{char}} answers {{user}} slowly."
        first = import_paths([fx.write_json(tmp_path / "ben.json", card)], story_id="cove")
        async with Fabula(redis_url, Settings(home=tmp_path)) as fab:
            store = fab.store(await fab.create_story(first.pack, "cove"))
            data, _ = await card_export(store, "Ben", None)
        out = json.loads(data)["data"]
        texts = tuple(t for t in TEXTS if t in card["data"])
        assert {k: out[k] for k in texts} == {k: card["data"][k] for k in texts}
        second = import_paths([fx.write_json(tmp_path / "again.json", json.loads(data))]).pack
        assert [c.model_dump() for c in second.characters] == [
            c.model_dump() for c in first.pack.characters
        ]
        # a text the story holds otherwise than the card's reading is the story's
        ben = first.pack.characters[0]
        edited = first.pack.model_copy(
            update={
                "characters": (
                    ben.model_copy(update={"description": "Ben mends nets."}),
                    *first.pack.characters[1:],
                )
            }
        )
        async with Fabula(redis_url, Settings(home=tmp_path)) as fab:
            store = fab.store(await fab.create_story(edited, "cove2"))
            data, _ = await card_export(store, "Ben", None)
        out = json.loads(data)["data"]
        assert out["description"] == "Ben mends nets."
        assert out["personality"] == card["data"]["personality"]

    async def test_a_charx_goes_out_and_back_with_its_members(
        self, redis_url: str, tmp_path: Path
    ) -> None:
        """A V3 CHARX with an icon and another member, made a story and exported as CHARX:
        card.json holds every field of the card's (unknown extensions byte for byte), the
        members come back at their paths with their bytes, and importing the export gives
        the same character, lore and assets."""
        card = fx.v3_card()
        icon = fx.tiny_png()
        card["data"]["assets"] = [
            {
                "type": "icon",
                "uri": "embeded://assets/icon/images/main.png",
                "name": "main",
                "ext": "png",
            },
        ]
        members = {"assets/icon/images/main.png": icon, "x_app/notes.json": b'{"k": [1]}'}
        path = tmp_path / "cora.charx"
        path.write_bytes(fx.charx(card, members))
        first = import_paths([path], story_id="lamp")
        async with Fabula(redis_url, Settings(home=tmp_path)) as fab:
            store = fab.store(await fab.create_story(first.pack, "lamp", assets=first.assets))
            data = await charx_export(store, "Cora", None)
            assert data == await charx_export(store, "cora", None)  # the same bytes again
        out = read_charx(data, ImportLimits())
        assert out.members == members
        exported = json.loads(out.card_json)
        for key, value in card["data"].items():
            if key == "extensions":  # every one byte for byte, Fabula's own beside them
                for name, ext in value.items():
                    assert json.dumps(exported["data"][key][name]) == json.dumps(ext)
            elif key == "modification_date":  # the story's: when its turn was written
                assert exported["data"][key] > value
            elif key not in MAPPED:  # verbatim (the mapped ones have their macros resolved)
                assert json.dumps(exported["data"][key]) == json.dumps(value), key
        back = tmp_path / "back.charx"
        back.write_bytes(data)
        second = import_paths([back])
        assert second.pack.characters[0].model_dump(exclude={"image"}) == first.pack.characters[
            0
        ].model_dump(exclude={"image"})
        own = [
            e for e in second.pack.lore.books[0].entries if extension(e, BELIEF_EXTENSION) is None
        ]
        assert own == list(first.pack.lore.books[0].entries)
        assert second.assets == first.assets
        assert second.pack.lore.cards[0].data["extensions"] == card["data"]["extensions"]

    async def test_a_charx_export_of_a_png_card_places_its_picture(
        self, redis_url: str, tmp_path: Path
    ) -> None:
        """A card that came as a PNG has no assets list: its CHARX places the picture as the
        main icon, and importing it gives the picture back."""
        png = tmp_path / "ben.png"
        png.write_bytes(fx.card_png({"chara": fx.b64(fx.v2_card())}))
        first = import_paths([png], story_id="cove")
        async with Fabula(redis_url, Settings(home=tmp_path)) as fab:
            store = fab.store(await fab.create_story(first.pack, "cove", assets=first.assets))
            data = await charx_export(store, "Ben", None)
        out = read_charx(data, ImportLimits())
        image = first.assets[first.pack.characters[0].image]
        assert out.members == {ICON_MEMBER: image}
        assert json.loads(out.card_json)["data"]["assets"][-1]["uri"] == f"embeded://{ICON_MEMBER}"
        back = tmp_path / "ben.charx"
        back.write_bytes(data)
        again = import_paths([back])
        assert again.assets[again.pack.characters[0].image] == image


def test_cli_import_and_export(redis_url: str, tmp_path: Path) -> None:
    """`fabula import --id` then `fabula export --format card|lorebook|lorebook_v3 --out`, as
    processes."""

    def fabula(*args: str) -> subprocess.CompletedProcess[str]:
        return run_fabula(redis_url, *args, check=False)

    ada = fx.write_json(tmp_path / "ada.json", fx.v1_card())
    made = fabula("import", str(ada), "--id", "isle", "--greeting", "0", "--json")
    assert made.returncode == 0, made.stderr
    assert json.loads(made.stdout)["story"] == "isle"
    card, book = tmp_path / "ada-out.json", tmp_path / "isle.json"
    done = fabula("export", "isle", "--format", "card", "--character", "ada", "--out", str(card))
    assert done.returncode == 0, done.stderr
    done = fabula("export", "isle", "--format", "lorebook", "--as-of", "0", "--out", str(book))
    assert done.returncode == 0, done.stderr
    out = json.loads(card.read_text())["data"]
    assert out["name"] == "Ada"
    # exported again, the card's texts are as they came: macros kept, not names
    assert {k: out[k] for k in fx.v1_card() if k != "name"} == {
        k: v for k, v in fx.v1_card().items() if k != "name"
    }
    # SillyTavern's World Info format, the one its import takes: entries at the top level,
    # keyed by a unique uid, every one with a comment
    world = json.loads(book.read_text())
    assert "spec" not in world and isinstance(world["entries"], dict) and world["entries"]
    assert [str(e["uid"]) for e in world["entries"].values()] == list(world["entries"])
    assert all(e["comment"] and isinstance(e["key"], list) for e in world["entries"].values())
    v3 = tmp_path / "isle-v3.json"
    done = fabula("export", "isle", "--format", "lorebook_v3", "--as-of", "0", "--out", str(v3))
    assert done.returncode == 0, done.stderr
    assert json.loads(v3.read_text())["spec"] == "lorebook_v3"
    zipped = tmp_path / "ada.charx"
    done = fabula("export", "isle", "--format", "charx", "--character", "ada", "--out", str(zipped))
    assert done.returncode == 0, done.stderr
    assert (
        json.loads(read_charx(zipped.read_bytes(), ImportLimits()).card_json)["data"]["name"]
        == "Ada"
    )
    done = fabula("export", "isle", "--format", "charx")
    assert done.returncode == InvalidInput.exit_code and "charx needs --character" in done.stderr
    bad = fabula("import", str(tmp_path / "nothing.png"), "--pack", str(tmp_path / "p"))
    assert (
        bad.returncode == InvalidInput.exit_code
        and bad.stderr.count("\n") == 1
        and "no such file" in bad.stderr
    )
    assert not (tmp_path / "p").exists()


async def test_a_world_info_book_comes_back_as_it_was(redis_url: str, tmp_path: Path) -> None:
    """A SillyTavern World Info export imported, then exported as World Info: each entry's
    SillyTavern fields (probability, group, sticky, position, depth, ...) come back as they
    were, under a unique uid, with a comment (its first key when it had none)."""
    wi = fx.st_world_info()
    wi["entries"]["0"].update(probability=40, useProbability=True, group="g", sticky=2, depth=3)
    files = [
        fx.write_json(tmp_path / "ada.json", fx.v1_card()),
        fx.write_json(tmp_path / "wi.json", wi),
    ]
    imported = import_paths(files, story_id="wi")
    async with Fabula(redis_url, Settings(home=tmp_path)) as fab:
        store = fab.store(await fab.import_story(imported, "wi"))
        out = json.loads(await lorebook_export(store, None))
    first = next(
        e for e in out["entries"].values() if e["content"] == wi["entries"]["0"]["content"]
    )
    for field in ("probability", "useProbability", "group", "sticky", "depth", "key", "order"):
        assert first[field] == wi["entries"]["0"][field], field
    assert len({e["uid"] for e in out["entries"].values()}) == len(out["entries"])
    assert all(e["comment"] for e in out["entries"].values())


async def test_a_cards_added_entries_never_take_its_own_entries_ids(
    redis_url: str, tmp_path: Path
) -> None:
    """A card whose own entries are numbered 2 and 3, exported with what its character
    believes: SillyTavern files each entry under ``id``, else its place
    (``convertCharacterBook``, world-info.js 4523-4526), so every entry must land under its
    own number, the added ones with a comment for a title (the issue's card kept 2 of 4)."""
    card = fx.v2_card()
    own = card["data"]["character_book"]["entries"][0]
    card["data"]["character_book"]["entries"] = [
        {**own, "id": 2, "comment": "the ledger"},
        {**own, "id": 3, "comment": "the crossing", "content": "The crossing is at dawn."},
    ]
    imported = import_paths([fx.write_json(tmp_path / "ben.json", card)], story_id="cove")
    async with Fabula(redis_url, Settings(home=tmp_path)) as fab:
        store = fab.store(await fab.import_story(imported, "cove"))
        data, _ = await card_export(store, "Ben", None)
    entries = json.loads(data)["data"]["character_book"]["entries"]
    filed = [e.get("id", i) for i, e in enumerate(entries)]  # as SillyTavern files them
    assert len(set(filed)) == len(entries) > 2 and filed[:2] == [2, 3]
    assert all(e["comment"] for e in entries)


async def test_a_v2_card_exported_is_a_v3_card_as_the_spec_has_it(
    redis_url: str, tmp_path: Path
) -> None:
    """A V2 card as SillyTavern writes it (its V1 fields again beside ``spec`` and ``data``)
    exported: the V3 card is ``spec``, ``spec_version`` and ``data`` only (SPEC_V3), the
    fields that were beside them kept under ``data.extensions["fabula/top"]``."""
    card = fx.v2_card()
    card.update(name="Ben", description="old copy", x_top=[1])
    imported = import_paths([fx.write_json(tmp_path / "ben.json", card)], story_id="cove")
    async with Fabula(redis_url, Settings(home=tmp_path)) as fab:
        store = fab.store(await fab.import_story(imported, "cove"))
        data, _ = await card_export(store, "Ben", None)
    out = json.loads(data)
    assert set(out) == {"spec", "spec_version", "data"}
    assert out["data"]["extensions"]["fabula/top"] == {
        "name": "Ben",
        "description": "old copy",
        "x_top": [1],
    }


async def test_a_card_round_trips_what_only_fabula_knows(redis_url: str, tmp_path: Path) -> None:
    """hollow_book's Leo exported as a card and imported alone: his goals, and the world's
    title, style, outline and rules, come back from ``extensions["fabula/character"]`` and
    ``extensions["fabula/world"]`` (they were lost before)."""
    source = load_world("hollow_book")
    async with Fabula(redis_url, Settings(home=tmp_path)) as fab:
        store = fab.store(await fab.create_story("hollow_book", "tale"))
        data, _ = await card_export(store, "leo", None)
    path = tmp_path / "leo.json"
    path.write_bytes(data)
    pack = import_paths([path]).pack
    leo = next(c for c in pack.characters if c.name == "Leo")
    assert leo.goals == next(c for c in source.characters if c.name == "Leo").goals
    assert (pack.title, pack.style, pack.outline, pack.rules) == (
        source.title,
        source.style,
        source.outline,
        source.rules,
    )
