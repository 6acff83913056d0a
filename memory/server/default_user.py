"""Refusing a Redis that lets anyone in: the ``default`` user of every node is checked.

A character's connection is confined by its own ACL user; if the server's ``default`` user
is enabled without a password, that connection could ``AUTH default anything`` and become
it. So a configured server (``FABULA_REDIS_URL``) whose ``default`` user is open is refused
unless ``FABULA_REDIS_ALLOW_OPEN=1``. ACL users are per node, so on a Redis Cluster every
node is checked — replicas too, since a character's client may be sent to any of them after
a failover — not only the one the URL names.
"""

from __future__ import annotations

from typing import Any

import redis
from redis.connection import parse_url

from fabula.memory.connection import connect, is_cluster, redact
from fabula.memory.errors import ConfigError, RedisUnavailable

__all__ = ["check_default_user", "is_open"]


def is_open(user: dict[str, Any]) -> bool:
    """Whether ``ACL GETUSER default``'s answer lets anyone in: enabled, no password, and
    allowed some command."""
    if not user:
        return False
    flags = set(user.get("flags", []))
    commands = str(user.get("commands", ""))
    return "on" in flags and "nopass" in flags and commands.strip() != "-@all"


def check_default_user(url: str) -> None:
    """Raise :class:`ConfigError` if the server at ``url`` — or any node of its cluster —
    lets anyone in as ``default``; :class:`RedisUnavailable` if a node cannot be asked."""
    for address, user in _default_users(url):
        if is_open(user):
            where = (
                "the Redis at FABULA_REDIS_URL"
                if address is None
                else (f"the Redis Cluster node {address} (of FABULA_REDIS_URL)")
            )
            raise ConfigError(
                f"{where} lets anyone in as its 'default' user (no password), so a "
                "character's connection could become it; disable it (ACL SETUSER default "
                "off) or give it a password, or set FABULA_REDIS_ALLOW_OPEN=1 to accept the "
                "risk",
                url=redact(url),
            )


def _default_users(url: str) -> list[tuple[str | None, dict[str, Any]]]:
    """``ACL GETUSER default`` of the server, or of every live node of a cluster (address,
    answer); the address is None for a single server."""
    client = connect(url, socket_timeout=5.0)
    try:
        if not is_cluster(url):
            return [(None, _ask(client, url, client.acl_getuser, "default"))]
        described = _ask(client, url, client.cluster_nodes)
        out: list[tuple[str | None, dict[str, Any]]] = []
        for address, info in described.items():
            if {"fail", "handshake", "noaddr"} & set(str(info.get("flags", "")).split(",")):
                continue
            host, _, port = address.split("@", 1)[0].rpartition(":")
            # the URL's credentials and TLS, on each node's address
            options = {"socket_timeout": 5.0, **parse_url(url), "host": host, "port": int(port)}
            node = redis.Redis(**{**options, "db": 0, "decode_responses": True})
            try:
                out.append((f"{host}:{port}", _ask(node, url, node.acl_getuser, "default")))
            finally:
                node.close()
        return out
    finally:
        client.close()


def _ask(client: Any, url: str, command: Any, *args: str) -> Any:
    try:
        return command(*args)
    except redis.exceptions.NoPermissionError as exc:
        raise ConfigError(
            "the user in FABULA_REDIS_URL may not manage ACL users (Fabula creates one per "
            f"character): {exc}",
            url=redact(url),
        ) from None
    except redis.RedisError as exc:
        raise RedisUnavailable(f"redis: {exc}", url=redact(url)) from None
