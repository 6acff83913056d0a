"""Fixtures for model-mode tests (a pytest plugin: ``pytest_plugins`` in conftest.py).

``fake_openai`` is the local OpenAI-compatible test server; ``settings`` point every role
at it (fast transport retries); ``fab`` is the model-mode application on story ``t1``, the
hollow_book world after its scripted opening (committed by the offline engine): Leo put the
key in the desk drawer and went to the hallway; Mara, alone, moved it to the hollow book.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from fabula.agents.factory import make_roles
from fabula.graph.service import Fabula
from fabula.settings import ModelSettings, Settings
from fabula.worlds.loader import load_world
from tests.fake_openai import FakeOpenAI, fake_openai_fixture

__all__ = ["STORY", "fab", "fake_openai_fixture", "settings"]

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
