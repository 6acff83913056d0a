"""Which turn threads wait at an interrupt, read without LangGraph or a serializer.

A turn awaiting approval is a thread whose newest root checkpoint holds an interrupt among
its pending writes: LangGraph stores it under the slot ``WRITES_IDX_MAP["__interrupt__"]``
(:data:`INTERRUPT_SLOT`), which the write's field ``[task, slot]`` names in plain JSON. So a
listing of many stories (``fabula stories``) learns what waits in two pipelined round trips,
without loading the graph (the service's ``pending`` reads the whole state, and agrees:
``tests/graph/test_cli_desk.py``).

:func:`waiting_at` reads what one thread's newest root checkpoint waits for: its
interrupts' values, decoded from LangGraph's msgpack without LangGraph (whose ``Interrupt``
class loads all of langchain-core and LangSmith, most of ``fabula pending``'s start). It
decodes only what an interrupt holds, the registry's types and plain data; anything else it
declines (:class:`Undecoded`), and the caller reads the checkpoint through the saver.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import ormsgpack

from fabula.errors import FabulaError
from fabula.graph.checkpoint.keys import ThreadKeys
from fabula.graph.checkpoint.versions import check_version

if TYPE_CHECKING:
    from fabula.graph.checkpoint.serde import TypeRegistry

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


_INTERRUPT = ("langgraph.types", "Interrupt")
"""Where LangGraph's ``Interrupt`` is stored from (a test holds it to LangGraph's own)."""
_KW_ARGS = 2  # LangGraph's msgpack extension: a constructor called with keyword arguments
_PYDANTIC = 5  # ... and a pydantic (v2) model, with its fields as keyword arguments


@dataclass(frozen=True)
class _Interrupt:
    """A stored ``Interrupt``, as far as a reader needs it: its value."""

    value: Any


class Undecoded(FabulaError):
    """A waiting checkpoint holds something :func:`waiting_at` does not decode: read it
    through the saver (internal: never reaches a user)."""


@dataclass(frozen=True)
class Waiting:
    """What a thread's newest root checkpoint waits for: its id and its interrupts' values
    (in the order of their writes)."""

    checkpoint: str
    values: list[Any]


async def waiting_at(client: Any, thread_id: str, registry: TypeRegistry) -> Waiting | None:
    """The interrupts the newest root checkpoint of ``thread_id`` waits at (None: the
    thread has no checkpoint), read in two round trips without LangGraph; the values of
    the registry's types are built again as the saver builds them. The thread's version is
    checked as the saver checks it. Raises :class:`Undecoded` for a value holding anything
    else (the caller then reads it through the saver).

    ``client`` is an asyncio Redis client with binary replies (``decode_responses=False``)."""
    keys = ThreadKeys(thread_id)
    newest = await client.zrevrangebylex(keys.index(""), "+", "-", start=0, num=1)
    if not newest:
        return None
    checkpoint = _text(newest[0])
    pipe = client.pipeline(transaction=False)
    pipe.hgetall(keys.writes("", checkpoint))
    pipe.get(keys.version)
    writes, version = await pipe.execute()
    check_version(version, thread_id, has_checkpoints=True)
    classes = {tuple(name.rsplit(".", 1)): cls for name, cls in registry.types.items()}
    found = []
    for field, raw in writes.items():
        task_id, slot = json.loads(_text(field))
        if slot != INTERRUPT_SLOT:
            continue
        head, _, payload = raw.partition(b"\n")  # the saver's pack: a JSON head, the payload
        kind = json.loads(head)[2]
        if kind != "msgpack":
            raise Undecoded(f"an interrupt stored as {kind!r}")
        found.append(((task_id, slot), _decoded(payload, classes)))
    values: list[Any] = []
    for _, value in sorted(found, key=lambda row: row[0]):
        for intr in value if isinstance(value, list | tuple) else [value]:
            if not isinstance(intr, _Interrupt):
                raise Undecoded("an interrupt's write holds no Interrupt")
            values.append(intr.value)
    return Waiting(checkpoint, values)


def _decoded(payload: bytes, classes: dict[tuple[str, ...], type]) -> Any:
    """One msgpack value: an ``Interrupt`` as its value, a registry type built again (as
    LangGraph's serializer builds it: validated, else constructed as stored)."""

    def hook(code: int, data: bytes) -> Any:
        if code not in (_KW_ARGS, _PYDANTIC):
            raise Undecoded(f"msgpack extension {code}")
        module, name, kwargs, *_ = ormsgpack.unpackb(
            data, ext_hook=hook, option=ormsgpack.OPT_NON_STR_KEYS
        )
        if code == _KW_ARGS and (module, name) == _INTERRUPT:
            return _Interrupt(kwargs.get("value"))
        cls = classes.get((module, name))
        if cls is None:
            raise Undecoded(f"a stored {module}.{name}")
        try:
            return cls(**kwargs)
        except Exception:  # as LangGraph's serializer: constructed as stored
            return cls.model_construct(**kwargs)  # type: ignore[attr-defined]

    try:
        return ormsgpack.unpackb(payload, ext_hook=hook, option=ormsgpack.OPT_NON_STR_KEYS)
    except ValueError as exc:  # ormsgpack wraps what the hook raised
        raise Undecoded(f"an interrupt that is not read here: {exc}") from None
