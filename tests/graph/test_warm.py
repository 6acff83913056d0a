"""Warm commands (:mod:`fabula.warm`, issue 44: every offline command within a second):
the first command starts a warm process, the next ones run in its children, and a user
sees exactly what a cold command shows — its output, its errors, its exit status, its
prompts and Ctrl-C — with the settings of its own environment.

Each test has a warm folder of its own (``TMPDIR``), and ends its warm process."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from fabula import warm


@pytest.fixture
def warm_env(redis_url: str, tmp_path: Path) -> Iterator[dict[str, str]]:
    """An environment whose commands go to a warm process of this test's own (in a short
    folder: a Unix socket's path has at most 107 bytes)."""
    folder = Path(tempfile.mkdtemp(prefix="fw-", dir="/tmp"))
    env = {
        **os.environ,
        "FABULA_REDIS_URL": redis_url,
        "FABULA_HOME": str(tmp_path / "home"),
        "FABULA_WARM": "600",
        "TMPDIR": str(folder),
        "COLUMNS": "200",
    }
    yield env
    warm.stop_all(folder / f"fabula-warm-{os.getuid()}")
    shutil.rmtree(folder, ignore_errors=True)


def _fabula(
    env: dict[str, str], *args: str, input: str | None = None
) -> subprocess.CompletedProcess[str]:
    # -X importtime: the command's own process writes what it imports to stderr; a command
    # the warm process ran imports nothing of the command line here
    return subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "fabula", *args],
        input=input,
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )


def _said(proc: subprocess.CompletedProcess[str]) -> str:
    """stderr without the import-time lines."""
    lines = proc.stderr.splitlines()
    return "\n".join(line for line in lines if not line.startswith("import time:"))


def _ran_warm(proc: subprocess.CompletedProcess[str]) -> bool:
    return "fabula.graph.cli" not in proc.stderr and "import time:" in proc.stderr


def _started(env: dict[str, str]) -> None:
    """Run a first command (cold: it starts the warm process) and wait for the warm one."""
    first = _fabula(env, "stories")
    assert first.returncode == 0, first.stderr[-2000:]
    assert not _ran_warm(first)
    folder = Path(env["TMPDIR"]) / f"fabula-warm-{os.getuid()}"
    deadline = time.monotonic() + 120
    while not any(folder.glob("*.pid")):
        assert time.monotonic() < deadline, "no warm process came up"
        time.sleep(0.1)
    assert folder.stat().st_mode & 0o777 == 0o700  # only its user can reach the socket


def test_a_warm_command_shows_what_a_cold_one_shows(warm_env: dict[str, str]) -> None:
    """Output, errors and exit statuses are the same warm as cold, and the warm ones ran in
    the warm process (the command's own process imported nothing of the command line)."""
    _started(warm_env)
    cold_env = {**warm_env, "FABULA_WARM": "0"}
    made = _fabula(warm_env, "new", "--world", "hollow_book", "--id", "tale")
    assert made.returncode == 0, _said(made)
    assert _ran_warm(made)
    ran = _fabula(warm_env, "run", "tale", "--turns", "1")
    assert ran.returncode == 0 and _ran_warm(ran), _said(ran)
    assert "turn 4 awaits approval" in ran.stdout
    approved = _fabula(warm_env, "approve", "tale")
    assert approved.returncode == 0 and "committed" in approved.stdout
    for args in (("show", "tale", "world"), ("recall", "tale", "Where is the brass key?")):
        hot, cold = _fabula(warm_env, *args), _fabula(cold_env, *args)
        assert _ran_warm(hot) and not _ran_warm(cold)
        assert (hot.returncode, hot.stdout) == (cold.returncode, cold.stdout)
    missing = _fabula(warm_env, "show", "nope", "world")
    cold_missing = _fabula(cold_env, "show", "nope", "world")
    assert _ran_warm(missing)
    assert missing.returncode == cold_missing.returncode == 3
    assert _said(missing) == _said(cold_missing)
    assert _said(missing) == "error: story 'nope' does not exist (story=nope)"
    usage = _fabula(warm_env, "show")
    assert usage.returncode == 2 and "Usage: python -m fabula show" in _said(usage)


def test_each_command_runs_with_its_own_environment(warm_env: dict[str, str]) -> None:
    """A warm process serves commands with different settings: each child takes on its
    command's environment and folder, and the next command is not affected."""
    _started(warm_env)
    nowhere = {**warm_env, "FABULA_REDIS_URL": "redis://127.0.0.1:9/0"}
    elsewhere = _fabula(nowhere, "stories")
    cold = _fabula({**nowhere, "FABULA_WARM": "0"}, "stories")
    assert _ran_warm(elsewhere)
    assert elsewhere.returncode == cold.returncode != 0
    assert _said(elsewhere) == _said(cold)
    assert "127.0.0.1:9" in _said(elsewhere)
    assert _fabula(warm_env, "new", "--world", "hollow_book", "--id", "tale").returncode == 0
    listed = _fabula(warm_env, "stories")
    assert _ran_warm(listed) and "tale" in listed.stdout


def test_prompts_read_the_commands_own_input(warm_env: dict[str, str]) -> None:
    """The command's standard input is the child's: `delete` asks, and is answered."""
    _started(warm_env)
    assert _fabula(warm_env, "new", "--world", "hollow_book", "--id", "tale").returncode == 0
    kept = _fabula(warm_env, "delete", "tale", input="n\n")
    assert _ran_warm(kept) and kept.returncode != 0
    assert "tale" in _fabula(warm_env, "stories").stdout
    gone = _fabula(warm_env, "delete", "tale", input="y\n")
    assert gone.returncode == 0, _said(gone)
    assert "tale" not in _fabula(warm_env, "stories").stdout


def test_ctrl_c_reaches_the_warm_command(warm_env: dict[str, str]) -> None:
    """Ctrl-C to the command's process is passed on: a `write` session at its prompt ends
    with status 130 and its turn still pending, as it does cold."""
    _started(warm_env)
    assert _fabula(warm_env, "new", "--world", "hollow_book", "--id", "tale").returncode == 0
    proc = subprocess.Popen(
        [sys.executable, "-m", "fabula", "write", "tale"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=warm_env,
    )
    assert proc.stdout is not None
    seen = ""
    deadline = time.monotonic() + 120
    while "[q]uit > " not in seen and time.monotonic() < deadline:
        seen += proc.stdout.read(1)
    proc.send_signal(signal.SIGINT)
    rest, _ = proc.communicate(timeout=60)
    assert proc.returncode == 130, rest
    assert "a pending turn waits as it was" in rest
    pending = _fabula(warm_env, "pending")
    assert "tale" in pending.stdout


def test_warm_commands_can_be_turned_off(tmp_path: Path) -> None:
    """``FABULA_WARM=0`` (the test suite's own setting), or a value that is not a number
    (the settings report it), runs the command here; so does a command that is always cold
    (a server, the benchmarks)."""
    assert warm.relay(["stories"], {"FABULA_WARM": "0"}) is None
    assert warm.relay(["stories"], {"FABULA_WARM": "soon"}) is None
    assert warm.relay(["serve"], {"FABULA_WARM": "600"}) is None
    assert warm.relay(["bench", "commands"], {"FABULA_WARM": "600"}) is None
    assert warm.idle_seconds({}) == warm.DEFAULT_IDLE_S
    assert warm.idle_seconds({"FABULA_WARM": "30"}) == 30.0


def test_a_folder_others_can_open_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The socket's folder must be the user's alone: one that others can open is not used
    (the command runs cold), never made into a door to another user's commands."""
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    folder = tmp_path / f"fabula-warm-{os.getuid()}"
    folder.mkdir(mode=0o755)
    folder.chmod(0o755)
    with pytest.raises(PermissionError):
        warm.socket_path("code")
    assert warm.relay(["stories"], {"FABULA_WARM": "600"}) is None
    folder.chmod(0o700)
    assert warm.socket_path("code") == folder / "code.sock"


def test_the_fingerprint_changes_with_the_code(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An edit to any source file gives the code a new fingerprint (so the next command
    starts a warm process with the new code); the install's part stays, which is how a new
    warm process finds the old one's socket and takes it away."""
    package = tmp_path / "fabula"
    (package / "sub").mkdir(parents=True)
    (package / "a.py").write_text("A = 1\n")
    (package / "sub" / "b.py").write_text("B = 1\n")
    monkeypatch.setattr(warm, "_package", lambda: package)
    first = warm.fingerprint()
    assert warm.fingerprint() == first
    (package / "sub" / "b.py").write_text("B = 22\n")
    second = warm.fingerprint()
    assert second != first
    assert second.split("-")[0] == first.split("-")[0]


def test_what_the_warm_process_imports_is_there_and_holds_no_model_client() -> None:
    """Every module the warm process imports first exists (a rename would quietly leave it
    to each child), and none of them is a model client: with no model configured, nothing
    of OpenAI is loaded, in the warm process as in a cold command."""
    code = (
        "import importlib, json, sys\n"
        "from fabula import warm\n"
        "for name in warm.PRELOAD:\n"
        "    importlib.import_module(name)\n"
        "print(json.dumps(sorted({m.split('.')[0] for m in sys.modules})))\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    loaded = set(json.loads(proc.stdout))
    assert not loaded & {"openai", "langchain_openai", "langchain"}
    assert "langgraph" in loaded  # what it is for: the turn graph, imported once
