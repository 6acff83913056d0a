"""The studio served by uvicorn in a thread on a free local port (a real HTTP server).

The studio runs on its own event loop in its own thread, with its own Redis connections,
as it would in its own process; tests reach it over TCP with httpx or a browser.
"""

from __future__ import annotations

import contextlib
import dataclasses
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import uvicorn

from fabula.graph.web import WebConfig, create_app
from fabula.settings import Settings

__all__ = ["studio"]


@contextlib.contextmanager
def studio(
    redis_url: str, home: Path, *, token: str | None = None, max_streams: int | None = None
) -> Iterator[str]:
    """Serve the studio on 127.0.0.1 (offline roles, inline consolidation); yield its URL."""
    config = WebConfig(settings=Settings(home=home), redis_url=redis_url, token=token, poll_s=0.2)
    if max_streams is not None:
        config = dataclasses.replace(config, max_streams=max_streams)
    app = create_app(config)
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    server = uvicorn.Server(
        uvicorn.Config(app, log_level="warning", timeout_graceful_shutdown=1, lifespan="on")
    )
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError("the studio did not start")
        time.sleep(0.01)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(15)
        sock.close()
