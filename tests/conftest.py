"""Shared fixtures: one real embedded Redis 8 per test session, flushed between tests."""

from __future__ import annotations

import tempfile
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
import redis
import redis.asyncio as aredis

from fabula.memory.server import ADMIN_USER, EmbeddedRedis

pytest_plugins = ["tests.model_mode"]  # fake_openai, settings, fab: model-mode fixtures


@pytest.fixture(scope="session")
def embedded_redis() -> Iterator[EmbeddedRedis]:
    """A private Redis server on a unix socket in a temporary folder, for the whole session."""
    directory = Path(tempfile.mkdtemp(prefix="fabula-test-", dir="/tmp")) / "redis"
    server = EmbeddedRedis(directory)
    server.ensure_started()
    yield server
    server.stop()


@pytest.fixture()
def redis_url(embedded_redis: EmbeddedRedis) -> Iterator[str]:
    """The server's admin URL; every key, function and ACL user is wiped before each test."""
    client = redis.Redis.from_url(embedded_redis.url, decode_responses=True)
    client.flushall()
    for name in client.acl_users():
        if name not in ("default", ADMIN_USER):
            client.acl_deluser(name)
    client.close()
    yield embedded_redis.url


@pytest.fixture()
async def aredis_client(redis_url: str) -> AsyncIterator[aredis.Redis]:
    """An asyncio client (text responses) on the flushed server."""
    client = aredis.Redis.from_url(redis_url, decode_responses=True)
    yield client
    await client.aclose()
