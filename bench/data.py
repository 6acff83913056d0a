"""Reading the evaluation files: a malformed one is one clear error, never a traceback.

Each benchmark's loader reads its file through these helpers, so whatever a file that is
not of its kind raises while it is read (no such field, a field of the wrong type, not
JSON, not UTF-8) becomes one :class:`~fabula.errors.InvalidInput` naming the file,
the kind it should be, where in it, and what is wrong; nothing has been run yet.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from fabula.errors import InvalidInput

_PARSE_ERRORS = (KeyError, TypeError, ValueError, AttributeError, IndexError)


def malformed(path: str | Path, kind: str, where: str, why: str) -> InvalidInput:
    """The error for a file that is not a well-formed ``kind`` file."""
    at = f" at {where}" if where else ""
    article = "an" if kind[:1].lower() in "aeiou" else "a"
    return InvalidInput(f"{path} is not {article} {kind} file{at}: {why}", path=str(path))


def _why(error: BaseException) -> str:
    if isinstance(error, json.JSONDecodeError):
        return f"not JSON ({error.msg}, line {error.lineno} column {error.colno})"
    if isinstance(error, UnicodeDecodeError):
        return "not UTF-8 text"
    if isinstance(error, KeyError):
        return f"no {error.args[0]!r} field"
    return f"{type(error).__name__}: {error}"


@contextlib.contextmanager
def parsing(path: str | Path, kind: str, where: str = "") -> Iterator[None]:
    """Turn what a malformed ``kind`` file raises inside into :func:`malformed`'s error."""
    try:
        yield
    except _PARSE_ERRORS as error:
        raise malformed(path, kind, where, _why(error)) from None


def read_text(path: str | Path, kind: str) -> str:
    """The file's text (UTF-8)."""
    with parsing(path, kind):
        return Path(path).read_text(encoding="utf-8")


def read_json(path: str | Path, kind: str) -> Any:
    """The file's JSON."""
    text = read_text(path, kind)
    with parsing(path, kind):
        return json.loads(text)


def json_lines(path: str | Path, kind: str) -> Iterator[tuple[str, Any]]:
    """Each non-blank line's JSON object, with where it is (``"line N"``)."""
    for number, line in enumerate(read_text(path, kind).splitlines(), start=1):
        if not line.strip():
            continue
        where = f"line {number}"
        with parsing(path, kind, where):
            raw = json.loads(line)
        if not isinstance(raw, dict):
            raise malformed(path, kind, where, "not a JSON object")
        yield where, raw
