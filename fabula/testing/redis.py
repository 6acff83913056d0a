"""Redis for tests (a pytest plugin): one real embedded Redis 8 per test session, flushed
between tests.

With ``FABULA_TEST_CLUSTER=1`` the same fixtures give a local Redis Cluster instead (three
primaries, three replicas, see ``bench/localcluster.py``), so a module's tests run against a
cluster unchanged: ``FABULA_TEST_CLUSTER=1 pytest tests/memory/test_store.py``.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
import redis.asyncio as aredis

from fabula.memory.connection import connect, connect_async
from fabula.memory.server import ADMIN_USER, EmbeddedRedis

__all__ = ["ON_CLUSTER", "aredis_client", "embedded_redis", "local_cluster", "redis_url", "wipe"]

ON_CLUSTER = os.environ.get("FABULA_TEST_CLUSTER", "") == "1"


@pytest.fixture(scope="session")
def embedded_redis() -> Iterator[EmbeddedRedis]:
    """A private Redis server on a unix socket in a temporary folder, for the whole session."""
    directory = Path(tempfile.mkdtemp(prefix="fabula-test-", dir="/tmp")) / "redis"
    server = EmbeddedRedis(directory)
    server.ensure_started()
    yield server
    server.stop()


@pytest.fixture(scope="session")
def local_cluster() -> Iterator[Any]:
    """A local Redis Cluster of three primaries and three replicas, for the whole session."""
    from fabula.bench.localcluster import LocalCluster

    with LocalCluster() as cluster:
        yield cluster


def wipe(url: str) -> None:
    """Every key, function and Fabula ACL user gone (on every node of a cluster)."""
    client = connect(url)
    try:
        if hasattr(client, "get_nodes"):
            client.flushall(target_nodes=client.PRIMARIES)
            for node in client.get_nodes():
                for name in client.execute_command("ACL", "USERS", target_nodes=node):
                    if name not in ("default", ADMIN_USER):
                        client.execute_command("ACL", "DELUSER", name, target_nodes=node)
        else:
            client.flushall()
            for name in client.acl_users():
                if name not in ("default", ADMIN_USER):
                    client.acl_deluser(name)
    finally:
        client.close()


@pytest.fixture()
def redis_url(request: pytest.FixtureRequest) -> Iterator[str]:
    """The server's admin URL; every key, function and ACL user is wiped before each test."""
    if ON_CLUSTER:
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
