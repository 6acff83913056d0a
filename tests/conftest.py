"""The fixtures every test may ask for, from :mod:`fabula.testing`: ``embedded_redis``,
``local_cluster``, ``redis_url`` and ``aredis_client`` (:mod:`fabula.testing.redis`: a real
embedded Redis, or a local cluster with ``FABULA_TEST_CLUSTER=1``); ``fake_openai``,
``settings`` and ``fab`` (:mod:`fabula.testing.model`: model mode on the test server);
``base`` (:mod:`fabula.testing.browser`: a live studio's URL)."""

pytest_plugins = ["fabula.testing.fixtures", "fabula.testing.browser"]
