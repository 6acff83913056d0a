"""The Redis server, as the interfaces manage it: the service's door to
:mod:`fabula.memory.server`, so that the command line and the studio import nothing of
memory (an import contract in ``pyproject.toml`` holds them to it).

The embedded server lives in the settings' data folder (``<home>/redis``); each function
here takes the settings and finds it there.
"""

from __future__ import annotations

from fabula.memory.server import EmbeddedRedis
from fabula.memory.server import check_aof as _check_aof
from fabula.memory.server import disk_error as disk_error
from fabula.memory.server import redact as redact
from fabula.memory.server import redis_url as redis_url
from fabula.memory.server import server_address as server_address
from fabula.memory.server.status import ServerStatus
from fabula.memory.server.status import server_status as _server_status
from fabula.settings import Settings


def server_status(settings: Settings) -> ServerStatus:
    """What the Redis ``settings`` name is (nothing is started): address, running or not,
    version, memory, persistence, fsync policy and how many stories it holds."""
    return _server_status(settings)


def stop_server(settings: Settings) -> bool:
    """Stop the embedded server that owns the settings' data folder; False when none was
    running. Raises :class:`~fabula.errors.RedisUnavailable` saying why it cannot."""
    return EmbeddedRedis(settings.home / "redis").stop()


def stop_older_server(settings: Settings) -> int | None:
    """Stop a server an older Fabula left running on the data folder without holding its
    lock (``fabula migrate`` looks for one): its pid, or None when there was none."""
    return EmbeddedRedis(settings.home / "redis").stop_unlocked()


def check_aof(settings: Settings, *, fix: bool) -> int:
    """Check the embedded server's append-only file (the bundled ``redis-check-aof``); with
    ``fix``, cut it at its last complete write (it asks first). Its exit status."""
    return _check_aof(settings.home / "redis", fix=fix)
