"""The model's retrieval planner (agents/recall) against the test server."""

from __future__ import annotations

import dataclasses
import datetime as dt

import redis.asyncio as aredis

from fabula.agents.factory import make_roles
from fabula.agents.llm import make_client
from fabula.agents.recall.model import ModelRecallPlanner, PlanReading
from fabula.memory.index.build import index_through
from fabula.memory.index.search import latest_day, sources
from fabula.memory.index.terms import terms
from fabula.memory.recall.context import author_context
from fabula.memory.recall.plan import RecallRequest
from fabula.memory.store import StoryStore
from fabula.memory.tokens import ApproximateCounter
from fabula.settings import ModelSettings, Settings
from fabula.testing.model import FakeOpenAI, message_text, request_schema
from fabula.testing.stories import new_story, turn_delta


def planner_for(server: FakeOpenAI) -> ModelRecallPlanner:
    settings = ModelSettings(
        base_url=server.base_url,
        model="fake-model",
        api_key="test-key",
        retry_initial_s=0.01,
        retry_max_s=0.05,
    )
    return ModelRecallPlanner(make_client(settings, "planner"))


def reading(**values: object) -> dict[str, object]:
    base: dict[str, object] = {
        "entities": [],
        "terms": [],
        "attributes": [],
        "developments": [],
        "first_date": None,
        "last_date": None,
        "order": None,
        "asks_when": False,
    }
    return base | values


class TestModelRecallPlanner:
    async def test_a_reading_becomes_a_plan_the_index_understands(
        self, fake_openai: FakeOpenAI, aredis_client: aredis.Redis
    ) -> None:
        """Names become ids, words become the index's stemmed terms (names left out), ISO
        dates become day numbers; an unknown entity is shown back and asked for again; the
        plan drives the author's retrieval like the offline planner's."""
        store: StoryStore = await new_story(aredis_client, "rp")
        await store.commit(
            turn_delta(1, [("ann", "I relaxed by the harbour.", ("ann",))], "3 May, 2023")
        )
        fake_openai.reply_json(reading(entities=["Zed"], terms=["unwinding"]))
        fake_openai.reply_json(
            reading(
                entities=["Ann"],
                terms=["unwinding", "relaxing", "Ann"],
                first_date="2023-05-01",
                last_date="2023-05-31",
                asks_when=True,
            )
        )
        entities = await store.entities()
        recall = RecallRequest("How did she unwind that month?", entities)
        plan = await planner_for(fake_openai).plan(recall)
        assert plan.entities == ("ann",) and plan.characters == ("ann",)
        assert plan.terms == tuple(terms("unwinding relaxing"))
        assert plan.first_day == dt.date(2023, 5, 1).toordinal() and plan.asks_when
        assert len(fake_openai.requests) == 2
        assert request_schema(fake_openai.requests[0]) == PlanReading.__name__
        found = await author_context(
            store, plan.request, budget=200, counter=ApproximateCounter(), plan=plan
        )
        assert "relaxed by the harbour" in found.text
        await store.delete()

    async def test_the_model_reads_relative_dates_against_the_story_present(
        self, fake_openai: FakeOpenAI, aredis_client: aredis.Redis
    ) -> None:
        """The model is shown the story's present date (its latest episode's), which the
        writer's context looks up, so "last week" can become dates; none without one."""
        store: StoryStore = await new_story(aredis_client, "rp2")
        await store.commit(turn_delta(1, [("ann", "I sailed.", ("ann",))], "3 May, 2023"))
        await index_through(store)
        today = await latest_day(aredis_client, await sources(store))
        assert today == dt.date(2023, 5, 3).toordinal()
        fake_openai.reply_json(reading(first_date="2023-04-24", last_date="2023-04-30"))
        fake_openai.reply_json(reading())
        planner = planner_for(fake_openai)
        asked = RecallRequest("What did Ann do last week?", await store.entities())
        plan = await planner.plan(dataclasses.replace(asked, today=today))
        assert plan.first_day == dt.date(2023, 4, 24).toordinal()
        await planner.plan(asked)
        first, second = (message_text(r) for r in fake_openai.requests)
        assert "## The story's present date\n2023-05-03" in first
        assert "present date\n" not in second
        await store.delete()

    def test_it_plans_the_writers_retrieval_only_when_asked(self, fake_openai: FakeOpenAI) -> None:
        """Off by default (the offline planner); FABULA_RECALL_PLANNER=model gives the writer
        the planner's model."""
        model = ModelSettings(base_url=fake_openai.base_url, model="fake-model", api_key="k")
        assert make_roles(Settings(model=model)).recall is None
        chosen = make_roles(Settings(model=model, recall_planner="model")).recall
        assert isinstance(chosen, ModelRecallPlanner)
        env = {"FABULA_RECALL_PLANNER": "model"}
        assert Settings.from_env(env).recall_planner == "model"
