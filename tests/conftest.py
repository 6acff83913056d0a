"""The fixtures every test may ask for, from :mod:`fabula.testing`: ``embedded_redis``,
``local_cluster``, ``redis_url`` and ``aredis_client`` (:mod:`fabula.testing.redis`: a real
embedded Redis, or a local cluster with ``FABULA_TEST_CLUSTER=1``); ``fake_openai``,
``settings`` and ``fab`` (:mod:`fabula.testing.model`: model mode on the test server);
``base`` (:mod:`fabula.testing.browser`: a live studio's URL)."""

import os

pytest_plugins = ["fabula.testing.fixtures", "fabula.testing.browser"]


def pytest_configure(config: object) -> None:
    """Every command a test runs as a process runs cold, importing what it needs (as with
    ``FABULA_WARM=0``): a test's commands leave no warm process behind. The warm process is
    tested on its own (tests/graph/test_warm.py), in a folder of its own."""
    del config
    os.environ["FABULA_WARM"] = "0"
