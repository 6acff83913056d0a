"""The reader of ordinary narrative English (issue 33): prose → typed story actions.

Placeholder until the prose reader lands: it reads controlled English only, so every
caller can already name it.
"""

from __future__ import annotations

from collections.abc import Mapping

from fabula.agents.memory_builder.extract import extract
from fabula.memory.actions import StoryAction
from fabula.memory.records import Entity

__all__ = ["read_prose"]


def read_prose(text: str, entities: Mapping[str, Entity]) -> list[StoryAction]:
    """``text`` as story actions anchored on ``entities`` (a :data:`.builder.Reader`)."""
    del entities
    return extract(text)
