"""tools/walk.py, the walk of one commit and one recall through the project's files (not a
package: loaded from its path, as tests/system/test_docs.py loads tools/docs_hooks.py)."""

from __future__ import annotations

import asyncio
import importlib.util
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[2]


def _walk() -> ModuleType:
    spec = importlib.util.spec_from_file_location("walk", ROOT / "tools" / "walk.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_return_to_a_file_already_left_is_counted() -> None:
    """Consecutive events in one file are one visit; A→B→A counts one return."""
    walk = _walk()
    found = walk.Walk()
    found.events = ["a.py", "a.py", "b.py", "a.py", "c.py", "b.py", "b.py"]
    got = walk.summary(found)
    assert got["walk"] == ["a.py", "b.py", "a.py", "c.py", "b.py"]
    assert (got["distinct"], got["visits"], got["returns"]) == (3, 5, 2)
    assert got["files"] == ["a.py", "b.py", "c.py"]


def test_only_the_projects_files_and_no_suspension_are_moves() -> None:
    """A traced coroutine of the project's that awaits (suspends) walks its files once:
    the library's frames and the event loop's resumptions are not moves."""
    walk = _walk()
    from fabula.memory.keys import meta

    async def step() -> None:
        meta("s")
        await asyncio.sleep(0)  # a suspension and a resumption: no move
        meta("s")

    got = asyncio.run(walk.traced(step))
    assert got["files"] == ["memory/keys.py"]
    assert (got["visits"], got["returns"]) == (1, 0)  # this test's frames are no file of ours
