"""Structured-output schemas as strict servers take them, and OpenAI's strict rules as a check.

:func:`strict_schema` turns a pydantic model's JSON schema into what OpenAI's strict mode
(and Azure OpenAI, vLLM's xgrammar, llama.cpp's llguidance) accept: every object closed
(``additionalProperties: false``) with every property required, no ``default`` anywhere,
and only the keywords strict mode supports (the reply is validated by pydantic afterwards,
so a constraint dropped here is still enforced). A field with a default becomes required:
the model writes its value. :func:`strict_problems` lists where a schema breaks those
rules; an empty list means a strict server would take it.

A grammar-constrained server (llama.cpp, vLLM, SGLang, OpenAI's strict mode) decodes only
what the schema allows, so each role builds its schema per call from what that role may
see, with the helpers here: ids as enums (:func:`one_of`), nullable fields (:func:`maybe`),
bounded arrays (:func:`array`) and bounded one-line strings (:func:`line`), closed objects
(:func:`closed`). :func:`cached` keeps what a role built under (role, digest of the view's
parts), so a turn does not build the same schema twice, with what it repeats defined once
(:func:`shared`).
"""

from __future__ import annotations

import copy
import functools
import hashlib
import json
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

from pydantic import BaseModel

# What OpenAI's strict structured outputs support (anything else is refused), from its
# guide "Structured model outputs", section "Supported schemas"
# (https://platform.openai.com/docs/guides/structured-outputs#supported-schemas, as quoted in
# pydantic/pydantic-ai#2420 and profiled at jsonschemaprofiles.unitvectorylabs.com/schemas/
# openai, 2026-02): strings take `pattern` and `format`; numbers `multipleOf`, `maximum`,
# `exclusiveMaximum`, `minimum`, `exclusiveMinimum`; arrays `minItems`, `maxItems`. The
# guide names `minLength`/`maxLength` only among what fine-tuned models do not support and
# never among the supported string properties (pydantic/pydantic-ai#7315 reports them
# accepted by a live probe, which is no promise), so they stay out: a string is bounded
# with `pattern` (:func:`line`). Root: an object, not anyOf.
STRICT_KEYWORDS = frozenset(
    {
        "type",
        "properties",
        "required",
        "additionalProperties",
        "items",
        "anyOf",
        "enum",
        "const",
        "$ref",
        "$defs",
        "description",
        "title",
        "pattern",
        "format",
        "minimum",
        "maximum",
        "exclusiveMinimum",
        "exclusiveMaximum",
        "multipleOf",
        "minItems",
        "maxItems",
    }
)
# the guide's size limits: object properties in all, nesting, enum values in all, the
# characters of property names, definition names, enum and const values together, and the
# characters of one string enum's values when it has more than 250
MAX_DEPTH = 10
MAX_PROPERTIES = 5000
MAX_ENUM_VALUES = 1000
MAX_SCHEMA_CHARS = 120_000
LARGE_ENUM, LARGE_ENUM_CHARS = 250, 15_000
ENUM_LIMIT = LARGE_ENUM  # the most ids one enum lists; beyond, the field is a plain line
ID_CHARS = 80  # the longest id or name written in place of an enum too large to list
CACHE_SIZE = 256  # schemas kept by (role, view digest)


# what one character of a line may be: no double quote, no backslash, no control character.
# llama.cpp's grammar matches a pattern against the raw JSON between the quotes, so a
# character class that let a quote through let the model "close" the string, write the rest
# of the object inside it and run on to the token limit; a line without quote or escape is
# the same text whether the pattern is read raw (llama.cpp) or decoded (xgrammar,
# llguidance, a validator).
LINE_CHAR = '[^"\\\\\\x00-\\x1f]'


def line(max_chars: int, *, min_chars: int = 0) -> dict[str, Any]:
    """A one-line string of ``min_chars`` to ``max_chars`` characters without a double
    quote, a backslash or a control character (:data:`LINE_CHAR`; a ``pattern``: strict
    mode has no ``maxLength``, see :data:`STRICT_KEYWORDS`)."""
    return {"type": "string", "pattern": f"^{LINE_CHAR}{{{min_chars},{max_chars}}}$"}


def one_of(values: Iterable[str]) -> dict[str, Any]:
    """A string among ``values`` (sorted; at most :data:`ENUM_LIMIT`, else a short line);
    no values at all: only null can be written (use it inside :func:`maybe` or an array
    with ``max_items=0``)."""
    listed = sorted(set(values))
    if not listed:
        return {"type": "null"}
    if len(listed) > ENUM_LIMIT:
        return line(ID_CHARS, min_chars=1)
    return {"type": "string", "enum": listed}


def maybe(schema: dict[str, Any]) -> dict[str, Any]:
    """``schema`` or null."""
    if schema.get("type") == "null":
        return schema
    return {"anyOf": [schema, {"type": "null"}]}


def array(items: dict[str, Any], max_items: int, *, min_items: int = 0) -> dict[str, Any]:
    """An array of ``min_items`` to ``max_items`` ``items`` (none at all when ``items`` can
    only be null: an enum with no values)."""
    if items.get("type") == "null":
        return {"type": "array", "items": {"type": "string"}, "maxItems": 0}
    out: dict[str, Any] = {"type": "array", "items": items, "maxItems": max_items}
    if min_items:
        out["minItems"] = min_items
    return out


def integer(minimum: int, maximum: int) -> dict[str, Any]:
    """An integer in ``[minimum, maximum]``."""
    return {"type": "integer", "minimum": minimum, "maximum": maximum}


def closed(properties: Mapping[str, dict[str, Any]], description: str = "") -> dict[str, Any]:
    """A closed object with every one of ``properties`` required (strict mode's rule)."""
    out: dict[str, Any] = {
        "type": "object",
        "properties": dict(properties),
        "required": list(properties),
        "additionalProperties": False,
    }
    if description:
        out["description"] = description
    return out


_CACHE: OrderedDict[tuple[str, str], dict[str, Any]] = OrderedDict()
_CACHE_COUNTS = {"hits": 0, "misses": 0}


def cached(role: str, parts: Any, build: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    """The schema ``build`` makes for ``role`` from a view whose relevant ``parts`` (plain
    JSON values: ids, kinds, bounds) are given, built once per (role, digest of ``parts``)
    and kept for the last :data:`CACHE_SIZE` views; a fresh copy each call."""
    encoded = json.dumps(parts, sort_keys=True, separators=(",", ":"), default=sorted)
    key = (role, hashlib.sha256(encoded.encode()).hexdigest())
    schema = _CACHE.get(key)
    if schema is None:
        _CACHE_COUNTS["misses"] += 1
        schema = _CACHE[key] = shared(build())
        while len(_CACHE) > CACHE_SIZE:
            _CACHE.popitem(last=False)
    else:
        _CACHE_COUNTS["hits"] += 1
        _CACHE.move_to_end(key)
    return copy.deepcopy(schema)


SHARED_CHARS = 40  # a sub-schema repeated and at least this long is defined once


def shared(schema: dict[str, Any]) -> dict[str, Any]:
    """``schema`` with every sub-schema it repeats (an enum of ids in each kind of action, a
    clause) defined once under ``$defs`` and referred to (``$ref``), largest first: the same
    language in a fraction of the size. A schema that already has ``$defs`` is left as is."""
    if "$defs" in schema:
        return schema
    out = copy.deepcopy(schema)
    defs: dict[str, Any] = {}
    while True:
        seen: dict[str, int] = {}
        for node in _subschemas(out, defs):
            text = json.dumps(node, sort_keys=True)
            if len(text) >= SHARED_CHARS:
                seen[text] = seen.get(text, 0) + 1
        repeated = [t for t, n in seen.items() if n > 1]
        if not repeated:
            break
        text = max(repeated, key=len)
        name = f"s{len(defs)}"
        defs[name] = json.loads(text)
        ref = {"$ref": f"#/$defs/{name}"}
        _replace(out, text, ref)
        for key, value in list(defs.items()):
            if key != name:
                defs[key] = ref if json.dumps(value, sort_keys=True) == text else value
                _replace(defs[key], text, ref)
    if defs:
        out["$defs"] = defs
    return out


def _subschemas(root: dict[str, Any], defs: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """Every sub-schema below ``root`` and inside ``defs`` (not the roots themselves)."""

    def below(node: Any) -> Iterator[dict[str, Any]]:
        children: list[Any] = []
        if isinstance(node, dict):
            children = [*(node.get("properties") or {}).values(), *(node.get("anyOf") or [])]
            if isinstance(node.get("items"), dict):
                children.append(node["items"])
        for child in children:
            yield child
            yield from below(child)

    yield from below(root)
    for value in defs.values():
        yield from below(value)


def _replace(node: Any, text: str, ref: dict[str, str]) -> None:
    """Replace every sub-schema of ``node`` whose JSON is ``text`` by ``ref``, in place."""
    if not isinstance(node, dict):
        return
    properties = node.get("properties") or {}
    for name, value in properties.items():
        if json.dumps(value, sort_keys=True) == text:
            properties[name] = dict(ref)
        else:
            _replace(value, text, ref)
    options = node.get("anyOf") or []
    for i, value in enumerate(options):
        if json.dumps(value, sort_keys=True) == text:
            options[i] = dict(ref)
        else:
            _replace(value, text, ref)
    if isinstance(node.get("items"), dict):
        if json.dumps(node["items"], sort_keys=True) == text:
            node["items"] = dict(ref)
        else:
            _replace(node["items"], text, ref)


def expanded(schema: dict[str, Any]) -> dict[str, Any]:
    """``schema`` with every ``$ref`` to its ``$defs`` written out (no ``$defs`` left): the
    shape :func:`shared` folded, to read or compare."""
    defs = schema.get("$defs", {})

    def out(node: Any) -> Any:
        if isinstance(node, list):
            return [out(v) for v in node]
        if not isinstance(node, dict):
            return node
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/$defs/"):
            return out(defs[ref.removeprefix("#/$defs/")])
        return {k: out(v) for k, v in node.items() if k != "$defs"}

    result: dict[str, Any] = out(schema)
    return result


def named(schema: Any) -> set[str]:
    """Every string value ``schema`` names: those its ``enum`` and ``const`` keywords list
    (the ids, names and words a model may write; what a leak check reads)."""
    out: set[str] = set()
    stack = [schema]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            out.update(v for v in node.get("enum", ()) if isinstance(v, str))
            if isinstance(node.get("const"), str):
                out.add(node["const"])
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    return out


def cache_counts() -> dict[str, int]:
    """How often :func:`cached` found a schema built (hits) and built one (misses)."""
    return dict(_CACHE_COUNTS)


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
    if "anyOf" in schema:
        problems.append("(root): the root must not be anyOf")
    defs = schema.get("$defs", {})
    properties = enum_values = chars = 0
    chars += sum(len(name) for name in defs)
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
        enum = node.get("enum")
        if isinstance(enum, list):
            enum_values += len(enum)
            strings = [v for v in enum if isinstance(v, str)]
            chars += sum(map(len, strings))
            if not enum:
                problems.append(f"{where}: an enum must list at least one value")
            if len(strings) > LARGE_ENUM and sum(map(len, strings)) > LARGE_ENUM_CHARS:
                problems.append(
                    f"{where}: an enum of more than {LARGE_ENUM} strings holds more than "
                    f"{LARGE_ENUM_CHARS} characters"
                )
        if isinstance(node.get("const"), str):
            chars += len(node["const"])
        if node.get("type") == "object" or "properties" in node:
            props = node.get("properties", {})
            properties += len(props)
            chars += sum(len(name) for name in props)
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
    if enum_values > MAX_ENUM_VALUES:
        problems.append(f"(root): {enum_values} enum values, more than {MAX_ENUM_VALUES}")
    if chars > MAX_SCHEMA_CHARS:
        problems.append(
            f"(root): {chars} characters of names and values, more than {MAX_SCHEMA_CHARS}"
        )
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
