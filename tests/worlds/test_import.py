"""`fabula import`: cards (V1/V2/V3 as JSON, PNG, CHARX), lorebooks of five formats and
BookWorld presets become one world pack, every field mapped or kept; bad input is one
line and writes nothing."""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path
from typing import Any

import pytest

from fabula.errors import InvalidInput
from fabula.graph.service import Fabula
from fabula.memory.projections import project_world
from fabula.settings import Settings
from fabula.testing import imports as fx
from fabula.worlds.imports import ImportLimits, import_paths, write_pack
from fabula.worlds.imports.cards import MAPPED
from fabula.worlds.imports.png import read_text_chunks
from fabula.worlds.loader import load_world
from fabula.worlds.lore import split_decorators

BOOKWORLD = Path("/work/shared/data/imports/bookworld/experiment_presets")
if not BOOKWORLD.is_dir():  # the repository's copy of the shared data, when run elsewhere
    BOOKWORLD = (
        Path(__file__).resolve().parents[3] / "shared/data/imports/bookworld/experiment_presets"
    )


def one(tmp_path: Path, name: str, doc: Any, **kw: Any) -> Any:
    return import_paths([fx.write_json(tmp_path / name, doc)], **kw).pack


class TestCards:
    def test_v1_fields_macros_and_examples(self, tmp_path: Path) -> None:
        """A V1 card: description, voice and premise where they live, macros resolved (any
        spelling), mes_example split at <START>, first_mes the opening to choose from; the
        {{user}} it speaks to joins the cast, as a character a person plays."""
        pack = one(tmp_path, "ada.json", fx.v1_card(), user="Sam")
        ada, sam = pack.characters
        assert (sam.name, sam.played, ada.played) == ("Sam", True, False)
        assert sam.location == ada.location
        assert pack.title == "Ada"
        assert (ada.name, ada.description, ada.voice) == (
            "Ada",
            "Ada keeps the lighthouse logbook.",
            "clipped, dry",
        )
        assert pack.premise == "A storm-bound island; Sam has come by boat."
        assert ada.examples == ("Sam: Hello\nAda: Go away.", "Sam: The log?\nAda: Mine.")
        assert [(g.character, g.text) for g in pack.opening.greetings] == [
            ("Ada", 'Ada looks up. "Who are you, Sam?"')  # the action narrated, no markup
        ]
        assert pack.lore.cards[0].spec == "chara_card_v1"

    def test_v2_everything_mapped_or_kept(self, tmp_path: Path) -> None:
        """A V2 card: its book is the character's own, its greetings (empty ones dropped)
        follow the first, and every unmapped field — extensions, unknown fields — is kept
        verbatim."""
        card = fx.v2_card()
        pack = one(tmp_path, "ben.json", card)
        ben, _user = pack.characters
        assert ben.voice == "easy, evasive" and ben.examples == ("Ben: Nice night for it.",)
        assert [g.text for g in pack.opening.greetings] == [
            "Evening, User.",
            "Ben hauls a crate ashore.",
        ]
        kept = pack.lore.card_of("Ben")
        assert kept is not None and (kept.spec, kept.spec_version) == ("chara_card_v2", "2.0")
        assert kept.data == {k: v for k, v in card["data"].items() if k not in MAPPED}
        assert json.dumps(kept.data["extensions"]) == json.dumps(card["data"]["extensions"])
        (book,) = pack.lore.books
        assert book.owner == "Ben" and (book.scan_depth, book.token_budget) == (4, 500)
        (entry,) = book.entries
        assert entry.keys == ("brandy", "crate") and entry.secondary_keys == ("inspector",)
        assert (entry.logic, entry.whole_words, entry.order, entry.priority) == (
            "not_any",
            True,
            10,
            5,
        )
        assert entry.content == "Ben hides brandy in the sea chest."
        assert entry.kept == {
            "extensions": card["data"]["character_book"]["entries"][0]["extensions"],
            "id": 0,
            "comment": "the secret",
            "case_sensitive": False,  # SillyTavern reads extensions.case_sensitive instead
        }
        assert entry.case_sensitive is None

    def test_v3_nickname_group_greetings_regex_and_decorators(self, tmp_path: Path) -> None:
        """V3: {{char}} is the nickname, group-only greetings are marked, a regex entry and
        its decorators are read and kept."""
        pack = one(tmp_path, "cora.json", fx.v3_card())
        (cora,) = pack.characters
        assert cora.description == "the inspector comes from the mainland board."
        assert [(g.text, g.group_only) for g in pack.opening.greetings] == [
            ("I am the inspector.", False),
            ("the inspector nods to everyone.", True),
        ]
        (entry,) = pack.lore.books[0].entries
        # SillyTavern's convertCharacterBook ignores use_regex (world-info.js 4519-4566): kept
        assert not entry.use_regex and entry.kept["use_regex"] is True
        assert entry.keys == ("log(book)?",)
        assert split_decorators(entry.content) == (
            ["@@depth 4", "@@@instruct_depth 4"],
            "The logbook lists every boat.",
        )
        kept = pack.lore.card_of("Cora")
        assert kept is not None and kept.data["creator_notes_multilingual"] == {
            "fr": "Une inspectrice."
        }

    def test_several_cards_make_one_cast(self, tmp_path: Path) -> None:
        """Cards given together are one cast, each with its own book, each where its own
        greeting or scenario puts it among the places the cards name."""
        paths = [
            fx.write_json(tmp_path / "a.json", fx.v1_card()),
            fx.write_json(tmp_path / "b.json", fx.v2_card()),
            fx.write_json(tmp_path / "c.json", fx.v3_card()),
        ]
        pack = import_paths(paths).pack
        assert [c.name for c in pack.characters] == ["Ada", "Ben", "Cora", "User"]
        assert [c.name for c in pack.characters if c.played] == ["User"]
        assert [c.location for c in pack.characters] == [
            "storm-bound island",
            "cove",
            "lamp room",
            "storm-bound island",  # where Ada, the first to speak to {{user}}, starts
        ]
        assert [b.owner for b in pack.lore.books] == ["Ben", "Cora"]
        assert pack.title == "Ada & Ben & Cora"

    def test_a_name_in_another_script_gets_an_ascii_one(self, tmp_path: Path) -> None:
        """A card whose name has no ASCII form is named from its file; its name is an alias."""
        card = fx.v2_card(name="セラフィナ", book=False)
        pack = one(tmp_path, "seraphina.json", card)
        assert (pack.characters[0].name, pack.characters[0].aliases) == (
            "seraphina",
            ("セラフィナ",),
        )


class TestContainers:
    def test_png_chara_chunk(self, tmp_path: Path) -> None:
        """A PNG card: the base64 JSON of its 'chara' chunk; its picture kept without it."""
        path = tmp_path / "ben.png"
        path.write_bytes(fx.card_png({"chara": fx.b64(fx.v2_card())}))
        imported = import_paths([path])
        assert imported.pack.characters[0].name == "Ben"
        image = imported.assets[imported.pack.characters[0].image]
        assert read_text_chunks(image) == {} and image.startswith(b"\x89PNG")

    def test_ccv3_wins_over_chara(self, tmp_path: Path) -> None:
        """With both chunks, the V3 one is read."""
        path = tmp_path / "both.png"
        path.write_bytes(
            fx.card_png({"chara": fx.b64(fx.v2_card("Old")), "ccv3": fx.b64(fx.v3_card("New"))})
        )
        pack = import_paths([path]).pack
        assert pack.characters[0].name == "New" and pack.lore.cards[0].spec == "chara_card_v3"

    def test_charx_with_assets(self, tmp_path: Path) -> None:
        """A CHARX: card.json read, its embeded:// icon the picture, every member kept."""
        card = fx.v3_card()
        card["data"]["assets"] = [
            {
                "type": "icon",
                "uri": "embeded://assets/icon/images/main.png",
                "name": "main",
                "ext": "png",
            }
        ]
        path = tmp_path / "cora.charx"
        path.write_bytes(
            fx.charx(card, {"assets/icon/images/main.png": fx.tiny_png(), "x_app.json": b"{}"})
        )
        imported = import_paths([path])
        cora = imported.pack.characters[0]
        assert imported.assets[cora.image] == fx.tiny_png()
        assert "assets/cora/x_app.json" in imported.assets


class TestLorebooks:
    def test_sillytavern_world_info(self, tmp_path: Path) -> None:
        """SillyTavern World Info: every ST field mapped or kept; a /regex/ key is a key."""
        doc = fx.st_world_info()
        paths = [
            fx.write_json(tmp_path / "ada.json", fx.v1_card()),
            fx.write_json(tmp_path / "wi.json", doc),
        ]
        (book,) = [b for b in import_paths(paths).pack.lore.books if b.owner is None]
        tower, boat = book.entries
        assert tower.keys == ("tower", "/lamp\\s+room/i") and tower.logic == "and_all"
        assert (tower.case_sensitive, tower.exclude_recursion, tower.order) == (True, True, 50)
        assert boat.enabled is False
        assert tower.kept["probability"] == 100 and tower.kept["position"] == 4
        assert book.kept == {"originalData": {"name": "island"}}

    @pytest.mark.parametrize(
        ("maker", "fmt", "keys", "content"),
        [
            (fx.v3_lorebook, "lorebook_v3", ("cove",), "The cove is shingle."),
            (fx.novelai_book, "novelai", ("Ada",), "Ada keeps the log."),
            (fx.agnai_book, "agnai", ("key",), "The spare key is brass."),
            (fx.kobold_book, "koboldai", ("chest", "sea chest"), "The chest is oak."),
        ],
    )
    def test_other_formats(
        self, tmp_path: Path, maker: Any, fmt: str, keys: tuple[str, ...], content: str
    ) -> None:
        """lorebook_v3, NovelAI, Agnai and KoboldAI books are detected and read."""
        paths = [
            fx.write_json(tmp_path / "ada.json", fx.v1_card()),
            fx.write_json(tmp_path / "book.json", maker()),
        ]
        (book,) = [b for b in import_paths(paths).pack.lore.books if b.owner is None]
        assert book.format == fmt
        assert (book.entries[0].keys, book.entries[0].content) == (keys, content)


class TestBookWorld:
    def test_english_preset(self, tmp_path: Path) -> None:
        """The English example: its places, its two agents (with their icons), the other
        role as lore, the intervention as a greeting, relations in each role's own book."""
        imported = import_paths([BOOKWORLD / "example_free.json"])
        pack = imported.pack
        assert [p.name for p in pack.places] == ["Laboratory", "University", "Eldridge Corporation"]
        assert [c.name for c in pack.characters] == ["Lacia·Eldridge", "Trek·Vemil"]
        assert all(imported.assets[c.image].startswith(b"\x89PNG") for c in pack.characters)
        owned = {b.owner: b for b in pack.lore.books if b.owner}
        assert [e.keys for e in owned["Lacia·Eldridge"].entries] == [
            ("Trek·Vemil",),
            ("Falko·Weiss",),
        ]
        assert pack.opening.greetings[0].character is None
        assert pack.lore.kept["bookworld"]["map"]["places"] == [
            "laboratory",
            "university",
            "eldridge_corporation",
        ]

    def test_chinese_preset_ids_ascii_stable_names_kept(self, tmp_path: Path) -> None:
        """The Chinese preset: ids are ASCII and readable (from the role codes), the Chinese
        names are aliases, and two imports give the same pack."""
        pack = import_paths([BOOKWORLD / "experiment_icefire.json"]).pack
        names = {c.name: c.aliases for c in pack.characters}
        assert names["Tywin Lannister" if "Tywin Lannister" in names else "Sansa Stark"]
        assert names["Sansa Stark"] == ("珊莎·史塔克", "珊莎")
        assert all(c.name.isascii() for c in pack.characters)
        assert pack.places[1].name == "King's Landing" and pack.places[1].aliases == ("君临城",)
        again = import_paths([BOOKWORLD / "experiment_icefire.json"]).pack
        assert again.model_dump() == pack.model_dump()

    def test_crowded_preset_as_a_pack_folder(self, tmp_path: Path) -> None:
        """The Ice and Fire preset written as a pack folder loads back as the same pack."""
        imported = import_paths([BOOKWORLD / "experiment_icefire.json"])
        written = write_pack(imported.pack, imported.assets, tmp_path / "westeros")
        assert load_world(written.parent).model_dump() == imported.pack.model_dump()
        assert 'lore = "lore.json"' in written.read_text(encoding="utf-8")


class TestPackFolderAndStory:
    def test_pack_folder_round_trip(self, tmp_path: Path) -> None:
        """A pack folder from cards loads back as the imported pack, pictures included."""
        png = tmp_path / "ben.png"
        png.write_bytes(fx.card_png({"chara": fx.b64(fx.v2_card())}))
        imported = import_paths([png, fx.write_json(tmp_path / "ada.json", fx.v1_card())])
        folder = tmp_path / "out"
        write_pack(imported.pack, imported.assets, folder)
        loaded = load_world(folder)
        assert loaded.model_dump() == imported.pack.model_dump()
        assert (folder / loaded.characters[0].image).read_bytes() == imported.assets[
            loaded.characters[0].image
        ]

    def test_keys_that_are_no_bare_toml_keys(self, tmp_path: Path) -> None:
        """Issue 45, low: a card whose W++ category is "Größe" was written as the bare key
        `Größe = ...` (an identifier to Python, not to TOML), and the error named the
        temporary folder. Such a key is quoted and the pack loads back."""
        card = fx.v2_card()
        card["data"]["description"] = '[character("Ben") { Größe("tall") Personality("shy") }]'
        imported = import_paths([fx.write_json(tmp_path / "ben.json", card)])
        traits = imported.pack.characters[0].traits
        assert any(not k.isascii() for k in traits), traits
        folder = tmp_path / "out"
        write_pack(imported.pack, imported.assets, folder)
        assert load_world(folder).model_dump() == imported.pack.model_dump()
        assert not [p for p in tmp_path.iterdir() if p.name.startswith(".fabula-import-")]

    async def test_story_with_a_greeting(self, redis_url: str, tmp_path: Path) -> None:
        """--id: a story of the small cast, its pictures kept with it, started with the
        chosen greeting; the user is played."""
        png = tmp_path / "ben.png"
        png.write_bytes(fx.card_png({"chara": fx.b64(fx.v2_card())}))
        imported = import_paths(
            [png, fx.write_json(tmp_path / "ada.json", fx.v1_card())], story_id="cove"
        )
        async with Fabula(redis_url, Settings(home=tmp_path)) as fab:
            store = fab.store(
                await fab.create_story(imported.pack, "cove", assets=imported.assets, greeting=2)
            )
            assert await store.head() == 1
            assert [t.text for t in await store.turn_texts(1)] == [
                'Ada looks up. "Who are you, User?"'
            ]
            world = await project_world(store)
            assert world.where("ben") == "cove" and world.where("ada") == "storm_bound_island"
            assert await store.assets() == imported.assets
            # the {{user}} the cards speak to is a character of the story, played
            assert world.where("user") == world.where("ben")  # Ben's card speaks to {{user}}
            assert await store.played() == ["user"]


def _charx_with(members: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        for name, data in members.items():
            z.writestr(name, data)
    return buf.getvalue()


def _bad(
    tmp_path: Path, name: str, data: bytes | Any, needle: str, limits: ImportLimits | None = None
) -> None:
    path = tmp_path / name
    if isinstance(data, bytes):
        path.write_bytes(data)
    else:
        fx.write_json(path, data)
    out = tmp_path / "pack"
    with pytest.raises(InvalidInput) as caught:
        imported = import_paths([path], limits=limits)
        write_pack(imported.pack, imported.assets, out)
    message = str(caught.value)
    assert needle in message and "\n" not in message and str(path) in message
    assert not out.exists()


def _cycle_book() -> dict[str, Any]:
    book = fx.v3_lorebook()
    book["data"]["entries"] = [
        {
            "keys": ["cove"],
            "content": "The cove is below the tower.",
            "extensions": {},
            "enabled": True,
            "insertion_order": 1,
            "use_regex": False,
            "constant": False,
            "name": "cove",
        },
        {
            "keys": ["tower"],
            "content": "The tower looks over the cove.",
            "extensions": {},
            "enabled": True,
            "insertion_order": 2,
            "use_regex": False,
            "constant": False,
            "name": "tower",
        },
    ]
    return book


class TestBadInput:
    def test_png_without_a_card(self, tmp_path: Path) -> None:
        """A PNG with no chara/ccv3 chunk is no card."""
        _bad(tmp_path, "plain.png", fx.tiny_png(), "no character card in it")

    def test_bad_base64(self, tmp_path: Path) -> None:
        """A chunk that is not base64."""
        _bad(tmp_path, "b.png", fx.card_png({"chara": b"!!not base64!!"}), "not valid base64")

    def test_bad_json(self, tmp_path: Path) -> None:
        """A chunk whose base64 decodes to no JSON, and a JSON file that is not JSON."""
        import base64

        _bad(
            tmp_path, "j.png", fx.card_png({"chara": base64.b64encode(b"{nope")}), "not valid JSON"
        )
        _bad(tmp_path, "j.json", b"{nope", "not valid JSON")

    def test_unknown_spec_and_version(self, tmp_path: Path) -> None:
        """An unknown spec, and a V2 card that says it is version 3."""
        _bad(tmp_path, "s.json", {"spec": "chara_card_v9", "data": {}}, "unknown card spec")
        card = fx.v2_card()
        card["spec_version"] = "3.0"
        _bad(tmp_path, "v.json", card, "Fabula reads 2.x")
        card = fx.v3_card()
        card["spec_version"] = "4.1"
        _bad(tmp_path, "v3.json", card, "Fabula reads 3.x")

    def test_card_over_the_size_limit(self, tmp_path: Path) -> None:
        """A card past max_card_bytes is not parsed (in a PNG: not even decoded)."""
        small = ImportLimits(max_card_bytes=200)
        _bad(tmp_path, "big.json", fx.v2_card(), "more than the 200 allowed", small)
        _bad(
            tmp_path,
            "big.png",
            fx.card_png({"chara": fx.b64(fx.v2_card())}),
            "200 bytes a card",
            small,
        )

    def test_charx_not_a_zip(self, tmp_path: Path) -> None:
        """A file that starts like a zip and is not one."""
        _bad(tmp_path, "x.charx", b"PK\x03\x04 not really", "not a zip archive")

    def test_zip_bomb_refused_before_extracting(self, tmp_path: Path) -> None:
        """A CHARX that would unpack past the limit is refused from its directory."""
        bomb = io.BytesIO()
        with zipfile.ZipFile(bomb, "w", zipfile.ZIP_DEFLATED) as z:
            z.writestr("card.json", json.dumps(fx.v3_card()))
            z.writestr("assets/other/pad.bin", b"\0" * 2_000_000)
        assert len(bomb.getvalue()) < 20_000  # the archive is small; it unpacks to 2 MB
        _bad(
            tmp_path,
            "bomb.charx",
            bomb.getvalue(),
            "would unpack to",
            ImportLimits(max_unpacked_bytes=1_000_000),
        )

    def test_member_paths_that_climb_out(self, tmp_path: Path) -> None:
        """A member named ../x, and an asset URI embeded://../x, are refused."""
        card = json.dumps(fx.v3_card()).encode()
        _bad(
            tmp_path,
            "climb.charx",
            _charx_with({"card.json": card, "../evil.png": b"x"}),
            "climbs out",
        )
        uri = fx.v3_card()
        uri["data"]["assets"] = [
            {"type": "icon", "uri": "embeded://../../etc/passwd", "name": "main", "ext": "png"}
        ]
        _bad(tmp_path, "uri.charx", fx.charx(uri), "climbs out")

    def test_invalid_regex(self, tmp_path: Path) -> None:
        """Keys as SillyTavern reads them: a card's ``use_regex`` is ignored
        (``convertCharacterBook``, world-info.js 4519-4566), so ``log(book`` is plain text;
        ``/[unclosed/`` is no regex JavaScript compiles, so plain text too
        (``parseRegexFromString``, 2251-2255); a lookbehind JavaScript runs and RE2 cannot
        is the one entry imported disabled, with one finding naming it (issues 45, 49)."""
        card = fx.v3_card()
        card["data"]["character_book"]["entries"][0]["keys"] = ["log(book"]
        card["data"]["character_book"]["entries"][0]["use_regex"] = True
        book = fx.st_world_info()
        book["entries"]["0"]["key"] = ["/[unclosed/"]
        book["entries"]["1"].update(key=["/(?<=a)b/"], disable=False)
        paths = [
            fx.write_json(tmp_path / "r.json", card),
            fx.write_json(tmp_path / "wi.json", book),
        ]
        imported = import_paths(paths)
        [found] = imported.findings
        assert "not a valid regular expression for RE2" in found and "\n" not in found
        assert "wi.json: entries[1] (" in found and "imported disabled" in found
        books = {b.format: b for b in imported.pack.lore.books}
        own, world = books["character_book"], books["sillytavern"]
        assert own.entries[0].use_regex is False and own.entries[0].kept["use_regex"] is True
        assert own.entries[0].enabled and world.entries[0].enabled
        assert not world.entries[1].enabled

    def test_recursion_cycle(self, tmp_path: Path) -> None:
        """A recursively scanned book whose entries activate each other in a cycle; the same
        entries without recursive scanning import."""
        paths = [
            fx.write_json(tmp_path / "ada.json", fx.v1_card()),
            fx.write_json(tmp_path / "c.json", _cycle_book()),
        ]
        with pytest.raises(InvalidInput, match="'cove' -> 'tower' -> 'cove' activate each other"):
            import_paths(paths)
        quiet = _cycle_book()
        quiet["data"]["recursive_scanning"] = False
        fx.write_json(paths[1], quiet)
        assert len(import_paths(paths).pack.lore.books[0].entries) == 2

    def test_no_character_and_not_a_known_file(self, tmp_path: Path) -> None:
        """Lorebooks alone make no world; a JSON that is nothing Fabula knows is named."""
        _bad(tmp_path, "lb.json", fx.v3_lorebook(), "no character")
        _bad(
            tmp_path, "odd.json", {"hello": 1}, "not a character card, lorebook or BookWorld preset"
        )

    def test_existing_pack_folder_is_left_alone(self, tmp_path: Path) -> None:
        """--pack into a folder with files in it is refused and the folder is unchanged."""
        folder = tmp_path / "mine"
        folder.mkdir()
        (folder / "notes.txt").write_text("keep me")
        imported = import_paths([fx.write_json(tmp_path / "ada.json", fx.v1_card())])
        with pytest.raises(InvalidInput, match="is not an empty folder"):
            write_pack(imported.pack, imported.assets, folder)
        assert [p.name for p in folder.iterdir()] == ["notes.txt"]


class TestLoreInRecall:
    async def test_world_lore_in_the_writers_recall(self, redis_url: str, tmp_path: Path) -> None:
        """The writer's recall has the world lore its request activates, each entry with the
        key that fired it, within a quarter of the budget; a character's own book never
        reaches it, and a character's recall has its own book's lore, never the world's."""
        paths = [
            fx.write_json(tmp_path / "ben.json", fx.v2_card()),
            fx.write_json(tmp_path / "wi.json", fx.st_world_info()),
        ]
        imported = import_paths(paths, story_id="isle")
        async with Fabula(redis_url, Settings(home=tmp_path)) as fab:
            store = await fab.create_story(imported.pack, "isle")
            found = await fab.read(store).recall("Up the tower at night, brandy?", budget=400)
            assert [(x.name, x.fired, x.key) for x in found.lore] == [("The tower", "key", "tower")]
            assert found.lore[0].text == "The tower is white."
            assert found.tokens + sum(x.tokens for x in found.lore) <= 400
            # a case-sensitive entry: 'Tower' does not fire it; AND ALL: nor 'tower' by day
            assert (await fab.read(store).recall("the Tower at night", budget=400)).lore == []
            assert (await fab.read(store).recall("the tower by day", budget=400)).lore == []
            assert all("brandy" not in x.text for x in found.lore)
            mine = await fab.read(store).recall(
                "Up the tower at night, brandy?", budget=400, character="ben"
            )
            assert [(x.name, x.fired, x.key) for x in mine.lore] == [("brandy", "key", "brandy")]
            assert mine.lore[0].text == "Ben hides brandy in the sea chest."
