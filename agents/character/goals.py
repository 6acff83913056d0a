"""Reading a character's free-text goals as something the offline engine can pursue.

Goals are written for people ("find the brass key", "keep the brass key safe"); the offline
engine recognises a few shapes and leaves the rest as motives it can only think about.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from fabula.memory.records import slug

__all__ = ["Goal", "parse_goal"]

_FIND = re.compile(r"^(?:find|get|recover|retrieve|fetch) (?:the )?(?P<obj>.+?)\.?$", re.I)
_HIDE = re.compile(r"^(?:keep|hide) (?:the )?(?P<obj>.+?)(?: safe| hidden)?\.?$", re.I)


@dataclass(frozen=True)
class Goal:
    """A goal the offline engine can pursue (find, hide) or only think about (motive)."""

    kind: Literal["find", "hide", "motive"]
    text: str
    object: str | None = None


def parse_goal(text: str) -> Goal:
    """``find the O`` → find; ``keep the O safe`` / ``hide the O`` → hide; else a motive."""
    text = text.strip()
    if m := _FIND.match(text):
        return Goal("find", text, slug(m["obj"]))
    if m := _HIDE.match(text):
        return Goal("hide", text, slug(m["obj"]))
    return Goal("motive", text)
