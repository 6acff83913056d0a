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

from fabula.memory.connection import connect as connect
from fabula.memory.connection import connect_async as connect_async
from fabula.memory.connection import redact as redact
from fabula.memory.connection import without_credentials as without_credentials
from fabula.memory.server.default_user import check_open_users as check_open_users
from fabula.memory.server.disk import disk_error as disk_error
from fabula.memory.server.folder import ADMIN_USER as ADMIN_USER
from fabula.memory.server.folder import FSYNC_POLICIES as FSYNC_POLICIES
from fabula.memory.server.folder import DataFolder as DataFolder
from fabula.memory.server.folder import redis_server_binary as redis_server_binary
from fabula.memory.server.process import EmbeddedRedis as EmbeddedRedis
from fabula.memory.server.process import aof_damage as aof_damage
from fabula.memory.server.process import check_aof as check_aof
from fabula.memory.server.urls import redis_url as redis_url
from fabula.memory.server.urls import resolve_url as resolve_url
from fabula.memory.server.urls import server_address as server_address
from fabula.settings import FsyncPolicy as FsyncPolicy
