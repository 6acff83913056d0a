"""The studio on a phone and for an evening: every page fits 390 px (and 1280 px) without
sideways scrolling, a story's text keeps its width, a card's picture and its ``*actions*``
show, the chat keeps its conversation on the page, every error is one inline line, and
the studio takes the cards the README names (a stock card with its World Info is about
0.5 MiB).

Playwright drives Debian's Chromium (skipped, with the reason, where it is missing); the
HTTP tests need no browser. Screenshots go to ``test-results/<test>/``.
"""

from __future__ import annotations

import json
import os
import re
from html import unescape
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs

import httpx
import pytest
from playwright.async_api import Browser, Page, expect

from fabula.graph.web.present import actions
from fabula.graph.web.security import MAX_UPLOAD_BYTES
from fabula.testing import imports as fx
from fabula.testing.browser import chromium

expect.set_options(timeout=20_000)

needs_chromium = pytest.mark.skipif(
    not Path(chromium()).exists(),
    reason=f"no Chromium at {chromium()}: install Debian's chromium (.ci/run does)",
)

PRESET = {  # a BookWorld preset as its repository's experiment_presets/ hold them
    "experiment_subname": "free",
    "world_file_path": "./data/worlds/example_world/general.json",
    "loc_file_path": "./data/locations/example_locations.json",
    "role_file_dir": "./data/roles/",
    "role_agent_codes": ["Lacia-en", "Trek-en"],
    "intervention": "",
    "script": "",
}
GREETING = "*Sera smiles and sets down the lantern.* Welcome, {{user}}. *She glances at the door.*"


def sera_card(entries: int = 1) -> bytes:
    """A PNG card with a picture, a greeting with *actions* and ``entries`` lore entries."""
    card = fx.v2_card("Sera")
    card["data"]["first_mes"] = GREETING
    book = card["data"]["character_book"]
    first = book["entries"][0]
    long = "The realm of Eldoria keeps its old roads and older promises. " * 30
    book["entries"] = [first] + [
        {**first, "id": i, "name": f"lore {i}", "keys": [f"key{i}"], "content": f"{i}. {long}"}
        for i in range(1, entries)
    ]
    return fx.card_png({"chara": fx.b64(card)})


def stock_sized_card() -> bytes:
    """A card the size of the stock one that was refused (536,050 bytes), or a bit more."""
    entries = 1
    while len(data := sera_card(entries)) < 536_050:
        entries += 25
    return data


async def csrf(client: httpx.AsyncClient) -> str:
    await client.get("/")
    token = client.cookies.get("fabula_csrf")
    assert token
    return token


async def two_stories(base: str) -> None:
    """``tale`` (hollow_book, five turns, the sixth awaiting approval) and ``sera`` (the
    card above, its greeting the first turn)."""
    async with httpx.AsyncClient(base_url=base, timeout=120) as client:
        assert (
            await client.post("/api/stories", json={"world": "hollow_book", "id": "tale"})
        ).is_success
        await client.post("/api/stories/tale/run", json={"turns": 2, "auto": True})
        await client.post("/api/stories/tale/run", json={"turns": 1})
        made = await client.post(
            "/api/stories/import",
            files=[("files", ("sera.png", sera_card()))],
            data={"id": "sera", "greeting": "0"},
            headers={"X-CSRF-Token": await csrf(client)},
        )
        assert made.status_code == 201, made.text


PAGES = {
    "stories": "/",
    "story": "/stories/tale",
    "pending": "/stories/tale/pending",
    "minds": "/stories/tale/minds",
    "plot": "/stories/tale/plot",
    "recall": "/stories/tale/recall?q=Where+is+the+brass+key%3F&character=leo",
    "chat": "/stories/tale/chat?character=leo&q=Where+is+the+brass+key%3F",
    "lore": "/stories/sera/lore?turn=1",
    "usage": "/stories/tale/usage",
    "fork": "/stories/tale/fork?at=3",
    "evidence": "/stories/tale/evidence/e1.0",
    "card story": "/stories/sera",
    "character": "/stories/sera/characters/sera",
}


def shots_of(request: pytest.FixtureRequest) -> Path:
    root = Path(os.environ.get("FABULA_TEST_OUTPUT", "test-results"))
    folder = root / re.sub(r"[^A-Za-z0-9_.-]+", "_", request.node.name)
    folder.mkdir(parents=True, exist_ok=True)
    return folder


async def opened(browser: Browser, width: int) -> tuple[Any, Page, list[str]]:
    context = await browser.new_context(viewport={"width": width, "height": 844})
    page = await context.new_page()
    problems: list[str] = []
    page.on("pageerror", lambda exc: problems.append(str(exc)))
    return context, page, problems


async def sideways(page: Page) -> tuple[int, int]:
    width: int = await page.evaluate("document.scrollingElement.scrollWidth")
    inner: int = await page.evaluate("window.innerWidth")
    return width, inner


@needs_chromium
class TestOnAPhone:
    @pytest.mark.parametrize("width", [390, 1280])
    async def test_no_page_scrolls_sideways(
        self, browser: Browser, base: str, width: int, request: pytest.FixtureRequest
    ) -> None:
        """At 390 px the front page and Minds scrolled sideways and a story's text was one
        or two words a line (the hover actions kept half the column); now no page is wider
        than the window, the text is at least 300 px wide, the navigation is one row, the
        card's picture is on its page and beside its turn, and its *actions* are narration."""
        await two_stories(base)
        shots = shots_of(request)
        context, page, problems = await opened(browser, width)
        try:
            for name, path in PAGES.items():
                await page.goto(base + path)
                await expect(page.locator("main")).to_be_visible()
                assert await page.locator(".error-line").count() == 0, name
                width_seen, inner = await sideways(page)
                assert width_seen <= inner, (name, width_seen, inner)
                await page.screenshot(path=shots / f"{name.replace(' ', '-')}.png")
            await page.goto(base + "/stories/tale")
            text = await page.locator("#turn-1 .turn-text").bounding_box()
            assert text is not None and text["width"] >= 300, text
            rows = await page.locator("header.top nav > a").evaluate_all(
                "links => new Set(links.map(a => Math.round(a.getBoundingClientRect().top))).size"
            )
            assert rows == 1, rows
            await page.goto(base + "/stories/sera")
            # the card's *actions* are narration since the import (no markup reaches a turn)
            await expect(page.locator("#turn-1 .turn-text")).to_contain_text(
                'Sera smiles and sets down the lantern. "Welcome, User." Sera glances at the door.'
            )
            await expect(page.locator("#turn-1 .turn-text")).not_to_contain_text("*")
            beside = page.locator("#turn-1 img[data-testid=picture-sera]")
            await expect(beside).to_be_visible()
            assert await beside.evaluate("img => img.complete && img.naturalWidth > 0")
            await page.goto(base + "/stories/sera/characters/sera")
            own = page.locator("main img[data-testid=picture-sera]")
            await expect(own).to_be_visible()
            assert await own.evaluate("img => img.complete && img.naturalWidth > 0")
        finally:
            await context.close()
        assert problems == [], problems

    async def test_one_error_style(
        self, browser: Browser, base: str, request: pytest.FixtureRequest, tmp_path: Path
    ) -> None:
        """Errors came three ways (inline, an error page, raw JSON); now a refused form is
        its page again with one inline line, with JavaScript (htmx) or without: a BookWorld
        preset uploaded is told to use the command line; a run of too many turns is said
        by the run form, the story left as it was."""
        await two_stories(base)
        shots = shots_of(request)
        preset = tmp_path / "example_free.json"
        preset.write_text(json.dumps(PRESET))
        context, page, problems = await opened(browser, 390)
        try:
            await page.goto(base + "/")
            await page.set_input_files("[data-testid=import-form] input[type=file]", str(preset))
            await page.click("[data-testid=import-form] button[type=submit]")
            await expect(page).to_have_url(base + "/")
            line = page.locator(".error-line")
            await expect(line).to_have_count(1)
            await expect(line).to_contain_text("example_free.json: a BookWorld preset")
            await expect(line).to_contain_text("fabula import PATH")
            assert "\n" not in (await line.inner_text()).strip()
            assert await page.locator("form.create").count() == 2  # the page, not JSON
            await page.screenshot(path=shots / "preset.png")
            await page.reload()  # said once: the line goes with the next page
            await expect(page.locator(".error-line")).to_have_count(0)

            await page.goto(base + "/stories/tale")
            await expect(page.locator("main[data-live]")).to_have_count(1)
            turns = page.locator("#run-form input[name=turns]")
            await turns.evaluate("input => input.removeAttribute('max')")
            await turns.fill("5000")
            await page.click("#run-form button[type=submit]")
            line = page.locator("#run-form .error-line")
            await expect(line).to_have_count(1)
            await expect(line).to_contain_text("turns")
            await expect(page.locator(".error-line")).to_have_count(1)
            assert page.url == base + "/stories/tale"
            await page.screenshot(path=shots / "run-refused.png")
            await turns.fill("4000")  # refused again: still one line
            await page.click("#run-form button[type=submit]")
            await expect(page.locator(".error-line")).to_have_count(1)
        finally:
            await context.close()
        assert problems == [], problems

    async def test_chat_keeps_the_conversation(
        self, browser: Browser, base: str, request: pytest.FixtureRequest
    ) -> None:
        """Chat forgot each exchange; now each answer goes below the last, a follow-up is
        answered knowing the last exchange with that character (issue 44), the tab keeps
        them when the page comes back, and nothing said enters the story."""
        await two_stories(base)
        context, page, problems = await opened(browser, 390)
        try:
            await page.goto(base + "/stories/tale/chat?character=leo")
            await page.fill("#as-of", "3")  # Leo has not seen the key moved yet
            await page.fill("#q", "Where is the brass key?")
            await page.click("[data-testid=chat-form] button[type=submit]")
            exchanges = page.locator("[data-testid=exchange]")
            await expect(exchanges).to_have_count(1)
            await page.select_option("#character", "mara")
            await page.fill("#q", "Where is the brass key?")
            await page.click("[data-testid=chat-form] button[type=submit]")
            await expect(exchanges).to_have_count(2)
            await expect(exchanges.nth(0)).to_contain_text("desk drawer")
            await expect(exchanges.nth(1)).to_contain_text("hollow book")
            # a follow-up to Leo carries Leo's exchange only (Mara's is hers), and is read
            # with it: "Why?" is the grounds of his answer about the key
            sent: list[str] = []
            page.on(
                "request", lambda r: sent.append(r.post_data or "") if r.method == "POST" else None
            )
            await page.select_option("#character", "leo")
            await page.fill("#q", "Why?")
            await page.click("[data-testid=chat-form] button[type=submit]")
            await expect(exchanges).to_have_count(3)
            await expect(exchanges.nth(2)).to_contain_text(
                "Because I put the brass key in the desk drawer."
            )
            await expect(exchanges.nth(2)).to_contain_text("(Where is the brass key?)")
            talked = json.loads(parse_qs(sent[-1])["conversation"][0])
            assert [x["question"] for x in talked] == ["Where is the brass key?"]
            assert "hollow book" not in json.dumps(talked)
            width_seen, inner = await sideways(page)
            assert width_seen <= inner
            await page.screenshot(path=shots_of(request) / "chat.png", full_page=True)
            await page.reload()
            await expect(exchanges).to_have_count(3)
            await expect(exchanges.nth(1)).to_contain_text("Mara")
            await page.click("[data-testid=forget-chat]")
            await expect(exchanges).to_have_count(0)
        finally:
            await context.close()
        assert problems == [], problems
        async with httpx.AsyncClient(base_url=base) as client:
            text = (await client.get("/api/stories/tale/text")).json()
        assert text["head"] == 5 and "brass key?" not in json.dumps(text)


class TestOverHttp:
    async def test_the_stock_card_size_is_taken(self, base: str) -> None:
        """A 536,050-byte card with its World Info was a raw JSON page, "over the studio's
        bound of 458752 bytes"; now the import routes take up to 32 MiB, on the form and
        in the API."""
        card = stock_sized_card()
        assert 536_050 <= len(card) < MAX_UPLOAD_BYTES
        async with httpx.AsyncClient(base_url=base, timeout=120) as client:
            token = await csrf(client)
            form = await client.post(
                "/stories/import",
                data={"id": "big", "csrf_token": token},
                files=[("files", ("sera.png", card))],
            )
            assert form.status_code == 303, form.text
            api = await client.post(
                "/api/stories/import",
                data={"id": "big2"},
                files=[("files", ("sera.png", card))],
                headers={"X-CSRF-Token": token},
            )
            assert api.status_code == 201, api.text
            lore = (await client.get("/api/stories/big/lore")).json()
            assert sum(len(b["entries"]) for b in lore["books"]) > 25

    async def test_a_body_over_the_bound_is_one_line_on_its_page(self, base: str) -> None:
        """A form over the studio's bound was a raw JSON page; now the page it came from
        says it in one line (once), and a request from no page gets the line on a page of
        its own; the API still answers JSON."""
        async with httpx.AsyncClient(base_url=base, timeout=60) as client:
            token = await csrf(client)
            big = b"x" * (2 * 1024 * 1024)
            sent = await client.post(
                "/stories",
                data={"csrf_token": token, "id": "huge"},
                files={"pack": ("huge.toml", big)},
                headers={"Referer": base + "/?notice=deleted"},
            )
            assert sent.status_code == 303 and sent.headers["location"] == "/"
            back = await client.get("/")
            lines = [
                unescape(x)
                for x in re.findall(r'<p class="error-line"[^>]*>([^<]*)</p>', back.text)
            ]
            assert len(lines) == 1 and "over the studio's bound" in lines[0], lines
            assert "Story deleted." not in back.text
            again = await client.get("/")
            assert "error-line" not in again.text
            bare = await client.post(
                "/stories", data={"csrf_token": token}, files={"pack": ("huge.toml", big)}
            )
            assert bare.status_code == 413 and bare.headers["content-type"].startswith("text/html")
            assert bare.text.count('class="error-line"') == 1
            api = await client.post(
                "/api/stories/upload",
                files={"pack": ("huge.toml", big)},
                headers={"X-CSRF-Token": token},
            )
            assert api.status_code == 413 and "over the studio's bound" in api.json()["error"]

    async def test_a_bookworld_preset_is_for_the_command_line(self, base: str) -> None:
        """A BookWorld preset names folders beside it, which no upload carries: it was
        refused naming a missing file in a temporary folder; now one line says to use
        `fabula import PATH`, on the API too, and nothing is made."""
        async with httpx.AsyncClient(base_url=base, timeout=60) as client:
            r = await client.post(
                "/api/stories/import",
                files=[("files", ("example_free.json", json.dumps(PRESET)))],
                headers={"X-CSRF-Token": await csrf(client)},
            )
            assert r.status_code == 422
            assert r.json()["error"] == (
                "example_free.json: a BookWorld preset reads the folders beside it; "
                "import it with the command line: fabula import PATH"
            )
            assert (await client.get("/api/stories")).json() == []

    async def test_an_htmx_error_is_a_fragment(self, base: str) -> None:
        """An htmx request refused gets the one-line fragment, not a page."""
        async with httpx.AsyncClient(base_url=base, timeout=60) as client:
            token = await csrf(client)
            await client.post("/api/stories", json={"world": "hollow_book", "id": "tale"})
            r = await client.post(
                "/stories/tale/run",
                data={"turns": "5000", "csrf_token": token},
                headers={"HX-Request": "true", "X-CSRF-Token": token},
            )
            assert r.status_code == 422
            assert r.text.startswith('<p class="error-line"') and r.text.count("<p") == 1

    async def test_a_picture_is_served_as_what_it_is(self, base: str) -> None:
        """An imported card's picture is served with its type (nosniff); a character
        without one is a 404 with one line."""
        async with httpx.AsyncClient(base_url=base, timeout=60) as client:
            made = await client.post(
                "/api/stories/import",
                files=[
                    ("files", ("sera.png", sera_card())),
                    ("files", ("ada.json", json.dumps(fx.v1_card()))),
                ],
                data={"id": "sera"},
                headers={"X-CSRF-Token": await csrf(client)},
            )
            assert made.status_code == 201, made.text
            pic = await client.get("/stories/sera/characters/sera/picture")
            assert pic.status_code == 200 and pic.headers["content-type"] == "image/png"
            assert pic.content.startswith(b"\x89PNG") and b"chara" not in pic.content
            none = await client.get("/stories/sera/characters/ada/picture")
            assert none.status_code == 404 and "Ada has no picture" in none.text


class TestActions:
    def test_actions_are_italics_after_escaping(self) -> None:
        """*actions* become <em>; markup in the text stays text, inside an action too."""
        html = str(actions('*She smiles <script>x</script>.* "Hi" * 2 * 3 **no'))
        assert html == (
            "<em>She smiles &lt;script&gt;x&lt;/script&gt;.</em> &#34;Hi&#34; * 2 * 3 **no"
        )
        assert str(actions("*a\nb*")) == "*a\nb*"  # an action is within one line
