"""The ``fabula`` console script: the composition root of the command line.

It mounts the benchmarks' sub-app (:mod:`fabula.bench.cli`) on the story commands
(:mod:`fabula.graph.cli`), so that the production packages never import the benchmarks;
it is imported only when ``fabula bench ...`` runs.

:func:`main` first offers the command to the warm process (:mod:`fabula.warm`), which runs
it with everything already imported; where there is none, or warm commands are off
(``FABULA_WARM=0``), the command runs here. Nothing of the command line is imported
before that choice.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from functools import cache
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import typer


@cache
def _app() -> typer.Typer:
    from fabula.graph.cli import app
    from fabula.graph.cli.app import add_lazy

    add_lazy("bench", "Benchmarks, each with its baselines in the same run.", _bench)
    return app


def _bench() -> typer.Typer:
    from fabula.bench.cli import bench_app

    return bench_app


def __getattr__(name: str) -> typer.Typer:
    # ``from fabula.cli import app``: the root app, with the benchmarks mounted
    if name == "app":
        return _app()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def run_here(argv: Sequence[str], prog: str | None = None) -> None:
    """Run ``fabula ARGV`` in this process (raises SystemExit with its status)."""
    _app()(args=list(argv), prog_name=prog)


def main() -> None:
    """Console entry point (``fabula ...``, ``python -m fabula ...``)."""
    from fabula.warm import relay

    status = relay(sys.argv[1:])
    if status is not None:
        sys.exit(status)
    run_here(sys.argv[1:])
