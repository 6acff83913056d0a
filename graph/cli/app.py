"""The ``fabula`` command line's frame: the root app, settings, the one error wrapper.

Settings are read once (the root callback puts them on the click context, where every
command, the benchmarks' included, finds them), logging is configured once, and every
error Fabula raises on purpose — and every Redis error — is printed here, as one line on
stderr with exit status 1, whichever command raised it.
"""

from __future__ import annotations

import asyncio
import json
import logging
import sys
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

import redis
import typer
from pydantic import BaseModel
from rich.console import Console
from rich.text import Text
from typer.core import TyperGroup

from fabula.agents.cassette import cassette
from fabula.graph.service import Fabula
from fabula.memory.errors import FabulaError
from fabula.memory.logs import configure_logging
from fabula.memory.server import redis_url as configured_redis
from fabula.memory.settings import Settings

__all__ = [
    "app",
    "dump",
    "err",
    "fail",
    "out",
    "plain",
    "redis_url",
    "run_with_app",
    "settings",
]

T = TypeVar("T")

# Nothing printed is ever read as markup or highlighted: story text, ids and messages come
# from users and models ("[/red]" in a story must print as written, not crash or style).
# Styling is explicit, with Text and style arguments.
out = Console(markup=False, highlight=False)
err = Console(stderr=True, markup=False, highlight=False)


def fail(message: str) -> typer.Exit:
    """Print ``message`` as the one error line on stderr; raise what this returns (status 1)."""
    err.print(Text.assemble(("error:", "red"), " ", message), soft_wrap=True)
    return typer.Exit(1)


class FabulaGroup(TyperGroup):
    """The root command group: turns every error Fabula raises on purpose (and every Redis
    error) into one line on stderr and exit status 1. Sub-apps mounted on it (the
    benchmarks) are covered too, since their commands run inside this group's invoke."""

    def invoke(self, ctx: Any) -> Any:  # typer's (vendored) click context
        try:
            return super().invoke(ctx)
        except FabulaError as exc:
            raise fail(str(exc)) from None
        except redis.RedisError as exc:
            raise fail(f"redis: {exc}") from None


app = typer.Typer(
    name="fabula",
    cls=FabulaGroup,
    help="Collaborative fiction written by many agents at once: shared worlds, private minds.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    # typer's rich help shows every flag as taking a value (`--auto <bool>`) and reads
    # markup in help text; the plain help shows flags as flags and text as written
    rich_markup_mode=None,
)


class _Read:
    settings: Settings | None = None


@app.callback()
def _main(
    ctx: typer.Context,
    verbose: bool = typer.Option(False, "--verbose", "-v", help="Log progress to stderr."),
) -> None:
    # read once, here; sub-apps (the benchmarks) find them on the context
    ctx.obj = _Read.settings = Settings.from_env()
    configure_logging(level=logging.INFO if verbose else logging.WARNING)


def settings() -> Settings:
    """The settings the root callback read (read now, once, if it has not run)."""
    if _Read.settings is None:
        _Read.settings = Settings.from_env()
    return _Read.settings


def redis_url() -> str:
    """The Redis to use: ``FABULA_REDIS_URL``, else the embedded server (started if needed)."""
    return configured_redis(settings())


def run_with_app(coro_fn: Callable[[Fabula], Coroutine[Any, Any, T]]) -> T:
    """Run ``coro_fn`` with a :class:`Fabula` built from the settings (roles, consolidation),
    recording or replaying its model exchanges when ``FABULA_MODEL_CASSETTE`` is set."""

    async def go() -> T:
        async with Fabula.from_settings(settings()) as fab:
            return await coro_fn(fab)

    with cassette(settings().model_cassette):
        return asyncio.run(go())


def plain(data: Any) -> Any:
    """``data`` with every response model (:mod:`fabula.graph.responses`) as plain JSON data."""
    if isinstance(data, BaseModel):
        return data.model_dump(mode="json")
    if isinstance(data, list):
        return [plain(d) for d in data]
    if isinstance(data, dict):
        return {k: plain(v) for k, v in data.items()}
    return data


def dump(data: Any) -> None:
    """Write ``data`` (plain data or response models) to stdout as indented JSON."""
    sys.stdout.write(json.dumps(plain(data), indent=2, default=str) + "\n")
