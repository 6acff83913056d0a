"""Property: a chat answer holds nothing its character did not witness or was not told.

Hypothesis writes a lighthouse turn and a sloppy model's reading of it
(:mod:`fabula.testing.leaks`: deeds in joined clauses, narration between, spans far too wide,
deeds left out), commits it, and asks every character generated questions — where each
thing and each person is, what another thinks, free questions naming a thing or a place —
through the service's chat, as the CLI and the studio do. The oracle knows who saw each
deed. No answer, and no record it rests on, may hold

* the clause of a deed the character did not see (a deed left out of the reading included),
  nor a narration sentence (no event accounts for it);
* an object–container pair that no deed it saw put together and that it did not believe
  from the start (turn 0, the world pack's setup as it observed it).

Runtime: 30 examples, about 25 s on a busy 2-core machine.
"""

from __future__ import annotations

import itertools
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fabula.agents.memory_builder.grounding import with_narration
from fabula.graph.service import Fabula
from fabula.memory.index.build import index_through
from fabula.memory.ingest import build_turn
from fabula.settings import Settings
from fabula.testing.leaks import (
    CONTAINERS,
    PLACES,
    START,
    THINGS,
    assert_witnessed,
    sloppy_reading,
    turns,
    witnessed_pairs,
)

_stories = itertools.count()
PEOPLE = tuple(START)


@st.composite
def questions(draw: st.DrawFn) -> str:
    """A question a writer might ask a character: of the answerer's forms, or free."""
    thing = draw(st.sampled_from(THINGS))
    other = draw(st.sampled_from(PEOPLE))
    forms = [
        f"Where is the {thing}?",
        f"where is the {thing.split()[-1]}",
        f"Where is {other}?",
        "Where are you?",
        f"Where does {other} think the {thing} is?",
        f"Where will {other} look for the {thing}?",
        f"Where was the {thing} at the beginning?",
        f"What is the colour of the {thing}?",
        f"What happened to the {thing}?",
        f"Who was in the {draw(st.sampled_from(PLACES))}?",
        f"Tell me about {other} and the {draw(st.sampled_from(list(CONTAINERS.values())))}.",
    ]
    return draw(st.sampled_from(forms))


@pytest.fixture()
async def app(redis_url: str, tmp_path: Any) -> Any:
    async with Fabula(redis_url, Settings(home=tmp_path)) as fab:
        yield fab


@settings(
    max_examples=30,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(data=st.data())
async def test_no_chat_answer_holds_what_its_character_did_not_witness(
    app: Fabula, data: st.DataObject
) -> None:
    turn = data.draw(turns())
    actions, _ = sloppy_reading(data.draw, turn)
    store = app.store(await app.create_story("lighthouse", f"chat{next(_stories)}", opening=False))
    delta = await build_turn(store, 1, turn.text, with_narration(turn.text, actions), as_of=None)
    await store.commit(delta)
    await index_through(store)
    asked = data.draw(st.lists(questions(), min_size=1, max_size=4))
    for character in await store.characters():
        name, seen = await witnessed_pairs(store, character, turn)
        for question in asked:
            said = await app.read(store).chat(character, question)
            assert said.character == character
            texts = [said.answer, *(r.text for r in said.records)]
            for text in texts:
                assert_witnessed(text, name, turn, seen, question)
