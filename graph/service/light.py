"""The light way in: :class:`Stores`, for an interface that only reads (``fabula show``,
``fabula stories``): the settings and one admin connection to Redis, no roles, graph or
LangGraph (it starts in a fraction of the application's time). Its reads go through the
same :class:`~fabula.graph.service.reader.Reader` as the application's, given the settings
alone: the reads inside a mind (recall, chat, the lived story) and a story's summary need
the application (:meth:`~fabula.graph.service.application.Fabula.read`).
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

from fabula.graph.service.handles import StoryRef
from fabula.graph.service.listing import story_summaries
from fabula.graph.service.reader import Reader, Sources
from fabula.graph.service.summaries import StorySummary
from fabula.memory.connection import connect_async
from fabula.memory.store.view import StoryReads
from fabula.settings import Settings

if TYPE_CHECKING:
    import redis.asyncio as aredis


@dataclass(frozen=True)
class Stores:
    """What a reading command is given: the settings and the admin Redis connection, and
    the read side of any branch of any story (nothing is written).

    Open it with :meth:`open` (``async with Stores.open(settings, url) as stores``)."""

    settings: Settings
    admin: aredis.Redis

    @classmethod
    @contextlib.asynccontextmanager
    async def open(cls, settings: Settings, url: str) -> AsyncIterator[Stores]:
        """The stores on the Redis at ``url``, its connection closed after the block."""
        admin = connect_async(url)
        try:
            yield cls(settings, admin)
        finally:
            await admin.aclose()

    def read(self, story: str | StoryRef, branch: str = "main") -> Reader:
        """The read side of one branch (``story`` an id with ``branch``, or a handle), as
        :meth:`Fabula.read` gives it but for the reads inside a mind (recall, chat, the
        lived story), what waits and the summary."""
        ref = story if isinstance(story, StoryRef) else StoryRef(story, branch)
        store = StoryReads(self.admin, ref.story, ref.branch, limits=self.settings.limits)
        return Reader(store, Sources(self.settings))

    async def summaries(self) -> list[StorySummary]:
        """Every story on the server, as listed (read at once: see :mod:`.listing`)."""
        return await story_summaries(self.admin, self.settings.limits)
