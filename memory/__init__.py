"""Fabula's memory: one evidence-grounded store in Redis, seen as four views.

W (the shared world), B[c] (each character's beliefs, nested to any depth), D (developments)
and H (possible worlds), each at a story time on a branch. This package knows nothing of
LangGraph or prompts.

The names below are imported on first use, so importing one module of this package does
not load the store. The errors, settings, limits and logging every layer shares are the
kernel's (:mod:`fabula.errors`, :mod:`fabula.settings`, :mod:`fabula.limits`,
:mod:`fabula.logs`), below this package.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from fabula.memory.delta import DeltaBuilder, TurnDelta
    from fabula.memory.store import StoryStore

__all__ = ["DeltaBuilder", "StoryStore", "TurnDelta"]

_HOME = {
    "DeltaBuilder": "fabula.memory.delta",
    "TurnDelta": "fabula.memory.delta",
    "StoryStore": "fabula.memory.store",
}


def __getattr__(name: str) -> Any:
    """The public names, imported when first asked for."""
    home = _HOME.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value
    return value
