"""What Fabula's tests and benchmarks share, public so that a project built on Fabula can
test with it too (as :mod:`structlog.testing`).

The core needs nothing beyond Fabula's own dependencies; the benchmarks import it, and a
test (``tests/system/test_testing.py``) holds that importing it loads no test framework:

- :mod:`fabula.testing.fake_openai` — a local OpenAI-compatible server that replies as
  scripted and records each request (:class:`~fabula.testing.fake_openai.FakeOpenAI`), on
  :mod:`fabula.testing.local_server`, a threaded HTTP server on 127.0.0.1;
- :mod:`fabula.testing.localcluster` — a local Redis Cluster (three primaries, three
  replicas);
- :mod:`fabula.testing.redis` — :func:`~fabula.testing.redis.wipe` a server between tests,
  and whether tests run on a cluster (``FABULA_TEST_CLUSTER``);
- :mod:`fabula.testing.model` — model mode on the test server: settings pointing every role
  at it, the scripted opening of story ``t1``, one scripted turn, model clients;
- :mod:`fabula.testing.stories` — stories built by hand through the real builder and store,
  and the invariants a crash must not break;
- :mod:`fabula.testing.cli` — the command line as a subprocess and in process;
- :mod:`fabula.testing.web` — the studio served over real HTTP in a thread;
- :mod:`fabula.testing.imports` — cards and lorebooks of every format, made in the test;
- :mod:`fabula.testing.busy` — a Redis kept busy by a script, for timeouts.
- :mod:`fabula.testing.agent_server` — LangGraph's Agent Server (``langgraph dev``) served
  for a test, its tokens, and an SDK call expected to be refused.

Three modules need the dev extra and are imported by tests only:

- :mod:`fabula.testing.fixtures` — the pytest fixtures (a plugin): ``embedded_redis``,
  ``local_cluster``, ``redis_url``, ``aredis_client``, ``fake_openai``, ``settings``,
  ``fab``;
- :mod:`fabula.testing.browser` — the studio in Debian's Chromium (Playwright): the
  ``browser`` and ``base`` fixtures (a plugin);
- :mod:`fabula.testing.leaks` — random stories for the leak properties (Hypothesis).

``tests/conftest.py`` names the plugins (fixtures, browser); a test imports the rest from
here, never from another test module.
"""

TEST_ONLY = ("fixtures", "browser", "leaks")
"""The modules that import pytest, Hypothesis or Playwright: never imported by the core, the
benchmarks or production."""
