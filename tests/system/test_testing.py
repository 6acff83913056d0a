"""The shipped test helpers (:mod:`fabula.testing`): a core that production's dependencies
are enough for, and the few pytest-only modules the tests alone import."""

from __future__ import annotations

import json
import pkgutil
import subprocess
import sys

import fabula.bench
import fabula.testing

FRAMEWORKS = ("pytest", "_pytest", "hypothesis", "playwright")


def _core() -> list[str]:
    return [
        f"fabula.testing.{m.name}"
        for m in pkgutil.iter_modules(fabula.testing.__path__)
        if m.name not in fabula.testing.TEST_ONLY
    ]


def _benchmarks() -> list[str]:
    return [f"fabula.bench.{m.name}" for m in pkgutil.iter_modules(fabula.bench.__path__)]


def test_the_core_and_the_benchmarks_load_no_test_framework() -> None:
    """Importing every module of the testing core, every benchmark and the command line (in a
    fresh interpreter) loads neither pytest, Hypothesis nor Playwright: the shipped modules
    run on production's dependencies; only the TEST_ONLY modules may need the dev extra."""
    modules = [*_core(), *_benchmarks(), "fabula.cli"]
    assert "fabula.testing.fake_openai" in modules and "fabula.testing.model" in modules
    script = (
        "import importlib, json, sys\n"
        f"for name in {modules!r}:\n"
        "    importlib.import_module(name)\n"
        f"print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in {FRAMEWORKS!r})))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=300, check=True
    )
    assert json.loads(done.stdout) == []


def test_the_test_only_modules_exist() -> None:
    """Each name in TEST_ONLY is a module of fabula.testing (a renamed one would leave the
    core check above testing it as core, and failing)."""
    names = {m.name for m in pkgutil.iter_modules(fabula.testing.__path__)}
    assert set(fabula.testing.TEST_ONLY) <= names
