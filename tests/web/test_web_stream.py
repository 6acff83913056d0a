"""What a story page hears while a turn is written: each node as it finishes, and the
writer's prose as a model streams it (the real ChatOpenAI against the fake server)."""

from __future__ import annotations

from pathlib import Path

from fabula.agents.factory import make_roles
from fabula.graph.service import Fabula, TurnEvent
from fabula.settings import ModelSettings, Settings
from fabula.testing.model import PASSAGE, STORY, FakeOpenAI, script_turn


async def test_prose_streams_to_the_listener(
    fake_openai: FakeOpenAI, redis_url: str, tmp_path: Path
) -> None:
    """With a model, the listener hears the draft in pieces as the writer streams it, the
    pieces make the whole draft, and the run still stops at approval."""
    async with Fabula(redis_url, Settings(home=tmp_path)) as offline:
        await offline.create_story("hollow_book", STORY)
    model = ModelSettings(
        base_url=fake_openai.base_url, model="fake-model", api_key="test-key", timeout_s=10.0
    )
    settings = Settings(home=tmp_path, model=model)
    heard: list[TurnEvent] = []

    async def listener(event: TurnEvent) -> None:
        heard.append(event)

    script_turn(fake_openai)
    async with Fabula(redis_url, settings, roles=make_roles(settings)) as fab:
        outcome = (await fab.run(fab.store(STORY), auto=False, listener=listener)).outcome
    assert outcome == "pending"
    prose = [e.text for e in heard if e.kind == "prose"]
    assert len(prose) > 1 and "".join(prose) == PASSAGE
    steps = [e.node for e in heard if e.kind == "step"]
    assert steps[0] == "plan" and steps.count("character") == 2
    assert steps.index("write") < steps.index("critique")
    (draft,) = [e.text for e in heard if e.kind == "draft"]
    assert draft == PASSAGE
    assert all(e.turn == 4 and e.story == STORY for e in heard)
