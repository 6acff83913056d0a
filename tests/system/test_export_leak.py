"""Property: ``export --as C`` holds nothing C did not witness or was not told.

The same stories as test_chat_leak.py (:mod:`fabula.testing.leaks`: a lighthouse turn and a
sloppy model's reading of it, deeds in joined clauses, narration between, spans far too
wide, deeds left out). For every character, its export (every line of every turn and every
belief's sentence) may hold no clause of a deed it did not see, no narration sentence, and
no object–container pair that no deed it saw put together and that it did not believe from
the start.

Runtime: 25 examples, about 15 s on a busy 2-core machine.
"""

from __future__ import annotations

import itertools
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fabula.agents.memory_builder.grounding import with_narration
from fabula.graph.service import Fabula
from fabula.graph.service.lived import lived_markdown
from fabula.memory.ingest import build_turn
from fabula.settings import Settings
from fabula.testing.leaks import assert_witnessed, sloppy_reading, turns, witnessed_pairs

_stories = itertools.count()


@pytest.fixture()
async def app(redis_url: str, tmp_path: Any) -> Any:
    async with Fabula(redis_url, Settings(home=tmp_path)) as fab:
        yield fab


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(data=st.data())
async def test_no_export_as_a_character_holds_what_it_did_not_witness(
    app: Fabula, data: st.DataObject
) -> None:
    turn = data.draw(turns())
    actions, _ = sloppy_reading(data.draw, turn)
    store = app.store(await app.create_story("lighthouse", f"lived{next(_stories)}", opening=False))
    delta = await build_turn(store, 1, turn.text, with_narration(turn.text, actions), as_of=None)
    await store.commit(delta)
    for character in await store.characters():
        name, seen = await witnessed_pairs(store, character, turn)
        found = await app.read(store).lived(character)
        assert (found.character, found.name) == (character, name)
        texts = [
            *(line for t in found.turns for line in t.lines),
            *(b.sentence for b in found.beliefs),
        ]
        assert lived_markdown(found).count("\n- ") == len(found.beliefs)
        for text in texts:
            assert_witnessed(text, name, turn, seen)
        witnessed = [d for d in turn.deeds if name in d.audience and d.clause in turn.text]
        if witnessed and found.turns:
            assert any(t.turn == 1 for t in found.turns)
