"""``fabula bench loop``: the offline turn loop's speed and the memory-builder's overhead.

A synthetic world (N characters in a hall handing tokens round a ring, with two more
places: a story that never comes to rest) runs autonomously for T turns through the real
graph, the Redis checkpointer and the real store. It reports turns per second and the
memory-builder's time per committed turn (reading the views, extracting, tracking access,
committing), p50/p95. The baseline in the same run is the same loop on LangGraph's
in-memory checkpointer, which shows what durable checkpoints cost.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

from langgraph.checkpoint.memory import InMemorySaver

from fabula.bench.common import appendfsync
from fabula.bench.report import percentiles, print_table, write_json
from fabula.graph.service import Fabula
from fabula.settings import Settings
from fabula.worlds.pack import CharacterSpec, ObjectSpec, PlaceSpec, WorldPack

PLACES = ("hall", "library", "garden")


def synthetic_world(characters: int) -> WorldPack:
    """A world that never comes to rest: each character holds a token and wants every
    token handed on to the next character in a ring, so the tokens go round for as long as
    the story runs (asking for one a character is about to hand on is refused)."""
    objects = [
        ObjectSpec(name=f"chest {i}", location=place, container=True)
        for i, place in enumerate(PLACES)
    ]
    objects += [ObjectSpec(name=f"token {i}", location=f"Agent{i}") for i in range(characters)]
    chars = [
        CharacterSpec(
            name=f"Agent{i}",
            location=PLACES[0],  # together: each can always hand on what it holds
            goals=tuple(
                f"give the token {j} to Agent{(i + 1) % characters}" for j in range(characters)
            ),
        )
        for i in range(characters)
    ]
    return WorldPack(
        id="synthetic",
        title="Synthetic tokens",
        premise="Tokens go round a ring of characters, each wanting them handed on.",
        places=tuple(PlaceSpec(name=p) for p in PLACES),
        characters=tuple(chars),
        objects=tuple(objects),
    )


async def _measure(url: str, turns: int, characters: int, durable: bool) -> dict[str, Any]:
    memory_ms: list[float] = []
    fab = Fabula(
        url,
        Settings(),
        checkpointer=None if durable else InMemorySaver(),
        on_commit=lambda done: memory_ms.append(done.memory_ms),
    )
    story = f"bench-loop-{characters}-{'redis' if durable else 'memory'}"
    try:
        await fab.delete_story(story)
        store = await fab.create_story(synthetic_world(characters), story, opening=False)
        start = time.perf_counter()
        committed = 0
        for _ in range(turns):
            if (await fab.run(store, auto=True)).outcome == "committed":
                committed += 1
        seconds = time.perf_counter() - start
        tail = memory_ms[-50:]
        policy = await appendfsync(fab.admin)
        await fab.delete_story(story)
    finally:
        await fab.aclose()
    return {
        "turns": turns,
        "committed": committed,
        "characters": characters,
        "seconds": round(seconds, 3),
        "turns_per_second": round(turns / seconds, 2),
        "overhead_ms": percentiles(memory_ms),
        "overhead_last50_ms": percentiles(tail),
        "appendfsync": policy,
    }


async def run_loop(
    url: str, turns: int, characters: int, json_out: str | None = None
) -> dict[str, Any]:
    durable = await _measure(url, turns, characters, durable=True)
    baseline = await _measure(url, turns, characters, durable=False)
    result = {
        "benchmark": "loop",
        "turns": turns,
        "characters": characters,
        "turns_per_second": durable["turns_per_second"],
        "overhead_ms": durable["overhead_ms"],
        "overhead_last50_ms": durable["overhead_last50_ms"],
        # every pass of the server's event loop with writes costs an fsync under "always"
        "appendfsync": durable["appendfsync"],
        "baselines": {"in_memory_checkpointer": baseline},
    }
    print_table(
        f"fabula bench loop (appendfsync {durable['appendfsync']})",
        ["run", "turns", "chars", "turns/s", "memory-builder p50/p95 ms", "last 50 p50/p95 ms"],
        [
            [
                name,
                r["turns"],
                r["characters"],
                r["turns_per_second"],
                f"{r['overhead_ms']['p50']}/{r['overhead_ms']['p95']}",
                f"{r['overhead_last50_ms']['p50']}/{r['overhead_last50_ms']['p95']}",
            ]
            for name, r in (("redis checkpointer", durable), ("in-memory checkpointer", baseline))
        ],
    )
    write_json(json_out, result)
    return result


def run(url: str, turns: int, characters: int, json_out: str | None) -> dict[str, Any]:
    return asyncio.run(run_loop(url, turns, characters, json_out))
