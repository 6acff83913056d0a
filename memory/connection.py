"""Clients of whichever Redis is configured: one server, or a Redis Cluster.

A URL names one node; whether it is part of a cluster is asked once per process (``INFO
cluster``) unless declared (``FABULA_REDIS_CLUSTER=1``, see :func:`declare_cluster`). On a
cluster the clients are redis-py's cluster clients, which route each command to the node
that owns its key: every key of a story carries the story's hash tag, so a story's keys, its
one-call commit and its checkpoints live in one slot. The embedded server (a unix socket) is
never a cluster.

What a cluster changes elsewhere: ACL users are per node, so they are set on every node
(:mod:`fabula.memory.acl`); ``WAITAOF`` must follow the write it waits for on the node that
owns the key (:func:`node_client`); a ``WATCH``/``MULTI`` transaction runs on that node too
(:func:`transaction`); RQ does not support Redis Cluster (rq 3.0), so its queue
lives on a plain Redis (``FABULA_RQ_URL``).

An asyncio client's pool is bounded and *waits*: with more commands at once than it holds
connections (150 parallel page loads, 500 open event streams), a command waits up to
:data:`POOL_WAIT_S` for a connection instead of failing with redis-py's "Too many
connections". The bounds are sized to the server: a process opens at most a few hundred
connections (an admin and a checkpointer pool of :data:`POOL_CONNECTIONS`, and
:data:`~fabula.memory.acl.MIND_CONNECTIONS` for each of at most
:data:`~fabula.memory.acl.MAX_OPEN_MINDS` minds), well inside Redis's ``maxclients``
(10,000 unless configured lower); the wait outlasts the longest a server may be busy in
one script (``busy-reply-threshold``, 5 s) several times over.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit

import redis
import redis.asyncio as aredis
from redis.asyncio.cluster import RedisCluster as AsyncRedisCluster
from redis.cluster import RedisCluster

_cluster: dict[str, bool] = {}

POOL_CONNECTIONS = 128
"""The most connections one asyncio client (the admin's, the checkpointer's) holds."""
POOL_WAIT_S = 30.0
"""How long a command waits for a free connection of its client's pool before failing."""


def _base(url: str) -> str:
    return without_credentials(url)


def declare_cluster(url: str, cluster: bool) -> None:
    """Record that ``url`` is (or is not) a cluster node, without asking it."""
    _cluster[_base(url)] = cluster


def is_cluster(url: str) -> bool:
    """Whether ``url`` names a node of a Redis Cluster (asked once per process)."""
    base = _base(url)
    if base not in _cluster:
        if url.startswith("unix://"):
            _cluster[base] = False
        else:
            client = redis.Redis.from_url(url, socket_timeout=5.0)
            try:
                _cluster[base] = bool(client.info("cluster").get("cluster_enabled"))
            except redis.RedisError:
                return False  # not cached: the caller's own connection will say why
            finally:
                client.close()
    return _cluster[base]


def connect(url: str, *, cluster: bool | None = None, **kwargs: Any) -> Any:
    """A synchronous client (text replies unless ``decode_responses=False``):
    ``redis.Redis`` or ``RedisCluster``."""
    kwargs.setdefault("decode_responses", True)
    if is_cluster(url) if cluster is None else cluster:
        return RedisCluster.from_url(url, **kwargs)
    return redis.Redis.from_url(url, **kwargs)


def connect_async(
    url: str,
    *,
    cluster: bool | None = None,
    max_connections: int = POOL_CONNECTIONS,
    **kwargs: Any,
) -> Any:
    """An asyncio client (text replies unless ``decode_responses=False``):
    ``redis.asyncio.Redis`` on a pool of at most ``max_connections`` that waits up to
    :data:`POOL_WAIT_S` for a free one, or a ``RedisCluster`` (redis-py's own pools, one
    per node, which cannot wait)."""
    kwargs.setdefault("decode_responses", True)
    if is_cluster(url) if cluster is None else cluster:
        return AsyncRedisCluster.from_url(url, **kwargs)
    pool = aredis.BlockingConnectionPool.from_url(
        url, max_connections=max_connections, timeout=POOL_WAIT_S, **kwargs
    )
    return aredis.Redis.from_pool(pool)  # the client owns the pool: aclose() closes it


def node_client(client: Any, key: str) -> aredis.Redis | None:
    """For a cluster client, a plain client of the primary that owns ``key`` (the caller
    closes it); None for a plain client (use it as it is)."""
    if not isinstance(client, AsyncRedisCluster):
        return None
    node = client.get_node_from_key(key)
    kwargs = dict(client.connection_kwargs)
    return aredis.Redis(
        host=node.host,
        port=node.port,
        username=kwargs.get("username"),
        password=kwargs.get("password"),
        decode_responses=kwargs.get("decode_responses", True),
    )


@contextlib.asynccontextmanager
async def transaction(client: Any, key: str) -> AsyncIterator[aredis.client.Pipeline]:
    """A ``WATCH``/``MULTI`` pipeline for keys in ``key``'s slot, on an asyncio client.

    On one server it is the client's own transactional pipeline. On a cluster it is a plain
    pipeline on the primary that owns ``key``, found after one command through the cluster
    client (which follows a slot that moved, e.g. after a failover): redis-py's asyncio
    cluster pipeline runs every command sent while watching in a new thread with its own
    event loop, where a refresh of its slot map binds the client's lock to that loop, and the
    client fails from then on ("bound to a different event loop"). A stale node answers
    ``MOVED`` or is gone: the caller's error, as for any command.
    """
    if not isinstance(client, AsyncRedisCluster):
        async with client.pipeline(transaction=True) as pipe:
            yield pipe
        return
    await client.exists(key)  # through the cluster client: its slot map is current
    node = node_client(client, key)
    assert node is not None
    try:
        async with node.pipeline(transaction=True) as pipe:
            yield pipe
    finally:
        await node.aclose()


def without_credentials(url: str) -> str:
    """``url`` with any user name and password removed (netloc and query string)."""
    parts = urlsplit(url)
    netloc = parts.netloc.rpartition("@")[2]
    query = urlencode(
        [(k, v) for k, v in parse_qsl(parts.query) if k not in ("username", "password")]
    )
    return _unsplit(parts.scheme, netloc, parts.path, query)


def _unsplit(scheme: str, netloc: str, path: str, query: str) -> str:
    # urlunsplit drops the '//' of an empty netloc ('unix:/path'), which redis-py refuses
    return f"{scheme}://{netloc}{path}" + (f"?{query}" if query else "")


def redact(url: str) -> str:
    """``url`` with its password replaced by ``***`` (for messages and logs)."""
    parts = urlsplit(url)
    user, at, host = parts.netloc.rpartition("@")
    if at and ":" in user:
        user = user.split(":", 1)[0] + ":***"
    query = urlencode([(k, "***" if k == "password" else v) for k, v in parse_qsl(parts.query)])
    netloc = f"{user}@{host}" if at else host
    return _unsplit(parts.scheme, netloc, parts.path, query)
