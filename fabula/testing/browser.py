"""The studio in a real browser, for tests: Debian's Chromium (:func:`chromium`, started
with :data:`ARGS`; the ``browser`` fixture, one a module), a live studio per test (the
``base`` fixture) and a story created from its front page (:func:`create_story`). Needs
Playwright (the dev extra)."""

from __future__ import annotations

import shutil
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from playwright.async_api import Browser, Page, async_playwright, expect

from fabula.settings import Settings
from fabula.testing.web import studio

__all__ = ["ARGS", "base", "browser", "chromium", "create_story", "run_until_pending"]


def chromium(settings: Settings | None = None) -> str:
    """The Chromium the tests drive: ``FABULA_CHROMIUM`` (from ``settings``, else read now,
    never at import), else ``chromium`` on the path, else Debian's."""
    chosen = (settings or Settings.from_env()).chromium
    return str(chosen or shutil.which("chromium") or "/usr/bin/chromium")


ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


@pytest.fixture(scope="module")
async def browser() -> AsyncIterator[Browser]:
    """Chromium, started once for a test module."""
    async with async_playwright() as p:
        launched = await p.chromium.launch(executable_path=chromium(), args=ARGS)
        yield launched
        await launched.close()


@pytest.fixture()
def base(redis_url: str, tmp_path: Path) -> Iterator[str]:
    with studio(redis_url, tmp_path) as url:
        yield url


async def create_story(page: Page, base: str, story: str = "tale") -> None:
    await page.goto(base + "/")
    await page.select_option("select[name=world]", "hollow_book")
    await page.fill("input[name=id]", story)
    await page.click("form.create button[type=submit]")
    await expect(page).to_have_url(f"{base}/stories/{story}?notice=created")
    await expect(page.locator("[data-testid=turns] li")).to_have_count(3)


async def run_until_pending(page: Page) -> None:
    """Press Run on the story page and wait for the live page to show the pending turn."""
    await expect(page.locator("main[data-live]")).to_have_count(1)  # events connected
    await page.click("#run-form button[type=submit]")
    await expect(page.locator("[data-testid=pending-banner]")).to_be_visible(timeout=30_000)
    await expect(page.locator("[data-testid=progress]")).to_have_attribute("data-state", "pending")
