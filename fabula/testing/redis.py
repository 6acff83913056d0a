"""Redis for tests: whether they run on a local cluster (:func:`on_cluster`), and
:func:`wipe`, which empties a server between tests. The fixtures that start the server are
in :mod:`fabula.testing.fixtures`.

With ``FABULA_TEST_CLUSTER=1`` the fixtures give a local Redis Cluster instead of the
embedded server (three primaries, three replicas, see :mod:`fabula.testing.localcluster`), so
a module's tests run against a cluster unchanged:
``FABULA_TEST_CLUSTER=1 pytest tests/memory/test_store.py``.
"""

from __future__ import annotations

from fabula.memory.connection import connect
from fabula.memory.server import ADMIN_USER
from fabula.settings import Settings

__all__ = ["on_cluster", "wipe"]


def on_cluster(settings: Settings | None = None) -> bool:
    """Whether the tests run on a local cluster (``FABULA_TEST_CLUSTER=1``): from
    ``settings``, else read now (never at import: a test run's settings are its own)."""
    return (settings or Settings.from_env()).test_cluster


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
