"""The distribution: installing Fabula adds one importable name, ``fabula`` (about 5 s: it
builds the wheel with pip, as a user's install would)."""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SKIP = (".venv*", ".git", "*.egg-info", "build", "dist", "__pycache__", ".*_cache", ".hypothesis")


def test_the_wheel_installs_one_top_level_name(tmp_path: Path) -> None:
    """The wheel's only package is ``fabula`` (the top-level folders are mapped under it
    through the links in ``fabula/``), and it carries the data files the code loads."""
    source = tmp_path / "src"
    # a copy, so that building leaves nothing in the working tree
    shutil.copytree(ROOT, source, symlinks=True, ignore=shutil.ignore_patterns(*SKIP))
    out = tmp_path / "wheel"
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(out), str(source)],
        check=True,
        capture_output=True,
        timeout=300,
    )
    [wheel] = out.glob("fabula-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    top = {n.split("/")[0] for n in names if not n.split("/")[0].endswith(".dist-info")}
    assert top == {"fabula"}
    for expected in (
        "fabula/cli.py",
        "fabula/errors.py",  # the kernel: real modules of fabula/, not links
        "fabula/settings.py",
        "fabula/limits.py",
        "fabula/logs.py",
        "fabula/memory/store/__init__.py",
        "fabula/memory/fabula.lua",
        "fabula/graph/cli/app.py",
        "fabula/worlds/hollow_book/world.toml",
        "fabula/agents/planner/prompts/plan.v1.md",
        "fabula/bench/cli.py",
    ):
        assert expected in names, expected
