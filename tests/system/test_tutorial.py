"""The tutorial's commands, run as written: docs that cannot go stale.

Each page of ``docs/tutorial/`` is read in the order its index lists, and its blocks are
done in order in one empty folder, against the test Redis, as a reader would do them: a
``toml`` or ``json`` block is the file the prose before it names (``Write this one as
`shed/world.toml```); a block for a file that exists already is an edit, merged into it
(its ``[[characters]]`` lines added to the character of that name, any other table
added); a ``bash`` block's lines are commands, each of which must succeed. Installing
(``pip``) and ``fabula serve`` (it runs until stopped) are the only lines left out.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

TUTORIAL = Path(__file__).resolve().parents[2] / "docs" / "tutorial"

BLOCK = re.compile(r"^```(\w+)\n(.*?)^```", re.S | re.M)
FILE_NAMED = re.compile(r"`([\w./-]+\.(?:toml|json))`")
SKIPPED = ("python3 -m venv", "pip install", "fabula serve")


def pages() -> list[Path]:
    """The tutorial's pages, in the order its index links them."""
    index = (TUTORIAL / "index.md").read_text(encoding="utf-8")
    return [TUTORIAL / name for name in re.findall(r"\]\(([\w-]+\.md)\)", index)]


def steps(page: Path) -> list[tuple[str, str, str]]:
    """``(language, body, prose before it)`` for each fenced block of ``page``."""
    text = page.read_text(encoding="utf-8")
    found, start = [], 0
    for block in BLOCK.finditer(text):
        found.append((block.group(1), block.group(2), text[start : block.start()]))
        start = block.end()
    return found


def merge_toml(path: Path, edit: str) -> None:
    """Do what the prose asks of an edit block, as a person would in an editor: each
    ``[[characters]]`` table's keys go into the character of its ``name``; any other
    table is added at the end of the file."""
    text = path.read_text(encoding="utf-8")
    for table in re.split(r"\n(?=\[)", edit.strip()):
        header, _, body = table.partition("\n")
        name = re.search(r'^name = "([^"]+)"$', body, re.M)
        if header == "[[characters]]" and name:
            line = f"[[characters]]\n{name.group(0)}\n"
            assert line in text, f"{path.name} has no character {name.group(1)!r} to edit"
            extra = "".join(f"{k}\n" for k in body.splitlines() if k != name.group(0))
            text = text.replace(line, line + extra, 1)
        else:
            text = text.rstrip("\n") + f"\n\n{table}\n"
    path.write_text(text, encoding="utf-8")
    tomllib.loads(text)  # the edit leaves a valid file


def run_line(line: str, folder: Path, env: dict[str, str]) -> str:
    """One command line of a ``bash`` block, in ``folder``; its output, if it succeeded."""
    argv = shlex.split(line, comments=True)
    if argv[0] == "fabula":
        argv = [sys.executable, "-m", "fabula", *argv[1:]]
    proc = subprocess.run(argv, cwd=folder, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, f"`{line}` failed ({proc.returncode}): {proc.stderr[-800:]}"
    return proc.stdout


def test_the_tutorial_runs_as_written(redis_url: str, tmp_path: Path) -> None:
    """Every command of the tutorial succeeds in order, with its files as the pages give
    them. Reproduction: the import step edited a place `scene` that imports no longer
    make, and failed as written."""
    env = {**os.environ, "FABULA_REDIS_URL": redis_url, "FABULA_HOME": str(tmp_path / ".data")}
    env = {k: v for k, v in env.items() if not k.startswith(("FABULA_MODEL", "FABULA_EMBEDDING"))}
    folder = tmp_path / "work"
    folder.mkdir()
    ran = 0
    for page in pages():
        for language, body, prose in steps(page):
            if language in ("toml", "json"):
                names = FILE_NAMED.findall(prose)
                assert names, f"{page.name}: a {language} block names no file before it"
                path = folder / names[-1]
                if path.exists():
                    merge_toml(path, body)
                else:
                    path.parent.mkdir(parents=True, exist_ok=True)
                    path.write_text(body, encoding="utf-8")
            elif language == "bash":
                for line in body.splitlines():
                    if line.strip() and not line.strip().startswith(SKIPPED):
                        run_line(line, folder, env)
                        ran += 1
    assert ran >= 20  # the pages were read: a page renamed or a fence changed shows here


@pytest.mark.parametrize("page", pages(), ids=lambda p: p.name)
def test_every_page_has_a_command(page: Path) -> None:
    """Each page the index links exists and gives its reader something to type."""
    assert any(language == "bash" for language, _, _ in steps(page)), page.name
