"""The stories on a server, as a listing reads them: light, in two pipelined round trips.

:func:`listed` reads the keys :class:`~fabula.memory.store.StoryStore` reads for ``info``,
``branches`` and each branch's ``head``, for many stories at once, without loading the
store, its records or its payloads (``fabula stories`` starts in a fraction of the time).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from fabula.memory import keys

if TYPE_CHECKING:
    import redis.asyncio as aredis

MAIN = "main"  # fabula.memory.lineage.MAIN: every story's first branch


@dataclass(frozen=True)
class Listed:
    """One story as listed: what it was created with and each branch's head, main first."""

    story: str
    title: str
    world: str
    created_at: float | None
    heads: tuple[tuple[str, int], ...]


async def story_names(client: aredis.Redis) -> list[str]:
    """Every story id on this server, sorted (as :func:`~fabula.memory.store.list_stories`)."""
    return sorted(await client.smembers(keys.STORIES))


async def listed(client: aredis.Redis, names: Sequence[str]) -> list[Listed]:
    """The stories of ``names`` in their order, those that do not exist (deleted meanwhile)
    left out."""
    pipe = client.pipeline(transaction=False)
    for name in names:
        pipe.exists(keys.meta(name))
        pipe.hmget(keys.meta(name), ["world", "title", "created_at"])
        pipe.hkeys(keys.branches(name))
    found = await pipe.execute()
    stories: list[tuple[str, list[str | None], list[str]]] = []
    for i, name in enumerate(names):
        there, meta, forks = found[3 * i : 3 * i + 3]
        if there:
            stories.append((name, meta, [MAIN, *sorted(b for b in forks if b != MAIN)]))
    pipe = client.pipeline(transaction=False)
    for name, _, branches in stories:
        for branch in branches:
            pipe.hget(keys.head(name, branch), "turn")
    raw = iter(await pipe.execute())
    out = []
    for name, (world, title, created), branches in stories:
        heads = tuple((b, -1 if (h := next(raw)) is None else int(h)) for b in branches)
        out.append(
            Listed(
                story=name,
                title=title or name,
                world=world or "",
                created_at=None if created is None else float(created),
                heads=heads,
            )
        )
    return out
