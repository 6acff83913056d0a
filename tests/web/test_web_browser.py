"""The studio in a real browser: Playwright driving Debian's Chromium against a live studio.

Skipped, with the reason, only where no Chromium is installed (``.ci/run`` installs it;
Playwright's own browser download cannot work here). Screenshots of every page go to
``test-results/<test>/`` (``FABULA_TEST_OUTPUT`` moves the folder).
"""

from __future__ import annotations

import asyncio
import os
import re
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest
from playwright.async_api import Browser, Page, expect

from fabula.testing.browser import chromium, create_story, run_until_pending

# A turn's approval waits for the append-only file's fsync and a 2-core CI machine runs
# the whole suite at once: assertions wait up to 20 s (Playwright's default is 5 s).
expect.set_options(timeout=20_000)

pytestmark = pytest.mark.skipif(
    not Path(chromium()).exists(),
    reason=f"no Chromium at {chromium()}: install Debian's chromium (.ci/run does)",
)


EVIL = (
    "Leo whispered <script>window.__pwned = 1</script> and "
    '" onload="window.__pwned = 2" and <img src=x onerror="window.__pwned = 3"> twice.'
)


@pytest.fixture()
def shots(request: pytest.FixtureRequest) -> Path:
    """The test's output folder for screenshots."""
    root = Path(os.environ.get("FABULA_TEST_OUTPUT", "test-results"))
    folder = root / re.sub(r"[^A-Za-z0-9_.-]+", "_", request.node.name)
    folder.mkdir(parents=True, exist_ok=True)
    return folder


@pytest.fixture()
async def page(browser: Browser) -> AsyncIterator[Page]:
    context = await browser.new_context(viewport={"width": 1280, "height": 860})
    opened = await context.new_page()
    errors: list[str] = []
    opened.on("pageerror", lambda exc: errors.append(str(exc)))
    opened.on("dialog", lambda dialog: errors.append(f"dialog: {dialog.message}"))
    yield opened
    await context.close()
    assert errors == [], errors


async def turn_texts(page: Page) -> list[str]:
    return [t.strip() for t in await page.locator(".turn-text").all_inner_texts()]


class TestSteering:
    async def test_create_run_approve_reject_edit_minds_fork(
        self, page: Page, base: str, shots: Path
    ) -> None:
        """Create from hollow_book; run until a turn waits; approve it with the keyboard;
        reject the next with a note (a new draft waits); edit it (the edit is read and shown
        for approval) and approve that; scrub the minds to
        the turn where Leo believes the key is in the drawer while the world has it in the
        hollow book; follow his cell to the evidence; fork at that turn and see the branch."""
        await create_story(page, base)
        await page.screenshot(path=shots / "story.png", full_page=True)
        await page.goto(base + "/")
        await expect(page.locator("tr[data-story=tale]")).to_contain_text("The Hollow Book")
        await page.screenshot(path=shots / "stories.png", full_page=True)
        await page.click("tr[data-story=tale] a.danger")
        await expect(page.locator("h1")).to_contain_text("Delete")
        await page.screenshot(path=shots / "delete-confirm.png", full_page=True)
        await page.goto(f"{base}/stories/tale")

        await run_until_pending(page)
        await page.screenshot(path=shots / "story-pending.png", full_page=True)
        await page.click("[data-testid=pending-banner] a")
        await expect(page.locator("h1")).to_contain_text("Turn 4 awaits approval")
        draft = (await page.locator("[data-testid=edit-text]").input_value()).strip()
        assert draft and "What would be committed" in await page.inner_text("body")
        await page.screenshot(path=shots / "pending.png", full_page=True)
        await page.locator("body").press("a")
        await expect(page.locator(".notice")).to_have_text("Turn 4 committed.")
        assert (await turn_texts(page))[-1] == draft

        await run_until_pending(page)
        await page.goto(f"{base}/stories/tale/pending")
        first = await page.locator("input[name=pending_id]").first.input_value()
        await page.fill("[data-testid=reject-note]", "slower, please")
        await page.click("[data-testid=reject]")
        await expect(page.locator(".notice")).to_have_text("Turn 5 rejected; here is a new draft.")
        assert await page.locator("input[name=pending_id]").first.input_value() != first
        assert len(await turn_texts_of(base)) == 4

        await page.fill("[data-testid=edit-text]", "Mara went to the hallway.")
        await page.click("[data-testid=edit]")
        await expect(page.locator(".notice")).to_have_text(
            "Your text for turn 5 was read: approve it to commit it."
        )
        await expect(page.locator("[data-testid=changes]")).to_contain_text("hallway")
        await page.locator("body").press("a")
        await expect(page.locator(".notice")).to_have_text("Turn 5 committed.")
        assert (await turn_texts(page))[-1] == "Mara went to the hallway."

        await page.click("nav >> text=Minds")
        await expect(page.locator("#minds-panel")).to_have_attribute("data-as-of", "5")
        await page.fill("[data-testid=as-of]", "3")
        await expect(page.locator("#minds-panel")).to_have_attribute("data-as-of", "3")
        leo = page.locator("[data-testid=cell-leo-brass_key-location]")
        await expect(leo).to_have_attribute("data-status", "false")
        await expect(leo).to_contain_text("desk drawer")
        await expect(leo).to_contain_text("false belief")
        world = page.locator("[data-testid=world-brass_key-location]")
        await expect(world).to_have_text("hollow book")
        mara = page.locator("[data-testid=cell-mara-brass_key-location]")
        await expect(mara).to_have_attribute("data-status", "true")
        assert "as_of=3" in page.url  # the slider's turn is in the address
        await page.screenshot(path=shots / "minds.png", full_page=True)
        await page.screenshot(path=shots / "minds-top.png")

        await leo.locator("a").click()
        await expect(page.locator("[data-testid=passage] mark")).to_have_text(
            "Leo put the brass key in the desk drawer."
        )
        await expect(page.locator("[data-testid=belief]")).to_contain_text("participated")
        await page.screenshot(path=shots / "evidence.png", full_page=True)

        await page.goto(f"{base}/stories/tale/fork?at=3")
        await page.fill("[data-testid=fork-name]", "what-if")
        await page.screenshot(path=shots / "fork.png", full_page=True)
        await page.click("[data-testid=fork-submit]")
        await expect(page.locator(".notice")).to_have_text("Branch created.")
        tree = page.locator("[data-testid=branch-tree]")
        await expect(tree.locator("li[data-branch=what-if]")).to_contain_text("from main at turn 3")
        assert len(await turn_texts(page)) == 3
        await page.screenshot(path=shots / "branch.png", full_page=True)


async def turn_texts_of(base: str, story: str = "tale") -> list[str]:
    async with httpx.AsyncClient(base_url=base) as client:
        data = (await client.get(f"/api/stories/{story}/text")).json()
    return [t["text"] for t in data["turns"]]


class TestTogether:
    async def test_two_browsers_one_commit(
        self, browser: Browser, page: Page, base: str, shots: Path
    ) -> None:
        """Two people on the same pending turn: the first approval commits it; the second
        person's page says it was decided elsewhere, and their approval changes nothing."""
        await create_story(page, base)
        await run_until_pending(page)
        await page.goto(f"{base}/stories/tale/pending")
        other_context = await browser.new_context()
        other = await other_context.new_page()
        try:
            await other.goto(f"{base}/stories/tale/pending")
            await expect(other.locator("main[data-live]")).to_have_count(1)
            await page.click("[data-testid=approve]")
            await expect(page.locator(".notice")).to_have_text("Turn 4 committed.")
            await expect(other.locator("[data-testid=decided-elsewhere]")).to_be_visible()
            await other.screenshot(path=shots / "decided-elsewhere.png", full_page=True)
            await other.click("[data-testid=approve]")
            await expect(other.locator(".notice")).to_have_text(
                "Turn 4 was already decided by someone else."
            )
        finally:
            await other_context.close()
        assert len(await turn_texts_of(base)) == 4

    async def test_page_follows_a_commit_from_the_command_line(
        self, page: Page, base: str, redis_url: str
    ) -> None:
        """A story page shows a turn the command line commits in another process."""
        await create_story(page, base)
        await expect(page.locator("main[data-live]")).to_have_count(1)
        env = {**os.environ, "FABULA_REDIS_URL": redis_url}
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "fabula", "run", "tale", "--auto", env=env
        )
        assert await proc.wait() == 0
        await expect(page.locator("[data-testid=turns] li")).to_have_count(4, timeout=15_000)


class TestRecall:
    async def test_ask_the_memory_as_a_character(self, page: Page, base: str, shots: Path) -> None:
        """The Recall page, reached from the story's navigation: asked where the brass key
        is as Leo, it shows what Leo lived (the drawer, not the hollow book) and what the
        request was read as; an episode's record opens its passage."""
        await create_story(page, base)
        await page.click("nav >> text=Recall")
        await page.fill("#q", "Where is the brass key?")
        await page.select_option("#character", "leo")
        await page.click("[data-testid=recall-form] button[type=submit]")
        lines = page.locator("[data-testid=recalled-lines]")
        await expect(lines).to_contain_text("the brass key is in the desk drawer")
        await expect(lines).not_to_contain_text("Mara moved")
        await expect(page.locator("[data-testid=read-as]")).to_contain_text("brass_key")
        await expect(page.locator("#character")).to_have_value("leo")
        await page.screenshot(path=shots / "recall.png", full_page=True)
        await lines.locator("a").first.click()
        await expect(page.locator("[data-testid=passage] mark")).to_be_visible()


class TestEscaping:
    async def test_story_text_never_runs(self, page: Page, base: str, shots: Path) -> None:
        """Text with <script>, an onload attribute and an onerror image, committed as a
        turn, shows as text on the story, minds and evidence pages and runs nothing."""
        await create_story(page, base)
        async with httpx.AsyncClient(base_url=base, timeout=60) as client:
            r = await client.post("/api/stories/tale/run", json={"turns": 1})
            assert r.json()["pending"] is not None
            r = await client.post("/api/stories/tale/edit", json={"text": EVIL, "now": True})
            assert r.json()["outcome"] == "committed"
            events = (await client.get("/api/stories/tale/minds?as_of=4")).json()
        await page.goto(f"{base}/stories/tale")
        await expect(page.locator("#turn-4 .turn-text")).to_have_text(EVIL)
        await page.goto(f"{base}/stories/tale/minds?as_of=4")
        await expect(page.locator("[data-testid=turn-line]")).to_contain_text("<script>")
        await page.goto(f"{base}/stories/tale/evidence/e4.0")
        await expect(page.locator("[data-testid=passage]")).to_contain_text("onerror")
        await page.goto(f"{base}/stories/tale/recall?q=What+did+Leo+whisper%3F")
        await expect(page.locator("[data-testid=recalled-lines]")).to_contain_text("<script>")
        await page.screenshot(path=shots / "escaped.png", full_page=True)
        assert await page.evaluate("window.__pwned") is None
        assert events["as_of"] == 4


def test_no_chromium_download_needed() -> None:
    """Playwright drives the system's Chromium: no browser is downloaded."""
    out = subprocess.run([chromium(), "--version"], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and "Chromium" in out.stdout
