"""The web studio: ``serve``."""

from __future__ import annotations

import os
import socket

import typer

from fabula.errors import ConfigError
from fabula.graph.cli.app import app, err, redis_url, settings


@app.command()
def serve(
    host: str = typer.Option("127.0.0.1", "--host", help="Address to listen on."),
    port: int = typer.Option(8000, "--port", min=0, max=65535, help="Port to listen on."),
) -> None:
    """The web studio: steer stories in a browser. Beyond localhost it needs FABULA_WEB_TOKEN."""
    import uvicorn

    from fabula.graph.web import WebConfig, create_app
    from fabula.graph.web.security import check_bind

    token = settings().web_token
    check_bind(host, token)  # before anything starts: a refusal is one line
    listening = listen(host, port)  # the port is ours before its URL is announced
    port = listening.getsockname()[1]  # --port 0: the one the system chose
    config = WebConfig(
        settings=settings(), host=host, port=port, token=token, redis_url=redis_url()
    )
    web = create_app(config)
    shown = f"[{host}]" if ":" in host else host
    err.print(f"Fabula studio on http://{shown}:{port}/ (Ctrl-C stops it)", highlight=False)
    server = uvicorn.Server(
        uvicorn.Config(web, host=host, port=port, log_level="warning", timeout_graceful_shutdown=3)
    )
    server.run(sockets=[listening])


def listen(host: str, port: int) -> socket.socket:
    """A socket bound to ``host``:``port`` (``port`` 0: one the system picks), as uvicorn
    binds its own (address reuse on, so a studio just stopped does not hold its port).

    Raises :class:`ConfigError` when the port is taken or the address cannot be bound, in
    one line, before anything is announced or started.
    """
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    try:
        return socket.create_server((host, port), family=family)
    except OSError as error:
        # create_server's own message repeats the address: the system's words for the errno
        reason = os.strerror(error.errno).lower() if error.errno else str(error)
        raise ConfigError(
            f"cannot listen on {host}:{port}: {reason} (choose another with --port)"
        ) from None
