"""Branches and where their history lives: a branch reads its ancestors up to its fork.

A branch is forked from a turn of its parent. Its own keys hold the turns after the fork;
turns up to the fork (texts, events, closed records) are read from the ancestor that holds
them. :func:`branch_for` is the one answer to "which branch holds turn t, as this branch
sees it".
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass

MAIN = "main"  # every story's first branch; it has no parent


@dataclass(frozen=True)
class Ancestor:
    """A branch this branch reads through: turns up to ``through`` come from ``branch``."""

    branch: str
    through: int


@dataclass(frozen=True)
class Branch:
    """One branch of a story: its parent and fork turn (None for main), and the hypothesis
    it pursues, if any."""

    name: str
    parent: str | None = None
    fork_turn: int | None = None
    pursue: str | None = None

    @classmethod
    def from_stored(cls, name: str, stored: str) -> Branch:
        """A branch from its entry in the story's branch table."""
        info = json.loads(stored)
        pursue = info.get("pursue")
        return cls(
            name=name,
            parent=str(info["parent"]),
            fork_turn=int(info["fork_turn"]),
            pursue=pursue if isinstance(pursue, str) else None,
        )

    def to_stored(self) -> str:
        """The entry of the story's branch table (what :meth:`from_stored` reads)."""
        info: dict[str, object] = {"parent": self.parent, "fork_turn": self.fork_turn}
        if self.pursue is not None:
            info["pursue"] = self.pursue
        return json.dumps(info)


def branch_for(branch: str, ancestry: Sequence[Ancestor], turn: int) -> str:
    """The branch that holds ``turn`` as ``branch`` sees it (``ancestry`` nearest first).

    Later ancestors read only up to earlier forks, so the farthest ancestor whose reach
    covers ``turn`` holds it; a turn after every fork is the branch's own.
    """
    source = branch
    for ancestor in ancestry:
        if turn <= ancestor.through:
            source = ancestor.branch
    return source
