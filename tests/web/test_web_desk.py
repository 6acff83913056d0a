"""The studio's writer's-desk pages in a real browser (Playwright, Debian's Chromium) and
over HTTP: the API documentation at ``/docs`` renders under the studio's own
Content-Security-Policy, the Usage page, and the Chat page.

The browser tests are skipped, with the reason, where no Chromium is installed; the HTTP
checks of ``/docs`` (every script and style from the studio itself) always run.
"""

from __future__ import annotations

import io
import re
import zipfile
from collections.abc import AsyncIterator
from html import escape

import httpx
import pytest
from playwright.async_api import Browser, Page, expect

from fabula.testing.browser import chromium, create_story, run_until_pending

needs_chromium = pytest.mark.skipif(
    not __import__("pathlib").Path(chromium()).exists(),
    reason=f"no Chromium at {chromium()}: install Debian's chromium (.ci/run does)",
)


@pytest.fixture()
async def page(browser: Browser, request: pytest.FixtureRequest) -> AsyncIterator[Page]:
    context = await browser.new_context(viewport={"width": 1280, "height": 860})
    opened = await context.new_page()
    problems: list[str] = []
    opened.on("pageerror", lambda exc: problems.append(str(exc)))
    # a script or style the Content-Security-Policy refuses is reported on the console
    opened.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
    yield opened
    await context.close()
    if request.node.get_closest_marker("refusal") is not None:  # the one 422 it expects
        refused = "the server responded with a status of 422"
        assert sum(refused in p for p in problems) == 1, problems
        problems = [p for p in problems if refused not in p]
    assert problems == [], problems


class TestDocsOverHttp:
    async def test_docs_load_everything_from_the_studio(self, base: str) -> None:
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


class TestRewindOverHttp:
    async def test_rewind_and_retcon_through_the_api(self, base: str) -> None:
        """POST rewind makes turn `to` the head and names the kept branch; refused (422,
        nothing changed) while a turn awaits approval; POST retcon makes a branch from the
        turn before with the new text, and a refused one leaves nothing."""
        async with httpx.AsyncClient(base_url=base, timeout=60) as client:
            made = await client.post("/api/stories", json={"world": "hollow_book", "id": "tale"})
            assert made.status_code == 201, made.text
            r = await client.post("/api/stories/tale/rewind", json={"to": 2})
            assert r.status_code == 200, r.text
            assert r.json() == {
                "story": "tale",
                "branch": "main",
                "head": 2,
                "kept": "main-after-2",
                "kept_head": 3,
            }
            r = await client.post("/api/stories/tale/run", json={"turns": 1})
            assert r.json()["pending"] is not None
            r = await client.post("/api/stories/tale/rewind", json={"to": 1})
            assert r.status_code == 409 and "awaits a decision" in r.text
            assert (await client.get("/api/stories/tale")).json()["head"] == 2
            body = {"turn": 2, "text": "Bob entered the study."}
            r = await client.post("/api/stories/tale/retcon", json=body)
            assert r.status_code == 422 and "Bob" in r.text
            branches = (await client.get("/api/stories/tale/branches")).json()
            assert sorted(b["branch"] for b in branches) == ["main", "main-after-2"]
            body = {"turn": 2, "text": "Leo went to the hallway.", "name": "again"}
            r = await client.post("/api/stories/tale/retcon", json=body)
            assert r.status_code == 201, r.text
            assert (r.json()["branch"], r.json()["head"]) == ("again", 2)
            text = (await client.get("/api/stories/tale/text?branch=again")).json()
            assert text["turns"][-1]["text"] == "Leo went to the hallway."


class TestDraftsOverHttp:
    async def test_alternatives_and_choice_through_the_api(self, base: str) -> None:
        """POST alternatives writes the drafts (the turn first), GET drafts shows the same;
        approve with choice commits that draft, and the drafts stay with the turn."""
        async with httpx.AsyncClient(base_url=base, timeout=60) as client:
            await client.post("/api/stories", json={"world": "hollow_book", "id": "tale"})
            r = await client.post("/api/stories/tale/alternatives", json={"count": 2})
            assert r.status_code == 200, r.text
            made = r.json()
            assert [d["id"] for d in made["drafts"]] == ["4.d1", "4.d2"]
            assert (await client.get("/api/stories/tale/drafts")).json()["drafts"] == made["drafts"]
            bad = await client.post("/api/stories/tale/approve", json={"choice": "5"})
            assert bad.status_code == 422 and "has no draft '5'" in bad.text
            body = {"choice": "4.d2", "pending_id": made["pending_id"]}
            r = await client.post("/api/stories/tale/approve", json=body)
            assert r.status_code == 200 and r.json()["outcome"] == "committed", r.text
            text = (await client.get("/api/stories/tale/text")).json()
            assert text["turns"][-1]["text"] == made["drafts"][1]["draft"]
            kept = (await client.get("/api/stories/tale/drafts?turn=4")).json()
            assert kept["chosen"] == "4.d2" and len(kept["drafts"]) == 2


class TestRoughEdgesOverHttp:
    async def test_a_pending_draft_is_shown_after_the_turns_before_it(self, base: str) -> None:
        """The pending page showed the draft alone; now the turns just before it come first."""
        async with httpx.AsyncClient(base_url=base, timeout=60) as client:
            await client.post("/api/stories", json={"world": "hollow_book", "id": "tale"})
            await client.post("/api/stories/tale/run", json={"turns": 1})
            text = (await client.get("/api/stories/tale/text")).json()
            texts = [t["text"] for t in text["turns"]]
            html = (await client.get("/stories/tale/pending")).text
            before = html.index('data-testid="before"')
            assert before < html.index('data-testid="draft"')
            shown = html[before : html.index('data-testid="draft"')]
            assert all(escape(t, quote=False) in shown for t in texts[-3:]), shown

    async def test_nested_minds_are_collapsed_after_the_grid(self, base: str) -> None:
        """lighthouse's minds page listed every nested chain open (4,823 px); now each
        character's chains are one closed <details>, after the grid, named by names."""
        async with httpx.AsyncClient(base_url=base, timeout=60) as client:
            await client.post("/api/stories", json={"world": "lighthouse", "id": "lamp"})
            await client.post("/api/stories/lamp/run", json={"turns": 3, "auto": True})
            html = (await client.get("/stories/lamp/minds")).text
            chains = re.findall(r'<details class="nested-chains"[^>]*>', html)
            assert chains and not any(" open" in c for c in chains)
            assert html.index('data-testid="grid"') < html.index('class="nested-chains"')
            inside = html.split('<details class="nested-chains"', 1)[1]
            assert html.count('<h3 class="nested"') == inside.count('<h3 class="nested"')

    async def test_the_evidence_page_reads_names_not_ids(self, base: str) -> None:
        """It read "leo believes brass_key · location is leo" and "state s7.0" (and "the
        brass key is in Leo"); now names and a sentence ("with Leo"), the ids in tooltips."""
        async with httpx.AsyncClient(base_url=base, timeout=60) as client:
            await client.post("/api/stories", json={"world": "hollow_book", "id": "tale"})
            minds = (await client.get("/stories/tale/minds?as_of=0")).text
            cell = minds.split('data-testid="cell-leo-brass_key-location"', 1)[1]
            link = re.search(r'href="([^"]+)"', cell)
            assert link is not None
            html = (await client.get(link[1].replace("&amp;", "&"))).text
            line = re.search(r'data-testid="belief"[^>]*>([^<]*)<', html)
            assert line is not None and "Leo believes: The brass key is with Leo." in line[1]
            event = re.search(r"<dt>Event</dt><dd[^>]*>([^<]*)<", html)
            assert event is not None and event[1] == "the world's setup"
            assert "brass_key" not in line[1] and "desk_drawer" not in line[1]

    async def test_exports_as_a_character_and_as_epub(self, base: str) -> None:
        """The studio exports what ``fabula export`` does: the story as an EPUB book (its
        nav and a character's card link to it), and as Leo lived it in md, json and epub
        (turn 3, Mara hiding the key while he is out, in none); an unknown character is a
        one-line 404."""
        async with httpx.AsyncClient(base_url=base, timeout=60) as client:
            await client.post("/api/stories", json={"world": "hollow_book", "id": "tale"})
            texts = {
                t["turn"]: t["text"]
                for t in (await client.get("/api/stories/tale/text")).json()["turns"]
            }
            hidden = texts[3]
            assert "Mara" in hidden
            card = (await client.get("/stories/tale/characters/leo")).text
            assert "format=epub&amp;as=leo" in card and "format=epub" in card.split("<main")[0]
            whole = await client.get("/api/stories/tale/export?format=epub")
            assert whole.status_code == 200
            assert whole.headers["content-type"] == "application/epub+zip"
            assert 'filename="tale-main.epub"' in whole.headers["content-disposition"]
            with zipfile.ZipFile(io.BytesIO(whole.content)) as z:
                assert z.read("mimetype") == b"application/epub+zip"
                book = "".join(z.read(n).decode() for n in z.namelist() if n.endswith(".xhtml"))
            assert all(escape(t, quote=False) in book for t in texts.values())
            md = await client.get("/api/stories/tale/export?format=md&as=leo")
            assert md.status_code == 200 and "*As Leo lived it.*" in md.text
            assert texts[1] in md.text and hidden not in md.text
            lived = (await client.get("/api/stories/tale/export?format=json&as=leo")).json()
            assert lived["character"] == "leo" and 3 not in [t["turn"] for t in lived["turns"]]
            epub = await client.get("/api/stories/tale/export?format=epub&as=leo")
            with zipfile.ZipFile(io.BytesIO(epub.content)) as z:
                book = "".join(z.read(n).decode() for n in z.namelist() if n.endswith(".xhtml"))
            assert "As Leo lived it" in book and escape(hidden, quote=False) not in book
            missing = await client.get("/api/stories/tale/export?format=md&as=nobody")
            assert missing.status_code == 404 and "nobody" in missing.json()["error"]
            assert "\n" not in missing.json()["error"]

    async def test_a_bad_pack_is_said_on_the_form(self, base: str) -> None:
        """A bad uploaded pack gave a bare 422 page; now it is the stories page with the
        message once on the form, the id kept, and no story made."""
        async with httpx.AsyncClient(base_url=base, timeout=60) as client:
            home = await client.get("/")
            token = re.search(r'name="csrf_token" value="([^"]+)"', home.text)
            assert token is not None
            before = (await client.get("/api/stories")).json()
            r = await client.post(
                "/stories",
                data={"csrf_token": token[1], "world": "hollow_book", "id": "broken"},
                files={"pack": ("broken.toml", b"title = [unclosed\n", "application/toml")},
            )
            assert r.status_code == 422, r.text
            error = re.search(r'data-testid="create-error">([^<]*)<', r.text)
            assert error is not None and error[1].strip() and "\n" not in error[1].strip()
            assert r.text.count(error[1]) == 1 and "broken.toml" in error[1]
            assert 'class="create"' in r.text and 'value="broken"' in r.text
            assert (await client.get("/api/stories")).json() == before


@needs_chromium
class TestInTheBrowser:
    async def test_docs_render_the_api(self, page: Page, base: str) -> None:
        """The docs page shows the API's operations (the chat's among them), with no error
        on the console: nothing was refused."""
        await page.goto(base + "/docs")
        await expect(page.locator(".swagger-ui .opblock").first).to_be_visible()
        await expect(page.locator(".swagger-ui")).to_contain_text("/api/stories/{story}/chat")

    async def test_usage_page_in_the_navigation(self, page: Page, base: str) -> None:
        """The story's navigation leads to its Usage page: offline turns used no model."""
        await create_story(page, base)
        await page.click("nav >> text=Usage")
        await expect(page).to_have_url(f"{base}/stories/tale/usage?branch=main")
        await expect(page.locator("[data-testid=usage-table]")).to_be_visible()
        await expect(page.locator("[data-testid=usage-empty]")).to_be_visible()
        await expect(page.locator("[data-testid=usage-cost]")).to_contain_text("$0.0000")

    async def test_chat_with_a_character(self, page: Page, base: str) -> None:
        """From the minds page, 'talk to Leo' opens the chat; asked where the brass key is,
        Leo says the drawer (he did not see Mara move it), with what he answers from."""
        await create_story(page, base)
        await page.goto(base + "/stories/tale/minds")
        await page.click("[data-testid=chat-leo]")
        await page.fill("#q", "Where is the brass key?")
        await page.click("[data-testid=chat-form] button[type=submit]")
        answer = page.locator("[data-testid=answer-text]").last  # the conversation grows
        await expect(answer).to_have_text("As far as I know, the brass key is in the desk drawer.")
        await expect(page.locator("[data-testid=chat-records] li")).to_have_count(2)
        await page.select_option("#character", "mara")
        await page.click("[data-testid=chat-form] button[type=submit]")
        await expect(answer).to_have_text("As far as I know, the brass key is in the hollow book.")

    async def test_rewind_to_here_keeps_the_later_turns(
        self,
        page: Page,
        base: str,
    ) -> None:
        """Every turn but the last offers 'rewind to here'; rewinding to turn 2 leaves the
        branch with turns 0..2 and a branch that keeps turn 3."""
        await create_story(page, base)
        await expect(page.locator("[data-testid=rewind-3]")).to_have_count(0)  # the head
        await page.hover("#turn-2")  # a turn's actions show on hover (or focus)
        await page.click("[data-testid=rewind-2]")
        await page.fill("[data-testid=rewind-keep]", "later")
        await page.click("[data-testid=rewind-submit]")
        await expect(page.locator("[data-testid=turns] li")).to_have_count(2)  # turns 1, 2
        await expect(page.locator(".notice, [role=status]").first).to_contain_text("Rewound")
        await page.click("[data-testid=branch-tree] >> text=later")
        await expect(page.locator("[data-testid=turns] li")).to_have_count(3)
        await expect(page.locator("#turn-3")).to_contain_text("Mara moved the brass key")
        await page.goto("about:blank")  # the live story page's stream ends before the studio

    @pytest.mark.refusal
    async def test_edit_this_turn_makes_a_branch(self, page: Page, base: str) -> None:
        """'edit this turn' on turn 3 opens its text; an edit the critic refuses comes back
        with the message naming the page's checkbox; a good one becomes a new branch."""
        await create_story(page, base)
        await page.hover("#turn-3")
        await page.click("[data-testid=retcon-3]")
        box = page.locator("[data-testid=retcon-text]")
        await expect(box).to_have_value("Mara moved the brass key to the hollow book.")
        await box.fill("Bob entered the study.")
        await page.click("[data-testid=retcon-submit]")
        error = page.locator("[data-testid=retcon-error]")
        await expect(error).to_contain_text("Bob")
        await expect(error).to_contain_text("tick “Commit it even if the critic finds errors”")
        await expect(error).not_to_contain_text("--force")
        await box.fill("Mara went to the hallway.")
        await page.click("[data-testid=retcon-submit]")
        await expect(page).to_have_url(re.compile(r"branch=main-edit-3"))
        await expect(page.locator("#turn-3")).to_contain_text("Mara went to the hallway.")
        await page.goto("about:blank")

    async def test_show_drafts_and_choose_one(self, page: Page, base: str) -> None:
        """On the pending page, 'Show 3 drafts' lays the drafts side by side, each with its
        changes (and a note: the offline engine has two different ones here); choosing the
        second commits it."""
        await create_story(page, base)
        await run_until_pending(page)
        await page.goto(base + "/stories/tale/pending")
        await expect(page.locator("[data-testid=try-again]")).to_be_visible()
        await page.click("[data-testid=show-drafts]")
        await expect(page.locator("[data-testid=drafts] section")).to_have_count(2)
        await expect(page.locator("[data-testid=drafts-note]")).to_contain_text("2 different")
        second = page.locator("[data-testid=draft-2]")
        await expect(second).to_contain_text("Mara went to the hallway.")
        await page.click("[data-testid=choose-2]")
        await expect(page.locator("#turn-4")).to_contain_text("Mara went to the hallway.")
        await page.goto("about:blank")

    @pytest.mark.refusal
    async def test_refused_edit_names_the_checkbox(self, page: Page, base: str) -> None:
        """A refused edit on the pending page told the person to use `--force`, a flag of the
        command line; now it names the page's own checkbox."""
        await create_story(page, base)
        await run_until_pending(page)
        await page.goto(base + "/stories/tale/pending")
        await page.fill("[data-testid=edit-text]", "Bob entered the study.")
        await page.click("[data-testid=edit]")
        error = page.locator("[data-testid=edit-error]")
        await expect(error).to_contain_text("commit it at once, whatever the critic finds")
        await expect(error).not_to_contain_text("--force")
        await page.goto("about:blank")

    async def test_a_notice_goes_away(self, page: Page, base: str) -> None:
        """A notice stayed on the page for good; now it goes after a while, or at once
        when clicked."""
        await create_story(page, base)
        notice = page.locator("p.notice")
        await expect(notice).to_have_text("Story created.")
        await notice.click()
        await expect(notice).to_have_count(0)
        await page.reload()
        await expect(notice).to_have_text("Story created.")
        await expect(notice).to_have_count(0, timeout=40_000)  # by itself, after 20 s
        await page.goto("about:blank")

    async def test_a_run_of_three_goes_on_after_approval(self, page: Page, base: str) -> None:
        """A 3-turn run stopping for approval showed "0 / 3 turns · waiting for approval"
        after the approval and never went on; now the approved turn counts and the run
        writes the next, stopping for approval again."""
        await create_story(page, base)
        await page.fill("#run-form input[name=turns]", "3")
        await run_until_pending(page)
        await page.click("[data-testid=pending-banner] a")
        await page.click("[data-testid=approve]")
        progress = page.locator("[data-testid=progress]")
        await expect(page.locator("[data-testid=pending-banner]")).to_contain_text("Turn 5")
        await expect(progress).to_have_attribute("data-state", "pending")
        await expect(progress).to_contain_text("1 / 3 turns · waiting for approval")
        await page.goto("about:blank")

    async def test_fork_form_follows_its_turn(self, page: Page, base: str) -> None:
        """The fork form listed the hypotheses open at the turn it was opened at, whatever
        turn was then typed; now another turn lists that turn's."""
        await create_story(page, base)
        await page.goto(base + "/stories/tale/fork?branch=main&at=3")
        options = page.locator("[data-testid=fork-realise] option")
        at_three = await options.count()
        await page.fill("[data-testid=fork-at]", "0")
        await page.locator("[data-testid=fork-at]").dispatch_event("change")
        await expect(page).to_have_url(re.compile(r"at=0"))
        await expect(page.locator("[data-testid=fork-at]")).to_have_value("0")
        assert await options.count() != at_three
        await page.goto("about:blank")

    async def test_a_finished_draft_is_not_being_written(self, page: Page, base: str) -> None:
        """The pending draft under the story stayed labelled "Being written"; now once it
        waits for a decision it says so."""
        await create_story(page, base)
        await run_until_pending(page)
        title = page.locator(".live-title")
        await expect(title).to_have_text("Awaiting approval")
        await page.goto("about:blank")

    async def test_the_minds_page_is_short(self, page: Page, base: str) -> None:
        """lighthouse's minds page was 4,823 px tall with every nested chain open; now the
        grid comes first, on the first screen, and the chains are closed until clicked."""
        async with httpx.AsyncClient(base_url=base, timeout=60) as client:
            await client.post("/api/stories", json={"world": "lighthouse", "id": "lamp"})
            await client.post("/api/stories/lamp/run", json={"turns": 3, "auto": True})
        await page.goto(base + "/stories/lamp/minds")
        grid = await page.locator("[data-testid=grid]").bounding_box()
        assert grid is not None and grid["y"] < 860
        height = await page.evaluate("document.documentElement.scrollHeight")
        chains = page.locator("details.nested-chains")
        assert await chains.count() >= 2
        for i in range(await chains.count()):
            await chains.nth(i).locator("summary").click()
            await expect(chains.nth(i)).to_have_attribute("open", "")
        opened = await page.evaluate("document.documentElement.scrollHeight")
        assert height < opened - 500, (height, opened)
        await page.goto("about:blank")
