"""The ``fabula`` command line's frame: the root app, settings, the one error wrapper.

Settings are read once (the root callback puts them on the click context, where every
command, the benchmarks' included, finds them), logging is configured once, and every
error Fabula raises on purpose — and every Redis error — is printed here, as one line on
stderr, whichever command raised it, with the exit status of the error's class (its
``exit_code``: 2 bad input, 3 not found, ... see :mod:`fabula.errors`; a Redis error 1, a
full disk 74).

The command line imports what a command needs when it runs: ``fabula --help`` loads no
service, graph or model client, and a sub-app can be mounted lazily (:func:`add_lazy`,
how :mod:`fabula.cli` mounts the benchmarks). :func:`run_with_app` opens the whole service;
:func:`run_with_stores` only the Redis connection, for the commands that read
(:class:`~fabula.graph.service.light.Stores`). Like every interface, the command line reads
a story through the service's :class:`~fabula.graph.service.reader.Reader` and imports
nothing of :mod:`fabula.memory` (the embedded server is managed through
:mod:`fabula.graph.service.server`).
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
import sys
from collections.abc import Callable, Coroutine, Iterable
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar

import typer
from rich.console import Console, ConsoleOptions
from rich.segment import Segment
from rich.text import Text
from typer.core import TyperGroup

from fabula.errors import FabulaError

if TYPE_CHECKING:
    from fabula.graph.service import Fabula
    from fabula.graph.service.light import Stores
    from fabula.settings import Settings  # loaded when a command runs (pydantic: not for --help)

T = TypeVar("T")

# a terminal's control sequences: ESC's string commands (OSC, DCS, SOS, PM, APC: a title,
# a clipboard write) to their end (BEL, ST, or the next ESC, which ends one in a terminal
# too; rich drops a BEL before this sees it) or the line's; CSI (in 7 or 8 bits); any other
# ESC sequence; then every C0 control but newline and tab, DEL and C1
_CONTROLS = re.compile(
    r"(?:\x1b[\]PX^_]|[\x90\x98\x9d\x9e\x9f])[^\x07\x1b\x9c\n]*(?:\x07|\x1b\\|\x9c)?"
    r"|(?:\x1b\[|\x9b)[0-?]*[ -/]*[@-~]?"
    r"|\x1b[ -/]*[0-~]?"
    r"|[\x00-\x08\x0b-\x1f\x7f-\x9f]"
)


def strip_controls(text: str) -> str:
    """``text`` without a terminal's control sequences or control characters (newlines and
    tabs kept): what a story, a card or a model wrote is shown, never obeyed."""
    return _CONTROLS.sub("", text)


class _TextConsole(Console):
    """A console that prints text, never a control sequence it was given: every segment of
    text is stripped (:func:`strip_controls`); the console's own styling is added after."""

    def render(self, renderable: Any, options: ConsoleOptions | None = None) -> Iterable[Segment]:
        for segment in super().render(renderable, options):
            if segment.control or not _CONTROLS.search(segment.text):
                yield segment
            else:
                yield Segment(strip_controls(segment.text), segment.style)


# Nothing printed is ever read as markup or highlighted: story text, ids and messages come
# from users and models ("[/red]" in a story must print as written, not crash or style).
# Styling is explicit, with Text and style arguments. Nothing printed is obeyed either: the
# consoles strip control sequences (a greeting's "ESC]0;title" must not retitle a terminal).
out = _TextConsole(markup=False, highlight=False)
err = _TextConsole(stderr=True, markup=False, highlight=False)


def fresh_consoles() -> None:
    """Make both consoles again, in place, for the streams and the environment this process
    has now: a console decides at birth whether it writes to a terminal, in which colours,
    and what ``NO_COLOR`` says. A warm command's child (:mod:`fabula.warm`) calls this when
    it has taken on its command's streams; every module that imported ``out`` and ``err``
    keeps the same objects."""
    Console.__init__(out, markup=False, highlight=False)
    Console.__init__(err, stderr=True, markup=False, highlight=False)


def fail(message: str, code: int = 1) -> typer.Exit:
    """Print ``message`` as the one error line on stderr; raise what this returns (exit
    status ``code``: for an error Fabula raised on purpose, its class's ``exit_code``)."""
    err.print(Text.assemble(("error:", "red"), " ", message), soft_wrap=True)
    return typer.Exit(code)


class FabulaGroup(TyperGroup):
    """The root command group: turns every error Fabula raises on purpose into one line on
    stderr and its class's exit status (``exit_code``: 2 bad input, 3 not found, 4 a
    conflict, 6 the model, ... see :mod:`fabula.errors`), and every Redis error into one
    line and exit status 1. Sub-apps mounted on it (the benchmarks) are covered too, since
    their commands run inside this group's invoke."""

    lazy: ClassVar[dict[str, tuple[str, Callable[[], typer.Typer | str]]]] = {}
    """Commands loaded when they are run (name -> short help, loader), in the order of
    ``--help``: see :func:`add_lazy`."""

    def invoke(self, ctx: Any) -> Any:  # typer's (vendored) click context
        try:
            return super().invoke(ctx)
        except FabulaError as exc:
            from fabula.graph.cli.remedies import error_line  # loaded when an error is met

            raise fail(error_line(exc), exc.exit_code) from None
        except Exception as exc:
            # a Redis error can only come from redis, imported by then: not imported here
            errors = sys.modules.get("redis.exceptions")
            if errors is not None and isinstance(exc, errors.RedisError):
                from fabula.graph.service.server import disk_error, server_address

                disk = disk_error(exc, server_address(settings()))  # a full disk, named
                if disk is not None:
                    raise fail(str(disk), disk.exit_code) from None
                raise fail(f"redis: {exc}") from None
            raise

    def list_commands(self, ctx: Any) -> list[str]:
        listed = super().list_commands(ctx)  # the commands of modules already imported
        return [*self.lazy, *(name for name in listed if name not in self.lazy)]

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        found = super().get_command(ctx, cmd_name)
        if found is None and cmd_name in self.lazy:
            short, load = self.lazy[cmd_name]
            return _Lazy(name=cmd_name, help=short, load=load)
        return found


class _Lazy(typer.core.TyperCommand):
    """A command's stand-in: listed in help (and offered by shell completion) with its
    short help; its module is imported, and the real command built, when it is run (or its
    own ``--help`` asked for: the real command's context replaces this one's)."""

    def __init__(self, *, name: str, help: str, load: Callable[[], typer.Typer | str]) -> None:
        super().__init__(name=name, help=help)
        self.load = load

    def real(self) -> Any:
        """The click command (or group) this stands for, its module imported."""
        loaded = self.load()
        return typer.main.get_command(loaded) if isinstance(loaded, typer.Typer) else _built(loaded)

    def make_context(self, info_name: Any, args: Any, parent: Any = None, **extra: Any) -> Any:
        return self.real().make_context(info_name, args, parent=parent, **extra)


def _built(name: str) -> Any:
    """The click command (or group) of ``app``'s command ``name``, its module imported."""
    for info in app.registered_commands:
        if (
            info.callback is not None
            and (info.name or typer.main.get_command_name(info.callback.__name__)) == name
        ):
            return typer.main.get_command_from_info(
                info,
                pretty_exceptions_short=app.pretty_exceptions_short,
                rich_markup_mode=app.rich_markup_mode,
            )
    for group in app.registered_groups:
        if group.name == name:
            return typer.main.get_group_from_info(
                group,
                pretty_exceptions_short=app.pretty_exceptions_short,
                rich_markup_mode=app.rich_markup_mode,
                suggest_commands=app.suggest_commands,
            )
    raise LookupError(f"no command {name!r} was registered")  # pragma: no cover - a typo


def add_lazy(name: str, short_help: str, load: Callable[[], typer.Typer | str]) -> None:
    """Mount ``fabula NAME``, imported only when it runs (``fabula --help`` lists it with
    ``short_help``): ``load()`` returns the sub-app to mount, or imports the module that
    registers command ``NAME`` on :data:`app` and returns that name."""
    FabulaGroup.lazy[name] = (short_help, load)


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
    """The settings of the command being run: read once, by the root callback."""

    settings: Settings | None = None


@app.callback()
def _main(
    verbose: bool = typer.Option(False, "--verbose", "-v", help="Log progress to stderr."),
) -> None:
    # read once per command, here; every command and sub-app (the benchmarks) asks settings()
    from fabula.logs import configure_logging
    from fabula.settings import Settings

    _Read.settings = Settings.from_env()
    if _Read.settings.model_cassette is not None:  # settings that cannot work: before anything
        from fabula.agents.cassette import check_cassette

        check_cassette(_Read.settings.model_cassette)
    configure_logging(level=logging.INFO if verbose else logging.WARNING)


def settings() -> Settings:
    """The settings the root callback read (read now, once, if it has not run)."""
    if _Read.settings is None:
        from fabula.settings import Settings

        _Read.settings = Settings.from_env()
    return _Read.settings


def redis_url() -> str:
    """The Redis to use: ``FABULA_REDIS_URL``, else the embedded server (started if needed)."""
    from fabula.graph.service.server import redis_url as configured_redis

    return configured_redis(settings())


def run_with_app(coro_fn: Callable[[Fabula], Coroutine[Any, Any, T]]) -> T:
    """Run ``coro_fn`` with a :class:`Fabula` built from the settings (roles, consolidation),
    recording or replaying its model exchanges when ``FABULA_MODEL_CASSETTE`` is set."""
    from fabula.agents.cassette import cassette
    from fabula.graph.service import Fabula

    async def go() -> T:
        async with Fabula.from_settings(settings()) as fab:
            return await coro_fn(fab)

    with cassette(settings().model_cassette):
        return asyncio.run(go())


def run_with_stores(coro_fn: Callable[[Stores], Coroutine[Any, Any, T]]) -> T:
    """Run ``coro_fn`` with :class:`~fabula.graph.service.light.Stores` on the settings'
    Redis: the light way in for a command that only reads a story (``show``): it starts in
    a fraction of :func:`run_with_app`'s time."""
    from fabula.graph.service.light import Stores

    async def go() -> T:
        async with Stores.open(settings(), redis_url()) as stores:
            return await coro_fn(stores)

    return asyncio.run(go())


def plain(data: Any) -> Any:
    """``data`` with every response model (:mod:`fabula.graph.service.responses`) as plain
    JSON data."""
    from pydantic import BaseModel

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
