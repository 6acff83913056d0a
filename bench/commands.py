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

Each round runs twice: *cold*, every command a process that imports all it needs
(``FABULA_WARM=0``), and *warm*, every command handed to the warm process
(:mod:`fabula.warm`) that the warm-up round started (in a temporary folder of the
benchmark's own, ended after the run). A warm command's work is done in the warm
process's child, so only its wall-clock time is measured; its processor time is the
command's own process only, and is not reported.
"""

from __future__ import annotations

import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fabula import warm
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
    """Time every command of :data:`COMMANDS` and the baseline ``rounds`` times, cold and
    warm; print a table (unless ``quiet``), write ``json_out`` when given, and return the
    figures: per command (and the baseline) the median wall-clock and processor seconds,
    the medians of their per-round ratios to the baseline, and whether the median
    wall-clock time is within :data:`TARGET_S`. With ``bytecode`` (Python's default)
    Python keeps what it compiles, and a first round, not timed, compiles it."""
    env = offline_environment(os.environ, bytecode=bytecode)
    with tempfile.TemporaryDirectory(prefix="fabula-bench-warm-") as folder:
        modes = {
            "cold": {**env, "FABULA_WARM": "0"},
            "warm": {**env, "FABULA_WARM": "600", "TMPDIR": folder},
        }
        try:
            samples, baseline = _rounds(rounds, modes, bytecode=bytecode, warm_folder=folder)
        finally:
            warm.stop_all(Path(folder) / f"fabula-warm-{os.getuid()}")
    result: dict[str, Any] = {
        "benchmark": "commands",
        "rounds": rounds,
        "bytecode": bytecode,
        "target_s": TARGET_S,
        "baseline": {"command": f'python -c "{BASELINE}"', **_figures(baseline, baseline)},
        "commands": {name: _figures(runs, baseline) for name, runs in samples["cold"].items()},
        "warm": {
            name: _figures(runs, baseline, cpu=False) for name, runs in samples["warm"].items()
        },
    }
    if not quiet:
        rows = [(f"python -c '{BASELINE}'", "-", result["baseline"])]
        rows += [(name, "cold", f) for name, f in result["commands"].items()]
        rows += [(name, "warm", f) for name, f in result["warm"].items()]
        print_table(
            f"Offline commands as processes ({rounds} rounds, medians; bytecode "
            f"{'kept' if bytecode else 'compiled each time'})",
            [
                "command",
                "process",
                "wall s",
                "x baseline",
                "cpu s",
                "cpu x baseline",
                f"<= {TARGET_S:g} s",
            ],
            [
                (
                    name,
                    mode,
                    f["wall_s"],
                    f["wall_ratio"],
                    f.get("cpu_s", "-"),
                    f.get("cpu_ratio", "-"),
                    f["within_target"],
                )
                for name, mode, f in rows
            ],
        )
    write_json(json_out, result)
    return result


def _rounds(
    rounds: int, modes: Mapping[str, Mapping[str, str]], *, bytecode: bool, warm_folder: str
) -> tuple[dict[str, dict[str, list[Timing]]], list[Timing]]:
    """The timings of every command in every mode, and of the baseline, round by round."""
    fabula = [sys.executable, "-m", "fabula"]
    samples: dict[str, dict[str, list[Timing]]] = {m: {c.name: [] for c in COMMANDS} for m in modes}
    baseline: list[Timing] = []
    for index in range(-1 if bytecode else 0, rounds):
        if index >= 0:
            baseline.append(_timed([sys.executable, "-c", BASELINE], modes["cold"], BASELINE))
        for mode, env in modes.items():
            story = f"bench-commands-{os.getpid()}-{mode}-{index + 1}"
            try:
                for command in COMMANDS:
                    args = [a.format(story=story) for a in command.args]
                    timing = _timed([*fabula, *args], env, command.name)
                    if index >= 0:  # the warm-up round compiles, and starts the warm process
                        samples[mode][command.name].append(timing)
            finally:
                subprocess.run([*fabula, "delete", story, "--yes"], capture_output=True, env=env)
            if index < 0 and mode == "warm":
                _wait_for_warm(Path(warm_folder) / f"fabula-warm-{os.getuid()}")
    return samples, baseline


def _wait_for_warm(folder: Path, timeout_s: float = 60.0) -> None:
    """Wait until the warm process the warm-up round started is serving."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if any(folder.glob("*.pid")):
            return
        time.sleep(0.1)
    raise CommandFailed(f"no warm process came up in {folder} within {timeout_s:g} s")


def _figures(
    runs: Sequence[Timing], baseline: Sequence[Timing], *, cpu: bool = True
) -> dict[str, Any]:
    """The medians of ``runs`` and of their ratios to the same round's baseline (without
    ``cpu``, wall-clock time only: a warm command works in another process)."""
    figures: dict[str, Any] = {
        "wall_s": _median([r.wall_s for r in runs]),
        "wall_ratio": _median([r.wall_s / b.wall_s for r, b in zip(runs, baseline, strict=True)]),
        "within_target": statistics.median(r.wall_s for r in runs) <= TARGET_S,
    }
    if cpu:
        figures["cpu_s"] = _median([r.cpu_s for r in runs])
        figures["cpu_ratio"] = _median(
            [r.cpu_s / max(b.cpu_s, 1e-3) for r, b in zip(runs, baseline, strict=True)]
        )
    return figures


def _median(values: Sequence[float]) -> float:
    return round(statistics.median(values), 3)
