"""What the Redis Fabula uses is, as ``fabula server status`` prints it: where it is, whether
it runs, its version, memory, persistence and fsync policy, and how many stories it holds.

Nothing is started: an embedded server that is not running is reported as such. A
configured server (``FABULA_REDIS_URL``) that does not answer is a
:class:`~fabula.errors.RedisUnavailable` in one line.
"""

from __future__ import annotations

from typing import Any

import redis
from pydantic import BaseModel

from fabula.errors import RedisUnavailable
from fabula.memory import keys
from fabula.memory.connection import connect, redact
from fabula.memory.server.process import EmbeddedRedis
from fabula.settings import Settings

_TIMEOUT_S = 2.0


class ServerStatus(BaseModel):
    """One Redis as Fabula sees it (``None``: not known, the server not running)."""

    kind: str  # "embedded" or "configured"
    address: str  # the URL with its secret masked
    folder: str | None = None  # the embedded server's data folder
    running: bool
    version: str | None = None
    memory: str | None = None  # used_memory_human
    persistence: str | None = None  # "append-only file", "snapshots", "none"
    fsync: str | None = None  # appendfsync: always, everysec, no
    stories: int | None = None


def _persistence(info: dict[str, Any]) -> str:
    if int(info.get("aof_enabled", 0)):
        return "append-only file"
    if info.get("rdb_last_save_time") and info.get("rdb_changes_since_last_save") is not None:
        return "snapshots"
    return "none"


def _read(client: Any, base: ServerStatus) -> ServerStatus:
    info: dict[str, Any] = {}
    for section in ("server", "memory", "persistence"):
        info |= client.info(section)
    fsync = client.config_get("appendfsync").get("appendfsync")
    return base.model_copy(
        update={
            "running": True,
            "version": str(info.get("redis_version")),
            "memory": str(info.get("used_memory_human")),
            "persistence": _persistence(info),
            "fsync": fsync,
            "stories": int(client.scard(keys.STORIES)),
        }
    )


def server_status(settings: Settings) -> ServerStatus:
    """The status of the Redis ``settings`` name, or of the embedded server (not started)."""
    if settings.redis_url:
        base = ServerStatus(kind="configured", address=redact(settings.redis_url), running=False)
        client = connect(
            settings.redis_url, socket_timeout=_TIMEOUT_S, socket_connect_timeout=_TIMEOUT_S
        )
        try:
            return _read(client, base)
        except redis.RedisError as exc:
            where = base.address
            raise RedisUnavailable(f"the Redis at {where} does not answer: {exc}") from exc
        finally:
            client.close()
    server = EmbeddedRedis(settings.home / "redis")
    base = ServerStatus(
        kind="embedded",
        address=f"unix://{server.socket}",
        folder=str(server.directory),
        running=False,
    )
    if not (server.is_running() and server.answers(_TIMEOUT_S)):
        return base
    client = connect(server.url, socket_timeout=_TIMEOUT_S)
    try:
        return _read(client, base)
    except redis.RedisError as exc:
        where = base.address
        raise RedisUnavailable(f"the embedded Redis at {where} does not answer: {exc}") from exc
    finally:
        client.close()
