"""A threaded HTTP server on 127.0.0.1 that starts and stops: what the fake OpenAI server
(:mod:`fabula.testing.fake_openai`) and the benchmarks' recording relay (``bench/relay.py``)
share. Standard library only.
"""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import ClassVar, Self


class LocalServer:
    """A server on a free port of 127.0.0.1, served by a daemon thread; a context manager
    that starts and stops it. A subclass gives :meth:`handler`, the request handler class
    (bound to it), the thread's ``thread_name`` and its ``poll_interval`` (``stop`` waits up
    to one interval)."""

    thread_name: ClassVar[str] = "local-server"
    poll_interval: ClassVar[float] = 0.05
    not_started: ClassVar[str] = "the server is not started"

    def __init__(self) -> None:
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    def handler(self) -> type[BaseHTTPRequestHandler]:
        """The request handler class, bound to this server."""
        raise NotImplementedError

    def address(self) -> tuple[str, int]:
        """The host and port it listens on; RuntimeError when it is not started."""
        if self._server is None:
            raise RuntimeError(self.not_started)
        host, port = self._server.server_address[:2]
        return str(host), int(port)

    def start(self) -> None:
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self.handler())
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever,
            kwargs={"poll_interval": self.poll_interval},
            name=self.thread_name,
            daemon=True,
        )
        self._thread.start()

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._server = self._thread = None

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
