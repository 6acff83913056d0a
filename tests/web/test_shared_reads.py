"""Reads shared while they run (issue 19: 150 viewers of one minds page waited 32 s, 400
ran the Redis pool dry): concurrent identical reads are answered by one computation."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from fabula.graph.service import reading
from fabula.graph.service.responses import MindsOut
from fabula.graph.web.shared import SharedReads
from fabula.memory.store import StoryStore
from fabula.testing.web import studio


class TestSharedReads:
    async def test_concurrent_reads_of_one_key_compute_once(self) -> None:
        reads = SharedReads()
        calls = 0

        async def compute() -> int:
            nonlocal calls
            calls += 1
            await asyncio.sleep(0.05)
            return calls

        answers = await asyncio.gather(*[reads.read("k", compute) for _ in range(10)])
        assert answers == [1] * 10 and calls == 1
        assert reads.running == 0
        # once answered nothing is kept: the next read computes again
        assert await reads.read("k", compute) == 2

    async def test_other_keys_compute_apart(self) -> None:
        reads = SharedReads()

        async def compute(value: str) -> str:
            await asyncio.sleep(0.01)
            return value

        got = await asyncio.gather(
            reads.read("a", lambda: compute("a")), reads.read("b", lambda: compute("b"))
        )
        assert got == ["a", "b"]

    async def test_a_caller_gone_does_not_cancel_the_others(self) -> None:
        reads = SharedReads()
        release = asyncio.Event()

        async def compute() -> str:
            await release.wait()
            return "done"

        first = asyncio.create_task(reads.read("k", compute))
        second = asyncio.create_task(reads.read("k", compute))
        await asyncio.sleep(0)
        first.cancel()
        release.set()
        assert await second == "done"
        with pytest.raises(asyncio.CancelledError):
            await first

    async def test_an_error_reaches_every_caller(self) -> None:
        reads = SharedReads()

        async def compute() -> str:
            await asyncio.sleep(0.01)
            raise ValueError("no such turn")

        got = await asyncio.gather(
            *[reads.read("k", compute) for _ in range(3)], return_exceptions=True
        )
        assert all(isinstance(g, ValueError) for g in got)
        assert reads.running == 0


@pytest.fixture()
def base(redis_url: str, tmp_path: Path) -> Iterator[str]:
    with studio(redis_url, tmp_path) as url:
        yield url


async def test_a_crowd_on_the_minds_page_is_one_read(
    base: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Twenty viewers of a story's minds at once: one computation, the same answer to all,
    the API's and the page's alike; after a commit the next read sees it."""
    calls = 0
    minds = reading.minds

    async def counted(store: StoryStore, as_of: int | None = None) -> MindsOut:
        nonlocal calls
        calls += 1
        await asyncio.sleep(1.0)  # long enough for the crowd to arrive while it runs
        return await minds(store, as_of)

    async with httpx.AsyncClient(base_url=base, timeout=60) as client:
        r = await client.post("/api/stories", json={"world": "hollow_book", "id": "crowd"})
        assert r.status_code == 201, r.text
        head = r.json()["head"]
        monkeypatch.setattr(reading, "minds", counted)
        answers = await asyncio.gather(
            *[client.get("/api/stories/crowd/minds") for _ in range(20)],
            *[client.get("/stories/crowd/minds") for _ in range(5)],
        )
        assert all(a.status_code == 200 for a in answers), [a.text[:200] for a in answers]
        assert calls <= 2, calls  # the page and the API share one read (two at most)
        bodies = {a.text for a in answers[:20]}
        assert len(bodies) == 1
        assert MindsOut.model_validate_json(bodies.pop()).as_of == head
        ran = await client.post("/api/stories/crowd/run", json={"turns": 1, "auto": True})
        assert ran.status_code == 200, ran.text
        again = await client.get("/api/stories/crowd/minds")
        assert again.json()["as_of"] == head + 1
