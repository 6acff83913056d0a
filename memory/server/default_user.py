"""Refusing a Redis that lets anyone in: every user of every node is checked.

A character's connection is confined by its own ACL user, but ``AUTH`` cannot be denied by
ACL: if any enabled user of the server takes any password (``nopass``) — ``default``, or a
``reader`` someone added — a character's connection could ``AUTH reader anything`` and
become it. So a server with such a user is refused unless ``FABULA_REDIS_ALLOW_OPEN=1``: a
configured one (``FABULA_REDIS_URL``) and the embedded one alike. ACL users are per node,
so on a Redis Cluster every node is checked — replicas too, since a character's client may
be sent to any of them after a failover — not only the one the URL names.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import redis
from redis.connection import parse_url

from fabula.errors import ConfigError, RedisUnavailable
from fabula.memory.connection import connect, is_cluster, redact


def open_users(acl_list: Sequence[str]) -> list[str]:
    """The users of an ``ACL LIST`` answer that let anyone in: enabled, taking any password
    (``nopass``), and allowed some command (or holding a selector that may be)."""
    out = []
    for line in acl_list:
        parts = line.split()
        if len(parts) < 2 or parts[0] != "user":
            continue
        rules = parts[2:]
        grants = any(r.startswith(("+", "(")) or r == "allcommands" for r in rules)
        if "on" in rules and "nopass" in rules and grants:
            out.append(parts[1])
    return out


def check_open_users(url: str, *, where: str = "the Redis at FABULA_REDIS_URL") -> None:
    """Raise :class:`ConfigError` if the server at ``url`` — or any node of its cluster —
    has a user that lets anyone in; :class:`RedisUnavailable` if a node cannot be asked.
    ``where`` names the server in the message."""
    for address, acl in _acl_lists(url):
        names = open_users(acl)
        if not names:
            continue
        place = where if address is None else f"the Redis Cluster node {address} (of {where})"
        listed = ", ".join(f"'{n}'" for n in names)
        first = names[0]
        raise ConfigError(
            f"{place} lets anyone in as its {listed} user{'s' if len(names) > 1 else ''} "
            "(enabled, no password), so a character's connection could become "
            f"{'them' if len(names) > 1 else 'it'}; disable it (ACL SETUSER {first} off) "
            "or give it a password, or set FABULA_REDIS_ALLOW_OPEN=1 to accept the risk",
            url=redact(url),
        )


def _acl_lists(url: str) -> list[tuple[str | None, list[str]]]:
    """``ACL LIST`` of the server, or of every live node of a cluster (address, answer);
    the address is None for a single server."""
    client = connect(url, socket_timeout=5.0)
    try:
        if not is_cluster(url):
            return [(None, _ask(client, url, client.acl_list))]
        described = _ask(client, url, client.cluster_nodes)
        out: list[tuple[str | None, list[str]]] = []
        for address, info in described.items():
            if {"fail", "handshake", "noaddr"} & set(str(info.get("flags", "")).split(",")):
                continue
            host, _, port = address.split("@", 1)[0].rpartition(":")
            # the URL's credentials and TLS, on each node's address
            options = {"socket_timeout": 5.0, **parse_url(url), "host": host, "port": int(port)}
            node = redis.Redis(**{**options, "db": 0, "decode_responses": True})
            try:
                out.append((f"{host}:{port}", _ask(node, url, node.acl_list)))
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
