"""The ``fabula`` console script: the composition root of the command line.

It mounts the benchmarks' sub-app (:mod:`fabula.bench.cli`) on the story commands
(:mod:`fabula.graph.cli`), so that the production packages never import the benchmarks;
it is imported only when ``fabula bench ...`` runs.
"""

from __future__ import annotations

import typer

from fabula.graph.cli import app as app
from fabula.graph.cli.app import add_lazy


def _bench() -> typer.Typer:
    from fabula.bench.cli import bench_app

    return bench_app


add_lazy("bench", "Benchmarks, each with its baselines in the same run.", _bench)


def main() -> None:
    """Console entry point (``fabula ...``, ``python -m fabula ...``)."""
    app()
