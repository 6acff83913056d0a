"""Which turn threads wait at an interrupt, read without LangGraph or a serializer.

A turn awaiting approval is a thread whose newest root checkpoint holds an interrupt among
its pending writes: LangGraph stores it under the slot ``WRITES_IDX_MAP["__interrupt__"]``
(:data:`INTERRUPT_SLOT`), which the write's field ``[task, slot]`` names in plain JSON. So a
listing of many stories (``fabula stories``) learns what waits in two pipelined round trips,
without loading the graph (the service's ``pending`` reads the whole state, and agrees:
``tests/graph/test_cli_desk.py``).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from fabula.graph.checkpoint.keys import ThreadKeys

INTERRUPT_SLOT = -3
"""LangGraph's ``WRITES_IDX_MAP["__interrupt__"]``: the slot of an interrupt's pending write
(a test holds it to LangGraph's own map)."""


def _text(raw: bytes | str) -> str:
    return raw.decode() if isinstance(raw, bytes) else raw


async def interrupted(client: Any, thread_ids: Sequence[str]) -> list[str | None]:
    """For each thread of ``thread_ids``, the id of its newest root checkpoint when that
    checkpoint waits at an interrupt, else None (two pipelined round trips in all).

    ``client`` is an asyncio Redis client (or cluster client)."""
    if not thread_ids:
        return []
    pipe = client.pipeline(transaction=False)
    for thread in thread_ids:
        pipe.zrevrangebylex(ThreadKeys(thread).index(""), "+", "-", start=0, num=1)
    newest = [_text(found[0]) if found else None for found in await pipe.execute()]
    asked = [
        (i, thread, c) for i, (thread, c) in enumerate(zip(thread_ids, newest, strict=True)) if c
    ]
    out: list[str | None] = [None] * len(thread_ids)
    if not asked:
        return out
    pipe = client.pipeline(transaction=False)
    for _, thread, checkpoint in asked:
        pipe.hkeys(ThreadKeys(thread).writes("", checkpoint))
    for (i, _, checkpoint), fields in zip(asked, await pipe.execute(), strict=True):
        if any(json.loads(_text(f))[1] == INTERRUPT_SLOT for f in fields):
            out[i] = checkpoint
    return out
