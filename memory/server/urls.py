"""Which Redis Fabula uses: the configured one (checked), or the embedded server.

:func:`redis_url` is the one place settings become a Redis URL: ``FABULA_REDIS_URL`` when set
(its ``default`` user checked on every node, see :mod:`~fabula.memory.server.default_user`),
else the embedded server's admin URL, the server started if needed with the settings' fsync
policy (``FABULA_REDIS_FSYNC``).
"""

from __future__ import annotations

from pathlib import Path

from fabula.memory.connection import declare_cluster
from fabula.memory.server.default_user import check_default_user
from fabula.memory.server.process import EmbeddedRedis
from fabula.memory.settings import FsyncPolicy, Settings

__all__ = ["redis_url", "resolve_url"]


def redis_url(settings: Settings) -> str:
    """The Redis ``settings`` name (``FABULA_REDIS_URL``, its default user checked unless
    ``FABULA_REDIS_ALLOW_OPEN``), else the embedded server's, started if needed."""
    url = resolve_url(
        settings.redis_url,
        settings.home,
        allow_open_default=settings.allow_open_redis,
        fsync=settings.redis_fsync,
    )
    if settings.redis_cluster is not None:  # FABULA_REDIS_CLUSTER: not asked, declared
        declare_cluster(url, settings.redis_cluster)
    return url


def resolve_url(
    redis_url: str | None,
    home: Path,
    *,
    allow_open_default: bool = False,
    fsync: FsyncPolicy = "always",
) -> str:
    """The configured URL (checked), or the embedded server's admin URL (started if needed,
    with the ``fsync`` policy).

    A configured server whose ``default`` user lets anyone in (on any node) is refused with
    :class:`ConfigError` unless ``allow_open_default``. A configured server's own fsync
    policy is its owner's: Fabula never changes it.
    """
    if redis_url:
        if not allow_open_default:
            check_default_user(redis_url)
        return redis_url
    return EmbeddedRedis(home / "redis", fsync=fsync).ensure_started()
