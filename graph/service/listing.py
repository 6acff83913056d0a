"""The stories on a server as listed (``fabula stories``, the studio's front page).

Every story is read at once, each in a few round trips, and what waits for a decision is
read from the checkpoints' keys (:mod:`fabula.graph.checkpoint.waiting`) rather than through
the turn graph, so a listing loads neither the application nor LangGraph.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import redis.asyncio as aredis

from fabula.errors import NotFound
from fabula.graph.checkpoint.waiting import interrupted
from fabula.graph.service.responses.stories import StorySummary
from fabula.graph.service.responses.turns import PendingSummary
from fabula.limits import Limits
from fabula.memory.store import StoryStore, list_stories

__all__ = ["story_summaries"]


def _thread(story: str, branch: str, turn: int) -> str:
    # the turn graph's thread (fabula.graph.build.thread_id, not imported: it loads LangGraph)
    return f"{story}/{branch}/{turn}"


async def _listed(admin: aredis.Redis, story: str, limits: Limits) -> StorySummary | None:
    """One story, its pending list not yet filled (None: it was deleted meanwhile)."""
    store = StoryStore(admin, story, limits=limits)
    try:
        info, branches = await asyncio.gather(store.info(), store.branches())
    except NotFound:
        return None
    heads = await asyncio.gather(*(store.on_branch(b).head() for b in branches))
    return StorySummary(
        id=story,
        title=info.title,
        world=info.world,
        head=heads[0],  # main comes first
        branches=len(branches),
        created_at=info.created_at,
        # each branch's next turn, as a candidate: the checkpoints say which wait
        pending=[
            PendingSummary(story=story, branch=b, turn=head + 1, pending_id="")
            for b, head in zip(branches, heads, strict=True)
        ],
    )


async def story_summaries(
    admin: aredis.Redis, limits: Limits, stories: Sequence[str] | None = None
) -> list[StorySummary]:
    """Every story on the server (or those of ``stories``), sorted, each with the turns that
    await a decision (branch, turn, the draft's id); a story deleted meanwhile is left out."""
    names = await list_stories(admin) if stories is None else list(stories)
    listed = await asyncio.gather(*(_listed(admin, name, limits) for name in names))
    found = [s for s in listed if s is not None]
    nexts = [p for s in found for p in s.pending]
    waiting = await interrupted(admin, [_thread(p.story, p.branch, p.turn) for p in nexts])
    ids = {
        (p.story, p.branch): f"{p.turn}.{checkpoint}"
        for p, checkpoint in zip(nexts, waiting, strict=True)
        if checkpoint is not None
    }
    return [
        s.model_copy(
            update={
                "pending": [
                    p.model_copy(update={"pending_id": ids[p.story, p.branch]})
                    for p in s.pending
                    if (p.story, p.branch) in ids
                ]
            }
        )
        for s in found
    ]
