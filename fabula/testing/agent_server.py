"""LangGraph's Agent Server as the tests run it: ``langgraph dev`` (langgraph-api's
in-memory runtime) serving a ``langgraph.json`` on a free local port
(:func:`serving`), the tokens of the guarded server's tests (:data:`TOKENS`), and a
context that expects an SDK call to be refused with a status (:func:`refused`).

It needs ``langgraph-cli[inmem]`` (the dev extra) only when :func:`serving` runs; importing
it loads no test framework."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from types import TracebackType

import httpx

LANGGRAPH = Path(sys.executable).parent / "langgraph"
"""The ``langgraph`` command of this interpreter's environment (langgraph-cli)."""

START_SECONDS = 120.0
"""How long the server may take to answer ``/ok``."""

TOKENS: dict[str, dict[str, object]] = {
    "ana-0123456789abcdef": {"identity": "ana", "role": "author", "stories": ["tale"]},
    "cy-0123456789abcdef": {"identity": "cy", "role": "author"},
    "bo-0123456789abcdef": {"identity": "bo", "role": "player", "character": "leo"},
    "di-0123456789abcdef": {"identity": "di", "role": "reader"},
    "fa-0123456789abcdef": {"identity": "fa", "role": "player", "character": "leo"},
    "ed-0123456789abcdef": {"identity": "ed", "role": "player", "character": "mara"},
    "gu-0123456789abcdef": {
        "identity": "gu",
        "role": "player",
        "stories": ["elsewhere"],
        "character": "leo",
    },
}
"""``FABULA_AGENT_TOKENS`` of the guarded server: authors Ana (of ``tale``) and Cy (of
every story), Bo and Fa playing Leo, Ed playing Mara, Gu playing Leo in another story, Di
reading."""


PLAY_KEYS = frozenset(
    {"story", "branch", "character", "title", "head", "text", "lived", "beliefs"}  # the view
    | {"part", "write", "writing", "written"}  # a part written: the player's own words
)
"""Every key a play thread's state (``fabula_play``) may hold: nothing else reaches it."""


def free_port() -> int:
    """A TCP port free on 127.0.0.1 now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def serving(given: dict[str, str], home: Path, config: Path) -> Iterator[str]:
    """``langgraph dev --no-browser`` serving ``config`` with the environment ``given``,
    ``FABULA_HOME`` at ``home`` (its working directory too, so that the server's own state,
    ``.langgraph_api``, stays out of the repository): yields its URL once it answers, and
    stops it after (its log is ``home/langgraph.log``)."""
    port = free_port()
    env = {
        **{k: v for k, v in os.environ.items() if k != "FABULA_REDIS_URL"},
        **given,
        "FABULA_HOME": str(home),
        "LANGSMITH_TRACING": "false",
        "LANGGRAPH_CLI_NO_ANALYTICS": "1",
    }
    log_path = home / "langgraph.log"
    log = log_path.open("w")
    proc = subprocess.Popen(
        [
            str(LANGGRAPH),
            "dev",
            "--no-browser",
            "--no-reload",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--config",
            str(config),
        ],
        cwd=home,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + START_SECONDS
        while True:
            try:
                if httpx.get(f"{url}/ok", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                tail = log_path.read_text()[-3000:]
                raise AssertionError(f"langgraph dev did not start:\n{tail}")
            time.sleep(0.25)
        yield url
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(10)
        log.close()


class refused:
    """A context in which an SDK call must fail with HTTP ``status`` (and, when ``detail``
    is given, a ``{"detail": ...}`` body that starts with it)."""

    def __init__(self, status: int, detail: str | None = None) -> None:
        self.status = status
        self.detail = detail

    def __enter__(self) -> None:
        return None

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        tb: TracebackType | None,
    ) -> bool:
        assert isinstance(error, httpx.HTTPStatusError), error
        assert error.response.status_code == self.status, error.response.text
        if self.detail is not None:
            detail = error.response.json()["detail"]
            assert detail.startswith(self.detail) and "\n" not in detail, detail
        return True
