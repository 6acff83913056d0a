"""What every view of the story store holds: :class:`StoreHandle`, one branch of one story
on one Redis connection, and nothing read yet.

A newcomer's map of :mod:`fabula.memory.store`: the store is one class per concern, each a
mixin on this handle, composed twice —

- :class:`~fabula.memory.store.reads.StoryReads`, the read view (:mod:`.reads` the story's
  records, :mod:`.lineage` its branches, :mod:`.pack` its pack and who is played,
  :mod:`.usage` its model usage): what a caller that only reads holds;
- :class:`~fabula.memory.store.StoryStore`, the read view with the writes
  (:mod:`.commits` the commit path, :mod:`.lifecycle` creating and deleting a story, and the
  pack's and usage's writes): what the service's operations and the commit path hold.

A function that takes :class:`StoryReads` cannot call ``commit`` or ``delete`` (mypy says
so); a :class:`StoryStore` is a :class:`StoryReads`, so it may be passed to it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Self

import redis.asyncio as aredis

from fabula.limits import Limits
from fabula.memory import keys
from fabula.memory.lineage import MAIN, Ancestor
from fabula.memory.records import Entity, State


@dataclass(frozen=True)
class TickStart:
    """The story as a tick began (after turn ``turn``): its entities and W's current
    states, read once for the tick (the author's view of its start). A scene's store
    (:meth:`StoreHandle.for_scene`) reads them from here, not from Redis: every scene of a
    tick reads the story at its start, and reading a town's entities and world again for
    each of its hundred scenes would cost each the town's size."""

    turn: int
    entities: Mapping[str, Entity]
    states: Mapping[str, State]


class StoreHandle:
    """One branch of one story in Redis: the ids, the connection, the limits, and (for a
    character's or a scene's store) whose minds it may read. Each view of the store
    (:mod:`fabula.memory.store`) is a mixin on it."""

    def __init__(
        self,
        client: aredis.Redis,
        story: str,
        branch: str = MAIN,
        *,
        limits: Limits | None = None,
        viewer: str | None = None,
        holders: Sequence[str] | None = None,
    ) -> None:
        self.client = client
        # a character's store (on its own connection): its entities are what it knows of
        self.viewer = viewer
        # a scene's store: the only characters whose minds a turn read through it can touch
        self.holders: tuple[str, ...] | None = None if holders is None else tuple(holders)
        self.limits = limits or Limits()
        self.story = keys.check_id(story, "story")
        self.branch = keys.check_id(branch, "branch")
        self._layout = keys.commit_layout(story, branch)
        self._layout_json = json.dumps(self._layout)
        self._ancestry: list[Ancestor] | None = None
        # a scene's store: the story at the tick's start, read once (for_scene)
        self.start: TickStart | None = None

    def on_branch(self, branch: str) -> Self:
        """The same story, another branch (the same view: a read view stays one)."""
        return type(self)(
            self.client,
            self.story,
            branch,
            limits=self.limits,
            viewer=self.viewer,
            holders=self.holders,
        )

    def for_scene(self, cast: Sequence[str], start: TickStart | None = None) -> Self:
        """The same branch, for a scene whose ``cast`` is everyone there: a turn read
        through it reads the prior minds of ``cast`` only (:func:`fabula.memory.ingest.
        read_prior`), so its cost grows with the scene, not with the story. Only for a
        turn whose every witness is in ``cast`` (a tick's scene, whose delta is confined
        to its cast): a mind left unread is taken to hold nothing. With ``start`` (the
        story as the tick began, which the branch's head must still be), the current
        entities and W are read from it, not from Redis."""
        scoped = type(self)(
            self.client,
            self.story,
            self.branch,
            limits=self.limits,
            viewer=self.viewer,
            holders=cast,
        )
        scoped._ancestry = self._ancestry  # the same branch: what was read of it holds
        scoped.start = start
        return scoped
