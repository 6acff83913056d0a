"""``fabula migrate``: bring stories stored by an older Fabula up to this one's schema."""

from __future__ import annotations

import typer

from fabula.errors import FabulaError, InvalidInput
from fabula.graph.cli.app import app, err, fail, out, redis_url, settings


@app.command()
def migrate(
    story: str | None = typer.Argument(None, help="The story to migrate."),
    every: bool = typer.Option(False, "--all", help="Migrate every story on this server."),
) -> None:
    """Bring stories stored by an older Fabula up to this one's schema (one line each;
    run it again at will: a story up to date is left as it is)."""
    import asyncio

    from fabula.graph.service.migration import migrate_stories
    from fabula.graph.service.server import stop_older_server

    if (story is None) == (not every):
        raise InvalidInput("name one STORY, or --all (not both)")
    if settings().redis_url is None:  # a server an older Fabula left running, lockless
        stopped = stop_older_server(settings())
        if stopped is not None:
            out.print(f"stopped the redis-server (pid {stopped}) an older Fabula left running")

    async def go() -> list[FabulaError]:
        failed: list[FabulaError] = []
        async for name, done in migrate_stories(redis_url(), None if every else [story or ""]):
            if isinstance(done, FabulaError):
                if not every:
                    raise done
                err.print(f"{name}: {done}", soft_wrap=True)
                failed.append(done)
            else:
                out.print(done.line())
        return failed

    failed = asyncio.run(go())
    if failed:
        raise fail(
            f"{len(failed)} stor{'y' if len(failed) == 1 else 'ies'} not migrated",
            failed[0].exit_code,
        )
