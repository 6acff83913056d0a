"""A story's World Info settings in the studio and the API (issue 49, item 2), over real
HTTP with real Redis: the Lore page shows every setting with its value, SillyTavern's name,
whether it is applied and the lore budget it gives, as ``fabula lore settings`` does; its
form changes them, and a bad value is one line on the page and changes nothing; the lore
response carries them and ``POST /api/stories/{id}/lore/settings`` sets them with the same
checks (422, one line, nothing changed). Only a request with the studio's token and its
CSRF token changes them. In Chromium at 390 px the settings table fits the window.

The budget checked is ``checkWorldInfo``'s (SillyTavern's ``world-info.js`` 3731-3736):
``world_info_budget`` percent of the context, then capped by ``world_info_budget_cap``.
"""

from __future__ import annotations

import os
import re
from collections.abc import AsyncIterator, Iterator
from html import unescape
from pathlib import Path
from typing import Any

import httpx
import pytest
from playwright.async_api import Browser, expect

from fabula.graph.service import Fabula
from fabula.settings import Settings
from fabula.testing.browser import chromium
from fabula.testing.web import studio
from fabula.worlds.loader import load_world
from fabula.worlds.lore import KEPT_SETTINGS, SETTINGS

TOKEN = "a-studio-token-long-enough-to-pass"
needs_chromium = pytest.mark.skipif(
    not Path(chromium()).exists(),
    reason=f"no Chromium at {chromium()}: install Debian's chromium (.ci/run does)",
)


async def make_story(redis_url: str, home: Path, story: str = "wi") -> None:
    async with Fabula(redis_url, Settings(home=home)) as fab:
        await fab.create_story(load_world("hollow_book"), story)


async def stored(redis_url: str, home: Path, story: str = "wi") -> dict[str, Any]:
    """The story's World Info settings as Redis holds them, read through the service."""
    async with Fabula(redis_url, Settings(home=home)) as fab:
        return (await fab.read(story).world_info()).model_dump()


@pytest.fixture()
def base(redis_url: str, tmp_path: Path) -> Iterator[str]:
    with studio(redis_url, tmp_path) as url:
        yield url


@pytest.fixture()
async def client(base: str, redis_url: str, tmp_path: Path) -> AsyncIterator[httpx.AsyncClient]:
    await make_story(redis_url, tmp_path)
    async with httpx.AsyncClient(base_url=base, timeout=60) as c:
        yield c


async def csrf(client: httpx.AsyncClient) -> str:
    await client.get("/")
    token = client.cookies.get("fabula_csrf")
    assert token
    return token


def text_of(html: str) -> str:
    """A page's text as a reader sees it: tags dropped, spaces folded, entities read."""
    return " ".join(unescape(re.sub(r"<[^>]+>", " ", html)).split())


def rows(html: str) -> dict[str, str]:
    """The settings table's rows, by Fabula's name: each row's text, tags dropped."""
    found = re.findall(
        r'<tr data-testid="world-info-setting" data-name="([a-z_]+)">(.*?)</tr>', html, re.S
    )
    return {name: text_of(row) for name, row in found}


def form_of(html: str) -> dict[str, str]:
    """The values the settings form would post as the page shows them."""
    values = {}
    for name in SETTINGS:
        chosen = re.search(rf'<select id="wi-{name}" name="{name}">(.*?)</select>', html, re.S)
        if chosen is not None:
            picked = re.search(r'<option value="(\w+)" selected>', chosen.group(1))
            assert picked is not None, name
            values[name] = picked.group(1)
            continue
        typed = re.search(rf'<input id="wi-{name}" name="{name}"[^>]* value="([^"]*)"', html)
        assert typed is not None, name
        values[name] = typed.group(1)
    return values


async def test_the_lore_page_shows_every_setting(client: httpx.AsyncClient, tmp_path: Path) -> None:
    """Every setting, its value, SillyTavern's name and whether it is applied; the budget
    with where it comes from (no context yet: FABULA_LORE_BUDGET)."""
    html = (await client.get("/stories/wi/lore")).text
    shown = rows(html)
    assert list(shown) == list(SETTINGS)
    for name, st_name in SETTINGS.items():
        assert st_name in shown[name], name
        assert ("kept, not applied" in shown[name]) == (name in KEPT_SETTINGS), name
    default = Settings(home=tmp_path).lore_budget
    said = f"Lore budget: {default} tokens (FABULA_LORE_BUDGET ({default}): no context set)"
    assert said in text_of(html)
    values = form_of(html)
    assert values["depth"] == "2" and values["match_whole_words"] == "true"
    assert values["context"] == "" and values["use_group_scoring"] == "false"
    assert 'name="csrf_token"' in html and 'action="/stories/wi/lore/settings"' in html


async def test_the_form_changes_settings(
    client: httpx.AsyncClient, redis_url: str, tmp_path: Path
) -> None:
    """The whole form posted with two values changed sets those two; the page shows the
    budget they give (25% of 1000, capped at 200); a form with nothing changed says so;
    a form naming one setting changes that one only."""
    token = await csrf(client)
    before = await stored(redis_url, tmp_path)
    page = (await client.get("/stories/wi/lore")).text
    sent = {**form_of(page), "context": "1000", "budget_cap": "200"}
    done = await client.post(
        "/stories/wi/lore/settings", data={**sent, "csrf_token": token, "branch": "main"}
    )
    assert done.status_code == 303, done.text
    assert done.headers["location"] == "/stories/wi/lore?branch=main&notice=world-info"
    now = await stored(redis_url, tmp_path)
    assert now == {**before, "context": 1000, "budget_cap": 200}
    html = (await client.get(done.headers["location"])).text
    assert "World Info settings saved" in text_of(html)
    assert "200 tokens (25% of a context of 1000, capped at 200)" in text_of(html)
    assert form_of(html)["context"] == "1000"

    same = await client.post(
        "/stories/wi/lore/settings", data={**form_of(html), "csrf_token": token}
    )
    assert same.headers["location"].endswith("notice=world-info-same")
    assert await stored(redis_url, tmp_path) == now

    one = await client.post("/stories/wi/lore/settings", data={"depth": "5", "csrf_token": token})
    assert one.status_code == 303
    assert await stored(redis_url, tmp_path) == {**now, "depth": 5}


@pytest.mark.parametrize(
    ("bad", "said"),
    [
        ({"depth": "-1"}, "depth: '-1' is not a whole number of 0 or more"),
        ({"recursive": "maybe"}, "recursive: 'maybe' is not true or false"),
        ({"context": "0"}, "context: '0' is not a whole number of 1 or more"),
        ({"budget": "ten"}, "budget: 'ten' is not a whole number of 0 or more"),
    ],
)
async def test_a_bad_value_is_one_line_and_changes_nothing(
    client: httpx.AsyncClient, redis_url: str, tmp_path: Path, bad: dict[str, str], said: str
) -> None:
    """A bad value beside a good one: the page again (422) with the one line, and the
    stored settings as they were, the good change not made either."""
    token = await csrf(client)
    before = await stored(redis_url, tmp_path)
    page = (await client.get("/stories/wi/lore")).text
    sent = {**form_of(page), "max_recursion_steps": "7", **bad, "csrf_token": token}
    refused = await client.post("/stories/wi/lore/settings", data=sent)
    assert refused.status_code == 422
    line = re.search(
        r'<p class="error-line" role="alert" data-testid="world-info-error">(.*?)</p>',
        refused.text,
        re.S,
    )
    assert line is not None and unescape(line.group(1)) == said
    assert refused.text.count('class="error-line"') == 1
    assert 'data-testid="world-info-table"' in refused.text  # the page, not an error page
    assert form_of(refused.text)["max_recursion_steps"] == "0"  # what is stored, shown
    assert await stored(redis_url, tmp_path) == before


async def test_only_the_studios_own_forms_change_settings(
    client: httpx.AsyncClient, redis_url: str, tmp_path: Path
) -> None:
    """A form without the CSRF token (a page elsewhere posting it) is refused, and one
    from another site: nothing changes."""
    before = await stored(redis_url, tmp_path)
    await csrf(client)
    forged = await client.post("/stories/wi/lore/settings", data={"depth": "9"})
    assert forged.status_code == 403
    foreign = await client.post(
        "/stories/wi/lore/settings",
        data={"depth": "9", "csrf_token": client.cookies.get("fabula_csrf") or ""},
        headers={"Origin": "https://elsewhere.example"},
    )
    assert foreign.status_code == 403
    assert await stored(redis_url, tmp_path) == before


async def test_only_the_author_changes_settings(redis_url: str, tmp_path: Path) -> None:
    """With a token (the author's), a request without it changes nothing, by the form or
    the API; with it, the API sets them."""
    await make_story(redis_url, tmp_path)
    before = await stored(redis_url, tmp_path)
    with studio(redis_url, tmp_path, token=TOKEN) as url:
        async with httpx.AsyncClient(base_url=url, timeout=60) as c:
            page = await c.post("/stories/wi/lore/settings", data={"depth": "9"})
            api = await c.post("/api/stories/wi/lore/settings", json={"settings": {"depth": 9}})
            assert (page.status_code, api.status_code) == (401, 401)
            assert await stored(redis_url, tmp_path) == before
            author = {"Authorization": f"Bearer {TOKEN}"}
            done = await c.post(
                "/api/stories/wi/lore/settings", json={"settings": {"depth": 9}}, headers=author
            )
            assert done.status_code == 200, done.text
    assert await stored(redis_url, tmp_path) == {**before, "depth": 9}


async def test_the_api_shows_and_sets_the_settings(
    client: httpx.AsyncClient, redis_url: str, tmp_path: Path
) -> None:
    """The lore response carries the settings; POST sets them by either name, a JSON
    switch, number or null, and the lore's budget follows."""
    lore = (await client.get("/api/stories/wi/lore")).json()
    shown = {s["name"]: s for s in lore["world_info"]["settings"]}
    assert list(shown) == list(SETTINGS)
    assert shown["depth"] == {
        "name": "depth",
        "sillytavern": "world_info_depth",
        "value": 2,
        "applied": True,
    }
    assert shown["include_names"]["applied"] is False and shown["context"]["value"] is None
    default = Settings(home=tmp_path).lore_budget
    assert lore["world_info"]["lore_budget"] == lore["lore_budget"] == default
    assert (await client.get("/api/stories/wi/lore/settings")).json() == lore["world_info"]

    change = {"context": 1000, "world_info_budget_cap": 200, "recursive": False, "depth": "3"}
    done = await client.post("/api/stories/wi/lore/settings", json={"settings": change})
    assert done.status_code == 200, done.text
    out = done.json()
    assert out["lore_budget"] == 200
    assert out["budget_from"] == "25% of a context of 1000, capped at 200"
    values = {s["name"]: s["value"] for s in out["settings"]}
    assert (values["context"], values["budget_cap"], values["recursive"], values["depth"]) == (
        1000,
        200,
        False,
        3,
    )
    assert (await client.get("/api/stories/wi/lore")).json()["lore_budget"] == 200
    cleared = await client.post(
        "/api/stories/wi/lore/settings", json={"settings": {"context": None}}
    )
    assert cleared.json()["lore_budget"] == 200  # the default's share, still capped at 200
    assert (await stored(redis_url, tmp_path))["context"] is None


@pytest.mark.parametrize(
    ("body", "said"),
    [
        (
            {"settings": {"depth": 4, "recursive": "maybe"}},
            "recursive: 'maybe' is not true or false",
        ),
        ({"settings": {"depth": -1}}, "depth: '-1' is not a whole number of 0 or more"),
        ({"settings": {"depth": True}}, "depth: 'true' is not a whole number of 0 or more"),
        ({"settings": {"nothing": 1}}, "'nothing' is no World Info setting"),
        ({"settings": {"context": 0}}, "context: '0' is not a whole number of 1 or more"),
        ({"settings": {"depth": 1.5}}, "settings.depth"),
        ({"depth": 3}, "settings: Field required"),
    ],
)
async def test_the_api_refuses_a_bad_value_in_one_line(
    client: httpx.AsyncClient, redis_url: str, tmp_path: Path, body: dict[str, Any], said: str
) -> None:
    before = await stored(redis_url, tmp_path)
    refused = await client.post("/api/stories/wi/lore/settings", json=body)
    assert refused.status_code == 422
    error = refused.json()["error"]
    assert said in error and "\n" not in error
    assert await stored(redis_url, tmp_path) == before


async def test_the_api_refuses_an_unknown_story_and_a_form(client: httpx.AsyncClient) -> None:
    missing = await client.post("/api/stories/nosuch/lore/settings", json={"settings": {}})
    assert missing.status_code == 404 and "nosuch" in missing.json()["error"]
    assert (await client.get("/api/stories/nosuch/lore/settings")).status_code == 404
    form = await client.post("/api/stories/wi/lore/settings", data={"depth": "3"})
    assert form.status_code == 403  # no JSON body: refused as cross-site


@needs_chromium
async def test_the_settings_fit_a_phone_and_change_there(
    browser: Browser, client: httpx.AsyncClient, base: str, request: pytest.FixtureRequest
) -> None:
    """At 390 px the settings table fits the window (no sideways scroll, of the page or
    of the table); a value changed and saved shows the new budget; a bad one (the
    browser's own check taken off) is one line on the page, the value stored unchanged."""
    shots = Path(os.environ.get("FABULA_TEST_OUTPUT", "test-results")) / re.sub(
        r"[^A-Za-z0-9_.-]+", "_", request.node.name
    )
    shots.mkdir(parents=True, exist_ok=True)
    context = await browser.new_context(viewport={"width": 390, "height": 844})
    page = await context.new_page()
    problems: list[str] = []
    page.on("pageerror", lambda exc: problems.append(str(exc)))
    try:
        await page.goto(base + "/stories/wi/lore")
        table = page.locator("[data-testid=world-info-table]")
        await expect(table).to_be_visible()
        await expect(page.locator("[data-testid=world-info-setting]")).to_have_count(len(SETTINGS))
        inner = await page.evaluate("window.innerWidth")
        assert await page.evaluate("document.scrollingElement.scrollWidth") <= inner
        box = await table.bounding_box()
        assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= inner, box
        assert await table.evaluate("t => t.scrollWidth <= t.clientWidth")
        for cell in await page.locator("[data-testid=world-info-setting] td").all():
            edge = await cell.evaluate("c => c.getBoundingClientRect().right")
            assert edge <= inner, (await cell.inner_text(), edge, inner)
        await page.screenshot(path=shots / "settings.png", full_page=True)

        await page.fill("#wi-context", "1000")
        await page.fill("#wi-budget_cap", "200")
        await page.click("[data-testid=world-info-save]")
        await expect(page.locator(".notice")).to_contain_text("World Info settings saved")
        await expect(page.locator("[data-testid=world-info-budget]")).to_contain_text(
            "200 tokens (25% of a context of 1000, capped at 200)"
        )
        await expect(page.locator("#wi-context")).to_have_value("1000")

        depth = page.locator("#wi-depth")
        await depth.evaluate("input => input.removeAttribute('min')")
        await depth.fill("-1")
        await page.click("[data-testid=world-info-save]")
        line = page.locator("[data-testid=world-info-error]")
        await expect(line).to_have_text("depth: '-1' is not a whole number of 0 or more")
        await expect(page.locator(".error-line")).to_have_count(1)
        await expect(page.locator("#wi-depth")).to_have_value("2")
        assert await page.evaluate("document.scrollingElement.scrollWidth") <= inner
        await page.screenshot(path=shots / "refused.png", full_page=True)
    finally:
        await context.close()
    assert problems == [], problems
