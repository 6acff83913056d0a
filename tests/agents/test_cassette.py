"""Record and replay of model exchanges (FABULA_MODEL_CASSETTE), through the real client."""

from __future__ import annotations

from pathlib import Path

import pytest
from langchain_core.messages import HumanMessage

from fabula.agents.cassette import cassette
from fabula.agents.llm import make_client
from fabula.errors import ModelUnavailable
from fabula.graph.service import Fabula
from fabula.graph.web import WebConfig, create_app
from fabula.settings import Settings
from fabula.testing.model import STORY, FakeOpenAI, script_turn
from fabula.worlds.loader import load_world

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


async def test_the_studio_records_and_replays_for_its_whole_lifetime(
    fab: Fabula, fake_openai: FakeOpenAI, settings: Settings, redis_url: str, tmp_path: Path
) -> None:
    """``fabula serve`` with a cassette: every model exchange while the studio runs is
    recorded, and written when it stops; a studio started on that cassette replays the same
    turn with the model server gone."""
    path = tmp_path / "studio.yaml"
    with_cassette = settings.model_copy(update={"model_cassette": path})
    config = WebConfig(settings=with_cassette, redis_url=redis_url)

    async def one_turn() -> list[str]:
        await fab.store(STORY).delete()
        async with Fabula(redis_url, Settings(home=tmp_path)) as offline:
            store = offline.store(await offline.create_story("hollow_book", STORY, opening=False))
            for text in load_world("hollow_book").opening.turns:
                await offline.commit_scripted(store, text)
        app = create_app(config)
        async with app.router.lifespan_context(app):
            studio: Fabula = app.state.fab
            store = studio.store(STORY)
            assert (await studio.run(store, auto=True)).outcome == "committed"
            return [t.text for t in await store.turn_texts()]

    script_turn(fake_openai)
    recorded = await one_turn()
    assert path.exists() and "test-key" not in path.read_text()
    sent = len(fake_openai.requests)
    fake_openai.stop()
    assert await one_turn() == recorded  # replayed: the server is gone
    assert len(fake_openai.requests) == sent
