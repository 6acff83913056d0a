"""The studio's field for a played character's part, over HTTP against a live studio.

The story page of a turn waiting for Leo's part shows what Leo believes (his own mind: the
key in the drawer, where it no longer is) beside a field for his part; posting it writes
the turn's draft with it, which awaits approval.
"""

from __future__ import annotations

import re

import httpx

from fabula.graph.service import Fabula
from fabula.settings import Settings
from fabula.testing.stories import opened_world
from fabula.worlds.loader import load_world


async def test_the_story_page_takes_the_played_part(redis_url: str, base: str) -> None:
    async with Fabula(redis_url, Settings()) as fab:
        pack = load_world("hollow_book")
        store = await fab.create_story(pack, "tale", opening=False)
        for text in pack.opening.turns:
            await fab.commit_scripted(store, text)
        await fab.set_played(store, ["leo"])
        assert (await fab.run(store, auto=False)).outcome == "part"
    async with httpx.AsyncClient(base_url=base, timeout=60) as client:
        page = await client.get("/stories/tale")
        assert page.status_code == 200
        view = re.search(r'data-testid="view-leo">(.*?)</ul>', page.text, re.S)
        assert view is not None and "the brass key is in the desk drawer" in view[1]
        assert "hollow book" not in view[1].split("brass key is in the")[1][:20]
        assert 'name="part:leo"' in page.text
        token = re.search(r'name="csrf_token" value="([^"]+)"', page.text)
        assert token is not None
        part = "Leo searched the desk drawer."
        posted = await client.post(
            "/stories/tale/play",
            data={"csrf_token": token[1], "branch": "main", "part:leo": part},
        )
        assert posted.status_code == 303, posted.text
        assert posted.headers["location"].startswith("/stories/tale/pending")
        pending = await client.get("/stories/tale/pending")
        assert part in pending.text


async def test_the_character_page_plays_and_stops(redis_url: str, base: str) -> None:
    """ "Play Mara" on her page makes her played; "Stop playing" undoes it."""
    async with Fabula(redis_url, Settings()) as fab:
        await fab.create_story(load_world("hollow_book"), "tale")
    async with httpx.AsyncClient(base_url=base, timeout=60) as client:
        for button, played in (("Play Mara", ["mara"]), ("Stop playing Mara", [])):
            page = await client.get("/stories/tale/characters/mara")
            assert button in page.text
            token = re.search(r'name="csrf_token" value="([^"]+)"', page.text)
            assert token is not None
            form = re.search(r'data-testid="play-character">(.*?)</form>', page.text, re.S)
            assert form is not None
            data = {"csrf_token": token[1], "branch": "main"}
            if 'name="played"' in form[1]:
                data["played"] = "on"
            posted = await client.post("/stories/tale/characters/mara/play", data=data)
            assert posted.status_code == 303, posted.text
            async with Fabula(redis_url, Settings()) as fab:
                assert await fab.store("tale").played() == played


async def test_a_part_is_written_and_played_in_one_step(redis_url: str, base: str) -> None:
    """Issue 44, item 5: playing took four actions a turn (Run, type, Play, Approve), and
    the part field went away after each approval. With Leo played and nothing under way,
    the story page shows his own view beside a field for his part in the next turn; one
    post plays the turn with it (the draft awaits approval); after the approval the field
    is there again for the turn after."""
    async with Fabula(redis_url, Settings()) as fab:
        store = await opened_world(fab, "hollow_book", "tale", ["leo"])
        head = await store.head()
    async with httpx.AsyncClient(base_url=base, timeout=60) as client:
        for turn in (head + 1, head + 2):
            page = await client.get("/stories/tale")
            assert 'data-testid="next-parts"' in page.text
            view = re.search(r'data-testid="view-leo">(.*?)</ul>', page.text, re.S)
            assert view is not None and "the brass key is in the desk drawer" in view[1]
            assert "key is in the hollow book" not in view[1]  # Mara moved it: he did not see
            token = re.search(r'name="csrf_token" value="([^"]+)"', page.text)
            assert token is not None
            part = f"Leo searched the desk drawer again ({turn})."
            posted = await client.post(
                "/stories/tale/play",
                data={"csrf_token": token[1], "branch": "main", "part:leo": part},
            )
            assert posted.status_code == 303, posted.text
            assert posted.headers["location"].startswith("/stories/tale/pending")
            pending = await client.get("/stories/tale/pending")
            assert f"({turn})" in pending.text
            assert 'data-testid="next-parts"' not in (await client.get("/stories/tale")).text
            pending_id = re.search(r'name="pending_id" value="([^"]+)"', pending.text)
            assert pending_id is not None
            approved = await client.post(
                "/stories/tale/approve",
                data={"csrf_token": token[1], "branch": "main", "pending_id": pending_id[1]},
            )
            assert approved.status_code == 303, approved.text
    async with Fabula(redis_url, Settings()) as fab:
        texts = await fab.store("tale").turn_texts(head + 1, head + 2)
        assert [f"({t.turn})" in t.text for t in texts] == [True, True]
