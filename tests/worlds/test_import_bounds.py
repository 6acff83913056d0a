"""Imports that a hostile file tries to stretch: a preset whose links lead out of its folder,
pictures that are no pictures, archives that inflate or whose member names could be no
file's, JSON nested past what the parser or the store can take, and a story whose creation
fails halfway. Each was a traceback, a leak or a story left hidden; each is one line now,
and nothing is written."""

from __future__ import annotations

import io
import json
import struct
import tracemalloc
import zipfile
import zlib
from pathlib import Path
from typing import Any

import pytest

from fabula.errors import InvalidInput
from fabula.graph.service import Fabula
from fabula.memory.connection import connect
from fabula.settings import Settings
from fabula.testing import imports as fx
from fabula.worlds.imports import ImportLimits, import_paths, write_pack
from fabula.worlds.imports.fields import json_depth
from fabula.worlds.imports.png import PNG_SIGNATURE, read_text_chunks, without_card_chunks
from fabula.worlds.lore import KeptCard

JPEG = fx.TINY_JPEG
preset = fx.bookworld_preset
MiB = 1024 * 1024


def refused(paths: list[Path], needle: str, limits: ImportLimits | None = None) -> str:
    """Import ``paths`` (and write a pack folder): InvalidInput, one line holding ``needle``,
    no pack folder."""
    out = paths[0].parent / "out-pack"
    with pytest.raises(InvalidInput) as caught:
        imported = import_paths(paths, limits=limits)
        write_pack(imported.pack, imported.assets, out)
    message = str(caught.value)
    assert needle in message and "\n" not in message, message
    assert not out.exists()
    return message


def zipped(members: dict[str, bytes], method: int = zipfile.ZIP_DEFLATED) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", method) as z:
        for name, data in members.items():
            z.writestr(name, data)
    return buf.getvalue()


def card_json(name: str = "Cora") -> bytes:
    return json.dumps(fx.v3_card(name)).encode()


def write(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path


def nested(depth: int) -> dict[str, Any]:
    inner: dict[str, Any] = {}
    top = inner
    for _ in range(depth):
        inner["d"] = {}
        inner = inner["d"]
    return top


class TestPresetStaysInItsFolder:
    def test_an_icon_linked_outside_is_refused(self, tmp_path: Path) -> None:
        """An icon.png linked to a file outside the preset became the character's picture
        (a private key, shipped by `export --format charx`); now it is refused, unread."""
        secret = tmp_path / "id_rsa"
        secret.write_text("-----BEGIN OPENSSH PRIVATE KEY-----\n")
        path = preset(tmp_path / "p")
        icon = tmp_path / "p/data/roles/isle/Ann-en/icon.png"
        icon.unlink()
        icon.symlink_to(secret)
        message = refused([path], "leads out of the preset's folder")
        assert "roles/Ann-en/icon.png" in message and "BEGIN" not in message

    def test_lines_linked_outside_are_refused(self, tmp_path: Path) -> None:
        """A role_lines.jsonl linked outside landed in the character's examples."""
        outside = tmp_path / "lines.jsonl"
        outside.write_text('{"text": "SECRET"}\n')
        path = preset(tmp_path / "p")
        lines = tmp_path / "p/data/roles/isle/Ann-en/role_lines.jsonl"
        lines.unlink()
        lines.symlink_to(outside)
        assert "SECRET" not in refused([path], "roles/Ann-en/role_lines.jsonl")

    def test_lines_hard_linked_from_outside_are_refused(self, tmp_path: Path) -> None:
        """Issue 45: a hard link in a preset folder was read as if the file were inside it
        (no path says where a hard link leads)."""
        outside = tmp_path / "lines.jsonl"
        outside.write_text('{"text": "SECRET"}\n')
        path = preset(tmp_path / "p")
        lines = tmp_path / "p/data/roles/isle/Ann-en/role_lines.jsonl"
        lines.unlink()
        lines.hardlink_to(outside)
        message = refused([path], "is a hard link")
        assert "SECRET" not in message and "roles/Ann-en/role_lines.jsonl" in message

    def test_a_role_folder_linked_outside_is_refused(self, tmp_path: Path) -> None:
        """A role's whole folder linked to one outside the preset."""
        path = preset(tmp_path / "p")
        role = tmp_path / "p/data/roles/isle/Ann-en"
        role.rename(tmp_path / "elsewhere")
        role.symlink_to(tmp_path / "elsewhere")
        refused([path], "leads out of the preset's folder")

    def test_links_inside_and_a_linked_root_are_followed(self, tmp_path: Path) -> None:
        """A link that stays inside is read; a preset reached through a linked folder
        reads the same, and a member of it linked back out of the real folder is refused."""
        real = tmp_path / "real"
        preset(real)
        shared = real / "data/icons/ann.png"
        shared.parent.mkdir()
        shared.write_bytes(fx.tiny_png())
        icon = real / "data/roles/isle/Ann-en/icon.png"
        icon.unlink()
        icon.symlink_to(Path("../../../icons/ann.png"))
        (tmp_path / "link").symlink_to(real)
        via_link = tmp_path / "link/experiment_presets/isle.json"
        imported = import_paths([via_link])
        assert imported.assets["assets/ann/icon.png"] == fx.tiny_png()
        (tmp_path / "notes.png").write_bytes(fx.tiny_png())
        icon.unlink()
        icon.symlink_to(tmp_path / "link/../notes.png")
        refused([via_link], "leads out of the preset's folder")


class TestPictures:
    def test_an_icon_that_is_no_picture_is_refused(self, tmp_path: Path) -> None:
        """An icon.png was kept whatever it held; now it must be a PNG, JPEG or WebP."""
        path = preset(tmp_path / "p")
        (tmp_path / "p/data/roles/isle/Ann-en/icon.png").write_text("not a picture")
        refused([path], "is not a picture (PNG, JPEG or WebP)")

    def test_a_jpeg_icon_is_kept_as_a_jpeg(self, tmp_path: Path) -> None:
        """BookWorld's icon.png files are often JPEGs: kept, named as what they are."""
        path = preset(tmp_path / "p")
        (tmp_path / "p/data/roles/isle/Ann-en/icon.png").write_bytes(JPEG)
        imported = import_paths([path])
        assert imported.pack.characters[0].image == "assets/ann/icon.jpeg"
        assert imported.assets["assets/ann/icon.jpeg"] == JPEG

    def test_a_charx_asset_that_is_not_what_it_claims(self, tmp_path: Path) -> None:
        """A CHARX asset whose ext says png holds something else."""
        card = fx.v3_card()
        card["data"]["assets"] = [
            {"type": "icon", "uri": "embeded://assets/icon/main.png", "name": "main", "ext": "png"}
        ]
        data = fx.charx(card, {"assets/icon/main.png": b"#!/bin/sh\n"})
        refused([write(tmp_path / "c.charx", data)], "is not the png picture its ext says")


class TestArchivesThatInflate:
    def test_a_member_past_its_ratio(self, tmp_path: Path) -> None:
        """20 MB of zeros in a 20 KB CHARX, declared honestly (under the archive's bound):
        stopped at the ratio a picture never has, after a megabyte."""
        data = zipped({"card.json": card_json(), "assets/pad.bin": b"\0" * 20_000_000})
        assert len(data) < 64 * 1024
        refused([write(tmp_path / "z.charx", data)], "unpacks to more than 100 times")

    def test_a_member_that_lies_about_its_size(self, tmp_path: Path) -> None:
        """A member that declares 1,000 bytes and holds 3 MB: read no further than it said."""
        data = bytearray(zipped({"card.json": card_json(), "assets/x.bin": b"\0" * 3_000_000}))
        for signature, offset in ((b"PK\x03\x04", 22), (b"PK\x01\x02", 24)):
            at = data.find(signature, data.find(b"assets/x.bin") - 60)
            struct.pack_into("<I", data, at + offset, 1000)
        refused([write(tmp_path / "lie.charx", bytes(data))], "cannot be read")

    def test_member_and_archive_bounds(self, tmp_path: Path) -> None:
        """Pictures (incompressible) past the member's and the archive's bound."""
        picture = bytes(range(256)) * 4096  # 1 MiB that deflate leaves as large
        limits = ImportLimits(max_member_bytes=MiB // 2)
        one = zipped({"card.json": card_json(), "assets/a.png": picture})
        refused([write(tmp_path / "m.charx", one)], "bytes a member may", limits)
        two = zipped({"card.json": card_json(), "a.bin": picture, "b.bin": picture})
        limits = ImportLimits(max_unpacked_bytes=MiB + MiB // 2)
        refused([write(tmp_path / "a.charx", two)], "would unpack to", limits)
        members = {"card.json": card_json(), **{f"assets/{i}": b"x" for i in range(20)}}
        limits = ImportLimits(max_archive_members=10)
        refused([write(tmp_path / "n.charx", zipped(members))], "more than the 10 allowed", limits)

    def test_one_import_holds_a_bounded_whole(self, tmp_path: Path) -> None:
        """Three archives, each within its own bounds, past what one import may hold."""
        picture = bytes(range(256)) * 4096
        paths = [
            write(tmp_path / f"{n}.charx", zipped({"card.json": card_json(n), "p.bin": picture}))
            for n in ("Ann", "Ben", "Cat")
        ]
        limits = ImportLimits(max_import_bytes=2 * MiB + MiB // 2)
        assert len(import_paths(paths[:2], limits=limits).assets) == 2
        message = refused(paths, "the import would hold more than", limits)
        assert "Cat.charx" in message


class TestMemberNames:
    @pytest.mark.parametrize(
        ("members", "needle"),
        [
            ({"assets/a": b"x", "assets/a/b": b"y"}, "is inside 'assets/a', which is a file"),
            ({"assets/" + "n" * 300: b"x"}, "a name longer than 255 bytes"),
            ({"assets/" + "a/" * 2000 + "x": b"x"}, "deeper than 32 folders"),
            ({"assets/x": b"1", "assets//x": b"2"}, "two members named 'assets/x'"),
        ],
    )
    def test_names_no_file_could_have(
        self, tmp_path: Path, members: dict[str, bytes], needle: str
    ) -> None:
        """Were FileExistsError, OSError and RecursionError tracebacks from `--pack`."""
        data = zipped({"card.json": card_json(), **members})
        refused([write(tmp_path / "names.charx", data)], needle)

    def test_an_asset_clashing_with_the_cards_picture(self, tmp_path: Path) -> None:
        """A member `image.png/x` beside the picture a CHARX icon becomes (`image.png`)."""
        card = fx.v3_card()
        card["data"]["assets"] = [
            {"type": "icon", "uri": "embeded://i.png", "name": "main", "ext": "png"}
        ]
        data = fx.charx(card, {"i.png": fx.tiny_png(), "image.png/x": b"x"})
        refused([write(tmp_path / "c.charx", data)], "which is a file")


class TestDeepJson:
    def test_the_depth_scan(self) -> None:
        """Brackets in strings and escaped quotes are not counted."""
        assert json_depth("[" * 200_000) == 200_000
        assert json_depth(json.dumps({"a": '[[[\\"[[{', "b": [[1]], "c": "\\"})) == 3
        assert json_depth('"x"') == 0 and json_depth("[]") == 1

    def test_nested_json_in_every_container(self, tmp_path: Path) -> None:
        """`[` x 200,000 was a RecursionError traceback, as a card, a lorebook, a PNG's
        chunk, a CHARX's card.json and a preset's file."""
        deep = b"[" * 200_000
        refused([write(tmp_path / "deep.json", deep)], "nests 200000 levels deep")
        ada = fx.write_json(tmp_path / "ada.json", fx.v1_card())
        refused([ada, write(tmp_path / "book.json", deep)], "book.json: the file nests")
        png = fx.card_png({"chara": __import__("base64").b64encode(deep)})
        refused([write(tmp_path / "d.png", png)], "the 'chara' chunk nests")
        refused([write(tmp_path / "d.charx", zipped({"card.json": deep}))], "card.json nests")
        path = preset(tmp_path / "p")
        write(tmp_path / "p/data/roles/isle/Ann-en/role_info.json", deep)
        refused([path], "role_info.json nests")

    def test_deep_extensions(self, tmp_path: Path) -> None:
        """A card whose extensions nest 200 deep imported, and then recall, export and the
        pages could not read the story back; 600 deep crashed `import --id`."""
        for depth in (200, 600):
            card = fx.v2_card()
            card["data"]["extensions"] = nested(depth)
            refused([fx.write_json(tmp_path / f"e{depth}.json", card)], "levels deep")
        card = fx.v2_card()
        card["data"]["extensions"] = nested(50)  # deep, still within the bound
        assert import_paths([fx.write_json(tmp_path / "ok.json", card)]).pack


class TestCreationRolledBack:
    async def test_a_failed_creation_leaves_nothing(self, redis_url: str, tmp_path: Path) -> None:
        """A pack whose kept fields the store cannot write (nested 600 deep: made in code,
        past the import's bound) failed after the story's first writes and left a story
        hidden from `fabula stories`; now what was written goes."""
        pack = import_paths([fx.write_json(tmp_path / "ada.json", fx.v1_card())]).pack
        kept = KeptCard(character="Ada", spec="chara_card_v1", data={"x": nested(600)})
        pack = pack.model_copy(update={"lore": pack.lore.model_copy(update={"cards": (kept,)})})
        async with Fabula(redis_url, Settings(home=tmp_path)) as fab:
            with pytest.raises(Exception, match="depth"):
                await fab.create_story(pack, "sunk")
            assert await fab.stories() == []
        client = connect(redis_url)
        assert [k for k in client.scan_iter(match="*sunk*") if not k.endswith(":deleted")] == []


class TestPresetCast:
    """The preset's cast read from its role folders: a code with no folder and two roles
    whose names read the same are refused; roles not cast, a second folder of one role and
    the world's details are lore."""

    @staticmethod
    def cast(tmp_path: Path, codes: list[str]) -> Path:
        """The preset of :func:`preset`, casting ``codes``."""
        path = preset(tmp_path / "p")
        doc = json.loads(path.read_text())
        doc["role_agent_codes"] = codes
        path.write_text(json.dumps(doc))
        return path

    def test_a_code_with_no_role_is_refused(self, tmp_path: Path) -> None:
        path = self.cast(tmp_path, ["Ann-en", "Bob-en"])
        refused([path], "role_agent_codes: no role 'Bob-en'")

    def test_two_roles_read_as_one_name_are_refused(self, tmp_path: Path) -> None:
        path = self.cast(tmp_path, ["Ann-en", "Anne-en"])
        other = tmp_path / "p/data/roles/isle/Anne-en"
        other.mkdir()
        info = {"role_code": "Anne-en", "role_name": "Ann", "profile": "Another."}
        (other / "role_info.json").write_text(json.dumps(info))
        refused([path], "roles 'Ann-en' and 'Anne-en' both read as 'Ann'")

    def test_other_roles_twins_and_details_are_lore(self, tmp_path: Path) -> None:
        path = preset(tmp_path / "p")
        roles = tmp_path / "p/data/roles/isle"
        for folder, name in (("Bo-en", "Bo"), ("ann_en", "Ann twin")):
            (roles / folder).mkdir()
            info = {"role_code": folder, "role_name": name, "profile": f"{name}'s."}
            (roles / folder / "role_info.json").write_text(json.dumps(info))
        details = tmp_path / "p/data/worlds/isle/world_details"
        details.mkdir()
        rows = [{"term": "Tide", "detail": ["High.", "Low."], "note": 1}, {"term": ""}]
        (details / "a.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
        pack = import_paths([path]).pack
        assert [c.name for c in pack.characters] == ["Ann"]
        books = {b.name: b for b in pack.lore.books}
        others = books["other roles"].entries
        assert [(e.name, e.content) for e in others] == [("Bo", "Bo's."), ("Ann", "Ann twin's.")]
        (tide, blank) = books["world details"].entries
        assert (tide.keys, tide.content, tide.kept) == (("Tide",), "High.\nLow.", {"note": 1})
        assert (blank.keys, blank.content) == ((), "")


class TestPngMemory:
    def test_a_png_of_empty_chunks_is_read_in_memory_near_its_size(self) -> None:
        """Issue 45: a 31 MB PNG of empty chunks took 662 MB to import (every chunk listed
        first, each body copied). Chunks are now read one at a time: reading its card
        chunks and writing it without them peak near the file's own size."""
        empty = struct.pack(">I", 0) + b"teSt" + struct.pack(">I", zlib.crc32(b"teSt"))
        iend = struct.pack(">I", 0) + b"IEND" + struct.pack(">I", zlib.crc32(b"IEND"))
        data = PNG_SIGNATURE + empty * 350_000 + iend  # 4.2 MB
        tracemalloc.start()
        try:
            assert read_text_chunks(data) == {}
            assert without_card_chunks(data) == data
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        assert peak < 3 * len(data), f"{peak:,} bytes at the peak for {len(data):,}"
