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
import resource
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


def offline_environment(environment: Mapping[str, str], *, bytecode: bool = True) -> dict[str, str]:
    """``environment`` less every variable that would configure a model; with ``bytecode``
    also less ``PYTHONDONTWRITEBYTECODE``, so that Python keeps the bytecode it compiles,
    as it does by default on a user's machine (a sandbox or a container may forbid it,
    and every process then compiles all of Fabula again: about 0.2 s a command here)."""
    dropped = ("PYTHONDONTWRITEBYTECODE",) if bytecode else ()
    return {
        k: v
        for k, v in environment.items()
        if not k.startswith(_MODEL_VARIABLES) and k not in dropped
    }


@dataclass(frozen=True)
class Timing:
    """One run of a command: its wall-clock seconds, and the processor seconds (user and
    system) it used, which a busy machine inflates far less."""

    wall_s: float
    cpu_s: float


def _timed(argv: Sequence[str], env: Mapping[str, str], label: str) -> Timing:
    """How long ``argv`` took, start to exit; raises :class:`CommandFailed` if it failed."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    proc = subprocess.run(list(argv), capture_output=True, text=True, env=dict(env), timeout=300)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        last = (proc.stderr.strip().splitlines() or ["(no output)"])[-1]
        raise CommandFailed(f"`fabula {label}` exited with {proc.returncode}: {last}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return Timing(wall, cpu)


def run(
    rounds: int, json_out: str | None = None, *, quiet: bool = False, bytecode: bool = True
) -> dict[str, Any]:
    """Time every command of :data:`COMMANDS` and the baseline ``rounds`` times; print a
    table (unless ``quiet``), write ``json_out`` when given, and return the figures:
    per command (and the baseline) the median wall-clock and processor seconds, the
    medians of their per-round ratios to the baseline, and whether the median wall-clock
    time is within :data:`TARGET_S`. With ``bytecode`` (Python's default) Python keeps
    what it compiles, and a first round, not timed, compiles it."""
    env = offline_environment(os.environ, bytecode=bytecode)
    fabula = [sys.executable, "-m", "fabula"]
    samples: dict[str, list[Timing]] = {c.name: [] for c in COMMANDS}
    baseline: list[Timing] = []
    for index in range(-1 if bytecode else 0, rounds):
        story = f"bench-commands-{os.getpid()}-{index + 1}"
        if index < 0:  # the warm-up round: Python compiles and keeps the bytecode
            try:
                for command in COMMANDS:
                    args = [a.format(story=story) for a in command.args]
                    _timed([*fabula, *args], env, command.name)
            finally:
                subprocess.run([*fabula, "delete", story, "--yes"], capture_output=True, env=env)
            continue
        baseline.append(_timed([sys.executable, "-c", BASELINE], env, BASELINE))
        try:
            for command in COMMANDS:
                args = [a.format(story=story) for a in command.args]
                samples[command.name].append(_timed([*fabula, *args], env, command.name))
        finally:
            subprocess.run([*fabula, "delete", story, "--yes"], capture_output=True, env=env)
    result: dict[str, Any] = {
        "benchmark": "commands",
        "rounds": rounds,
        "bytecode": bytecode,
        "target_s": TARGET_S,
        "baseline": {"command": f'python -c "{BASELINE}"', **_figures(baseline, baseline)},
        "commands": {name: _figures(runs, baseline) for name, runs in samples.items()},
    }
    if not quiet:
        figures = {f"python -c '{BASELINE}'": result["baseline"], **result["commands"]}
        print_table(
            f"Offline commands as processes ({rounds} rounds, medians; bytecode "
            f"{'kept' if bytecode else 'compiled each time'})",
            ["command", "wall s", "x baseline", "cpu s", "cpu x baseline", f"<= {TARGET_S:g} s"],
            [
                (
                    name,
                    f["wall_s"],
                    f["wall_ratio"],
                    f["cpu_s"],
                    f["cpu_ratio"],
                    f["within_target"],
                )
                for name, f in figures.items()
            ],
        )
    write_json(json_out, result)
    return result


def _figures(runs: Sequence[Timing], baseline: Sequence[Timing]) -> dict[str, Any]:
    """The medians of ``runs`` and of their ratios to the same round's baseline."""
    return {
        "wall_s": _median([r.wall_s for r in runs]),
        "cpu_s": _median([r.cpu_s for r in runs]),
        "wall_ratio": _median([r.wall_s / b.wall_s for r, b in zip(runs, baseline, strict=True)]),
        "cpu_ratio": _median(
            [r.cpu_s / max(b.cpu_s, 1e-3) for r, b in zip(runs, baseline, strict=True)]
        ),
        "within_target": statistics.median(r.wall_s for r in runs) <= TARGET_S,
    }


def _median(values: Sequence[float]) -> float:
    return round(statistics.median(values), 3)
