"""The test server (:mod:`fabula.bench.fake_openai`) as a pytest fixture.

Importing ``fake_openai_fixture`` (or naming this module in ``pytest_plugins``) provides the
``fake_openai`` fixture, a started :class:`FakeOpenAI`::

    def test_plan(fake_openai: FakeOpenAI) -> None:
        fake_openai.reply_json({"goal": "escape"})
        ...

The server lives in the package (``fabula bench model`` runs against it too); see its
module docstring for what it can be scripted to do.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from fabula.bench.fake_openai import TEXT, FakeOpenAI, Reply, message_text, request_schema

__all__ = ["TEXT", "FakeOpenAI", "Reply", "fake_openai_fixture", "message_text", "request_schema"]


@pytest.fixture(name="fake_openai")
def fake_openai_fixture() -> Iterator[FakeOpenAI]:
    """A started :class:`FakeOpenAI`, stopped after the test."""
    with FakeOpenAI() as server:
        yield server
