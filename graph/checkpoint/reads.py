"""Reading checkpoints: get, list (threads, refs, load) and assembling a tuple."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, cast

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
    writes_sort_key,
)
from langgraph.checkpoint.serde.base import SerializerProtocol

from fabula.graph.checkpoint.batches import (
    Batch,
    ListQuery,
    Names,
    Op,
    Refs,
    Replies,
    Tuples,
    WriteList,
    as_text,
    config_for,
    unpack,
)
from fabula.graph.checkpoint.keys import THREADS, ThreadKeys
from fabula.graph.checkpoint.migrations import check_version


class Reads:
    """The operations that read checkpoints (generators of batches), with the serializer."""

    def __init__(self, serde: SerializerProtocol) -> None:
        self.serde = serde

    def get(self, config: RunnableConfig) -> Op[CheckpointTuple | None]:
        """The checkpoint ``config`` names, or the newest of its thread and namespace."""
        conf = config["configurable"]
        thread_id, ns = conf["thread_id"], conf.get("checkpoint_ns", "")
        checkpoint_id: str | None = conf.get("checkpoint_id")
        if not checkpoint_id:
            index = ThreadKeys(thread_id).index(ns)
            (newest,) = yield Batch((("ZREVRANGEBYLEX", index, "+", "-", "LIMIT", 0, 1),))
            if not newest:
                return None
            checkpoint_id = as_text(newest[0])
        found = yield from self.load(thread_id, [(ns, checkpoint_id)], {})
        return found[0] if found else None

    def threads(self, query: ListQuery) -> Op[Names]:
        """The threads a listing covers: the one asked for, or every thread."""
        if query.thread_id is not None:
            return [query.thread_id]
        (members,) = yield Batch((("SMEMBERS", THREADS),))
        return sorted(as_text(member) for member in members)

    def refs(self, query: ListQuery, thread_id: str) -> Op[Refs]:
        """The (namespace, id) of the thread's candidate checkpoints, newest first."""
        keys = ThreadKeys(thread_id)
        if query.namespace is not None:
            namespaces = [query.namespace]
        else:
            (members,) = yield Batch((("SMEMBERS", keys.namespaces),))
            namespaces = sorted(as_text(member) for member in members)
        if not namespaces:
            return []
        if query.checkpoint_id is not None:
            wanted = query.checkpoint_id
            if query.before is not None and wanted >= query.before:
                return []
            scores = yield Batch(tuple(("ZSCORE", keys.index(ns), wanted) for ns in namespaces))
            present = zip(namespaces, scores, strict=True)
            return [(ns, wanted) for ns, score in present if score is not None]
        upper = "(" + query.before if query.before is not None else "+"
        # Without a filter the first `limit` of each namespace are enough for the merge.
        window = ("LIMIT", 0, query.limit) if query.limit and not query.filter else ()
        replies = yield Batch(
            tuple(("ZREVRANGEBYLEX", keys.index(ns), upper, "-", *window) for ns in namespaces)
        )
        merged = sorted(
            (
                (as_text(raw), ns)
                for ns, ids in zip(namespaces, replies, strict=True)
                for raw in ids
            ),
            reverse=True,
        )
        return [(ns, checkpoint_id) for checkpoint_id, ns in merged]

    def load(
        self, thread_id: str, refs: Sequence[tuple[str, str]], filter: dict[str, Any]
    ) -> Op[Tuples]:
        """Read checkpoints with their values and writes; those whose metadata fails ``filter``
        or that no longer exist are left out."""
        keys = ThreadKeys(thread_id)
        if filter and refs:
            raws = yield Batch(tuple(("HGET", keys.checkpoint(*ref), "metadata") for ref in refs))
            refs = [
                ref
                for ref, raw in zip(refs, raws, strict=True)
                if raw is not None and _matches(self.loads(raw), filter)
            ]
        if not refs:
            return []
        *replies, version = yield Batch(
            (
                *(
                    command
                    for ref in refs
                    for command in (
                        ("HGETALL", keys.checkpoint(*ref)),
                        ("HGETALL", keys.writes(*ref)),
                    )
                ),
                ("GET", keys.version),
            )
        )
        records = [
            (ref, replies[2 * i], replies[2 * i + 1])
            for i, ref in enumerate(refs)
            if b"checkpoint" in replies[2 * i]
        ]
        if records:  # a thread stored by another version is refused, never misread
            check_version(version, thread_id, has_checkpoints=True)
        # Values a checkpoint inherits live in the checkpoint that wrote them.
        inherited = [
            (i, channel, owner)
            for i, ((ns, checkpoint_id), record, _) in enumerate(records)
            for channel, owner in json.loads(record[b"owners"]).items()
            if owner != checkpoint_id
        ]
        fetched: Replies = []
        if inherited:
            fetched = yield Batch(
                tuple(
                    ("HGET", keys.checkpoint(records[i][0][0], owner), "value:" + channel)
                    for i, channel, owner in inherited
                )
            )
        extra: dict[int, dict[str, bytes]] = {}
        for (i, channel, _), raw in zip(inherited, fetched, strict=True):
            if raw is not None:
                extra.setdefault(i, {})[channel] = raw
        return [
            self.assemble(thread_id, ref, record, writes, extra.get(i, {}))
            for i, (ref, record, writes) in enumerate(records)
        ]

    def assemble(
        self,
        thread_id: str,
        ref: tuple[str, str],
        record: dict[bytes, bytes],
        writes: dict[bytes, bytes],
        inherited: dict[str, bytes],
    ) -> CheckpointTuple:
        """One checkpoint tuple from its stored hash, its inherited values and its writes."""
        ns, checkpoint_id = ref
        values = {
            name.decode().removeprefix("value:"): self.loads(raw)
            for name, raw in record.items()
            if name.startswith(b"value:")
        }
        values.update((channel, self.loads(raw)) for channel, raw in inherited.items())
        checkpoint = cast(
            Checkpoint, {**self.loads(record[b"checkpoint"]), "channel_values": values}
        )
        parent = record.get(b"parent")
        return CheckpointTuple(
            config=config_for(thread_id, ns, checkpoint_id),
            checkpoint=checkpoint,
            metadata=cast(CheckpointMetadata, self.loads(record[b"metadata"])),
            parent_config=config_for(thread_id, ns, parent.decode()) if parent else None,
            pending_writes=self.pending_writes(writes),
        )

    def pending_writes(self, stored: dict[bytes, bytes]) -> WriteList:
        """The pending writes of a checkpoint, in LangGraph's order."""
        rows = []
        for field, raw in stored.items():
            task_id, idx = json.loads(field)
            (task_path, channel, kind), payload = unpack(raw)
            value = self.serde.loads_typed((kind, payload))
            rows.append((writes_sort_key(task_path, task_id, idx), (task_id, channel, value)))
        rows.sort(key=lambda row: row[0])
        return [write for _, write in rows]

    def loads(self, raw: bytes) -> Any:
        """A value stored by :meth:`Operations.dumps`."""
        (kind,), payload = unpack(raw)
        return self.serde.loads_typed((kind, payload))


def _matches(metadata: dict[str, Any], filter: dict[str, Any]) -> bool:
    return all(metadata.get(key) == value for key, value in filter.items())
