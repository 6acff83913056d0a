"""Reads shared while they run: many viewers of one page wait on one computation.

The minds page of a long story folds every nested chain of every character (about 100 ms
for 5 characters at turn 200, all of it Python on the studio's one event loop). When 150
people open it at once, answering each on its own queues them behind one another: the
150th waited 32 s, and at 400 the Redis pool's waiters timed out. A read that arrives while
the same read is being answered (same story, branch, turn and head) waits for that answer
instead of starting its own, so a crowd costs what one viewer costs.

Only reads that are running are shared; nothing is kept once answered, so a read never
sees a state older than one that was current after it arrived, save the commit that lands
while the shared read runs — what it would have missed had it arrived a moment earlier.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Hashable
from typing import Any, TypeVar, cast

from fastapi import Request

from fabula.graph.service.reader import Reader
from fabula.graph.service.responses.reading import MindsOut

T = TypeVar("T")


class SharedReads:
    """Concurrent reads with one key answered by one computation."""

    def __init__(self) -> None:
        self._running: dict[Hashable, asyncio.Future[Any]] = {}

    @property
    def running(self) -> int:
        """How many distinct reads are being answered now."""
        return len(self._running)

    async def read(self, key: Hashable, compute: Callable[[], Awaitable[T]]) -> T:
        """``compute()``'s answer, shared with every caller of ``key`` while it runs.

        A caller that goes away (its client disconnected) does not cancel the others'
        answer; an error reaches every caller waiting.
        """
        running = self._running.get(key)
        if running is None:
            running = asyncio.ensure_future(compute())
            self._running[key] = running
            running.add_done_callback(lambda done: self._finished(key, done))
        return cast(T, await asyncio.shield(running))

    def _finished(self, key: Hashable, done: asyncio.Future[Any]) -> None:
        if self._running.get(key) is done:
            del self._running[key]
        if not done.cancelled():
            done.exception()  # retrieved here, whoever waits: no "never retrieved" warning


async def shared_minds(request: Request, reader: Reader, as_of: int | None) -> MindsOut:
    """``reader.minds(as_of)``, shared among the studio's concurrent viewers of that view."""
    reads: SharedReads = request.app.state.reads
    key = ("minds", reader.story, reader.branch, as_of, await reader.head())
    return await reads.read(key, lambda: reader.minds(as_of))
