"""Model mode for tests: what a test needs to script the local OpenAI-compatible test server
(:class:`fabula.testing.fake_openai.FakeOpenAI`, which ``fabula bench model`` runs against
too) and point Fabula at it.

:func:`model_settings` point every role at a server (fast transport retries);
:func:`scripted_opening` opens story :data:`STORY` of the hollow_book world with its scripted
opening (committed by the offline engine): Leo put the key in the desk drawer and went to the
hallway; Mara, alone, moved it to the hollow book. :func:`script_turn` scripts the replies of
one whole turn (:data:`PLAN`, :data:`LEO`, :data:`MARA`, :data:`PASSAGE`, :data:`EXTRACTED`);
:func:`client_for` makes a role's model client on the server. The pytest fixtures built on
them (``fake_openai``, ``settings``, ``fab``) are in :mod:`fabula.testing.fixtures`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from langchain_core.messages import HumanMessage, SystemMessage
from pydantic import BaseModel, Field

from fabula.agents.llm import ModelClient, make_client
from fabula.graph.service import Fabula
from fabula.settings import ModelSettings, Settings
from fabula.testing.fake_openai import TEXT, FakeOpenAI, Reply, message_text, request_schema
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
    "go_action",
    "message_text",
    "model_settings",
    "prompt_of",
    "request_schema",
    "requests_for",
    "script_turn",
    "scripted_opening",
    "settings_for",
]

STORY = "t1"


def model_settings(server: FakeOpenAI, home: Path) -> Settings:
    """Settings with every role on ``server`` (fast transport retries), data in ``home``."""
    model = ModelSettings(
        base_url=server.base_url,
        model="fake-model",
        api_key="test-key",
        timeout_s=10.0,
        retry_initial_s=0.01,
        retry_max_s=0.05,
    )
    return Settings(home=home, model=model)


async def scripted_opening(redis_url: str, home: Path, story: str = STORY) -> None:
    """Open ``story`` of the hollow_book world and commit its scripted opening offline."""
    async with Fabula(redis_url, Settings(home=home)) as offline:
        made = await offline.create_story("hollow_book", story, opening=False)
        for text in load_world("hollow_book").opening.turns:
            await offline.commit_scripted(made, text)


# free prose, which the offline reader does not read (it reads controlled English itself:
# TestControlledSentences), so the model is asked for the reading
PASSAGE = "Leo walked back into the study. Mara hummed by the window."


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
    """Replies for one whole turn: planner, both characters, writer, (memory-builder)."""
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
