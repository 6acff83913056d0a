"""Fabula: collaborative fiction written by many agents at once — shared worlds, private minds.

Everything Fabula installs lives under this one import name:

- :mod:`fabula.memory` — the substrate: records, the atomic store, the views W, B[c], D, H,
  per-character Redis users, the hierarchy and retrieval;
- :mod:`fabula.agents` — the roles (planner, character, writer, critic, memory-builder), each
  with a deterministic offline engine and a model back end;
- :mod:`fabula.graph` — the LangGraph turn graph, its Redis checkpointer, the service layer and
  the command line;
- :mod:`fabula.worlds` — world packs and their loader;
- :mod:`fabula.bench` — the benchmarks.

The names below are the small public API for library users; they are imported on first use,
so ``import fabula`` stays cheap and importing a submodule does not load the graph.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from fabula.graph.service import Fabula, Pending, TurnOutcome
    from fabula.memory.errors import FabulaError
    from fabula.memory.settings import Settings
    from fabula.memory.store import StoryStore
    from fabula.worlds.loader import builtin_worlds, load_world

__all__ = [
    "Fabula",
    "FabulaError",
    "Pending",
    "Settings",
    "StoryStore",
    "TurnOutcome",
    "builtin_worlds",
    "load_world",
]

_HOMES = {
    "Fabula": "fabula.graph.service",
    "Pending": "fabula.graph.service",
    "TurnOutcome": "fabula.graph.service",
    "FabulaError": "fabula.memory.errors",
    "Settings": "fabula.memory.settings",
    "StoryStore": "fabula.memory.store",
    "builtin_worlds": "fabula.worlds.loader",
    "load_world": "fabula.worlds.loader",
}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'fabula' has no attribute {name!r}")
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
