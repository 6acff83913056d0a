"""What waits (``fab.read(ref).pending()``, the service's ``Core._pending``) is read from
the turn's newest checkpoint, without compiling the turn graph: it must find what the
graph's own state finds, at every step of a turn."""

from __future__ import annotations

import warnings

import ormsgpack
import pytest
import redis.asyncio as aredis

from fabula.agents.contracts import Decision
from fabula.graph.checkpoint.keys import ThreadKeys
from fabula.graph.checkpoint.versions import CHECKPOINT_VERSION
from fabula.graph.checkpoint.waiting import Undecoded, waiting_at
from fabula.graph.service import Fabula
from fabula.graph.service.pending import INTERRUPT_CHANNEL, Pending, pending_in
from fabula.graph.state import CHECKPOINT_TYPES, Part
from fabula.memory.store import StoryStore
from fabula.settings import Settings
from fabula.testing.stories import opened_world


async def _from_graph(fab: Fabula, store: StoryStore) -> Pending | None:
    turn = await store.head() + 1
    return pending_in(store, turn, await fab.graph.aget_state(fab._config(store, turn)))


async def _agree(fab: Fabula, store: StoryStore) -> Pending | None:
    read = await fab.read(store).pending()
    assert read == await _from_graph(fab, store)
    return read


def test_the_interrupt_channel_is_langgraphs() -> None:
    with warnings.catch_warnings():  # public, but deprecated for users since LangGraph 1.0
        warnings.simplefilter("ignore")
        from langgraph.constants import INTERRUPT
    assert INTERRUPT_CHANNEL == INTERRUPT


async def test_pending_from_the_checkpoint_agrees_with_the_graph_state(redis_url: str) -> None:
    async with Fabula(redis_url, Settings()) as fab:
        store = await opened_world(fab, "hollow_book", "tale", ["Leo"])
        assert await _agree(fab, store) is None  # no turn yet

        assert (await fab.run(store, auto=False)).outcome == "part"
        assert await _agree(fab, store) is None  # a part waits, not a draft

        parts = {"Leo": Part(words="Leo searched the desk drawer.")}
        assert (await fab.run(store, auto=False, parts=parts)).outcome == "pending"
        first = await _agree(fab, store)
        assert first is not None and "desk drawer" in first.request.draft.text
        assert first.checkpoint  # the draft's id names its checkpoint

        rejected = await fab.decide(store, Decision(action="reject", note="again"))
        assert rejected.outcome != "committed"
        again = await _agree(fab, store)
        if again is not None:  # written again: another draft, another checkpoint
            assert again.id != first.id
            first = again
        else:  # the run stopped for Leo's part again: play it
            await fab.run(store, auto=False, parts=parts)
            first = await _agree(fab, store)
            assert first is not None
        done = await fab.decide(store, Decision(action="approve"), expect=first.id)
        assert done.outcome == "committed"
        assert await _agree(fab, store) is None  # the next turn is not started


async def test_a_fresh_process_reads_what_waits_without_the_saver(redis_url: str) -> None:
    """A process that has made no saver (``fabula pending``) reads what waits straight from
    Redis (:func:`~fabula.graph.checkpoint.waiting.waiting_at`): the same pending turn as
    the saver's read, at a part and at a draft, and it makes no saver doing so."""
    async with Fabula(redis_url, Settings()) as fab:
        store = await opened_world(fab, "hollow_book", "tale", ["Leo"])
        assert (await fab.run(store, auto=False)).outcome == "part"
        async with Fabula(redis_url, Settings()) as fresh:
            assert await fresh.read("tale").pending() is None  # a part, not a draft
            assert "saver" not in vars(fresh)
        parts = {"Leo": Part(words="Leo searched the desk drawer.")}
        assert (await fab.run(store, auto=False, parts=parts)).outcome == "pending"
        by_saver = await fab.read("tale").pending()
        assert by_saver is not None
        async with Fabula(redis_url, Settings()) as fresh:
            light = await fresh.read("tale").pending()
            assert "saver" not in vars(fresh)
        assert light == by_saver
        assert light is not None and "desk drawer" in light.request.draft.text


async def test_what_the_light_read_cannot_decode_is_declined(redis_url: str) -> None:
    """A waiting write holding a type outside the registry is declined (Undecoded), never
    misread: the caller then reads it through the saver."""
    keys = ThreadKeys("odd/main/1")
    stranger = ormsgpack.Ext(5, ormsgpack.packb(["somewhere", "Stranger", {"a": 1}, None]))
    payload = ormsgpack.packb(
        [ormsgpack.Ext(2, ormsgpack.packb(["langgraph.types", "Interrupt", {"value": stranger}]))]
    )
    client = aredis.from_url(redis_url, decode_responses=False)
    try:
        await client.zadd(keys.index(""), {"c1": 0})
        await client.set(keys.version, str(CHECKPOINT_VERSION))
        head = b'["task", "__interrupt__", "msgpack"]'
        await client.hset(keys.writes("", "c1"), '["t1", -3]', head + b"\n" + payload)
        with pytest.raises(Undecoded):
            await waiting_at(client, "odd/main/1", CHECKPOINT_TYPES)
    finally:
        await client.delete(keys.index(""), keys.version, keys.writes("", "c1"))
        await client.aclose()
