"""The Redis Fabula runs on: its embedded server, or the one configured.

One concept per module:

* :mod:`~fabula.memory.server.folder` — the data folder (``<home>/redis/``, mode 0700): the
  admin's secret (0600), the ACL file written before each start (``default`` disabled,
  :data:`ADMIN_USER` with the secret's hash), the server's command line and its fsync
  policy (:data:`~fabula.settings.FsyncPolicy`, ``FABULA_REDIS_FSYNC``).
* :mod:`~fabula.memory.server.lock` — who owns a folder: a lock the server process holds for
  its whole life.
* :mod:`~fabula.memory.server.process` — :class:`EmbeddedRedis`: started once per folder,
  never duplicated however busy, stopped on demand.
* :mod:`~fabula.memory.server.default_user` — a server (every node of a cluster, the
  embedded one too) with a user that lets anyone in (``nopass``) is refused.
* :mod:`~fabula.memory.server.urls` — settings to a URL (:func:`redis_url`).
* :mod:`~fabula.memory.server.disk` — a full disk said in one line (:func:`disk_error`).
"""

from __future__ import annotations

from fabula.memory.connection import connect, connect_async, redact, without_credentials
from fabula.memory.server.default_user import check_open_users
from fabula.memory.server.disk import disk_error
from fabula.memory.server.folder import (
    ADMIN_USER,
    FSYNC_POLICIES,
    DataFolder,
    redis_server_binary,
)
from fabula.memory.server.process import EmbeddedRedis, aof_damage, check_aof
from fabula.memory.server.urls import redis_url, resolve_url, server_address
from fabula.settings import FsyncPolicy

__all__ = [
    "ADMIN_USER",
    "FSYNC_POLICIES",
    "DataFolder",
    "EmbeddedRedis",
    "FsyncPolicy",
    "aof_damage",
    "check_aof",
    "check_open_users",
    "connect",
    "connect_async",
    "disk_error",
    "redact",
    "redis_server_binary",
    "redis_url",
    "resolve_url",
    "server_address",
    "without_credentials",
]
