"""The turn's typed state (:mod:`fabula.graph.state`). Offline engine, real LangGraph, the
Redis checkpointer and the real store. (Checkpoints written before it was typed are
``fabula migrate``'s: see ``tests/system/test_migrate.py``.)"""

from __future__ import annotations

from fabula.agents.contracts import Draft, Finding, TurnPlan
from fabula.graph.build import thread_id
from fabula.graph.service import Fabula
from fabula.graph.state import Preview
from fabula.memory.delta import TurnDelta
from fabula.memory.store import StoryStore
from fabula.settings import Settings
from fabula.worlds.loader import load_world


async def _opened(fab: Fabula, story: str) -> StoryStore:
    pack = load_world("hollow_book")
    store = fab.store(await fab.create_story(pack, story, opening=False))
    for text in pack.opening.turns:
        await fab.commit_scripted(store, text)
    return store


class TestTypedState:
    async def test_a_pending_turn_holds_its_values_typed(self, redis_url: str) -> None:
        """The checkpointed state holds the contracts themselves, built again from Redis,
        and the approval request names the preview and the delta for what they are."""
        async with Fabula(redis_url, Settings()) as fab:
            store = await _opened(fab, "typed")
            assert (await fab.run(store, auto=False)).outcome == "pending"
            turn = await store.head() + 1
            config = {"configurable": {"thread_id": thread_id("typed", "main", turn)}}
            values = (await fab.graph.aget_state(config)).values  # type: ignore[arg-type]
            assert isinstance(values["plan"], TurnPlan)
            assert isinstance(values["draft"], Draft)
            assert isinstance(values["delta"], TurnDelta)
            assert isinstance(values["preview"], Preview)
            assert all(isinstance(f, Finding) for f in values["findings"])
            assert [p.character for p in values["proposals"]] == list(values["plan"].focal)
            pending = await fab.read(store).pending()
            assert pending is not None
            assert pending.request.delta == values["delta"]
            assert pending.request.preview == values["preview"]
            assert pending.request.draft.text == values["delta"].text
