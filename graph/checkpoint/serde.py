"""Stored types named by a stable registry name, not by the module that defines them.

LangGraph's :class:`~langgraph.checkpoint.serde.jsonplus.JsonPlusSerializer` stores an
object it packs as msgpack as ``(module, class name, data, ...)``: moving a class to
another module made every checkpoint holding one unreadable, an unversioned change of the
stored shape. :class:`RegistrySerializer` stores each type of a :class:`TypeRegistry` under
its registry name instead (``fabula.ApprovalRequest`` is stored as ``("fabula",
"ApprovalRequest")``) and builds it again from the class registered under that name today,
wherever it lives. Types outside the registry (LangGraph's own: ``Interrupt``, ``Send``)
are stored and read as LangGraph does.

The registry also says under which module paths version 1 of the checkpointer stored its
types (:attr:`TypeRegistry.legacy`, frozen: a class moved later keeps its old path there);
the checkpointer's migration to version 2 (:mod:`fabula.graph.checkpoint.migrations`)
rewrites those to registry names. Reads know only registry names: nothing on the hot path
reads the old shape.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import ormsgpack
from langgraph.checkpoint.serde.base import SerializerProtocol

# LangGraph's msgpack extension codes whose payload starts (module, name, ...)
_NAMED_EXTS = frozenset(range(6))  # constructor (3 kinds), method, pydantic v1 and v2
_NESTED_EXT = 7  # a delta snapshot: msgpack inside, which may hold named objects
_OPTIONS = ormsgpack.OPT_NON_STR_KEYS

Path = tuple[str, str]
"""A stored ``(module, name)`` pair."""


def _split(dotted: str) -> Path:
    module, _, name = dotted.rpartition(".")
    return module, name


@dataclass(frozen=True)
class TypeRegistry:
    """The types a checkpoint may hold, each under a stable name (``"fabula.TurnPlan"``).

    ``legacy`` maps the dotted module path version 1 stored a type under
    (``"fabula.agents.contracts.TurnPlan"``) to its registry name; it is written once and
    never derived from where a class lives now."""

    types: Mapping[str, type]
    legacy: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for name in (*self.types, *self.legacy.values()):
            if "." not in name:
                raise ValueError(f"a registry name has a namespace: {name!r}")
        unknown = set(self.legacy.values()) - set(self.types)
        if unknown:
            raise ValueError(f"legacy paths name unregistered types: {sorted(unknown)}")

    def name_of(self) -> dict[Path, Path]:
        """Where each registered class lives now -> its stored registry name."""
        return {(t.__module__, t.__name__): _split(n) for n, t in self.types.items()}

    def class_of(self) -> dict[Path, Path]:
        """Each stored registry name -> where its class lives now."""
        return {_split(n): (t.__module__, t.__name__) for n, t in self.types.items()}

    def legacy_names(self) -> dict[Path, Path]:
        """Each path version 1 stored -> the registry name stored since version 2."""
        return {_split(path): _split(name) for path, name in self.legacy.items()}


def rename(payload: bytes, renames: Mapping[Path, Path]) -> bytes:
    """A msgpack ``payload`` whose named objects (at any depth) are renamed by ``renames``;
    ``payload`` itself when nothing in it is. Raises ``ValueError`` for bytes that are no
    msgpack."""
    if not renames or not any(module.encode() in payload for module, _ in renames):
        return payload
    changed = False

    def hook(code: int, data: bytes) -> ormsgpack.Ext:
        nonlocal changed
        if code not in _NAMED_EXTS and code != _NESTED_EXT:
            return ormsgpack.Ext(code, data)
        inner = ormsgpack.unpackb(data, ext_hook=hook, option=_OPTIONS)
        if code in _NAMED_EXTS and isinstance(inner, list) and len(inner) >= 2:
            new = renames.get((inner[0], inner[1]))
            if new is not None:
                inner[0], inner[1] = new
                changed = True
        return ormsgpack.Ext(code, ormsgpack.packb(inner, option=_OPTIONS))

    unpacked = ormsgpack.unpackb(payload, ext_hook=hook, option=_OPTIONS)
    out = ormsgpack.packb(unpacked, option=_OPTIONS)
    return out if changed else payload


class RegistrySerializer(SerializerProtocol):
    """LangGraph's serializer, but the registry's types are stored by registry name and only
    they (and LangGraph's safe types) are built again when read."""

    def __init__(self, registry: TypeRegistry) -> None:
        from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer  # on first use

        self.registry = registry
        self._to_names = registry.name_of()
        self._to_classes = registry.class_of()
        self._inner = JsonPlusSerializer(allowed_msgpack_modules=list(self._to_names))

    def dumps_typed(self, obj: Any) -> tuple[str, bytes]:
        kind, payload = self._inner.dumps_typed(obj)
        return kind, rename(payload, self._to_names) if kind == "msgpack" else payload

    def loads_typed(self, data: tuple[str, bytes]) -> Any:
        kind, payload = data
        if kind == "msgpack":
            payload = rename(payload, self._to_classes)
        return self._inner.loads_typed((kind, payload))
