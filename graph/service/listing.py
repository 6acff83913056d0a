"""The stories on a server as listed (``fabula stories``, the studio's front page).

Every story is read at once, from the keys the story store reads, in two pipelined round
trips (and the memory's models are not loaded), and what waits for a decision is
read from the checkpoints' keys (:mod:`fabula.graph.checkpoint.waiting`) rather than through
the turn graph, so a listing loads neither the application nor LangGraph.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from fabula.graph.checkpoint.waiting import interrupted
from fabula.graph.service.summaries import PendingSummary, StorySummary
from fabula.limits import Limits
from fabula.memory import keys

if TYPE_CHECKING:
    import redis.asyncio as aredis

__all__ = ["story_summaries"]

MAIN = "main"  # fabula.memory.lineage.MAIN: every story's first branch


def _thread(story: str, branch: str, turn: int) -> str:
    # the turn graph's thread (fabula.graph.build.thread_id, not imported: it loads LangGraph)
    return f"{story}/{branch}/{turn}"


async def _listed(admin: aredis.Redis, names: Sequence[str]) -> list[StorySummary]:
    """The stories of ``names`` as the keys hold them (those deleted meanwhile left out),
    their pending lists not yet filled, in two pipelined round trips: read from the keys
    StoryStore reads (``info``, ``branches``, ``head``), without loading the memory's
    models."""
    pipe = admin.pipeline(transaction=False)
    for name in names:
        pipe.exists(keys.meta(name))
        pipe.hmget(keys.meta(name), ["world", "title", "created_at"])
        pipe.hkeys(keys.branches(name))
    found = await pipe.execute()
    stories: list[tuple[str, list[str | None], list[str]]] = []
    for i, name in enumerate(names):
        there, meta, forks = found[3 * i : 3 * i + 3]
        if not there:  # deleted meanwhile
            continue
        stories.append((name, meta, [MAIN, *sorted(b for b in forks if b != MAIN)]))
    pipe = admin.pipeline(transaction=False)
    for name, _, branches in stories:
        for branch in branches:
            pipe.hget(keys.head(name, branch), "turn")
    raw = iter(await pipe.execute())
    out: list[StorySummary] = []
    for name, (world, title, created), branches in stories:
        heads = [-1 if (h := next(raw)) is None else int(h) for _ in branches]
        out.append(
            StorySummary(
                id=name,
                title=title or name,
                world=world or "",
                head=heads[0],  # main comes first
                branches=len(branches),
                created_at=None if created is None else float(created),
                # each branch's next turn, as a candidate: the checkpoints say which wait
                pending=[
                    PendingSummary(story=name, branch=b, turn=head + 1, pending_id="")
                    for b, head in zip(branches, heads, strict=True)
                ],
            )
        )
    return out


async def story_summaries(
    admin: aredis.Redis, limits: Limits, stories: Sequence[str] | None = None
) -> list[StorySummary]:
    """Every story on the server (or those of ``stories``), sorted, each with the turns that
    await a decision (branch, turn, the draft's id); a story deleted meanwhile is left out.
    ``limits`` is kept for the callers' sake (a listing reads no turn)."""
    names = sorted(await admin.smembers(keys.STORIES)) if stories is None else list(stories)
    found = await _listed(admin, names)
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
