"""The studio's writer's-desk pages in a real browser (Playwright, Debian's Chromium) and
over HTTP: the API documentation at ``/docs`` renders under the studio's own
Content-Security-Policy, the Usage page, and the Chat page.

The browser tests are skipped, with the reason, where no Chromium is installed; the HTTP
checks of ``/docs`` (every script and style from the studio itself) always run.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator

import httpx
import pytest
from playwright.async_api import Browser, Page, async_playwright, expect

from tests.test_web_browser import ARGS, CHROMIUM, base, create_story  # noqa: F401 (fixture)

needs_chromium = pytest.mark.skipif(
    not __import__("pathlib").Path(CHROMIUM).exists(),
    reason=f"no Chromium at {CHROMIUM}: install Debian's chromium (.ci/run does)",
)


@pytest.fixture(scope="module")
async def browser() -> AsyncIterator[Browser]:
    async with async_playwright() as p:
        launched = await p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        yield launched
        await launched.close()


@pytest.fixture()
async def page(browser: Browser) -> AsyncIterator[Page]:
    context = await browser.new_context(viewport={"width": 1280, "height": 860})
    opened = await context.new_page()
    problems: list[str] = []
    opened.on("pageerror", lambda exc: problems.append(str(exc)))
    # a script or style the Content-Security-Policy refuses is reported on the console
    opened.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
    yield opened
    await context.close()
    assert problems == [], problems


class TestDocsOverHttp:
    async def test_docs_load_everything_from_the_studio(self, base: str) -> None:  # noqa: F811
        """/docs is Swagger UI whose scripts and styles are the studio's own files (the
        policy allows no other source and no inline script), and each is served."""
        async with httpx.AsyncClient(base_url=base, timeout=30) as client:
            r = await client.get("/docs")
            assert r.status_code == 200
            assert "script-src 'self'" in r.headers["content-security-policy"]
            sources = re.findall(r'<(?:script|link)[^>]* (?:src|href)="([^"]+)"', r.text)
            assert "/static/swagger/swagger-ui-bundle.js" in sources
            assert "/static/swagger/swagger-ui.css" in sources
            assert all(s.startswith("/") and not s.startswith("//") for s in sources), sources
            assert re.search(r"<script>(?!</script>)", r.text) is None  # no inline script
            for src in sources:
                got = await client.get(src)
                assert got.status_code == 200 and got.content, src
            assert (await client.get("/redoc")).status_code == 404  # the CDN's page is gone


@needs_chromium
class TestInTheBrowser:
    async def test_docs_render_the_api(self, page: Page, base: str) -> None:  # noqa: F811
        """The docs page shows the API's operations (the chat's among them), with no error
        on the console: nothing was refused."""
        await page.goto(base + "/docs")
        await expect(page.locator(".swagger-ui .opblock").first).to_be_visible()
        await expect(page.locator(".swagger-ui")).to_contain_text("/api/stories/{story}/chat")

    async def test_usage_page_in_the_navigation(self, page: Page, base: str) -> None:  # noqa: F811
        """The story's navigation leads to its Usage page: offline turns used no model."""
        await create_story(page, base)
        await page.click("nav >> text=Usage")
        await expect(page).to_have_url(f"{base}/stories/tale/usage?branch=main")
        await expect(page.locator("[data-testid=usage-table]")).to_be_visible()
        await expect(page.locator("[data-testid=usage-empty]")).to_be_visible()
        await expect(page.locator("[data-testid=usage-cost]")).to_contain_text("$0.0000")

    async def test_chat_with_a_character(self, page: Page, base: str) -> None:  # noqa: F811
        """From the minds page, 'talk to Leo' opens the chat; asked where the brass key is,
        Leo says the drawer (he did not see Mara move it), with what he answers from."""
        await create_story(page, base)
        await page.goto(base + "/stories/tale/minds")
        await page.click("[data-testid=chat-leo]")
        await page.fill("#q", "Where is the brass key?")
        await page.click("[data-testid=chat-form] button[type=submit]")
        answer = page.locator("[data-testid=answer-text]")
        await expect(answer).to_have_text("As far as I know, the brass key is in the desk drawer.")
        await expect(page.locator("[data-testid=chat-records] li")).to_have_count(2)
        await page.select_option("#character", "mara")
        await page.click("[data-testid=chat-form] button[type=submit]")
        await expect(answer).to_have_text("As far as I know, the brass key is in the hollow book.")
