"""Export and back: a character as a V3 card holding what it believes, the world as a
lorebook_v3; imported again they give the same characters, world, lore and beliefs, and
unknown extensions byte for byte."""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from fabula.errors import InvalidInput
from fabula.graph.cli.imports import card_export, lorebook_export
from fabula.graph.service import Fabula
from fabula.memory.projections import project_beliefs, project_world
from fabula.settings import Settings
from fabula.testing import imports as fx
from fabula.worlds.imports import import_paths
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
            store = await fab.create_story("hollow_book", "tale")
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
            again = await fab.create_story(pack, "again")
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
            store = await fab.create_story(first.pack, "cove", assets=first.assets)
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
        back = tmp_path / "back.png"
        back.write_bytes(data)
        second = import_paths([back]).pack
        assert second.characters[0].model_dump(exclude={"image"}) == first.pack.characters[
            0
        ].model_dump(exclude={"image"})
        own = [e for e in second.lore.books[0].entries if extension(e, BELIEF_EXTENSION) is None]
        assert own == list(first.pack.lore.books[0].entries)
        assert second.lore.cards[0].data["extensions"] == card["data"]["extensions"]


def test_cli_import_and_export(redis_url: str, tmp_path: Path) -> None:
    """`fabula import --id` then `fabula export --format card|lorebook --out`, as processes."""
    env = {**os.environ, "FABULA_REDIS_URL": redis_url}

    def fabula(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "fabula", *args],
            capture_output=True,
            text=True,
            env=env,
            timeout=120,
        )

    ada = fx.write_json(tmp_path / "ada.json", fx.v1_card())
    made = fabula("import", str(ada), "--id", "isle", "--greeting", "0", "--json")
    assert made.returncode == 0, made.stderr
    assert json.loads(made.stdout)["story"] == "isle"
    card, book = tmp_path / "ada-out.json", tmp_path / "isle.json"
    done = fabula("export", "isle", "--format", "card", "--character", "ada", "--out", str(card))
    assert done.returncode == 0, done.stderr
    done = fabula("export", "isle", "--format", "lorebook", "--as-of", "0", "--out", str(book))
    assert done.returncode == 0, done.stderr
    assert json.loads(card.read_text())["data"]["name"] == "Ada"
    assert json.loads(book.read_text())["spec"] == "lorebook_v3"
    bad = fabula("import", str(tmp_path / "nothing.png"), "--pack", str(tmp_path / "p"))
    assert (
        bad.returncode == InvalidInput.exit_code
        and bad.stderr.count("\n") == 1
        and "no such file" in bad.stderr
    )
    assert not (tmp_path / "p").exists()
