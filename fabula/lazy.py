"""Names a package exports but imports only when first asked for: one helper, one table.

A package that keeps ``import`` cheap (``fabula``, ``fabula.memory``, the service facade,
the checkpointer) lists where each public name lives and lets :func:`exports` write its
module ``__getattr__`` and ``__dir__`` (PEP 562)::

    _HOMES = {"StoryStore": "fabula.memory.store", "TurnDelta": "fabula.memory.delta"}
    __all__ = sorted(_HOMES)
    __getattr__, __dir__ = exports(__name__, _HOMES)

The table is the one list the code runs on: ``__all__`` comes from it. A type checker
reads the same names from an ``if TYPE_CHECKING:`` block beside it, one explicit
re-export each (``from fabula.memory.store import StoryStore as StoryStore``), and
``tests/system/test_public_api.py`` checks that block and the table name the same homes.
A name is imported once, then kept in the package's namespace, so later lookups never
reach ``__getattr__``.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from typing import Any


def exports(
    package: str, homes: Mapping[str, str]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The ``__getattr__`` and ``__dir__`` of ``package`` (its ``__name__``) for the names
    of ``homes``, each mapped to the module that defines it (a full dotted path). An unknown
    name is an :class:`AttributeError` naming the package, as Python's own is."""

    def __getattr__(name: str) -> Any:
        home = homes.get(name)
        if home is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(home), name)
        setattr(sys.modules[package], name, value)
        return value

    def __dir__() -> list[str]:
        return sorted(homes)

    return __getattr__, __dir__
