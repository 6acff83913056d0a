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

from typing import TYPE_CHECKING

from fabula.lazy import exports as _exports

if TYPE_CHECKING:
    from fabula.memory.delta import DeltaBuilder as DeltaBuilder
    from fabula.memory.delta import TurnDelta as TurnDelta
    from fabula.memory.store import StoryStore as StoryStore

_HOMES = {
    "DeltaBuilder": "fabula.memory.delta",
    "TurnDelta": "fabula.memory.delta",
    "StoryStore": "fabula.memory.store",
}
__all__ = sorted(_HOMES)
__getattr__, __dir__ = _exports(__name__, _HOMES)
