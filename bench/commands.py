"""``fabula bench commands``: how long each offline story command takes, as a whole process,
against ``python -c "import typer"`` timed in the same run.

A user waits for a whole process: the interpreter starting, Fabula's imports, the Redis
connection, the work. So each command runs as a subprocess, the way a user types it, on a
story of its own made by the round's ``new``, with no model configured (every
``FABULA_MODEL*`` and ``FABULA_EMBEDDING*`` variable dropped from its environment), against
the Redis the settings name (the embedded server, started before the first round). The
baseline is the smallest program a typer command line could be, run in the same round, so
a figure holds on a machine that is busy: each command's ratio to it is taken round by
round, and the median reported.

One round, in order (each command needs the one before it)::

    import typer | new | run --turns 1 | pending | approve | recall | recall --as
                 | chat --ask | show world | stories

then the round's story is deleted (not timed). Issue 44's target is each command within a
second on a quiet machine.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from fabula.bench.report import print_table, write_json
from fabula.errors import FabulaError

BASELINE = "import typer"
"""The baseline's one line (``python -c``): a command line's smallest possible start."""

WORLD = "hollow_book"
"""The world each round's story is made from (shipped, offline, with a cast to ask)."""

CHARACTER = "leo"
"""The character asked in ``recall --as`` and ``chat``."""

QUESTION = "Where is the brass key?"

TARGET_S = 1.0
"""Issue 44: each of these commands within a second on a quiet machine."""

# variables that would configure a model: dropped, so every command runs offline
_MODEL_VARIABLES = ("FABULA_MODEL", "FABULA_EMBEDDING", "OPENAI_")


@dataclass(frozen=True)
class Command:
    """One timed command: its name in the report and its arguments (``{story}`` filled)."""

    name: str
    args: tuple[str, ...]


COMMANDS = (
    Command("new", ("new", "--world", WORLD, "--id", "{story}")),
    Command("run --turns 1", ("run", "{story}", "--turns", "1")),
    Command("pending", ("pending",)),
    Command("approve", ("approve", "{story}")),
    Command("recall", ("recall", "{story}", QUESTION)),
    Command("recall --as", ("recall", "{story}", QUESTION, "--as", CHARACTER)),
    Command("chat --ask", ("chat", "{story}", CHARACTER, "--ask", QUESTION)),
    Command("show world", ("show", "{story}", "world")),
    Command("stories", ("stories",)),
)
"""The commands of one round, in the order they run."""


class CommandFailed(FabulaError):
    """A timed command exited with an error: its figures would time a failure."""


def offline_environment(environment: Mapping[str, str]) -> dict[str, str]:
    """``environment`` less every variable that would configure a model."""
    return {k: v for k, v in environment.items() if not k.startswith(_MODEL_VARIABLES)}


def _timed(argv: Sequence[str], env: Mapping[str, str], label: str) -> float:
    """Seconds ``argv`` took, start to exit; raises :class:`CommandFailed` if it failed."""
    started = time.perf_counter()
    proc = subprocess.run(list(argv), capture_output=True, text=True, env=dict(env), timeout=300)
    seconds = time.perf_counter() - started
    if proc.returncode != 0:
        last = (proc.stderr.strip().splitlines() or ["(no output)"])[-1]
        raise CommandFailed(f"`fabula {label}` exited with {proc.returncode}: {last}")
    return seconds


def run(rounds: int, json_out: str | None = None, *, quiet: bool = False) -> dict[str, Any]:
    """Time every command of :data:`COMMANDS` and the baseline ``rounds`` times; print a
    table (unless ``quiet``), write ``json_out`` when given, and return the figures:
    per command the median seconds, the median of its per-round ratios to the baseline,
    and whether its median is within :data:`TARGET_S`."""
    env = offline_environment(os.environ)
    fabula = [sys.executable, "-m", "fabula"]
    samples: dict[str, list[float]] = {c.name: [] for c in COMMANDS}
    ratios: dict[str, list[float]] = {c.name: [] for c in COMMANDS}
    baseline: list[float] = []
    for index in range(rounds):
        story = f"bench-commands-{os.getpid()}-{index}"
        base = _timed([sys.executable, "-c", BASELINE], env, BASELINE)
        baseline.append(base)
        try:
            for command in COMMANDS:
                args = [a.format(story=story) for a in command.args]
                seconds = _timed([*fabula, *args], env, command.name)
                samples[command.name].append(seconds)
                ratios[command.name].append(seconds / base)
        finally:
            subprocess.run([*fabula, "delete", story, "--yes"], capture_output=True, env=env)
    result: dict[str, Any] = {
        "benchmark": "commands",
        "rounds": rounds,
        "target_s": TARGET_S,
        "baseline": {"command": f'python -c "{BASELINE}"', "median_s": _median(baseline)},
        "commands": {
            name: {
                "median_s": _median(samples[name]),
                "min_s": round(min(samples[name]), 3),
                "ratio_to_baseline": _median(ratios[name]),
                "within_target": statistics.median(samples[name]) <= TARGET_S,
            }
            for name in samples
        },
    }
    if not quiet:
        rows = [
            (name, f["median_s"], f["min_s"], f["ratio_to_baseline"], f["within_target"])
            for name, f in result["commands"].items()
        ]
        rows.insert(
            0, (f"python -c '{BASELINE}'", _median(baseline), round(min(baseline), 3), 1.0, "")
        )
        print_table(
            f"Offline commands as processes ({rounds} rounds, median)",
            ["command", "median s", "min s", "x baseline", f"<= {TARGET_S:g} s"],
            rows,
        )
    write_json(json_out, result)
    return result


def _median(values: Sequence[float]) -> float:
    return round(statistics.median(values), 3)
