"""The embedded Redis server: ``server start``, ``server stop``."""

from __future__ import annotations

import typer

from fabula.graph.cli.app import app, out, redis_url, settings

__all__ = ["server_app"]

server_app = typer.Typer(help="The embedded Redis server.", rich_markup_mode=None)
app.add_typer(server_app, name="server")


@server_app.command("start")
def server_start() -> None:
    """Start the embedded Redis (if it is not running) and print its URL."""
    from fabula.memory.server import redact

    out.print(redact(redis_url()))


@server_app.command("stop")
def server_stop() -> None:
    """Stop the embedded Redis server that owns the data folder, or say why it could not."""
    from fabula.memory.server import EmbeddedRedis

    stopped = EmbeddedRedis(settings().home / "redis").stop()
    out.print("stopped" if stopped else "no server was running")


@server_app.command("check-aof")
def server_check_aof(
    fix: bool = typer.Option(
        False, "--fix", help="Cut the file at its last complete write (asks first)."
    ),
) -> None:
    """Check the embedded server's append-only file (the bundled redis-check-aof); with
    --fix, repair a truncated or corrupt one by cutting what follows its last complete
    write. Stop the server first; keep a copy of the folder."""
    from fabula.memory.server import check_aof

    code = check_aof(settings().home / "redis", fix=fix)
    if code != 0:
        raise typer.Exit(code)
