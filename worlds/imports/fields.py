"""Reading a source's JSON (its depth bounded before it is parsed) and its fields with their
types checked, naming the field on error."""

from __future__ import annotations

import array
import itertools
import json
import re
from typing import Any


class BadSource(ValueError):
    """A source that cannot be imported; the message names the field and says why."""


_NOT_BRACKETS = re.compile(r"[^\[\]{}]+")
_STEPS = bytes.maketrans(b"[{]}", b"\x01\x01\xff\xff")  # as signed bytes: +1, +1, -1, -1


def json_depth(text: str) -> int:
    """How deep ``text`` nests its arrays and objects, found without parsing it (Python's
    parser recurses): escapes, then strings, then all but brackets are dropped, and the
    brackets summed as +1 and -1 (in C: a megabyte takes milliseconds)."""
    plain = text.replace("\\\\", "").replace('\\"', "")
    outside = "".join(plain.split('"')[::2])  # between the quotes of strings
    brackets = _NOT_BRACKETS.sub("", outside).encode("ascii")
    return max(itertools.accumulate(array.array("b", brackets.translate(_STEPS))), default=0)


def parse_json(text: str, what: str, max_depth: int) -> Any:
    """``text`` parsed as JSON; BadSource naming ``what`` when it nests deeper than
    ``max_depth`` (checked first: the parser recurses) or is not JSON."""
    depth = json_depth(text)
    if depth > max_depth:
        raise BadSource(
            f"{what} nests {depth} levels deep, more than the {max_depth} levels of arrays "
            "and objects allowed"
        )
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise BadSource(f"{what} is not valid JSON: {exc}") from None


def obj(value: Any, where: str) -> dict[str, Any]:
    """``value`` as a JSON object, or BadSource."""
    if not isinstance(value, dict):
        raise BadSource(f"{where}: expected an object, got {type(value).__name__}")
    return value


def text(data: dict[str, Any], key: str, where: str, default: str = "") -> str:
    """``data[key]`` as text (absent or null: ``default``), or BadSource."""
    value = data.get(key)
    if value is None:
        return default
    if not isinstance(value, str):
        raise BadSource(f"{where}.{key}: expected text, got {type(value).__name__}")
    return value


def strings(data: dict[str, Any], key: str, where: str) -> tuple[str, ...]:
    """``data[key]`` as a list of texts (absent or null: empty; one comma-separated text is
    split, as KoboldAI and some older exports write keys), or BadSource."""
    value = data.get(key)
    if value is None:
        return ()
    if isinstance(value, str):
        return tuple(k.strip() for k in value.split(",") if k.strip())
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise BadSource(f"{where}.{key}: expected a list of texts")
    return tuple(value)


def boolean(data: dict[str, Any], key: str, where: str, default: bool) -> bool:
    """``data[key]`` as a boolean (absent or null: ``default``), or BadSource."""
    value = data.get(key)
    if value is None:
        return default
    if not isinstance(value, bool):
        raise BadSource(f"{where}.{key}: expected true or false, got {value!r}")
    return value


def optional_bool(data: dict[str, Any], key: str, where: str) -> bool | None:
    """``data[key]`` as a boolean or None (absent or null), or BadSource."""
    value = data.get(key)
    if value is None:
        return None
    if not isinstance(value, bool):
        raise BadSource(f"{where}.{key}: expected true, false or null, got {value!r}")
    return value


def integer(data: dict[str, Any], key: str, where: str, default: int | None) -> int | None:
    """``data[key]`` as a whole number (absent or null: ``default``; 3.0 is 3), or BadSource."""
    value = data.get(key)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int | float) or value != int(value):
        raise BadSource(f"{where}.{key}: expected a whole number, got {value!r}")
    return int(value)
