"""An error's remedy is structured, and each interface words it.

The service named the command line's flags in its messages (``--force``, ``fabula
pending``, ``--alternatives N``) and the studio rewrote them with ``str.replace``; now an
error carries a :class:`~fabula.errors.Remedy` (an action and its arguments), its message
names no interface, and the CLI and the studio each word the remedy their own way.
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import get_args

import pytest

from fabula.errors import EditRefused, InvalidInput, Remedy, RemedyAction
from fabula.graph.cli.remedies import error_line
from fabula.graph.web.remedies import remedy_json, studio_line

ROOT = Path(__file__).resolve().parents[2]
CLI_WORDS = (
    "--force",
    "fabula pending",
    "--alternatives",
    "fabula delete",
    "fabula play",
    "fabula migrate",
    "fabula server",
    "fabula show",
    "--format",
)


def _strings(path: Path) -> list[str]:
    """The string constants of a module, its docstrings left out."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docs = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }
    return [
        node.value
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docs
    ]


def test_the_service_speaks_no_interface_words() -> None:
    """No string the service or memory raises or returns names a flag or a command of the
    CLI (memory's migration, commit and embedded server said `fabula migrate`, `fabula show`
    and `fabula server check-aof` in their messages: remedies now)."""
    found = [
        (path.name, text, word)
        for path in [
            *sorted((ROOT / "graph" / "service").glob("*.py")),
            *sorted((ROOT / "memory").rglob("*.py")),
        ]
        for text in _strings(path)
        for word in CLI_WORDS
        if word in text
    ]
    assert found == []


@pytest.mark.parametrize("action", get_args(RemedyAction))
def test_each_interface_words_every_remedy(action: RemedyAction) -> None:
    """Every action is worded by the CLI and by the studio, on one line, its arguments
    filled in; the message itself is left as the service wrote it."""
    exc = InvalidInput(
        "refused",
        remedy=Remedy(action, {"story": "tale", "character": "leo", "turn": "4"}),
        story="tale",
    )
    for line in (error_line(exc), studio_line(exc)):
        assert line.startswith("refused (story=tale); ") and "\n" not in line
        assert "{" not in line
    args = {"story": "tale", "character": "leo", "turn": "4"}
    assert remedy_json(exc) == {"action": action, "args": args}


def test_force_is_a_flag_on_the_command_line_and_a_checkbox_in_the_studio() -> None:
    exc = EditRefused("the critic found 1 error(s)", remedy=Remedy("force"), turn=4)
    assert str(exc) == "the critic found 1 error(s) (turn=4)"
    assert error_line(exc).endswith("commit it anyway with --force")
    studio = studio_line(exc, plain=True, force="tick the box")
    assert studio == "the critic found 1 error(s); tick the box"
    assert "--force" not in studio_line(exc)


def test_a_remedy_is_a_remedy() -> None:
    with pytest.raises(TypeError):
        InvalidInput("refused", remedy="use --force")
