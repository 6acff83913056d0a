"""The studio's views of a story run in ticks: the Town (every place, who is there at a
tick) and the Spread of a piece of news (a bar per tick, and the table), over the API and
in a browser at 390 and 1280 px.

The story is the shipped ``town`` pack (25 characters in 10 places; Mara starts with the
news of her harvest party), run a few ticks offline. Playwright drives Debian's Chromium
(skipped, with the reason, where it is missing); the HTTP tests need no browser.
Screenshots go to ``test-results/<test>/``.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from playwright.async_api import Browser, Page, expect
from typer.testing import CliRunner

from fabula.cli import app as cli_app
from fabula.testing.browser import chromium
from fabula.testing.web import studio

expect.set_options(timeout=20_000)

needs_chromium = pytest.mark.skipif(
    not Path(chromium()).exists(),
    reason=f"no Chromium at {chromium()}: install Debian's chromium (.ci/run does)",
)

NEWS = "harvest party"
TICKS = 3


@pytest.fixture()
def api_base(redis_url: str, tmp_path: Path) -> Iterator[str]:
    with studio(redis_url, tmp_path) as url:
        yield url


@pytest.fixture()
async def client(api_base: str) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(base_url=api_base, timeout=120) as c:
        yield c


async def ticked_town(client: httpx.AsyncClient, ticks: int = TICKS) -> list[dict[str, Any]]:
    """The ``town`` story, run ``ticks`` ticks over the API; the ticks as answered."""
    made = await client.post("/api/stories", json={"world": "town", "id": "town"})
    assert made.status_code == 201, made.text
    ran = await client.post("/api/stories/town/tick", json={"ticks": ticks})
    assert ran.status_code == 200, ran.text
    done: list[dict[str, Any]] = ran.json()
    return done


async def cli(redis_url: str, *args: str) -> Any:
    """The command line's JSON for ``args``, in this process (in a worker thread)."""
    env = {"COLUMNS": "200", "FABULA_REDIS_URL": redis_url}
    result = await asyncio.to_thread(CliRunner().invoke, cli_app, list(args), env=env)
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


async def story_state(client: httpx.AsyncClient) -> tuple[int, int]:
    """The branch's head and its last tick: what a refused request must leave as it was."""
    text = (await client.get("/api/stories/town/text")).json()
    town = (await client.get("/api/stories/town/town")).json()
    return text["head"], town["last"]


class TestTownApi:
    async def test_ticks_and_the_town_at_each(
        self, client: httpx.AsyncClient, redis_url: str
    ) -> None:
        """Ticks run over the API as `fabula tick --json` answers; the town at the last
        tick (the default), at any earlier one and at tick 0 shows every place of the pack
        and every character once, each scene's turn in the branch's text."""
        done = await ticked_town(client, TICKS - 1)
        done += await cli(redis_url, "tick", "town", "--json")  # the same service
        assert [t["tick"] for t in done] == [1, 2, 3]
        assert all(t["status"] == "committed" and t["scenes"] for t in done)
        assert {tuple(t) for t in done} == {("tick", "status", "scenes", "texts")}
        town = (await client.get("/api/stories/town/town")).json()
        assert town["tick"] == town["last"] == TICKS
        assert len(town["places"]) == 10
        people = [p["id"] for place in town["places"] for p in place["people"]]
        assert len(people) == len(set(people)) == 25 and town["elsewhere"] == []
        # the tick's scenes, as the tick ran them
        ran = {s["place"]: (sorted(s["cast"]), s["turn"]) for s in done[-1]["scenes"]}
        shown = {p["id"]: (sorted(c["id"] for c in p["people"]), p["turn"]) for p in town["places"]}
        assert {k: v for k, v in shown.items() if k in ran} == ran
        played = [p for p in town["places"] if p["turn"] is not None]
        assert played and all(p["text"] for p in played)
        texts = {
            t["turn"]: t["text"]
            for t in (await client.get("/api/stories/town/text")).json()["turns"]
        }
        assert all(texts[p["turn"]] == p["text"] for p in played)
        before = (await client.get("/api/stories/town/town", params={"tick": 0})).json()
        first = {s["place"]: sorted(s["cast"]) for s in done[0]["scenes"]}
        at_zero = {p["id"]: sorted(c["id"] for c in p["people"]) for p in before["places"]}
        assert {k: v for k, v in at_zero.items() if v} == first  # where tick 1 found them

    async def test_a_tick_kept_for_a_decision(self, client: httpx.AsyncClient) -> None:
        """`review` plays a tick and keeps it (nothing committed); it is read back, one
        scene is edited (a new id: the old one is refused, 409), and it is approved as
        shown; a decision with nothing waiting is a 404."""
        made = await client.post("/api/stories", json={"world": "town", "id": "town"})
        assert made.status_code == 201, made.text
        before = await story_state(client)
        [kept] = (await client.post("/api/stories/town/tick", json={"review": True})).json()
        assert kept["status"] == "pending" and kept["tick"] == 1
        assert await story_state(client) == before  # nothing committed
        assert (await client.get("/api/stories/town/tick/pending")).json()["id"] == kept["id"]
        scene = next(s for s in kept["scenes"] if s.get("turn"))
        text = f"{scene['cast'][0].capitalize()} looked around."
        edit = {"action": "edit", "place": scene["place"], "text": text, "expect": kept["id"]}
        edited = (await client.post("/api/stories/town/tick/decide", json=edit)).json()
        assert edited["id"] != kept["id"] and edited["texts"][str(scene["turn"])] == text
        stale = {"action": "approve", "expect": kept["id"]}
        r = await client.post("/api/stories/town/tick/decide", json=stale)
        assert r.status_code == 409 and "no longer waits" in r.json()["error"]
        ok = {"action": "approve", "expect": edited["id"]}
        done = (await client.post("/api/stories/town/tick/decide", json=ok)).json()
        assert done["status"] == "committed"
        turns = (await client.get("/api/stories/town/text")).json()["turns"]
        assert {t["turn"]: t["text"] for t in turns}[scene["turn"]] == text
        assert (await client.get("/api/stories/town/tick/pending")).json() is None
        r = await client.post("/api/stories/town/tick/decide", json={"action": "reject"})
        assert r.status_code == 404

    async def test_a_tick_not_run_is_one_line(self, client: httpx.AsyncClient) -> None:
        """A tick the branch has not run is a 404 naming the ticks it has; a story that
        does not exist is a 404 too."""
        await ticked_town(client, 1)
        r = await client.get("/api/stories/town/town", params={"tick": 7})
        assert r.status_code == 404
        assert "no tick 7" in r.json()["error"] and "0 to 1" in r.json()["error"]
        assert (await client.get("/api/stories/nope/town")).status_code == 404
        assert (
            await client.get("/api/stories/nope/spread", params={"clause": NEWS})
        ).status_code == 404

    async def test_spread_is_the_command_lines(
        self, client: httpx.AsyncClient, redis_url: str
    ) -> None:
        """`GET /api/stories/S/spread?clause=` answers what `fabula show S spread CLAUSE
        --json` prints: a row per tick from 0, Mara knowing from the start."""
        await ticked_town(client)
        r = await client.get("/api/stories/town/spread", params={"clause": NEWS})
        assert r.status_code == 200, r.text
        found = r.json()
        assert found == await cli(redis_url, "show", "town", "spread", NEWS, "--json")
        assert [row["tick"] for row in found["ticks"]] == list(range(TICKS + 1))
        assert "mara" in found["ticks"][0]["who"]
        shares = [row["share"] for row in found["ticks"]]
        assert shares == sorted(shares)  # nobody forgets the news

    async def test_bad_clause_and_ticks_change_nothing(self, client: httpx.AsyncClient) -> None:
        """An empty clause, one too long, a story with no tick yet, or too many ticks at
        once: 422 with one line, and the story as it was."""
        await ticked_town(client, 1)
        state = await story_state(client)
        for clause in ("", "   ", "x" * 201):
            r = await client.get("/api/stories/town/spread", params={"clause": clause})
            assert r.status_code == 422, (clause, r.text)
            assert "\n" not in r.json()["error"]
        r = await client.post("/api/stories/town/tick", json={"ticks": 500})
        assert r.status_code == 422 and "ticks" in r.json()["error"]
        r = await client.post("/stories/town/tick", data={"ticks": "1"})  # no CSRF token
        assert r.status_code == 403
        assert await story_state(client) == state
        made = await client.post("/api/stories", json={"world": "hollow_book", "id": "tale"})
        assert made.status_code == 201
        r = await client.get("/api/stories/tale/spread", params={"clause": "key"})
        assert r.status_code == 422 and "has run no tick" in r.json()["error"]


# -- in a browser ------------------------------------------------------------------------


async def opened(browser: Browser, width: int) -> tuple[Any, Page, list[str]]:
    context = await browser.new_context(viewport={"width": width, "height": 844})
    page = await context.new_page()
    problems: list[str] = []
    page.on("pageerror", lambda exc: problems.append(str(exc)))
    return context, page, problems


def shots_of(request: pytest.FixtureRequest) -> Path:
    """Where a test's screenshots go: ``test-results/<test>/`` (``FABULA_TEST_OUTPUT``)."""
    root = Path(os.environ.get("FABULA_TEST_OUTPUT", "test-results"))
    folder = root / re.sub(r"[^A-Za-z0-9_.-]+", "_", request.node.name)
    folder.mkdir(parents=True, exist_ok=True)
    return folder


async def fits(page: Page, width: int) -> None:
    """Nothing on the page scrolls sideways at ``width``."""
    assert await page.evaluate("document.scrollingElement.scrollWidth") == width


@needs_chromium
class TestTownInBrowser:
    @pytest.mark.parametrize("width", [390, 1280])
    async def test_town_and_spread(
        self, browser: Browser, base: str, width: int, request: pytest.FixtureRequest
    ) -> None:
        """The story page links to the town and the spread; the town shows every place
        with its characters at the last tick, and runs one more; the spread chart has one
        bar per tick, as tall as the share who know, beside the same table; nothing
        scrolls sideways."""
        async with httpx.AsyncClient(base_url=base, timeout=120) as client:
            await ticked_town(client, 2)
            town = (await client.get("/api/stories/town/town")).json()
        shots = shots_of(request)
        context, page, problems = await opened(browser, width)
        try:
            await page.goto(base + "/stories/town")
            # the town's pack runs in ticks: its story page writes ticks, not turns
            await expect(page.locator("[data-testid=tick-write]")).to_be_visible()
            await expect(page.locator("#run-form")).to_have_count(0)
            await page.click("[data-testid=ticks-links] [data-testid=town-link]")
            await expect(page).to_have_url(base + "/stories/town/town?branch=main")
            places = page.locator("[data-testid=place]")
            await expect(places).to_have_count(len(town["places"]))
            for place in town["places"]:
                shown = page.locator(f"[data-testid=place][data-place={place['id']}]")
                await expect(shown.locator("h2")).to_contain_text(place["name"])
                await expect(shown.locator("[data-testid=person]")).to_have_text(
                    [p["name"] for p in place["people"]]
                )
            await fits(page, width)
            await page.screenshot(path=shots / "town.png", full_page=True)

            # one tick played and kept: every scene shown, one given other words, approved
            await page.click("[data-testid=tick-run] button[type=submit]")
            await expect(page.locator(".notice")).to_contain_text("Tick 3 was played")
            scenes = page.locator("[data-testid=waiting-scene]")
            assert await scenes.count() >= 2
            first = scenes.first
            place = await first.get_attribute("data-place")
            cast = (await first.locator("label").first.inner_text()).rsplit("·", 1)[1]
            who = cast.split(",")[0].strip().capitalize()
            await first.locator("textarea").fill(f"{who} looked around.")
            await first.locator("[data-testid=scene-edit]").click()
            await expect(page.locator(".notice")).to_contain_text("read into its scene")
            edited = page.locator(f"[data-testid=waiting-scene][data-place={place}] textarea")
            await expect(edited).to_have_value(f"{who} looked around.")
            await fits(page, width)
            await page.screenshot(path=shots / "tick-waiting.png", full_page=True)
            second = scenes.nth(1)
            await second.locator("[data-testid=scene-approve]").click()
            await expect(page.locator(".notice")).to_contain_text("Scene approved")
            await expect(scenes.nth(1).locator("[data-testid=scene-approved]")).to_be_visible()
            await page.click("[data-testid=tick-approve]")
            await expect(page.locator(".notice")).to_contain_text("Tick 3 committed")
            await expect(
                page.locator(f"[data-place={place}] [data-testid=scene-text]")
            ).to_contain_text(f"{who} looked around.")
            await expect(page.locator("main")).to_have_attribute("data-tick", "3")
            await expect(page.locator("#tick")).to_have_value("3")

            await page.click("[data-testid=spread-link]")
            await page.fill("#clause", NEWS)
            await page.click("[data-testid=spread-form] button[type=submit]")
            bars = page.locator("[data-testid=spread-bar]")
            await expect(bars).to_have_count(4)  # ticks 0 to 3
            await expect(page.locator("[data-testid=spread-table] tbody tr")).to_have_count(4)
            async with httpx.AsyncClient(base_url=base) as client:
                rows = (
                    await client.get("/api/stories/town/spread", params={"clause": NEWS})
                ).json()["ticks"]
            shares = [float(await bars.nth(i).get_attribute("data-share") or -1) for i in range(4)]
            assert shares == [row["share"] for row in rows]
            heights = [
                (await bars.nth(i).bounding_box() or {"height": -1})["height"] for i in range(4)
            ]
            assert all(h > 0 for h in heights) and heights == sorted(heights)
            chart = await page.locator("[data-testid=spread-chart]").bounding_box()
            assert chart is not None and chart["width"] <= width
            await fits(page, width)
            await page.screenshot(path=shots / "spread.png", full_page=True)
        finally:
            await context.close()
        assert problems == [], problems

    async def test_a_played_character_plays_its_part_in_the_tick(
        self, browser: Browser, base: str
    ) -> None:
        """Mara played (from her page), the town's Run form has a field for her part; her
        words are played in her scene of the tick kept for approval, and in no other."""
        async with httpx.AsyncClient(base_url=base, timeout=120) as client:
            made = await client.post("/api/stories", json={"world": "town", "id": "town"})
            assert made.status_code == 201, made.text
        context, page, problems = await opened(browser, 390)
        try:
            await page.goto(base + "/stories/town/characters/mara")
            await page.click("[data-testid=play-character] button[type=submit]")
            await page.goto(base + "/stories/town/town")
            await page.fill("[data-testid=tick-part]", "Mara waved at Tom.")
            await page.click("[data-testid=tick-run] button[type=submit]")
            await expect(page.locator(".notice")).to_contain_text("Tick 1 was played")
            mill = page.locator("[data-testid=waiting-scene][data-place=mill] textarea")
            await expect(mill).to_have_value(re.compile(r"Mara waved at Tom\."))
            others = page.locator("[data-testid=waiting-scene]:not([data-place=mill]) textarea")
            for i in range(await others.count()):
                assert "Mara waved" not in await others.nth(i).input_value()
            await fits(page, 390)
        finally:
            await context.close()
        assert problems == [], problems

    @pytest.mark.refusal
    async def test_bad_clause_is_one_line_and_changes_nothing(
        self, browser: Browser, base: str
    ) -> None:
        """A clause that is only spaces is the form again with one line, the chart gone;
        a tick not run is the town at its last, with one line; too many ticks at once is
        the town again with one line; the story is as it was."""
        async with httpx.AsyncClient(base_url=base, timeout=120) as client:
            await ticked_town(client, 1)
            state = await story_state(client)
        context, page, problems = await opened(browser, 390)
        try:
            await page.goto(base + "/stories/town/spread?clause=" + NEWS.replace(" ", "+"))
            await expect(page.locator("[data-testid=spread-bar]")).to_have_count(2)
            await page.fill("#clause", "   ")
            await page.click("[data-testid=spread-form] button[type=submit]")
            line = page.locator(".error-line")
            await expect(line).to_have_count(1)
            await expect(line).to_contain_text("a spread needs a clause")
            assert "\n" not in (await line.inner_text()).strip()
            await expect(page.locator("[data-testid=spread-bar]")).to_have_count(0)
            await fits(page, 390)
            await page.goto(base + "/stories/town/town?tick=9")
            await expect(page.locator(".error-line")).to_have_count(1)
            await expect(page.locator(".error-line")).to_contain_text("no tick 9")
            await expect(page.locator("[data-testid=place]")).to_have_count(10)
            await fits(page, 390)
            ticks = page.locator("[data-testid=tick-run] input[name=ticks]")
            await ticks.evaluate("input => input.removeAttribute('max')")
            await ticks.fill("500")
            await page.click("[data-testid=tick-run] button[type=submit]")
            await expect(page.locator(".error-line")).to_have_count(1)
            await expect(page.locator(".error-line")).to_contain_text("ticks: 1 to 20")
            await expect(page.locator("main")).to_have_attribute("data-tick", "1")
        finally:
            await context.close()
        assert problems == [], problems
        async with httpx.AsyncClient(base_url=base) as client:
            assert await story_state(client) == state
