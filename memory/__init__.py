"""Fabula's memory: one evidence-grounded store in Redis, seen as four views.

W (the shared world), B[c] (each character's beliefs, nested to any depth), D (developments)
and H (possible worlds), each at a story time on a branch. This package knows nothing of
LangGraph or prompts.
"""

from fabula.memory.delta import DeltaBuilder, TurnDelta
from fabula.memory.errors import FabulaError
from fabula.memory.store import StoryStore

__all__ = ["DeltaBuilder", "FabulaError", "StoryStore", "TurnDelta"]
