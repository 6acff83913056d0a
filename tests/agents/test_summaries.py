"""Model-written summaries of the hierarchy (model mode), against the local test server.

The story: scene 1 (turns 1-2, 1 May) hides the ledger in the hall, scene 2 (turn 3, 2 May)
moves it to the garden, scene 3 (turn 4, 3 May) is still open. The ledger's moves join
scenes 1 and 2 into a plotline. So three nodes are closed and summarisable: scene-1,
scene-2 and that plotline; scene-3 keeps its extractive summary.
"""

from __future__ import annotations

import asyncio
import json
import re
from typing import Any

import pytest
import redis
import redis.asyncio as aredis
from rq import Queue, SimpleWorker
from structlog.testing import capture_logs

from fabula.agents.llm import make_client
from fabula.agents.summariser.model import ModelSummariser
from fabula.graph.service import reading
from fabula.graph.service.consolidation import InlineConsolidation, summarise_job
from fabula.memory import keys
from fabula.memory.acl import open_mind
from fabula.memory.connection import connect_async
from fabula.memory.delta import DeltaBuilder, TurnDelta
from fabula.memory.hierarchy import consolidate, nodes
from fabula.memory.index.build import index_through
from fabula.memory.jobs import QUEUE, enqueue_consolidation
from fabula.memory.recall.context import author_context
from fabula.memory.store import StoryStore
from fabula.memory.summarise import INPUT_CHARS, summarise_closed
from fabula.memory.tokens import ApproximateCounter
from fabula.settings import Price, Settings
from fabula.testing.model import FakeOpenAI, Reply, message_text, request_schema
from fabula.testing.redis import on_cluster
from fabula.testing.stories import new_story

CAST = ("ann", "ben", "cal")
CLOSED = {"scene-1", "scene-2", "plotline-slot-ledger-location"}
SUMMARISED = CLOSED | {"plot"}  # the plot is summarised from its plotlines
TURNS = [  # (speaker, words, where the ledger goes or None, date)
    ("ann", "I hid the ledger under the floor of the hall.", "hall", "1 May, 2023"),
    ("ben", "Nobody saw the harbour that night.", None, "1 May, 2023"),
    ("cal", "I carried the ledger out to the garden.", "garden", "2 May, 2023"),
    ("ann", "The violin was out of tune again.", None, "3 May, 2023"),
]


def turn(number: int) -> TurnDelta:
    who, words, moved_to, clock = TURNS[number - 1]
    b = DeltaBuilder(number, f"{who}: {words}")
    b.clock = clock
    event = b.event(
        "say",
        b.span(len(who) + 2, len(who) + 2 + len(words)),
        actor=who,
        participants=CAST,
        place="hall",
        witnesses=CAST,
    )
    if moved_to:
        b.state("ledger", "location", moved_to, event=event)
    return b.build()


async def story(client: aredis.Redis, name: str) -> StoryStore:
    store = await new_story(client, name)
    for number in range(1, len(TURNS) + 1):
        await store.commit(turn(number))
    return store


def span_of(body: dict[str, Any]) -> str:
    """The node a summariser request is about: its turns, as the request names them."""
    found = re.search(
        r"(scene|plotline|plot) of the story(?: so far)?, turns (\d+-\d+)", message_text(body)
    )
    assert found, message_text(body)
    return f"{found.group(1)} {found.group(2)}"


def answer(body: dict[str, Any]) -> Reply:
    """A model that summarises deterministically: the node's kind and turns, and whether
    it read the ledger's text."""
    ledger = "ledger" in message_text(body).lower()
    summary = f"The model's summary of the {span_of(body)}{' (the ledger)' if ledger else ''}."
    return Reply(content=json.dumps({"title": f"Model title, {span_of(body)}", "summary": summary}))


def summariser(settings: Settings) -> ModelSummariser:
    return ModelSummariser(make_client(settings.model, "summariser"))


def asked(server: FakeOpenAI) -> list[str]:
    return [span_of(r) for r in server.requests if request_schema(r) == "NodeSummary"]


class TestModelSummaries:
    async def test_closed_scenes_and_plotlines_get_the_models_summaries(
        self,
        aredis_client: aredis.Redis,
        redis_url: str,
        fake_openai: FakeOpenAI,
        settings: Settings,
    ) -> None:
        """Inline consolidation in model mode: after the folds, the closed scenes (from
        their turns' text) and the plotline (from its scenes' summaries) carry the model's
        title and summary; the open scene keeps its extractive one. The author's context
        shows the model's summary; a character's recall never does."""
        fake_openai.fallback = answer
        store = await story(aredis_client, "ms1")
        inline = InlineConsolidation(summariser(settings))
        for number in range(1, len(TURNS) + 1):
            await inline(store, number)
        await inline.drain()
        tree = await nodes(store)
        by = {i: n.summary_by for i, n in tree.items()}
        assert {i for i, b in by.items() if b == "model"} == SUMMARISED
        assert by["scene-3"] == "extractive" and "violin" in tree["scene-3"].summary
        assert tree["scene-1"].title == "Model title, scene 1-2"
        assert tree["scene-1"].summary == "The model's summary of the scene 1-2 (the ledger)."
        line = tree["plotline-slot-ledger-location"]
        assert line.title == "Model title, plotline 1-3" and line.children == ("scene-1", "scene-2")
        (request,) = [r for r in fake_openai.requests if span_of(r) == "plotline 1-3"]
        assert "Model title, scene 1-2: The model's summary" in message_text(request)
        (request,) = [r for r in fake_openai.requests if span_of(r) == "plot 1-3"]
        assert "Model title, plotline 1-3: The model's summary" in message_text(request)
        assert tree["plot"].summary.startswith("The model's summary of the plot 1-3")
        assert sorted(asked(fake_openai)) == ["plot 1-3", "plotline 1-3", "scene 1-2", "scene 3-3"]
        # what the summaries cost is counted with the branch, outside its turns
        used = await reading.usage(store, {"fake-model": Price(input=1.0, output=2.0)})
        (role,) = used.background.roles.values()
        assert role["calls"] == 4 and role["model"] == "fake-model"
        assert used.background.input_tokens > 0 and used.background.output_tokens > 0
        assert used.total.roles == used.background.roles and not used.turns
        assert used.total.cost_usd == used.background.cost_usd and (used.total.cost_usd or 0) > 0
        # the writer's context reads it; a character never does
        await index_through(store)
        found = await author_context(
            store, "Where is the ledger?", budget=2000, counter=ApproximateCounter()
        )
        assert "Model title, scene 1-2] The model's summary" in found.text
        mind = await open_mind(aredis_client, redis_url, "ms1", "ann")
        try:
            recalled = await mind.recall(
                "Where is the ledger?", budget=2000, counter=ApproximateCounter()
            )
            assert recalled.ids("episode") and "Model title" not in recalled.text
            assert "summary" not in recalled.text
        finally:
            await mind.close()

    async def test_a_closing_process_waits_for_its_summaries_only_a_while(
        self, aredis_client: aredis.Redis, fake_openai: FakeOpenAI, settings: Settings
    ) -> None:
        """Closing, the folds are waited for, the summaries step only ``summaries_s``: a
        slow model's summaries are left extractive (nothing half-written, the cancelled
        step's claims let go), and the next run writes them."""

        def slow(body: dict[str, Any]) -> Reply:
            return Reply(content=answer(body).content, delay_s=30.0)

        fake_openai.fallback = slow
        store = await story(aredis_client, "ms6")
        inline = InlineConsolidation(summariser(settings))
        await inline(store, len(TURNS))
        await inline.drain(summaries_s=0.5)
        assert inline.running() == 0 and asked(fake_openai)  # it had begun asking
        assert {n.summary_by for n in (await nodes(store)).values()} == {"extractive"}
        fake_openai.fallback = answer
        later = InlineConsolidation(summariser(settings))
        await later(store, len(TURNS))
        await later.drain()
        by = {i: n.summary_by for i, n in (await nodes(store)).items()}
        assert {i for i, b in by.items() if b == "model"} == SUMMARISED

    async def test_twice_or_concurrently_asks_once_per_node(
        self, aredis_client: aredis.Redis, fake_openai: FakeOpenAI, settings: Settings
    ) -> None:
        """The step run again is a no-op (no model call); runs racing ask for each node
        once between them; both leave the same hierarchy."""
        fake_openai.fallback = answer
        role = summariser(settings)
        once = await story(aredis_client, "ms2")
        await consolidate(once)
        await summarise_closed(once, role)
        again = await summarise_closed(once, role)
        assert again.model == again.kept == 0 and not again.more
        assert sorted(asked(fake_openai)) == ["plot 1-3", "plotline 1-3", "scene 1-2", "scene 3-3"]
        racing = await story(aredis_client, "ms3")
        await consolidate(racing)
        fake_openai.requests.clear()
        await asyncio.gather(*(summarise_closed(racing, role) for _ in range(3)))
        await summarise_closed(racing, role)  # what a racing run left to another is done now
        assert len(asked(fake_openai)) == len(set(asked(fake_openai))) == 4
        assert await nodes(once) == await nodes(racing)
        # a later fold leaves the model's summaries as they are
        await once.commit(turn_after(5))
        before = await nodes(once)
        await consolidate(once)
        after = await nodes(once)
        assert all(after[i] == before[i] for i in SUMMARISED)
        # a hierarchy folded again from scratch (an earlier bookkeeping layout) is extractive
        # again, and its summaries are asked for again
        await aredis_client.hdel(keys.hierarchy_threads("ms2", "main"), "@format")
        await consolidate(once)
        assert {n.summary_by for n in (await nodes(once)).values()} == {"extractive"}
        fake_openai.requests.clear()
        await summarise_closed(once, role)
        assert sorted(asked(fake_openai)) == [
            "plot 1-3",
            "plotline 1-3",
            "scene 1-2",
            "scene 3-3",
            "scene 4-4",
        ]

    async def test_garbage_keeps_the_extractive_summary(
        self, aredis_client: aredis.Redis, fake_openai: FakeOpenAI, settings: Settings
    ) -> None:
        """A model that cannot be reached leaves every node as it is (asked again later);
        a reply that never validates keeps the extractive summary for good, with a warning,
        and is not asked for again."""
        store = await story(aredis_client, "ms4")
        await consolidate(store)
        extractive = await nodes(store)
        role = summariser(settings)
        with capture_logs() as logs:
            down = await summarise_closed(store, role)  # no reply queued: HTTP 500s
        assert down.more and down.model == down.kept == 0
        assert await nodes(store) == extractive
        assert any(e["event"] == "summariser_unavailable" for e in logs)
        fake_openai.requests.clear()
        fake_openai.fallback = lambda body: Reply(content='{"title": "", "summary": "   "}')
        with capture_logs() as logs:
            bad = await summarise_closed(store, role)
        assert bad.kept == 4 and bad.model == 0
        kept = await nodes(store)
        for node_id in SUMMARISED:
            assert kept[node_id].summary == extractive[node_id].summary
            assert kept[node_id].title == extractive[node_id].title
            assert kept[node_id].summary_by == "kept"
        assert sum(e["event"] == "summary_kept_extractive" for e in logs) == 4
        calls = len(fake_openai.requests)
        assert (await summarise_closed(store, role)).kept == 0
        assert len(fake_openai.requests) == calls

    async def test_a_long_scene_is_asked_for_within_bounds(
        self, aredis_client: aredis.Redis, fake_openai: FakeOpenAI, settings: Settings
    ) -> None:
        """However long a closed scene, its request carries about INPUT_CHARS of its text:
        the first turn and the latest that fit, and how many were left out between."""
        fake_openai.fallback = answer
        store = await new_story(aredis_client, "ms6")
        words = "Ann walked the long hall again and counted the lanterns one by one. " * 8
        for number in range(1, 61):
            b = DeltaBuilder(number, f"ann: {number} {words}")
            b.clock = "1 May, 2023" if number < 60 else "2 May, 2023"
            b.event(
                "say",
                b.span(5, 5 + len(words)),
                actor="ann",
                participants=CAST,
                place="hall",
                witnesses=CAST,
            )
            await store.commit(b.build())
        await consolidate(store)
        assert (await summarise_closed(store, summariser(settings))).model == 1
        (request,) = fake_openai.requests
        text = message_text(request)
        assert "ann: 1 Ann" in text and "ann: 59 Ann" in text and "more left out here]" in text
        assert len(text) < INPUT_CHARS + 2000

    def test_rq_worker_writes_the_summaries(
        self,
        redis_url: str,
        fake_openai: FakeOpenAI,
        monkeypatch: pytest.MonkeyPatch,
        request: pytest.FixtureRequest,
    ) -> None:
        """With FABULA_CONSOLIDATE=rq, each fold job is followed by a summaries job that
        builds the summariser from the worker's own settings (synchronous: RQ jobs run
        their own event loop)."""
        fake_openai.fallback = answer
        monkeypatch.setenv("FABULA_MODEL_SUMMARISER", "fake-model")
        monkeypatch.setenv("FABULA_MODEL_SUMMARISER_BASE_URL", fake_openai.base_url)
        queue_url = request.getfixturevalue("embedded_redis").url if on_cluster() else redis_url

        async def commit() -> None:
            client = connect_async(redis_url)
            try:
                await story(client, "ms5")
            finally:
                await client.aclose()

        asyncio.run(commit())
        for number in range(1, len(TURNS) + 1):
            enqueue_consolidation(queue_url, "ms5", "main", number, then=summarise_job)
        monkeypatch.setenv("FABULA_REDIS_URL", redis_url)  # the worker's own environment
        connection = redis.Redis.from_url(queue_url)
        SimpleWorker([Queue(QUEUE, connection=connection)], connection=connection).work(burst=True)

        async def read() -> dict[str, str]:
            client = connect_async(redis_url)
            try:
                tree = await nodes(StoryStore(client, "ms5"))
                return {i: n.summary_by for i, n in tree.items()}
            finally:
                await client.aclose()

        by = asyncio.run(read())
        assert {i for i, b in by.items() if b == "model"} == SUMMARISED
        assert sorted(asked(fake_openai)) == ["plot 1-3", "plotline 1-3", "scene 1-2", "scene 3-3"]

        async def used() -> dict[str, dict[str, int | str]]:
            client = connect_async(redis_url)
            try:
                return await StoryStore(client, "ms5").background_usage()
            finally:
                await client.aclose()

        assert asyncio.run(used())["summariser"]["calls"] == 4  # counted by the worker too


def turn_after(number: int) -> TurnDelta:
    words = "The orchard was quiet."
    b = DeltaBuilder(number, f"ben: {words}")
    b.clock = "4 May, 2023"
    b.event(
        "say",
        b.span(5, 5 + len(words)),
        actor="ben",
        participants=CAST,
        place="hall",
        witnesses=CAST,
    )
    return b.build()
