"""What Fabula's tests share, public so that a project built on Fabula can test with it
too (as :mod:`structlog.testing`); it needs the dev extra (pytest, Playwright, httpx).

- :mod:`fabula.testing.redis` — a real embedded Redis per session (or a local cluster),
  wiped before each test: the ``redis_url`` fixture (a pytest plugin);
- :mod:`fabula.testing.model` — model mode on the test server: the ``fake_openai``,
  ``settings`` and ``fab`` fixtures (a pytest plugin), one scripted turn, model clients;
- :mod:`fabula.testing.stories` — stories built by hand through the real builder and store,
  and the invariants a crash must not break;
- :mod:`fabula.testing.cli` — the command line as a subprocess and in process;
- :mod:`fabula.testing.web` — the studio served over real HTTP in a thread;
- :mod:`fabula.testing.browser` — the studio in Debian's Chromium (Playwright): the
  ``base`` fixture (a pytest plugin);
- :mod:`fabula.testing.leaks` — random stories for the leak properties;
- :mod:`fabula.testing.imports` — cards and lorebooks of every format, made in the test;
- :mod:`fabula.testing.busy` — a Redis kept busy by a script, for timeouts.

``tests/conftest.py`` names the plugins (redis, model, browser); a test imports the rest
from here, never from another test module.
"""
