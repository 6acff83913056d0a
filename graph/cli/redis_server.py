"""The Redis server: ``server start``, ``server stop``, ``server status``, ``server check-aof``."""

from __future__ import annotations

import typer

from fabula.graph.cli.app import app, out, redis_url, settings

server_app = typer.Typer(help="The embedded Redis server.", rich_markup_mode=None)
app.add_typer(server_app, name="server")


@server_app.command("start")
def server_start() -> None:
    """Start the embedded Redis (if it is not running) and print its URL."""
    from fabula.graph.service.server import redact

    out.print(redact(redis_url()))


@server_app.command("stop")
def server_stop() -> None:
    """Stop the embedded Redis server that owns the data folder, or say why it could not."""
    from fabula.graph.service.server import stop_server

    stopped = stop_server(settings())
    out.print("stopped" if stopped else "no server was running")


@server_app.command("status")
def server_status(as_json: bool = typer.Option(False, "--json")) -> None:
    """What the Redis Fabula uses is (nothing is started): address, running or not,
    version, memory, persistence and fsync policy, and how many stories it holds."""
    from rich.table import Table

    from fabula.graph.cli.app import dump
    from fabula.graph.service.server import server_status as status_of

    found = status_of(settings())
    if as_json:
        dump(found)
        return
    table = Table("", "", title=f"{found.kind} Redis", show_header=False)
    rows = {
        "address": found.address,
        "data folder": found.folder,
        "running": "yes" if found.running else "no",
        "version": found.version,
        "memory": found.memory,
        "persistence": found.persistence,
        "fsync": found.fsync,
        "stories": None if found.stories is None else str(found.stories),
    }
    for name, value in rows.items():
        if value is not None:
            table.add_row(name, value)
    out.print(table)


@server_app.command("check-aof")
def server_check_aof(
    fix: bool = typer.Option(
        False, "--fix", help="Cut the file at its last complete write (asks first)."
    ),
) -> None:
    """Check the embedded server's append-only file (the bundled redis-check-aof); with
    --fix, repair a truncated or corrupt one by cutting what follows its last complete
    write. Stop the server first; keep a copy of the folder."""
    from fabula.graph.service.server import check_aof

    code = check_aof(settings(), fix=fix)
    if code != 0:
        raise typer.Exit(code)
