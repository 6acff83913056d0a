"""The command line for tests: :func:`fabula` runs it as a separate process (a real
subprocess against the test Redis), :class:`Cli` in this process (typer's runner)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

from typer.testing import CliRunner, Result

from fabula.cli import app

__all__ = [
    "Cli",
    "editor_script",
    "error_statuses",
    "fabula",
    "fabula_editing",
    "fabula_process",
    "modules_after",
]


def fabula_process(
    env: Mapping[str, str], *args: str, input: str | None = None, timeout: float = 300
) -> subprocess.CompletedProcess[str]:
    """``fabula ARGS`` as a user runs it, in a process of its own with exactly ``env`` as its
    environment (``input`` on its stdin); its output captured as text. It runs cold
    (``FABULA_WARM=0``) unless ``env`` says otherwise: a test leaves no warm process."""
    return subprocess.run(
        [sys.executable, "-m", "fabula", *args],
        input=input,
        capture_output=True,
        text=True,
        env={"FABULA_WARM": "0", **env},
        timeout=timeout,
    )


def fabula(redis_url: str, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    """``fabula ARGS`` in a process of its own against the test Redis; with ``check``, a
    failure is an AssertionError that shows its stderr."""
    env = {**os.environ, "FABULA_REDIS_URL": redis_url, "COLUMNS": "200"}
    proc = fabula_process(env, *args, timeout=120)
    if check and proc.returncode != 0:
        raise AssertionError(f"fabula {' '.join(args)} failed: {proc.stderr}")
    return proc


def modules_after(redis_url: str, *args: str) -> set[str]:
    """Every module in ``sys.modules`` once ``fabula ARGS`` ran to a clean exit, in a
    process of its own against the test Redis with no model configured (each
    ``FABULA_MODEL*``, ``FABULA_EMBEDDING*`` and ``OPENAI_*`` variable dropped). Unlike
    ``-X importtime`` it also sees what ``importlib`` imported."""
    code = (
        "import json, runpy, sys\n"
        "sys.argv[0] = 'fabula'\n"
        "try:\n"
        "    runpy.run_module('fabula', run_name='__main__')\n"
        "except SystemExit as e:\n"
        "    assert not e.code, e.code\n"
        "sys.stderr.write('\\nMODULES ' + json.dumps(sorted(sys.modules)))\n"
    )
    model = ("FABULA_MODEL", "FABULA_EMBEDDING", "OPENAI_")
    env = {k: v for k, v in os.environ.items() if not k.startswith(model)}
    env |= {"FABULA_REDIS_URL": redis_url, "COLUMNS": "200"}
    proc = subprocess.run(
        [sys.executable, "-c", code, *args], capture_output=True, text=True, env=env, timeout=120
    )
    if proc.returncode != 0:
        raise AssertionError(f"fabula {' '.join(args)} failed: {proc.stderr[-2000:]}")
    return set(json.loads(proc.stderr.rpartition("MODULES ")[2]))


class Cli:
    """``fabula ...`` in this process, against the test server."""

    def __init__(self, redis_url: str, home: Path) -> None:
        self.env = {"FABULA_REDIS_URL": redis_url, "FABULA_HOME": str(home), "COLUMNS": "80"}
        self.runner = CliRunner()

    def __call__(self, *args: str, **env: str) -> Result:
        return self.runner.invoke(app, list(args), env={**self.env, **env})

    def fails(self, *args: str, **env: str) -> str:
        """Run a command that must fail: an error's exit status (see fabula.errors), one
        line on stderr, no traceback."""
        result = self(*args, **env)
        assert result.exit_code in error_statuses(), (
            result.exit_code,
            result.output,
            result.exception,
        )
        assert result.stderr.startswith("error: ") and result.stderr.count("\n") == 1, result.stderr
        assert "Traceback" not in result.output
        return result.stderr.removeprefix("error: ").strip()


def error_statuses() -> set[int]:
    """The exit statuses Fabula's errors exit with (each class of ``fabula.errors`` says)."""
    from fabula import errors

    found, todo = set(), [errors.FabulaError]
    while todo:
        cls = todo.pop()
        found.add(cls.exit_code)
        todo.extend(cls.__subclasses__())
    return found


def fabula_editing(
    redis_url: str,
    *args: str,
    editor: str | None = None,
    input: str | None = None,
    timeout: float = 120,
) -> subprocess.CompletedProcess[str]:
    """``fabula ARGS`` in a subprocess against the test Redis (``$EDITOR``: ``editor``;
    ``input`` typed into its standard input)."""
    env = {**os.environ, "FABULA_REDIS_URL": redis_url, "COLUMNS": "200"}
    env.pop("VISUAL", None)
    if editor is not None:
        env["EDITOR"] = editor
    return subprocess.run(
        [sys.executable, "-m", "fabula", *args],
        input=input,
        capture_output=True,
        text=True,
        env=env,
        timeout=timeout,
    )


def editor_script(tmp_path: Path, text: str) -> str:
    """An ``$EDITOR`` that replaces the file it is given with ``text``."""
    script = tmp_path / "editor.sh"
    script.write_text(f"#!/bin/sh\nprintf '%s' '{text}' > \"$1\"\n")
    script.chmod(0o755)
    return str(script)
