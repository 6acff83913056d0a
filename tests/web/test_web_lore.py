"""The studio's lore, over real HTTP: the Lore page and ``GET /api/stories/{id}/lore`` list a
story's entries by book with who knows each and what a turn activated, and the Recall page
shows the lore a request activated and, for a character, the exemplars of its voice; cards
and lorebooks are imported as a story (``POST /api/stories/import``, the new-story form),
and a character's page shows its card fields and its voice."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import httpx
import pytest

from fabula.graph.service import Fabula
from fabula.settings import Settings
from fabula.testing import imports as fx
from fabula.testing.web import studio
from fabula.worlds.loader import load_world
from fabula.worlds.lore import Lore, LoreBook, LoreEntry
from fabula.worlds.pack import WorldPack

SEEN = {"extensions": {"fabula/visibility": ["Mara"]}}


def hollow_with_lore() -> WorldPack:
    data = load_world("hollow_book").model_dump()
    for char in data["characters"]:
        if char["name"] == "Leo":
            char["examples"] = ("LEO-EX The drawer is mine, and so is the key.",)
    books = (
        LoreBook(
            name="world",
            format="lorebook_v3",
            entries=(
                LoreEntry(name="keys", keys=("brass key",), content="WORLD-KEY Brass keys rust."),
                LoreEntry(name="house", constant=True, content="WORLD-HOUSE The house is old."),
            ),
        ),
        LoreBook(
            name="Leo's book",
            format="character_book",
            owner="Leo",
            entries=(
                LoreEntry(name="drawer", keys=("drawer",), content="LEO-DRAWER It sticks."),
                LoreEntry(
                    name="shared", keys=("study",), content="LEO-MARA The study is cold.", kept=SEEN
                ),
            ),
        ),
    )
    return WorldPack.model_validate({**data, "lore": Lore(books=books).model_dump()})


@pytest.fixture()
def base(redis_url: str, tmp_path: Path) -> Iterator[str]:
    with studio(redis_url, tmp_path) as url:
        yield url


@pytest.fixture()
async def client(base: str, redis_url: str, tmp_path: Path) -> AsyncIterator[httpx.AsyncClient]:
    async with Fabula(redis_url, Settings(home=tmp_path)) as fab:
        await fab.create_story(hollow_with_lore(), "lorey")
    async with httpx.AsyncClient(base_url=base, timeout=60) as c:
        yield c


async def test_the_lore_api_lists_each_entry_with_who_knows_it(client: httpx.AsyncClient) -> None:
    found = (await client.get("/api/stories/lorey/lore")).json()
    assert found["turn"] is None and found["activated"] == []
    by_name = {(b["name"], e["name"]): e for b in found["books"] for e in b["entries"]}
    assert by_name[("world", "keys")]["author"] and by_name[("world", "keys")]["known_to"] == []
    assert by_name[("Leo's book", "drawer")]["known_to"] == ["Leo"]
    assert not by_name[("Leo's book", "drawer")]["author"]
    assert by_name[("Leo's book", "shared")]["known_to"] == ["Leo", "Mara"]
    assert by_name[("world", "keys")]["keys"] == ["brass key"]
    assert by_name[("world", "house")]["constant"]


async def test_what_a_turn_activated_for_whom(client: httpx.AsyncClient) -> None:
    head = (await client.get("/api/stories/lorey/lore")).json()["head"]
    texts = (await client.get("/api/stories/lorey/text")).json()
    # the opening's first turn: Leo puts the brass key in the desk drawer
    turn = next(t["turn"] for t in texts["turns"] if "drawer" in t["text"])
    found = (await client.get("/api/stories/lorey/lore", params={"turn": turn})).json()
    fired = {(x["holder"], x["name"]): x for x in found["activated"]}
    assert fired[(None, "keys")]["key"] == "brass key"
    assert (None, "house") in fired and fired[(None, "house")]["fired"] == "constant"
    assert fired[("Leo", "drawer")]["key"] == "drawer"
    assert not any(h == "Mara" and n == "drawer" for h, n in fired)  # not hers to know
    assert not any(h is None and n == "drawer" for h, n in fired)  # nor the author's
    bad = await client.get("/api/stories/lorey/lore", params={"turn": head + 5})
    assert bad.status_code == 422 and "turn" in bad.text
    assert (await client.get("/api/stories/nosuch/lore")).status_code == 404


async def test_the_lore_page_and_the_recall_page(client: httpx.AsyncClient) -> None:
    html = (await client.get("/stories/lorey/lore")).text
    assert 'aria-current="page">Lore</a>' in html
    assert (
        html.count('data-testid="lore-book"') == 2 and html.count('data-testid="lore-entry"') == 4
    )
    assert "Leo, Mara" in html and "LEO-DRAWER It sticks." in html
    assert "lore-activated" not in html
    texts = (await client.get("/api/stories/lorey/text")).json()
    turn = next(t["turn"] for t in texts["turns"] if "drawer" in t["text"])
    html = (await client.get("/stories/lorey/lore", params={"turn": str(turn)})).text
    assert 'data-testid="lore-activated"' in html and "<code>brass key</code>" in html
    blank = await client.get("/stories/lorey/lore", params={"turn": ""})
    assert blank.status_code == 200 and "lore-activated" not in blank.text
    bad = await client.get("/stories/lorey/lore", params={"turn": "x"})
    assert bad.status_code == 422 and "turn: a whole number" in bad.text

    leo = (
        await client.get("/stories/lorey/recall", params={"q": "the drawer", "character": "leo"})
    ).text
    assert 'data-testid="recalled-lore"' in leo and "LEO-DRAWER It sticks." in leo
    assert 'data-testid="recalled-voice"' in leo and "LEO-EX" in leo
    author = (await client.get("/stories/lorey/recall", params={"q": "the brass key"})).text
    assert "WORLD-KEY Brass keys rust." in author and "LEO-DRAWER" not in author
    assert "recalled-voice" not in author


async def csrf_token(client: httpx.AsyncClient) -> str:
    await client.get("/")
    token = client.cookies.get("fabula_csrf")
    assert token
    return token


async def test_cards_and_lorebooks_import_over_http(client: httpx.AsyncClient) -> None:
    """Several files make one cast, as `fabula import --id`; a bad file is one line naming
    it (not the server's folder) and makes nothing; the form does the same."""
    headers = {"X-CSRF-Token": await csrf_token(client)}
    png = fx.card_png({"chara": fx.b64(fx.v2_card())})
    files = [
        ("files", ("ada.json", json.dumps(fx.v1_card()))),
        ("files", ("ben.png", png)),
        ("files", ("world.json", json.dumps(fx.v3_lorebook()))),
    ]
    made = await client.post(
        "/api/stories/import", files=files, data={"id": "isle"}, headers=headers
    )
    assert made.status_code == 201, made.text
    assert made.json()["id"] == "isle"
    lore = (await client.get("/api/stories/isle/lore")).json()
    assert {b["owner"] for b in lore["books"]} >= {None, "Ben"}
    ada = (await client.get("/api/stories/isle/characters/ada")).json()
    assert ada["spec"] == "chara_card_v1" and ada["voice"] == "clipped, dry"
    assert any("Go away." in x for x in ada["exemplars"])
    ben = (await client.get("/api/stories/isle/characters/Ben")).json()
    assert ben["spec"] == "chara_card_v2" and any(f["field"] == "extensions" for f in ben["card"])

    before = (await client.get("/api/stories")).json()
    bad = await client.post(
        "/api/stories/import",
        headers=headers,
        data={"id": "nope"},
        files=[
            ("files", ("ada.json", json.dumps(fx.v1_card()))),
            ("files", ("broken.png", fx.tiny_png())),
        ],
    )
    assert bad.status_code == 422 and bad.json()["error"].startswith("broken.png: ")
    assert "fabula-import-" not in bad.text and "\n" not in bad.json()["error"]
    assert (await client.get("/api/stories")).json() == before
    twice = await client.post(
        "/api/stories/import",
        headers=headers,
        files=[("files", ("a.json", "{}")), ("files", ("a.json", "{}"))],
    )
    assert twice.status_code == 422 and "two files of that name" in twice.text

    form = await client.post(
        "/stories/import",
        data={"id": "isle2", "csrf_token": headers["X-CSRF-Token"]},
        files=[("files", ("ada.json", json.dumps(fx.v1_card())))],
    )
    assert form.status_code in (302, 303) and "/stories/isle2" in form.headers["location"]
    # the card's first message is the story's first turn, as `fabula import --id` has it
    first = (await client.get("/api/stories/isle2/text")).json()["turns"]
    assert [t["turn"] for t in first] == [1] and "Who are you" in first[0]["text"]
    assert "import-form" in (await client.get("/")).text


async def test_a_characters_page_shows_its_card_and_voice(client: httpx.AsyncClient) -> None:
    html = (await client.get("/stories/lorey/characters/leo")).text
    assert 'data-testid="card-fields"' in html and 'data-testid="voice-exemplars"' in html
    assert "LEO-EX The drawer is mine, and so is the key." in html
    assert "Leo&#39;s book" in html or "Leo's book" in html
    minds = (await client.get("/stories/lorey/minds")).text
    assert 'href="/stories/lorey/characters/leo?branch=main"' in minds
    missing = await client.get("/api/stories/lorey/characters/zed")
    assert missing.status_code == 404
