"""The stories on a server as listed (``fabula stories``, the studio's front page).

Every story is read at once, in two pipelined round trips (:mod:`fabula.memory.listing`:
the memory's models are not loaded), and what waits for a decision is read from the
checkpoints' keys (:mod:`fabula.graph.checkpoint.waiting`) rather than through the turn
graph, so a listing loads neither the application nor LangGraph.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from fabula.graph.checkpoint.waiting import interrupted
from fabula.graph.service.summaries import PendingSummary, StorySummary
from fabula.limits import Limits
from fabula.memory.listing import listed, story_names

if TYPE_CHECKING:
    import redis.asyncio as aredis


def _thread(story: str, branch: str, turn: int) -> str:
    # the turn graph's thread (fabula.graph.build.thread_id, not imported: it loads LangGraph)
    return f"{story}/{branch}/{turn}"


async def story_summaries(
    admin: aredis.Redis, limits: Limits, stories: Sequence[str] | None = None
) -> list[StorySummary]:
    """Every story on the server (or those of ``stories``), sorted, each with the turns that
    await a decision (branch, turn, the draft's id); a story deleted meanwhile is left out.
    ``limits`` is kept for the callers' sake (a listing reads no turn)."""
    names = await story_names(admin) if stories is None else list(stories)
    found = [
        StorySummary(
            id=s.story,
            title=s.title,
            world=s.world,
            head=s.heads[0][1],  # main comes first
            branches=len(s.heads),
            created_at=s.created_at,
            # each branch's next turn, as a candidate: the checkpoints say which wait
            pending=[
                PendingSummary(story=s.story, branch=b, turn=head + 1, pending_id="")
                for b, head in s.heads
            ],
        )
        for s in await listed(admin, names)
    ]
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
