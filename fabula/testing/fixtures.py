"""The pytest fixtures every test may ask for (a pytest plugin: ``tests/conftest.py`` names
it in ``pytest_plugins``); the only module of :mod:`fabula.testing` besides
:mod:`~fabula.testing.browser` and :mod:`~fabula.testing.leaks` that needs pytest.

Redis: ``embedded_redis`` (a real embedded Redis 8 for the session), ``local_cluster`` (a
:class:`~fabula.testing.localcluster.LocalCluster` for the session), ``redis_url`` (one of
them, wiped before each test: the cluster with ``FABULA_TEST_CLUSTER=1``, see
:mod:`fabula.testing.redis`) and ``aredis_client``.

Model mode: ``fake_openai`` (a started :class:`~fabula.testing.fake_openai.FakeOpenAI`),
``settings`` (every role pointed at it, fast transport retries) and ``fab`` (the model-mode
application on story :data:`~fabula.testing.model.STORY` after the hollow_book opening, see
:mod:`fabula.testing.model`).

Offline: ``offline_fab`` (the application with the offline engines, its home in the test's
temporary folder, on ``redis_url``).
"""

from __future__ import annotations

import tempfile
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
import redis.asyncio as aredis

from fabula.agents.factory import make_roles
from fabula.graph.service import Fabula
from fabula.memory.connection import connect_async
from fabula.memory.server import EmbeddedRedis
from fabula.settings import Settings
from fabula.testing.fake_openai import FakeOpenAI
from fabula.testing.localcluster import LocalCluster
from fabula.testing.model import STORY, model_settings, scripted_opening
from fabula.testing.redis import on_cluster, wipe

__all__ = [
    "aredis_client",
    "embedded_redis",
    "fab",
    "fake_openai_fixture",
    "local_cluster",
    "offline_fab",
    "redis_url",
    "settings",
]


@pytest.fixture(scope="session")
def embedded_redis() -> Iterator[EmbeddedRedis]:
    """A private Redis server on a unix socket in a temporary folder, for the whole session."""
    directory = Path(tempfile.mkdtemp(prefix="fabula-test-", dir="/tmp")) / "redis"
    server = EmbeddedRedis(directory)
    server.ensure_started()
    yield server
    server.stop()


@pytest.fixture(scope="session")
def local_cluster() -> Iterator[LocalCluster]:
    """A local Redis Cluster of three primaries and three replicas, for the whole session."""
    with LocalCluster() as cluster:
        yield cluster


@pytest.fixture()
def redis_url(request: pytest.FixtureRequest) -> Iterator[str]:
    """The server's admin URL; every key, function and ACL user is wiped before each test."""
    if on_cluster():
        url = request.getfixturevalue("local_cluster").url
    else:
        url = request.getfixturevalue("embedded_redis").url
    wipe(url)
    yield url


@pytest.fixture()
async def aredis_client(redis_url: str) -> AsyncIterator[aredis.Redis]:
    """An asyncio client (text responses) on the flushed server (a cluster client on one)."""
    client = connect_async(redis_url)
    yield client
    await client.aclose()


@pytest.fixture(name="fake_openai")
def fake_openai_fixture() -> Iterator[FakeOpenAI]:
    """A started :class:`FakeOpenAI`, stopped after the test."""
    with FakeOpenAI() as server:
        yield server


@pytest.fixture()
def settings(fake_openai: FakeOpenAI, tmp_path: Path) -> Settings:
    """Every role on the test server, with fast transport retries."""
    return model_settings(fake_openai, tmp_path)


@pytest.fixture()
async def fab(redis_url: str, settings: Settings, tmp_path: Path) -> AsyncIterator[Fabula]:
    """The model-mode application, on the hollow_book story after its opening."""
    await scripted_opening(redis_url, tmp_path, STORY)
    async with Fabula(redis_url, settings, roles=make_roles(settings)) as app:
        yield app


@pytest.fixture()
async def offline_fab(redis_url: str, tmp_path: Path) -> AsyncIterator[Fabula]:
    """The application with the offline engines, its home in ``tmp_path``: no story yet."""
    async with Fabula(redis_url, Settings(home=tmp_path)) as app:
        yield app
