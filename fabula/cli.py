"""The ``fabula`` console script: the composition root of the command line.

It mounts the benchmarks' sub-app (:mod:`fabula.bench.cli`) on the story commands
(:mod:`fabula.graph.cli`), so that the production packages never import the benchmarks.
"""

from __future__ import annotations

from fabula.bench.cli import bench_app
from fabula.graph.cli import app

__all__ = ["app", "main"]

app.add_typer(bench_app, name="bench")


def main() -> None:
    """Console entry point (``fabula ...``, ``python -m fabula ...``)."""
    app()
