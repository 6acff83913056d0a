"""The question answerer and context assembly, over the Redis-backed views."""

from __future__ import annotations

import pytest
import redis.asyncio as aredis

from fabula.errors import InvalidInput, NotFound
from fabula.memory.answer import UNKNOWN, Question, answer, parse_question, resolve_chain
from fabula.memory.context import assemble_context, word_count
from fabula.memory.rules import WorldRules
from fabula.testing.stories import KEY_STORY, tell_story


class TestParseQuestion:
    @pytest.mark.parametrize(
        ("text", "expected"),
        [
            ("Where is the spinach really?", Question(kind="where", subject="spinach")),
            ("Where is the recorder?", Question(kind="where", subject="recorder")),
            (
                "Where was the spinach at the beginning?",
                Question(kind="where_initially", subject="spinach"),
            ),
            (
                "Where will Avery look for the spinach?",
                Question(kind="where", subject="spinach", chain=("Avery",)),
            ),
            (
                "Where does Avery think that Ella searches for the spinach?",
                Question(kind="where", subject="spinach", chain=("Avery", "Ella")),
            ),
            (
                "Where does Owen really think the lettuce is?",
                Question(kind="where", subject="lettuce", chain=("Owen",)),
            ),
            (
                "Where does Amelia think Logan thinks Ava thinks William thinks the cherry is?",
                Question(
                    kind="where", subject="cherry", chain=("Amelia", "Logan", "Ava", "William")
                ),
            ),
            (
                "What is the symbol of the stamp?",
                Question(kind="attribute", subject="stamp", attribute="symbol"),
            ),
            (
                "What does Leo think the state of the lamp is?",
                Question(kind="attribute", subject="lamp", attribute="state", chain=("Leo",)),
            ),
        ],
    )
    def test_forms(self, text: str, expected: Question) -> None:
        assert parse_question(text) == expected

    def test_unknown_form_is_refused(self) -> None:
        with pytest.raises(InvalidInput):
            parse_question("Why did the chicken cross the road?")

    def test_the_askers_chain_comes_first(self) -> None:
        """Leo asking where Mara thinks the key is reads B[Leo→Mara]; repeats collapse."""
        q = parse_question("Where does Mara think the key is?")
        assert resolve_chain("Leo", q) == ("leo", "mara")
        assert resolve_chain("Mara", q) == ("mara",)
        assert resolve_chain(None, q) == ("mara",)


class TestAnswer:
    async def test_author_and_characters(self, aredis_client: aredis.Redis) -> None:
        store = await tell_story(aredis_client, [KEY_STORY])
        assert await answer(store, "Where is the key?") == "hollow_book"
        assert await answer(store, "Where is the key?", asker="Leo") == "desk_drawer"
        assert await answer(store, "Where will Leo look for the key?") == "desk_drawer"
        assert (
            await answer(store, "Where does Leo think the key is?", asker="Mara") == "desk_drawer"
        )

    async def test_unknown_when_the_asker_cannot_know(self, aredis_client: aredis.Redis) -> None:
        store = await tell_story(
            aredis_client,
            [KEY_STORY, "Wren entered the garden. Mara saw that the colour of the key is gold."],
        )
        assert await answer(store, "What is the colour of the key?") == "gold"
        assert await answer(store, "What is the colour of the key?", asker="Mara") == "gold"
        assert await answer(store, "What is the colour of the key?", asker="Leo") == UNKNOWN
        assert await answer(store, "Where is the key?", asker="Wren") == UNKNOWN

    async def test_shared_memory_reads_the_world_whoever_asks(
        self, aredis_client: aredis.Redis
    ) -> None:
        store = await tell_story(aredis_client, [KEY_STORY])
        assert await answer(store, "Where is the key?", asker="Leo", shared=True) == "hollow_book"

    async def test_as_of_replays_the_past(self, aredis_client: aredis.Redis) -> None:
        store = await tell_story(
            aredis_client,
            ["Leo entered the study.", "Leo saw that the name of the cat is Pepper."],
        )
        assert await answer(store, "What is the name of the cat?", as_of=1) == UNKNOWN
        assert await answer(store, "What is the name of the cat?", as_of=2) == "Pepper"
        assert await answer(store, "What is the name of the cat?", asker="Leo", as_of=1) == (
            UNKNOWN
        )

    async def test_where_at_the_beginning(self, aredis_client: aredis.Redis) -> None:
        """The first state of the slot, even when it changed within the same turn."""
        store = await tell_story(aredis_client, [KEY_STORY], WorldRules(open_containers=True))
        assert await answer(store, "Where was the key at the beginning?") == "desk_drawer"

    async def test_unknown_asker_is_an_error(self, aredis_client: aredis.Redis) -> None:
        store = await tell_story(aredis_client, [KEY_STORY])
        with pytest.raises(NotFound):
            await answer(store, "Where is the key?", asker="Nobody")


class TestAssembleContext:
    async def test_a_character_sees_only_its_own_beliefs(self, aredis_client: aredis.Redis) -> None:
        store = await tell_story(
            aredis_client,
            [KEY_STORY, "Mara saw that the symbol of the stamp is a silver heron."],
        )
        leo = await assemble_context(store, "Leo", budget=500, count_tokens=word_count)
        mara = await assemble_context(store, "Mara", budget=500, count_tokens=word_count)
        author = await assemble_context(store, None, budget=500, count_tokens=word_count)
        assert "desk_drawer" in leo and "hollow_book" not in leo and "heron" not in leo
        assert "hollow_book" in mara and "silver heron" in mara
        assert "hollow_book" in author and "silver heron" in author

    async def test_as_of_holds_nothing_from_later(self, aredis_client: aredis.Redis) -> None:
        store = await tell_story(
            aredis_client, ["Leo entered the study.", "The name of the cat is Pepper."]
        )
        assert "Pepper" not in await assemble_context(store, None, as_of=1)
        assert "Pepper" in await assemble_context(store, None, as_of=2)

    async def test_budget_keeps_what_the_query_names(self, aredis_client: aredis.Redis) -> None:
        store = await tell_story(
            aredis_client,
            [
                "Leo entered the study. The name of the cat is Pepper. The colour of the scarf "
                "is red. The name of the boat is Gull. The symbol of the coin is a lion."
            ],
        )
        context = await assemble_context(
            store, None, budget=25, query="What is the name of the boat?", count_tokens=word_count
        )
        assert "Gull" in context
        assert word_count(context) <= 25
