"""Which Redis Fabula uses: the configured one (checked), or the embedded server.

:func:`redis_url` is the one place settings become a Redis URL: ``FABULA_REDIS_URL`` when set
else the embedded server's admin URL, the server started if needed with the settings' fsync
policy (``FABULA_REDIS_FSYNC``). Either way no user of the server (on any node) may let anyone
in, see :mod:`~fabula.memory.server.default_user`.
"""

from __future__ import annotations

from pathlib import Path

from fabula.errors import ConfigError
from fabula.memory.connection import declare_cluster
from fabula.memory.server.default_user import check_open_users
from fabula.memory.server.folder import DataFolder
from fabula.memory.server.process import EmbeddedRedis
from fabula.settings import FsyncPolicy, Settings


def redis_url(settings: Settings) -> str:
    """The Redis ``settings`` name (``FABULA_REDIS_URL``), else the embedded server's,
    started if needed; its users checked unless ``FABULA_REDIS_ALLOW_OPEN``."""
    # checked before anything starts: the embedded server is a unix socket
    if settings.redis_cluster and (settings.redis_url or "unix://").startswith("unix://"):
        where = "FABULA_REDIS_URL" if settings.redis_url else "the embedded server"
        raise ConfigError(
            f"FABULA_REDIS_CLUSTER is set, but {where} is a unix socket, which is never a "
            "Redis Cluster: unset FABULA_REDIS_CLUSTER, or point FABULA_REDIS_URL at a "
            "cluster node"
        )
    url = resolve_url(
        settings.redis_url,
        settings.home,
        allow_open=settings.allow_open_redis,
        fsync=settings.redis_fsync,
        load_truncated=settings.redis_load_truncated,
    )
    if settings.redis_cluster is not None:  # FABULA_REDIS_CLUSTER: not asked, declared
        declare_cluster(url, settings.redis_cluster)
    return url


def server_address(settings: Settings) -> str:
    """Where ``settings`` say the Redis is, without starting anything: ``FABULA_REDIS_URL``,
    else the embedded server's socket (``unix://<home>/redis/redis.sock``)."""
    return settings.redis_url or f"unix://{DataFolder(settings.home / 'redis').socket}"


def resolve_url(
    redis_url: str | None,
    home: Path,
    *,
    allow_open: bool = False,
    fsync: FsyncPolicy = "always",
    load_truncated: bool = False,
) -> str:
    """The configured URL, or the embedded server's admin URL (started if needed, with the
    ``fsync`` policy), checked.

    A server with a user that lets anyone in (enabled, no password; on any node) is refused
    with :class:`ConfigError` unless ``allow_open``: the configured one, and the embedded one
    (whose ``default`` Fabula disables itself, but a user added to it is kept). A configured
    server's own fsync policy is its owner's: Fabula never changes it. The embedded server
    refuses a truncated append-only file unless ``load_truncated``.
    """
    if redis_url:
        if not allow_open:
            check_open_users(redis_url)
        return redis_url
    url = EmbeddedRedis(home / "redis", fsync=fsync, load_truncated=load_truncated).ensure_started()
    if not allow_open:
        check_open_users(url, where=f"the embedded Redis in {home / 'redis'}")
    return url
