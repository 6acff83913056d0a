"""Model mode for tests: the test server as a fixture, settings pointing every role at it,
and one scripted turn (a pytest plugin: ``tests/conftest.py`` names it in ``pytest_plugins``).

``fake_openai`` is the local OpenAI-compatible test server
(:class:`fabula.bench.fake_openai.FakeOpenAI`, which ``fabula bench model`` runs against
too); ``settings`` point every role at it (fast transport retries); ``fab`` is the
model-mode application on story ``t1`` (:data:`STORY`), the hollow_book world after its
scripted opening (committed by the offline engine): Leo put the key in the desk drawer and
went to the hallway; Mara, alone, moved it to the hollow book. :func:`script_turn` scripts
the replies of one whole turn (:data:`PLAN`, :data:`LEO`, :data:`MARA`, :data:`PASSAGE`,
:data:`EXTRACTED`); :func:`client_for` makes a role's model client on the server.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import HumanMessage, SystemMessage
from pydantic import BaseModel, Field

from fabula.agents.factory import make_roles
from fabula.agents.llm import ModelClient, make_client
from fabula.bench.fake_openai import TEXT, FakeOpenAI, Reply, message_text, request_schema
from fabula.graph.service import Fabula
from fabula.settings import ModelSettings, Settings
from fabula.worlds.loader import load_world

__all__ = [
    "EXTRACTED",
    "GO",
    "GOOD",
    "LEO",
    "MARA",
    "MESSAGES",
    "PASSAGE",
    "PLAN",
    "STORY",
    "TEXT",
    "FakeOpenAI",
    "Reply",
    "ScenePlan",
    "action",
    "client_for",
    "events",
    "fab",
    "fake_openai_fixture",
    "go_action",
    "message_text",
    "prompt_of",
    "request_schema",
    "requests_for",
    "script_turn",
    "settings",
    "settings_for",
]

STORY = "t1"


@pytest.fixture()
def settings(fake_openai: FakeOpenAI, tmp_path: Path) -> Settings:
    model = ModelSettings(
        base_url=fake_openai.base_url,
        model="fake-model",
        api_key="test-key",
        timeout_s=10.0,
        retry_initial_s=0.01,
        retry_max_s=0.05,
    )
    return Settings(home=tmp_path, model=model)


@pytest.fixture()
async def fab(redis_url: str, settings: Settings, tmp_path: Path) -> AsyncIterator[Fabula]:
    """The model-mode application, on the hollow_book story after its opening."""
    async with Fabula(redis_url, Settings(home=tmp_path)) as offline:
        store = await offline.new_story("hollow_book", STORY)
        for text in load_world("hollow_book").opening.turns:
            await offline.commit_scripted(store, text)
    async with Fabula(redis_url, settings, roles=make_roles(settings)) as app:
        yield app


# free prose, which the offline reader does not read (it reads controlled English itself:
# TestControlledSentences), so the model is asked for the reading
PASSAGE = "Leo walked back into the study. Rain tapped on the window."


GO = "Leo walked back into the study."


PLAN = {
    "scene_goal": "Leo comes back for the brass key",
    "place": "study",
    "focal": ["leo", "Mara"],  # a name is accepted and becomes an id
    "beats": ["Leo returns", "Mara watches"],
    "memory_needs": ["where Leo believes the key is"],
    "developments": [],
    "hypothesis": None,
}


LEO = {
    "actions": [{"kind": "go", "target": "study", "reason": "the key is in the desk drawer"}],
    "intent": "get the brass key",
}


MARA = {"actions": [{"kind": "wait", "reason": "watches Leo"}], "intent": "keep her secret"}


def action(kind: str, start: int, end: int, **fields: Any) -> dict[str, Any]:
    """One extracted action as the model sends it (every field present, as strict asks)."""
    empty: dict[str, Any] = {
        "actors": [],
        "place": None,
        "obj": None,
        "target": None,
        "listeners": [],
        "clause": None,
        "utterance": None,
        "verb": None,
    }
    return {"kind": kind, "start": start, "end": end, **empty, **fields}


def go_action(start: int = 0, end: int = len(GO)) -> dict[str, Any]:
    return action("go", start, end, actors=["Leo"], place="study")


EXTRACTED = {"actions": [go_action()]}


def script_turn(fake: FakeOpenAI, *, extraction: bool = True) -> None:
    """Replies for one whole turn: planner, both characters, writer, (extractor)."""
    fake.reply_json(PLAN, schema="TurnPlan")
    fake.reply_json(LEO, schema="CharacterProposal", contains="You are Leo")
    fake.reply_json(MARA, schema="CharacterProposal", contains="You are Mara")
    fake.reply_text(PASSAGE, schema=TEXT)
    if extraction:
        fake.reply_json(EXTRACTED, schema="ExtractedActions")


def requests_for(fake: FakeOpenAI, schema: str) -> list[dict[str, Any]]:
    return [r for r in fake.requests if request_schema(r) == schema]


def prompt_of(request: dict[str, Any]) -> str:
    return "\n".join(str(m["content"]) for m in request["messages"])


MESSAGES = [SystemMessage(content="You plan scenes."), HumanMessage(content="Plan the next one.")]


GOOD = {"goal": "escape the lighthouse", "beats": ["find the key", "run"], "tension": 3}


class ScenePlan(BaseModel):
    """The plan of one scene."""

    goal: str
    beats: list[str] = Field(min_length=1)
    tension: int = Field(ge=0, le=5)
    mood: str = "tense"  # a default: strict mode must not see it, and must require the field


def settings_for(server: FakeOpenAI, **overrides: object) -> ModelSettings:
    values: dict[str, object] = {
        "base_url": server.base_url,
        "model": "fake-model",
        "api_key": "test-key",
        "temperature": 0.2,
        "timeout_s": 10.0,
        "retry_initial_s": 0.01,
        "retry_max_s": 0.05,
    }
    return ModelSettings.model_validate(values | overrides)


def client_for(server: FakeOpenAI, role: str = "planner", **overrides: object) -> ModelClient:
    return make_client(settings_for(server, **overrides), role)


def events(logs: list[dict[str, object]], name: str) -> list[dict[str, object]]:
    return [e for e in logs if e["event"] == name]


@pytest.fixture(name="fake_openai")
def fake_openai_fixture() -> Iterator[FakeOpenAI]:
    """A started :class:`FakeOpenAI`, stopped after the test."""
    with FakeOpenAI() as server:
        yield server
