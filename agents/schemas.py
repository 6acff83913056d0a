"""Structured-output schemas as strict servers take them, and OpenAI's strict rules as a check.

:func:`strict_schema` turns a pydantic model's JSON schema into what OpenAI's strict mode
(and Azure OpenAI, vLLM's xgrammar, llama.cpp's llguidance) accept: every object closed
(``additionalProperties: false``) with every property required, no ``default`` anywhere,
and only the keywords strict mode supports (the reply is validated by pydantic afterwards,
so a constraint dropped here is still enforced). A field with a default becomes required:
the model writes its value. :func:`strict_problems` lists where a schema breaks those
rules; an empty list means a strict server would take it.
"""

from __future__ import annotations

import copy
import functools
from collections.abc import Iterator
from typing import Any

from pydantic import BaseModel

__all__ = ["STRICT_KEYWORDS", "strict_problems", "strict_schema"]

# what OpenAI's strict structured outputs support (anything else is refused)
STRICT_KEYWORDS = frozenset(
    {
        "type", "properties", "required", "additionalProperties", "items", "anyOf", "enum",
        "const", "$ref", "$defs", "description", "title", "pattern", "format", "minimum",
        "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf", "minItems",
        "maxItems",
    }
)  # fmt: skip
MAX_DEPTH = 10
MAX_PROPERTIES = 5000


def strict_schema(model: type[BaseModel]) -> dict[str, Any]:
    """``model``'s JSON schema under strict mode's rules (see the module docstring).

    Computed once per class (a fresh copy each call): a role's checked type, made per call
    with validators only, should pass its plain base as the schema's shape.
    """
    return copy.deepcopy(_strict(model))


@functools.lru_cache(maxsize=64)
def _strict(model: type[BaseModel]) -> dict[str, Any]:
    schema = copy.deepcopy(model.model_json_schema())
    _tighten(schema)
    return schema


def _tighten(node: Any) -> None:
    if isinstance(node, list):
        for item in node:
            _tighten(item)
        return
    if not isinstance(node, dict):
        return
    for key in [k for k in node if k not in STRICT_KEYWORDS]:
        del node[key]
    node.pop("title", None)
    closable = node.get("type") == "object" and "additionalProperties" not in node
    if "properties" in node or closable:
        # a mapping (additionalProperties: a schema) has no strict form: left for the
        # check (and a strict server) to refuse, never silently closed
        properties = node.setdefault("properties", {})
        node["required"] = list(properties)
        node["additionalProperties"] = False
        for value in properties.values():
            _tighten(value)
    for key in ("items", "anyOf", "$defs"):
        if key in node:
            _tighten(node[key] if key != "$defs" else list(node[key].values()))


def strict_problems(schema: dict[str, Any]) -> list[str]:
    """Where ``schema`` breaks OpenAI's strict rules, one line each (empty: it is fine)."""
    problems: list[str] = []
    if schema.get("type") != "object":
        problems.append("(root): the root must be an object, not " + repr(schema.get("type")))
    defs = schema.get("$defs", {})
    properties = 0
    for path, node, depth in _nodes(schema):
        where = "/".join(path) or "(root)"
        if depth > MAX_DEPTH:
            problems.append(f"{where}: nested deeper than {MAX_DEPTH} levels")
        for key in node:
            if key not in STRICT_KEYWORDS:
                problems.append(f"{where}: '{key}' is not permitted")
        if not any(k in node for k in ("type", "anyOf", "$ref", "enum", "const")):
            problems.append(f"{where}: a schema must have a type")
        ref = node.get("$ref")
        if isinstance(ref, str) and ref != "#":
            name = ref.removeprefix("#/$defs/")
            if not ref.startswith("#/$defs/") or name not in defs:
                problems.append(f"{where}: $ref {ref!r} does not name a definition")
        if node.get("type") == "object" or "properties" in node:
            props = node.get("properties", {})
            properties += len(props)
            if node.get("additionalProperties") is not False:
                problems.append(f"{where}: 'additionalProperties' is required to be false")
            missing = [p for p in props if p not in node.get("required", [])]
            if missing:
                problems.append(
                    f"{where}: 'required' must include every key in properties; "
                    f"missing {', '.join(missing)}"
                )
    if properties > MAX_PROPERTIES:
        problems.append(f"(root): {properties} properties, more than {MAX_PROPERTIES}")
    return problems


def _nodes(
    node: Any, path: tuple[str, ...] = (), depth: int = 0
) -> Iterator[tuple[tuple[str, ...], dict[str, Any], int]]:
    """Every sub-schema with its path and object-nesting depth."""
    if not isinstance(node, dict):
        return
    yield path, node, depth
    deeper = depth + 1 if node.get("type") == "object" else depth
    for name, value in (node.get("properties") or {}).items():
        yield from _nodes(value, (*path, "properties", name), deeper)
    if isinstance(node.get("items"), dict):
        yield from _nodes(node["items"], (*path, "items"), depth)
    for i, option in enumerate(node.get("anyOf") or []):
        yield from _nodes(option, (*path, "anyOf", str(i)), depth)
    for name, value in (node.get("$defs") or {}).items():
        yield from _nodes(value, (*path, "$defs", name), depth)
