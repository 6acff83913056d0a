"""The tests' own layout: grouped by layer, sharing helpers through :mod:`fabula.testing` only."""

from __future__ import annotations

import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]
LAYERS = {"memory", "agents", "worlds", "graph", "web", "bench", "system"}


def test_no_test_imports_another_test_module() -> None:
    """What tests share lives in :mod:`fabula.testing`; a test module that imports another
    (``from tests.x import ...``) runs the other's module-level code and ties the two."""
    found = []
    for path in sorted(TESTS.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = []
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names = [node.module]
            elif isinstance(node, ast.ImportFrom) and node.level > 0:
                names = ["." * node.level + (node.module or "")]
            elif isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            found += [
                f"{path.relative_to(TESTS)}:{node.lineno} {name}"
                for name in names
                if name == "tests" or name.startswith(("tests.", "."))
            ]
    assert found == []


def test_every_test_module_is_in_a_layer() -> None:
    """Test modules live in ``tests/<layer>/``, the layers of the code they test."""
    loose = [p.name for p in TESTS.glob("test_*.py")]
    layers = {p.parent.name for p in TESTS.rglob("test_*.py")}
    assert loose == [] and layers <= LAYERS, (loose, layers - LAYERS)
