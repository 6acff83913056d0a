"""Requests said as orders, and a character's own view in its lore (issue 44's evening):
"Tell me about the ferry." is asked as "What is the ferry?"; "take me up to the lamp" is a
request to go, answered as one, never by what the lore says of the lamp; a lore entry
written as the speaker's view ("To Trek, Falko is …") is said in the first person.

Real Redis, the offline engine, cards of :func:`fabula.testing.imports.evening_cards`."""

from __future__ import annotations

from pathlib import Path

import pytest

from fabula.agents.shared.replies import as_question, asked_to_go, reply
from fabula.graph.service import Fabula
from fabula.memory.store import StoryStore
from fabula.settings import Settings
from fabula.testing import imports as fx
from fabula.testing.cards import card_story, said_to
from fabula.worlds.imports import import_paths


async def _story(fab: Fabula, tmp_path: Path, card: str) -> StoryStore:
    return await card_story(fab, tmp_path, card, fx.evening_cards()[card])


_said_to = said_to


@pytest.mark.parametrize(
    ("order", "question"),
    [
        ("Tell me about the ferry.", "What is the ferry?"),
        ("Describe the lamp, Ilsa.", "What is the lamp, Ilsa?"),
        ("Ilsa, tell me about yourself.", "Ilsa, who are you?"),
        ("Tell me about your powers!", "What are your powers?"),
        ("take me up to the lamp", "Can you take me up to the lamp?"),
        ("Let's go to the tower.", "Shall we go to the tower?"),
        ("I like boats.", None),
        ("The ferry left.", None),
    ],
)
def test_an_order_that_asks_is_read_as_its_question(order: str, question: str | None) -> None:
    assert as_question(order) == question


def test_an_order_to_take_one_somewhere_is_a_request_to_go() -> None:
    asked = as_question("take me up to the lamp")
    assert asked is not None and asked_to_go(asked) == "the lamp"


async def test_tell_me_about_is_answered_as_what_is(redis_url: str, tmp_path: Path) -> None:
    """Issue 44: "Tell me about the ferry." (no question mark) got no answer; it gets the
    answer "What is the ferry?" gets, from the card's lore."""
    async with Fabula(redis_url, Settings()) as fab:
        told = await _said_to(
            fab, await _story(fab, tmp_path, "prose"), "marta", "Tell me about the ferry."
        )
        store = fab.store(
            await fab.create_story(
                import_paths(
                    [fx.write_json(tmp_path / "again.json", fx.evening_cards()["prose"])]
                ).pack,
                "again",
            )
        )
        asked = await _said_to(fab, store, "marta", "What is the ferry?")
    assert told.kind == "say" and told.listener == "user"
    assert told.line == asked.line
    assert told.line is not None and "Heron" in told.line


async def test_a_request_to_go_is_answered_as_a_request_not_with_lore(
    redis_url: str, tmp_path: Path
) -> None:
    """Issue 44: "take me up to the lamp" said to Ilsa was answered with her lore about the
    lamp ("A great lens …"). The lamp is no place she knows of: she says she does not know
    where that is, with or without a question mark."""
    async with Fabula(redis_url, Settings()) as fab:
        store = await _story(fab, tmp_path, "alichat")
        action = await _said_to(fab, store, "ilsa", "take me up to the lamp")
        assert action.kind == "say" and action.line is not None
        assert "lens" not in action.line
        assert action.line.startswith("I do not know where the lamp is")
        asked = await _said_to(fab, store, "ilsa", "Can you take me up to the lamp?")
        assert asked.line is not None and asked.line.startswith("I do not know where the lamp")
        # asked what the lamp is, the lore still answers
        what = await _said_to(fab, store, "ilsa", "Tell me about the lamp.")
        assert what.line is not None and "lens" in what.line


TREK = (
    "To Trek, Falko is a dedicated and helpful senior colleague with whom he frequently "
    "engages in academic discussions. However, Trek notices that Falko, while always "
    "supportive professionally, maintains an emotional distance."
)


@pytest.mark.parametrize("me", ["Trek·Vemil", "Trek Vemil", "Trek"])
def test_a_lore_entry_of_the_speakers_own_view_is_said_in_the_first_person(me: str) -> None:
    """Issue 44: Trek (full name "Trek·Vemil") said his own lore entry of Falko in the third
    person ("To Trek, Falko is …"). Its own view is said as its own: no "To Trek", no
    "Trek" anywhere, "I" where the entry names it or calls it "he"."""
    said = reply("What do you think of Falko?", me, lore=[TREK])
    assert "Trek" not in said
    assert said.startswith("Falko is a dedicated and helpful senior colleague")
    assert "with whom I frequently engage in academic discussions" in said
    assert "However, I notice that Falko" in said
