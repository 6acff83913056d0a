"""The walk of one commit and of one recall through the project's files (issue 46, Checks).

Not a test: a measurement to run by hand, at any commit (it needs only ``Fabula``, its
``create_story``, ``run`` and ``read(...).recall``). On a private embedded Redis it makes a
story of a shipped world (its scripted opening), then:

- **commit**: one offline turn, ``fab.run(ref, auto=True)`` (planner, characters, writer,
  critic, memory-builder, commit: the offline roles, no model);
- **recall**: one ``fab.read(ref).recall(REQUEST, budget=1000)`` (the writer's, within the
  tokens ``fabula recall`` gives it by default; ``--as C``: C's own).

Each is done once untraced first (so the lazy imports and first-use caches of a process are
not the walk), then again under :func:`sys.setprofile`, keeping only the frames whose code
lives in the project's own packages (``agents``, ``graph``, ``memory``, ``worlds``,
``fabula``; not the libraries, not this file). The profile's events give the file that
executes at each moment: a ``call`` enters the callee's file, a ``return`` (a library's
too) goes back to the caller's file when the caller is the project's; a coroutine's
suspension on I/O and its resumption are not moves. Consecutive events in one file are one
visit. For each walk it prints:

- ``files``: the distinct project files the walk entered, in the order first entered;
- ``visits``: the length of the walk (a move from one file to another is one more visit);
- ``returns``: the visits to a file already left (A→B→A counts one, A→B→A→B two).

Only the main thread is traced (the event loop's: every coroutine; work handed to a thread
pool is not). Usage::

    python tools/walk.py [--world hollow_book] [--request "the brass key"] [--as leo]
                         [--budget 1000] [--json walk.json] [--show N]
"""

from __future__ import annotations

import argparse
import asyncio
import dis
import json
import os
import shutil
import sys
import tempfile
from collections.abc import Awaitable, Callable
from pathlib import Path
from types import CodeType, FrameType
from typing import Any

from fabula.graph.service import Fabula
from fabula.memory.server import EmbeddedRedis
from fabula.settings import Settings

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("agents", "graph", "memory", "worlds", "fabula", "bench")


def project_file(filename: str, cache: dict[str, str | None]) -> str | None:
    """``filename`` relative to the repository's root when it is one of the project's
    modules (``fabula/graph/x.py`` and ``graph/x.py`` are one file), else None."""
    if filename in cache:
        return cache[filename]
    found: str | None = None
    real = os.path.realpath(filename)
    if real.startswith(str(ROOT) + os.sep):
        relative = os.path.relpath(real, ROOT)
        if relative.split(os.sep, 1)[0] in PACKAGES:
            found = relative
    cache[filename] = found
    return found


RESUME = dis.opmap["RESUME"]
YIELD_VALUE = dis.opmap["YIELD_VALUE"]


class Walk:
    """The project files executing, in order, as :func:`sys.setprofile` reports them."""

    def __init__(self) -> None:
        self.events: list[str] = []  # a file at each event, consecutive repeats kept
        self._cache: dict[str, str | None] = {}
        self._code: dict[CodeType, bytes] = {}

    def profile(self, frame: FrameType, event: str, arg: Any) -> None:
        """The profile hook: a ``call`` of the project's enters its file; a ``return`` (from
        any frame, a library's too) to a caller of the project's goes back to that caller's
        file. A coroutine's (or generator's) suspension and resumption are not moves: the
        profile reports them as a ``return`` at a ``YIELD_VALUE`` and a ``call`` at a
        ``RESUME`` whose argument is not 0 (CPython 3.11's bytecode)."""
        if event not in ("call", "return"):  # c_call, c_return, c_exception: no file of ours
            return
        code = frame.f_code
        if event == "call":
            where = project_file(code.co_filename, self._cache)
            if where is None or self._op(code, frame.f_lasti) == (RESUME, True):
                return  # a library's frame, or a coroutine resumed
        else:
            caller = frame.f_back
            if caller is None:
                return
            where = project_file(caller.f_code.co_filename, self._cache)
            if where is None or self._op(code, frame.f_lasti)[0] == YIELD_VALUE:
                return  # back in a library's frame, or a coroutine suspended
        self.events.append(where)

    def _op(self, code: CodeType, at: int) -> tuple[int, bool]:
        """The opcode at byte ``at`` of ``code``, and whether its argument is not 0."""
        if code not in self._code:
            self._code[code] = code.co_code  # built anew at each read, in CPython 3.11
        raw = self._code[code]
        if 0 <= at < len(raw) - 1:
            return raw[at], raw[at + 1] != 0
        return -1, False

    def visits(self) -> list[str]:
        """The walk: consecutive events in one file are one visit."""
        out: list[str] = []
        for where in self.events:
            if not out or out[-1] != where:
                out.append(where)
        return out


def summary(walk: Walk) -> dict[str, Any]:
    """Files (in order of first entry), visits and returns to a file already left."""
    visits = walk.visits()
    seen: set[str] = set()
    first: list[str] = []
    returns = 0
    for where in visits:
        if where in seen:
            returns += 1
        else:
            seen.add(where)
            first.append(where)
    return {
        "distinct": len(first),
        "visits": len(visits),
        "returns": returns,
        "files": first,
        "walk": visits,
    }


async def traced(step: Callable[[], Awaitable[object]]) -> dict[str, Any]:
    """Run ``step`` once under the profile hook: its walk's summary."""
    walk = Walk()
    sys.setprofile(walk.profile)
    try:
        await step()
    finally:
        sys.setprofile(None)
    return summary(walk)


async def measure(world: str, request: str, character: str | None, budget: int) -> dict[str, Any]:
    """The walks of one commit and one recall on a fresh story of ``world``."""
    folder = Path(tempfile.mkdtemp(prefix="fabwalk-", dir="/tmp"))
    server = EmbeddedRedis(folder / "redis")
    server.ensure_started()
    try:
        async with Fabula(server.url, Settings(home=folder)) as fab:
            ref = await fab.create_story(world, "walk")
            await fab.run(ref, auto=True)  # untraced: imports and first-use caches
            commit = await traced(lambda: fab.run(ref, auto=True))
            await fab.read(ref).recall(request, budget=budget, character=character)
            recall = await traced(
                lambda: fab.read(ref).recall(request, budget=budget, character=character)
            )
    finally:
        server.stop()
        shutil.rmtree(folder, ignore_errors=True)
    return {"world": world, "request": request, "as": character, "commit": commit, "recall": recall}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python tools/walk.py", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--world", default="hollow_book")
    parser.add_argument("--request", default="the brass key")
    parser.add_argument("--as", dest="character", default=None)
    parser.add_argument("--budget", type=int, default=1000, help="The recall's tokens.")
    parser.add_argument("--json", dest="json_out", default=None, help="Write the walks here.")
    parser.add_argument("--show", type=int, default=0, help="Print the first N visits too.")
    args = parser.parse_args(argv)
    found = asyncio.run(measure(args.world, args.request, args.character, args.budget))
    for name in ("commit", "recall"):
        walk = found[name]
        print(
            f"{name}: {walk['distinct']} files, {walk['visits']} visits, "
            f"{walk['returns']} returns to a file already left"
        )
        for where in walk["files"]:
            print(f"  {where}")
        for where in walk["walk"][: args.show]:
            print(f"    -> {where}")
    if args.json_out:
        Path(args.json_out).write_text(json.dumps(found, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
