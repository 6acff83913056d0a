"""The checkpointer's unit of work: command batches, and the operation that yields them.

An operation is a generator: it yields :class:`Batch` values and receives each batch's
replies; the saver's two drivers (:mod:`fabula.graph.checkpoint.saver`) run the same
operation on their own client. Also here: the values the operations pass around.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Generator, Sequence
from dataclasses import dataclass
from typing import Any, TypeAlias, TypeVar

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    CheckpointTuple,
    PendingWrite,
)

_R = TypeVar("_R")


@dataclass(frozen=True)
class Batch:
    """Commands sent in one round trip.

    ``watch`` keys are watched (on the connection that later runs the atomic batch) before the
    commands are sent; ``atomic`` batches run in MULTI/EXEC on that connection.
    """

    commands: tuple[tuple[Any, ...], ...]
    atomic: bool = False
    watch: tuple[str, ...] = ()


# An operation: yields batches, receives each batch's replies, returns its result.
Op: TypeAlias = Generator[Batch, list[Any], _R]
Ref: TypeAlias = tuple[str, str]  # (namespace, checkpoint id)
Refs: TypeAlias = list[Ref]
Names: TypeAlias = list[str]
Tuples: TypeAlias = list[CheckpointTuple]
WriteList: TypeAlias = list[PendingWrite]
Commands: TypeAlias = list[tuple[Any, ...]]
Replies: TypeAlias = list[Any]
# Per namespace, the (id, run id) of its checkpoints oldest first -> the ids to remove.
Selector: TypeAlias = Callable[[list[tuple[str, str | None]]], set[str]]


@dataclass(frozen=True)
class ListQuery:
    """What a ``list`` call asks for: a thread, a namespace, a checkpoint, a bound, a filter."""

    thread_id: str | None
    namespace: str | None
    checkpoint_id: str | None
    before: str | None
    filter: dict[str, Any]
    limit: int | None

    @classmethod
    def build(
        cls,
        config: RunnableConfig | None,
        filter: dict[str, Any] | None,
        before: RunnableConfig | None,
        limit: int | None,
    ) -> ListQuery:
        """The query a ``list`` call describes."""
        conf = (config or {}).get("configurable", {})
        return cls(
            thread_id=conf.get("thread_id"),
            namespace=conf.get("checkpoint_ns"),
            checkpoint_id=conf.get("checkpoint_id"),
            before=(before or {}).get("configurable", {}).get("checkpoint_id"),
            filter=dict(filter or {}),
            limit=limit,
        )


def as_text(raw: bytes | str) -> str:
    """A reply as text."""
    return raw.decode() if isinstance(raw, bytes) else raw


def pack(head: Sequence[str], payload: bytes) -> bytes:
    """A stored value: a JSON head, a newline, the payload."""
    # JSON never contains a raw newline, so the first one ends the head.
    return json.dumps(list(head)).encode() + b"\n" + payload


def unpack(raw: bytes) -> tuple[list[str], bytes]:
    """The head and payload of a value made by :func:`pack`."""
    head, _, payload = raw.partition(b"\n")
    return list(json.loads(head)), payload


def flatten(mapping: dict[Any, Any]) -> tuple[Any, ...]:
    """A mapping as HSET arguments."""
    return tuple(item for pair in mapping.items() for item in pair)


def config_for(thread_id: str, ns: str, checkpoint_id: str) -> RunnableConfig:
    """The config that names one checkpoint."""
    return {
        "configurable": {
            "thread_id": thread_id,
            "checkpoint_ns": ns,
            "checkpoint_id": checkpoint_id,
        }
    }
