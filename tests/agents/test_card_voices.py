"""A card's character speaks as its card was written: asked a question, the offline
character answers with the example reply whose prompt matches it (its author's words,
``{{user}}``/``{{char}}`` resolved, its action kept as an action), else from its traits or
its mind in the first person, else "I cannot say" — never markup, never another's line;
the critic reports markup and a line of one speaker said by another."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from fabula.agents.character.model import mind_prompt
from fabula.agents.character.offline import OfflineCharacter
from fabula.agents.contracts import Action, CharacterBrief
from fabula.agents.critic.offline import OfflineCritic
from fabula.agents.memory_builder.offline import OfflineMemoryBuilder
from fabula.agents.shared.replies import NO_ANSWER
from fabula.agents.views import author_view
from fabula.agents.writer.offline import realise, said_sentence
from fabula.graph.service import Fabula
from fabula.memory.store import StoryStore
from fabula.settings import Settings
from fabula.testing import imports as fx
from fabula.testing.cards import card_story, said_to
from fabula.worlds.cardtext import has_markup
from fabula.worlds.imports import import_paths

_story = card_story


async def _answer(fab: Fabula, store: StoryStore, character: str, question: str) -> Action:
    """What ``character`` proposes once User has asked ``question`` aloud: a line to User."""
    action = await said_to(fab, store, character, question)
    assert action.kind == "say" and action.listener == "user"
    return action


async def _written(store: StoryStore, character: str, action: Action) -> str:
    """The sentence the offline writer makes of ``action``; it carries no markup."""
    sentence = realise(await author_view(store), character, action)
    assert has_markup(sentence) is None, sentence
    return sentence


class TestSeraphina:
    """The stock card's shape: W++ description, Ali:Chat examples and lore, a PNG."""

    async def _store(self, fab: Fabula, tmp_path: Path) -> StoryStore:
        png = tmp_path / "Seraphina.png"
        png.write_bytes(fx.seraphina_png())
        return fab.store(await fab.create_story(import_paths([png]).pack, "sera"))

    async def test_a_lore_question_is_answered_by_its_example(
        self, redis_url: str, tmp_path: Path
    ) -> None:
        """ "What are your powers?" activates her book's Ali:Chat entry: its reply, her
        action told as an action (the user for "you", in the past), her words said."""
        async with Fabula(redis_url, Settings()) as fab:
            store = await self._store(fab, tmp_path)
            action = await _answer(fab, store, "seraphina", "What are your powers, Seraphina?")
            assert await _written(store, "seraphina", action) == (
                "Seraphina smiled softly, turning back toward User as she hummed in thought. "
                '"As guardian of this glade I have a few gifts. I mend wounds with light, and '
                'the shadow beasts will not cross it, User," said Seraphina.'
            )

    async def test_an_example_of_mes_example_answers_its_own_question(
        self, redis_url: str, tmp_path: Path
    ) -> None:
        async with Fabula(redis_url, Settings()) as fab:
            store = await self._store(fab, tmp_path)
            action = await _answer(fab, store, "seraphina", "Are you alone out here?")
            assert action.line == ("Never truly. The trees and the deer keep me company, User")
            assert action.gesture == "Seraphina laughed softly."

    async def test_she_calls_the_user_by_name_once(self, redis_url: str, tmp_path: Path) -> None:
        """Issue 44: every answer ended ", User," ("I am an elf…, User," said Seraphina).
        Her first answer calls the user by name; once she has, her answers are her words
        alone ("…," said Seraphina), and an answer so said still counts as answered: the
        question is not answered again."""
        async with Fabula(redis_url, Settings()) as fab:
            store = await self._store(fab, tmp_path)
            first = await _answer(fab, store, "seraphina", "What are your powers, Seraphina?")
            assert first.line is not None and first.line.endswith(", User")
            await fab.commit_scripted(store, await _written(store, "seraphina", first))
            second = await _answer(fab, store, "seraphina", "Are you alone out here?")
            assert second.line == "Never truly. The trees and the deer keep me company."
            written = await _written(store, "seraphina", second)
            assert written.endswith(
                '"Never truly. The trees and the deer keep me company," said Seraphina.'
            )
            await fab.commit_scripted(store, written)
            mind = await fab.minds.mind(store.story, "seraphina", store.branch)
            brief = CharacterBrief(character="seraphina", name="Seraphina")
            after = await OfflineCharacter().propose(mind, brief)
            assert after.intent != "answer", after  # answered once, not again

    async def test_asked_who_she_is_she_says_her_traits(
        self, redis_url: str, tmp_path: Path
    ) -> None:
        """No example asks it: her W++ traits, in the first person, never the markup."""
        async with Fabula(redis_url, Settings()) as fab:
            store = await self._store(fab, tmp_path)
            action = await _answer(fab, store, "seraphina", "Who are you?")
            assert action.line is not None
            assert action.line.startswith(
                "I am Seraphina. I am caring, protective, gentle, watchful and warm."
            )
            assert "=" not in action.line and "[" not in action.line

    async def test_chat_answers_as_the_card_was_written(
        self, redis_url: str, tmp_path: Path
    ) -> None:
        """`fabula chat` offline: the example's action and words, not its markup; asked
        who she is, her traits."""
        async with Fabula(redis_url, Settings()) as fab:
            store = await self._store(fab, tmp_path)
            said = await fab.read(store).chat("Seraphina", "What are your powers?")
            assert said.answer.startswith(
                "Seraphina smiled softly, turning back toward you as she hummed in thought. "
                '"As guardian of this glade I have a few gifts.'
            )
            who = await fab.read(store).chat("Seraphina", "Who are you?")
            assert who.answer.startswith("I am Seraphina. I am caring, protective")
            for answer in (said.answer, who.answer):
                assert has_markup(answer) is None

    async def test_the_model_is_given_her_traits_and_examples(
        self, redis_url: str, tmp_path: Path
    ) -> None:
        """In model mode her prompt lists her traits by category and her examples as
        examples, from her own keyspace."""
        async with Fabula(redis_url, Settings()) as fab:
            store = await self._store(fab, tmp_path)
            mind = await fab.minds.mind(store.story, "seraphina", store.branch)
            brief = CharacterBrief(character="seraphina", name="Seraphina")
            prompt = (await mind_prompt(mind, brief)).prompt
            assert (
                "## What you are like\n- personality: caring, protective, gentle, watchful, warm"
                in prompt
            )
            assert "- clothes: black sundress" in prompt
            assert '## How you speak\n- User: "' in prompt

    async def test_nothing_answers(self, redis_url: str, tmp_path: Path) -> None:
        async with Fabula(redis_url, Settings()) as fab:
            store = await self._store(fab, tmp_path)
            action = await _answer(fab, store, "seraphina", "What is the capital of Spain?")
            assert action.line == f"{NO_ANSWER}, User"


@pytest.mark.parametrize(
    ("name", "card", "character", "question", "line", "gesture"),
    [
        (
            "flux",
            fx.wpp_card(),
            "flux_the_cat",
            "Do you have a home, Flux?",
            "Home is wherever the sun is warm today, User",
            "Flux flicked his torn ear.",
        ),
        (
            "flux",
            fx.wpp_card(),
            "flux_the_cat",
            "What do you like?",
            "I like sardines and warm windowsills, User",
            None,
        ),
        (
            "mara",
            fx.plist_card(),
            "mara",
            "Who are you?",
            "Mara. I run the bakery on Mill Lane, and I know everything that happens on it "
            "before breakfast, User",
            "Mara wiped her hands on her apron.",
        ),
        (
            "vey",
            fx.instructed_card(),
            "captain_vey",
            "Who are you, Captain Vey?",
            "I am the smuggler captain of the airship Kestrel. I am gruff, dry and loyal to "
            "my crew. My ship carries spices past the customs towers, User",
            None,
        ),
        (
            "tom",
            fx.prose_card(),
            "old_tom",
            "What do you do, Old Tom?",
            "I am a retired lighthouse keeper. I mend nets on the quay and tell long stories "
            "about the great storm, User",
            None,
        ),
    ],
)
async def test_each_card_shape_answers_in_its_own_words(
    redis_url: str,
    tmp_path: Path,
    name: str,
    card: dict[str, Any],
    character: str,
    question: str,
    line: str,
    gesture: str | None,
) -> None:
    """W++ with tags, PList with Ali:Chat, instructions to a model, plain prose: each
    answers from its own card, without markup or an instruction to a model."""
    async with Fabula(redis_url, Settings()) as fab:
        store = await _story(fab, tmp_path, name, card)
        action = await _answer(fab, store, character, question)
        assert (action.line, action.gesture) == (line, gesture)
        await _written(store, character, action)


class TestCritic:
    @pytest.mark.parametrize(
        ("text", "message"),
        [
            ('"Hello, {{user}}," said Seraphina.', "card markup in the passage: '{{user}}'"),
            ("*Seraphina smiles.* Seraphina went to the glade.", "card markup"),
            (
                "\"User: 'What are your powers?' Seraphina: I smile,\" said Seraphina.",
                "a line of User's said by Seraphina",
            ),
        ],
    )
    async def test_markup_and_a_line_of_another_are_errors(
        self, redis_url: str, tmp_path: Path, text: str, message: str
    ) -> None:
        async with Fabula(redis_url, Settings()) as fab:
            store = await _story(fab, tmp_path, "sera", fx.seraphina_card())
            delta = await OfflineMemoryBuilder().build(store, await store.head() + 1, text)
            found = [
                f
                for f in OfflineCritic().critique(await author_view(store), delta, None)
                if f.kind == "markup"
            ]
            assert found and found[0].severity == "error"
            assert found[0].message.startswith(message)

    async def test_a_clean_answer_is_no_finding(self, redis_url: str, tmp_path: Path) -> None:
        async with Fabula(redis_url, Settings()) as fab:
            store = await _story(fab, tmp_path, "sera", fx.seraphina_card())
            text = 'Seraphina smiled. "I mend wounds with light, User," said Seraphina.'
            delta = await OfflineMemoryBuilder().build(store, await store.head() + 1, text)
            view = await author_view(store)
            assert [
                f for f in OfflineCritic().critique(view, delta, None) if f.kind == "markup"
            ] == []


class TestGrammar:
    @pytest.mark.parametrize(
        ("line", "sentence"),
        [
            ("What are you hiding, Mara", '"What are you hiding, Mara?" said Tom.'),
            ("Where is the key?", '"Where is the key?" said Tom.'),
            ("I am keeping the silver whistle.", '"I am keeping the silver whistle," said Tom.'),
            ("Watch out!", '"Watch out!" said Tom.'),
        ],
    )
    def test_a_question_keeps_its_mark(self, line: str, sentence: str) -> None:
        assert said_sentence(line, "Tom") == sentence
