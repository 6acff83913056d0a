"""The question answerer, over the Redis-backed views."""

from __future__ import annotations

import pytest
import redis.asyncio as aredis

from fabula.errors import InvalidInput, NotFound
from fabula.memory.answer import UNKNOWN, Question, answer, parse_question, resolve_chain
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
