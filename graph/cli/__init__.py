"""The ``fabula`` command line (typer + rich): the story commands, over the service layer.

:data:`app` is the root; importing this package registers every command on it. The
console script is :func:`fabula.cli.main`, which also mounts the benchmarks.
"""

from fabula.graph.cli import stories, imports, turns, write, play, show, chat, studio, redis_server  # noqa: I001  (the order of --help)
from fabula.graph.cli.app import app

__all__ = [
    "app",
    "chat",
    "imports",
    "play",
    "redis_server",
    "show",
    "stories",
    "studio",
    "turns",
    "write",
]
