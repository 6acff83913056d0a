"""Record and replay of model exchanges (FABULA_MODEL_CASSETTE), through the real client."""

from __future__ import annotations

from pathlib import Path

import pytest
from langchain_core.messages import HumanMessage

from fabula.agents.cassette import cassette
from fabula.agents.llm import make_client
from fabula.memory.errors import ModelUnavailable
from fabula.memory.settings import Settings
from tests.fake_openai import FakeOpenAI

ASK = [HumanMessage(content="Write one line.")]


async def test_a_recorded_run_replays_without_the_server(
    fake_openai: FakeOpenAI, settings: Settings, tmp_path: Path
) -> None:
    """The first run records (the key is not written down); the second replays the same
    exchange with the server gone; a request the cassette does not hold is refused."""
    path = tmp_path / "run.yaml"
    client = make_client(settings.model, "writer")
    fake_openai.reply_text("The lamp turned.")
    with cassette(path):
        assert await client.text(ASK) == "The lamp turned."
    recorded = path.read_text()
    assert "The lamp turned." in recorded and "test-key" not in recorded
    fake_openai.stop()

    replaying = make_client(settings.model.model_copy(update={"max_retries": 0}), "writer")
    with cassette(path):
        assert await replaying.text(ASK) == "The lamp turned."
        with pytest.raises(ModelUnavailable):
            await replaying.text([HumanMessage(content="Something else.")])
