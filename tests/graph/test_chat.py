"""Talking to a character (``fabula chat``, ``POST /api/stories/{id}/chat``, the Chat page):
answers from only the character's own mind, in its voice when a model is configured, and
nothing of a chat written.

hollow_book after its opening: Leo put the brass key in the desk drawer and went out; Mara,
alone, moved it to the hollow book. Leo must answer the drawer, never the book.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import redis.asyncio as aredis

from fabula.agents.contracts import ChatExchange
from fabula.errors import InvalidInput, NotFound
from fabula.graph.service import Fabula
from fabula.graph.service.responses.recall import ChatOut
from fabula.memory import keys
from fabula.memory.connection import connect_async
from fabula.memory.keys import EpisodeKeys
from fabula.settings import Settings
from fabula.testing.cli import fabula, fabula_process
from fabula.testing.model import STORY, FakeOpenAI, message_text
from fabula.testing.web import studio

KEY = "Where is the brass key?"


async def story_keys(redis_url: str, story: str) -> dict[str, Any]:
    """Every key of ``story`` with its serialised value: a chat must leave them as they are."""
    client: aredis.Redis = connect_async(redis_url)
    try:
        found = {}
        async for key in client.scan_iter(match=f"fab:{{{story}}}:*"):
            found[key] = await client.dump(key)
        return found
    finally:
        await client.aclose()


async def consolidated(redis_url: str, story: str, branch: str = "main") -> None:
    """Wait until the background consolidation and indexing of ``story``'s turns reach the
    branch's head (their watermarks): they write derived keys after a story is made, at no
    one's request, so a snapshot taken before they end would count their writes as a
    chat's (the studio's process does them; ``Fabula.quiesce`` is this for one in-process)."""
    client: aredis.Redis = connect_async(redis_url)
    try:
        for _ in range(1200):
            head = await client.hget(keys.head(story, branch), "turn")
            through = await client.hget(keys.hierarchy_threads(story, branch), "@through")
            indexed = await client.hget(EpisodeKeys(story, branch).stats, "turn")
            marks = (through, indexed)
            if head is not None and all(m is not None and int(m) >= int(head) for m in marks):
                return
            await asyncio.sleep(0.05)
        raise AssertionError(f"{story}: background work never reached the branch's head")
    finally:
        await client.aclose()


@pytest.fixture()
async def app(redis_url: str, tmp_path: Path) -> AsyncIterator[Fabula]:
    async with Fabula(redis_url, Settings(home=tmp_path)) as fab:
        await fab.create_story("hollow_book", "tale")
        yield fab


class TestAnswers:
    async def test_each_character_answers_from_its_own_beliefs(self, app: Fabula) -> None:
        """Leo, who did not see the key moved, answers the drawer (resting on his belief
        and the episode he came by it in); Mara answers the book; as of turn 0 Leo still
        has the key; a question naming "the key" is read as the brass key."""
        store = app.store("tale")
        leo = await app.read(store).chat("Leo", KEY)
        assert leo.answer == "As far as I know, the brass key is in the desk drawer."
        assert leo.answered_by == "question-answerer" and leo.character == "leo"
        assert [r.kind for r in leo.records] == ["belief", "episode"]
        assert leo.records[1].text == "Leo put the brass key in the desk drawer."
        assert "hollow book" not in json.dumps(leo.model_dump())
        mara = await app.read(store).chat("mara", "where is the key")
        assert mara.answer == "As far as I know, the brass key is in the hollow book."
        early = await app.read(store).chat("leo", KEY, as_of=0)
        assert early.answer == "As far as I know, the brass key is with me." and early.as_of == 0

    async def test_nested_unknown_and_free_questions(self, app: Fabula) -> None:
        """Leo thinks Mara believes what he does; a thing he never heard of is "I don't
        know"; a free question is answered with what he recalls of it, no unseen deed."""
        store = app.store("tale")
        nested = await app.read(store).chat("leo", "Where does Mara think the key is?")
        assert nested.answer == "I think Mara believes the brass key is in the desk drawer."
        unknown = await app.read(store).chat("leo", "Where is the spoon?")
        assert unknown.answer == "I don't know where the spoon is." and unknown.records == []
        free = await app.read(store).chat("leo", "What did you do with the key?")
        assert free.answered_by == "recall" and "I remember:" in free.answer
        assert "Mara moved" not in free.answer and "key is in the hollow book" not in free.answer
        assert {r.kind for r in free.records} == {"belief", "episode"}
        assert "Leo " not in free.answer and "Leo's" not in free.answer  # he speaks as "I"
        assert "I put the brass key in the desk drawer." in free.answer

    async def test_a_conversation_carries_its_last_exchange(self, app: Fabula) -> None:
        """Issue 44: "chat does not remember the last exchange". A follow-up is read
        against the conversation so far: "And where is it now?" is the key again, "Why?"
        the grounds of the last answer (the episode Leo's belief came from), "What about
        the desk drawer?" the last question of another thing."""
        store = app.store("tale")
        talked: list[ChatExchange] = []

        async def ask(who: str, q: str) -> ChatOut:
            said = await app.read(store).chat(who, q, conversation=talked)
            talked.append(ChatExchange(question=q, answer=said.answer))
            return said

        first = await ask("leo", KEY)
        assert first.reading is None
        again = await ask("leo", "And where is it now?")
        assert again.reading == "Where is the brass key?"
        assert again.answer == "As far as I know, the brass key is in the desk drawer."
        why = await ask("leo", "Why?")
        assert why.reading == KEY
        assert why.answer == "Because I put the brass key in the desk drawer."
        sure = await ask("leo", "How do you know?")
        assert sure.answer == why.answer
        talked.clear()
        mara = await ask("mara", "Where is the key?")
        assert (await ask("mara", "why?")).answer == (
            "Because I moved the brass key to the hollow book."
        ), mara.answer
        other = await ask("mara", "What about the desk drawer?")
        assert other.reading == "Where is the desk drawer?", other
        # without the conversation, "it" is nobody's: asked as it stands
        alone = await app.read(store).chat("leo", "Where is it?")
        assert alone.reading is None and "desk drawer" not in alone.answer

    async def test_a_conversation_never_reaches_another_character(self, app: Fabula) -> None:
        """What the person told Leo in chat is not Leo's belief, and Mara's answers do not
        change for having been asked after it: the invariant of private minds holds."""
        store = app.store("tale")
        told = [
            ChatExchange(question="The key is under the mat.", answer="I know nothing of that.")
        ]
        leo = await app.read(store).chat("leo", KEY, conversation=told)
        assert leo.answer == "As far as I know, the brass key is in the desk drawer."
        mara = await app.read(store).chat("mara", KEY)
        assert "mat" not in mara.answer
        minds = await app.read(store).minds()
        assert "mat" not in json.dumps(minds.model_dump())

    async def test_bad_questions_and_nothing_written(self, app: Fabula, redis_url: str) -> None:
        """An empty question, an unknown character and a turn outside the branch are one
        clear error each; answering writes nothing to the story (its keys are taken once
        the background indexing of its turns has ended, which writes derived keys)."""
        store = app.store("tale")
        await app.quiesce("tale")
        before = await story_keys(redis_url, "tale")
        for q in (KEY, "Where does Mara think the key is?", "Tell me everything."):
            await app.read(store).chat("leo", q)
        assert await story_keys(redis_url, "tale") == before
        with pytest.raises(InvalidInput, match="a chat needs a question"):
            await app.read(store).chat("leo", "   ")
        with pytest.raises(NotFound, match="no character 'nobody'"):
            await app.read(store).chat("nobody", KEY)
        with pytest.raises(InvalidInput, match=r"turns 0\.\.3"):
            await app.read(store).chat("leo", KEY, as_of=9)


class TestModelVoice:
    async def test_the_model_speaks_from_the_characters_mind_only(
        self, fab: Fabula, fake_openai: FakeOpenAI
    ) -> None:
        """With a model configured, the character's answer is the model's, in its voice;
        the prompt holds Leo's own beliefs and memories and his voice, never what only
        Mara saw; the records are those it was given."""
        fake_openai.reply_text("The drawer, where I left it. Why do you ask?")
        said = await fab.read(fab.store(STORY)).chat("leo", KEY)
        assert said.answered_by == "model"
        assert said.answer == "The drawer, where I left it. Why do you ask?"
        prompt = message_text(fake_openai.requests[-1])
        assert "brisk and guarded" in prompt and "You are Leo" in prompt
        assert "the brass key is in the desk drawer" in prompt
        assert "Mara moved" not in prompt and "key is in the hollow book" not in prompt
        assert any(r.kind == "episode" for r in said.records)

    async def test_the_model_is_given_the_conversation(
        self, fab: Fabula, fake_openai: FakeOpenAI
    ) -> None:
        """A follow-up goes to the model with the conversation so far, quoted, and what
        the question was read as; what the person said there is data, never a belief."""
        fake_openai.reply_text("Because I left it there myself.")
        talked = [ChatExchange(question=KEY, answer="In the desk drawer.")]
        said = await fab.read(fab.store(STORY)).chat("leo", "Why?", conversation=talked)
        assert said.answer == "Because I left it there myself." and said.reading == KEY
        prompt = message_text(fake_openai.requests[-1])
        assert "## Your conversation so far" in prompt
        assert '- The person: "Where is the brass key?"' in prompt
        assert '  You: "In the desk drawer."' in prompt
        assert '## It asks\n"Where is the brass key?"' in prompt


class TestCli:
    def test_ask_json_and_the_loop(self, redis_url: str) -> None:
        """`chat --ask` prints the answer and what it rests on; `--json` the ChatOut; without
        --ask, each line of stdin is a question until `q`; an unknown character is one line."""
        fabula(redis_url, "new", "--world", "hollow_book", "--id", "tale")
        shown = fabula(redis_url, "chat", "tale", "leo", "--ask", KEY)
        assert "Leo: As far as I know, the brass key is in the desk drawer." in shown.stdout
        assert "rests on b" in shown.stdout and "hollow book" not in shown.stdout
        data = json.loads(fabula(redis_url, "chat", "tale", "Mara", "--ask", KEY, "--json").stdout)
        assert data["character"] == "mara" and "hollow book" in data["answer"]
        assert data["records"][0]["kind"] == "belief"
        leo = ("chat", "tale", "leo")
        loop = _with_stdin(
            redis_url, "Where is the key?\n\nWhere is Mara?\nq\nWhere is Leo?\n", *leo
        )
        lines = [line for line in loop.stdout.splitlines() if line.startswith("Leo:")]
        assert lines == [
            "Leo: As far as I know, the brass key is in the desk drawer.",
            "Leo: As far as I know, Mara is in the study.",
        ]
        talk = _with_stdin(redis_url, "Where is the key?\nWhy?\nAnd where is it now?\n", *leo)
        lines = [line for line in talk.stdout.splitlines() if line.startswith("Leo:")]
        assert lines == [
            "Leo: As far as I know, the brass key is in the desk drawer.",
            "Leo: Because I put the brass key in the desk drawer.",
            "Leo: As far as I know, the brass key is in the desk drawer.",
        ]
        bad = fabula(redis_url, "chat", "tale", "nobody", "--ask", KEY, check=False)
        assert bad.returncode == NotFound.exit_code and "no character 'nobody'" in bad.stderr


def _with_stdin(redis_url: str, text: str, *args: str) -> Any:
    env = {**os.environ, "FABULA_REDIS_URL": redis_url, "COLUMNS": "200"}
    done = fabula_process(env, *args, input=text, timeout=120)
    assert done.returncode == 0, done.stderr
    return done


@pytest.fixture()
def base(redis_url: str, tmp_path: Path) -> Iterator[str]:
    with studio(redis_url, tmp_path) as url:
        yield url


class TestStudio:
    async def test_api_and_page(self, base: str, redis_url: str) -> None:
        """The API answers as the CLI's --json; the Chat page (linked from the story's
        navigation) shows the answer and what it rests on, escaped, and writes nothing."""
        async with httpx.AsyncClient(base_url=base, timeout=60) as client:
            r = await client.post("/api/stories", json={"world": "hollow_book", "id": "tale"})
            assert r.status_code == 201, r.text
            await consolidated(redis_url, "tale")
            before = await story_keys(redis_url, "tale")
            asked = {"character": "Leo", "q": KEY}
            api = await client.post("/api/stories/tale/chat", json=asked)
            assert api.status_code == 200, api.text
            assert api.json()["answer"] == "As far as I know, the brass key is in the desk drawer."
            story = await client.get("/stories/tale")
            assert 'href="/stories/tale/chat?branch=main"' in story.text
            minds = await client.get("/stories/tale/minds")
            assert (
                'href="/stories/tale/chat?branch=main&amp;character=leo&amp;as_of=3"' in minds.text
            )
            empty = await client.get("/stories/tale/chat")
            assert empty.status_code == 200 and 'data-testid="chat-form"' in empty.text
            assert '<option value="leo"' in empty.text and "Mara</option>" in empty.text
            headers = {"X-CSRF-Token": client.cookies["fabula_csrf"]}
            form = {"character": "leo", "q": KEY, "as_of": "", "branch": "main"}
            page = await client.post("/stories/tale/chat", data=form, headers=headers)
            assert page.status_code == 200
            assert "the brass key is in the desk drawer." in page.text
            assert "hollow book is in" not in page.text.split('data-testid="exchange"')[1]
            evil = {"character": "leo", "q": "<script>x</script>?"}
            hostile = await client.post("/stories/tale/chat", data=evil, headers=headers)
            assert "<script>x</script>" not in hostile.text and "&lt;script&gt;" in hostile.text
            bad = await client.post("/api/stories/tale/chat", json={"character": "no", "q": KEY})
            assert bad.status_code == 404 and "no character 'no'" in bad.json()["error"]
            talked = [{"question": KEY, "answer": api.json()["answer"]}]
            why = {"character": "leo", "q": "Why?", "conversation": talked}
            api = await client.post("/api/stories/tale/chat", json=why)
            assert api.json()["answer"] == "Because I put the brass key in the desk drawer."
            assert api.json()["reading"] == KEY
            form = {**form, "q": "And where is it now?", "conversation": json.dumps(talked)}
            page = await client.post("/stories/tale/chat", data=form, headers=headers)
            assert "(Where is the brass key?)" in page.text
            form["conversation"] = "[1]"
            wrong = await client.post("/stories/tale/chat", data=form, headers=headers)
            assert wrong.status_code == 422 and "conversation" in wrong.text
            assert await story_keys(redis_url, "tale") == before

    async def test_a_get_asks_nothing(self, base: str, redis_url: str) -> None:
        """Issue 45: a cross-site GET of the chat page, with no token set, made a (paid)
        model call. A GET now only shows the form, filled from the address; a question is
        answered by a POST, which a form from another site cannot send."""
        async with httpx.AsyncClient(base_url=base, timeout=60) as client:
            r = await client.post("/api/stories", json={"world": "hollow_book", "id": "tale"})
            assert r.status_code == 201, r.text
            asked = {"character": "leo", "q": KEY}
            page = await client.get("/stories/tale/chat", params=asked)
            assert page.status_code == 200 and 'data-testid="exchange"' not in page.text
            assert f'value="{KEY}"' in page.text  # the form, filled in
            api = await client.get("/api/stories/tale/chat", params=asked)
            assert api.status_code == 405
            elsewhere = {"Origin": "https://evil.example", "Sec-Fetch-Site": "cross-site"}
            forged = await client.post("/stories/tale/chat", data=asked, headers=elsewhere)
            assert forged.status_code == 403
