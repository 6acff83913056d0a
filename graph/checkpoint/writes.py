"""Writing checkpoints: put, put_writes, and removing or copying them (prune, runs, forks)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    WRITES_IDX_MAP,
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    get_serializable_checkpoint_metadata,
)

from fabula.errors import InvalidInput
from fabula.graph.checkpoint.batches import (
    Batch,
    Commands,
    Names,
    Op,
    Ref,
    Replies,
    Selector,
    as_text,
    config_for,
    flatten,
    pack,
)
from fabula.graph.checkpoint.keys import THREADS, ThreadKeys, run_key
from fabula.graph.checkpoint.migrations import CHECKPOINT_VERSION, check_version
from fabula.graph.checkpoint.reads import Reads


class Operations(Reads):
    """Every operation of the saver: the reads, and the writes below."""

    def put(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> Op[RunnableConfig]:
        """Store one checkpoint (and its new channel values) in one MULTI/EXEC."""
        conf = config["configurable"]
        thread_id, ns = conf["thread_id"], conf.get("checkpoint_ns", "")
        checkpoint_id = checkpoint["id"]
        parent_id = conf.get("checkpoint_id")
        if parent_id == checkpoint_id:
            parent_id = None
        keys = ThreadKeys(thread_id)
        meta = get_serializable_checkpoint_metadata(config, metadata)
        run_id = meta.get("run_id")
        inherited = [ch for ch in checkpoint["channel_versions"] if ch not in new_versions]

        prelude: Commands = [
            ("GET", keys.version),
            ("EXISTS", keys.namespaces),
            ("SADD", THREADS, thread_id),
        ]
        if run_id:
            prelude.append(("SADD", run_key(str(run_id)), thread_id))
        if parent_id and inherited:
            prelude.append(("HGET", keys.checkpoint(ns, parent_id), "owners"))
        replies = yield Batch(tuple(prelude))
        version, existing = replies[0], bool(replies[1])
        # a thread of another version is refused before anything of it is written
        check_version(version, thread_id, has_checkpoints=existing)
        parent_owners = json.loads(replies[-1] or "{}") if parent_id and inherited else {}

        stored, owners = self._channel_values(checkpoint, new_versions, inherited, parent_owners)
        fields: dict[str, bytes | str] = {
            "checkpoint": self.dumps(
                {k: v for k, v in checkpoint.items() if k != "channel_values"}
            ),
            "metadata": self.dumps(meta),
            **stored,
            "owners": json.dumps(owners),
        }
        if parent_id:
            fields["parent"] = parent_id
        if run_id:
            fields["run_id"] = str(run_id)
        record = keys.checkpoint(ns, checkpoint_id)
        # No DEL first: putting an id again must not drop a value a child inherits from it.
        stale = [name for name in ("parent", "run_id") if name not in fields]
        yield Batch(
            (
                *((("HDEL", record, *stale),) if stale else ()),
                ("HSET", record, *flatten(fields)),
                ("ZADD", keys.index(ns), 0, checkpoint_id),
                ("SADD", keys.namespaces, ns),
                *((("SET", keys.version, str(CHECKPOINT_VERSION)),) if version is None else ()),
            ),
            atomic=True,
        )
        return config_for(thread_id, ns, checkpoint_id)

    def _channel_values(
        self,
        checkpoint: Checkpoint,
        new_versions: ChannelVersions,
        inherited: Sequence[str],
        parent_owners: dict[str, str],
    ) -> tuple[dict[str, bytes | str], dict[str, str]]:
        """The channel values ``checkpoint`` stores itself (``value:<channel>`` fields: its
        new ones, and inherited ones whose owner the parent does not know), and the
        checkpoint that owns each channel's value."""
        values = checkpoint["channel_values"]
        checkpoint_id = checkpoint["id"]
        fields: dict[str, bytes | str] = {}
        owners: dict[str, str] = {}
        for channel in inherited:
            if channel in parent_owners:
                owners[channel] = parent_owners[channel]
            elif channel in values:
                # An owner the parent does not know: keep the value that was handed in.
                fields["value:" + channel] = self.dumps(values[channel])
                owners[channel] = checkpoint_id
        for channel in new_versions:
            if channel in values:
                fields["value:" + channel] = self.dumps(values[channel])
                owners[channel] = checkpoint_id
        return fields, owners

    def put_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str,
    ) -> Op[None]:
        """Store a task's pending writes (a regular write only if its index is new)."""
        conf = config["configurable"]
        if not conf.get("checkpoint_id"):
            raise InvalidInput("pending writes need the checkpoint_id they belong to", task=task_id)
        key = ThreadKeys(conf["thread_id"]).writes(
            conf.get("checkpoint_ns", ""), conf["checkpoint_id"]
        )
        commands = []
        for idx, (channel, value) in enumerate(writes):
            slot = WRITES_IDX_MAP.get(channel, idx)
            kind, payload = self.serde.dumps_typed(value)
            field = json.dumps([task_id, slot])
            # Special writes (negative slots) replace; a retried task's regular writes do not.
            verb = "HSET" if slot < 0 else "HSETNX"
            commands.append((verb, key, field, pack([task_path, channel, kind], payload)))
        if commands:
            yield Batch(tuple(commands), atomic=True)

    def remove(self, thread_id: str, select: Selector) -> Op[None]:
        """Remove the checkpoints ``select`` picks, copying inherited values into survivors."""
        keys = ThreadKeys(thread_id)
        (members,) = yield Batch((("SMEMBERS", keys.namespaces),), watch=(keys.namespaces,))
        namespaces = sorted(as_text(member) for member in members)
        indexes = tuple(keys.index(ns) for ns in namespaces)
        listed = yield Batch(tuple(("ZRANGE", ix, 0, -1) for ix in indexes), watch=indexes)
        refs = [
            (ns, as_text(raw)) for ns, ids in zip(namespaces, listed, strict=True) for raw in ids
        ]
        infos = yield Batch(
            tuple(("HMGET", keys.checkpoint(*ref), "run_id", "owners") for ref in refs)
        )
        run_of = {
            ref: as_text(run) if run else None for ref, (run, _) in zip(refs, infos, strict=True)
        }
        owners_of = {
            ref: json.loads(raw or "{}") for ref, (_, raw) in zip(refs, infos, strict=True)
        }
        doomed: set[tuple[str, str]] = set()
        for ns in namespaces:
            entries = [(cid, run_of[(n, cid)]) for n, cid in refs if n == ns]
            doomed.update((ns, cid) for cid in select(entries))
        survivors = [ref for ref in refs if ref not in doomed]

        rescues = [
            (ref, channel, owner)
            for ref in survivors
            for channel, owner in owners_of[ref].items()
            if (ref[0], owner) in doomed
        ]
        rescued: Replies = []
        if rescues:
            rescued = yield Batch(
                tuple(
                    ("HGET", keys.checkpoint(ref[0], owner), "value:" + channel)
                    for ref, channel, owner in rescues
                )
            )
        commands = _adopt(
            keys,
            owners_of,
            [(r, ch, raw) for (r, ch, _), raw in zip(rescues, rescued, strict=True)],
        )
        for ns, cid in sorted(doomed):
            commands.append(("DEL", keys.checkpoint(ns, cid), keys.writes(ns, cid)))
            commands.append(("ZREM", keys.index(ns), cid))
        for ns in namespaces:
            if not any(ref[0] == ns for ref in survivors):
                commands.append(("SREM", keys.namespaces, ns))
        if commands and not survivors:
            commands.append(("DEL", keys.version))  # a thread made again is made new
        if commands:
            yield Batch(tuple(commands), atomic=True)

        cleanup = _forgotten(thread_id, run_of, doomed, survivors)
        if cleanup:
            yield Batch(tuple(cleanup))

    def run_threads(self, run_ids: Sequence[str]) -> Op[Names]:
        """The threads written by any of ``run_ids``."""
        if not run_ids:
            return []
        replies = yield Batch(tuple(("SMEMBERS", run_key(run)) for run in run_ids))
        return sorted({as_text(member) for members in replies for member in members})

    def forget_runs(self, run_ids: Sequence[str]) -> Op[None]:
        """Drop the run indexes of ``run_ids``."""
        if run_ids:
            # one DEL per key: run keys lie in different cluster slots
            yield Batch(tuple(("DEL", run_key(run)) for run in run_ids))

    def copy(self, source: str, target: str) -> Op[None]:
        """Copy every checkpoint and write of thread ``source`` into thread ``target``."""
        src, dst = ThreadKeys(source), ThreadKeys(target)
        members, version = yield Batch((("SMEMBERS", src.namespaces), ("GET", src.version)))
        namespaces = sorted(as_text(member) for member in members)
        if not namespaces:
            return
        listed = yield Batch(tuple(("ZRANGE", src.index(ns), 0, -1) for ns in namespaces))
        refs = [
            (ns, as_text(raw)) for ns, ids in zip(namespaces, listed, strict=True) for raw in ids
        ]
        replies = yield Batch(
            tuple(
                command
                for ref in refs
                for command in (("HGETALL", src.checkpoint(*ref)), ("HGETALL", src.writes(*ref)))
            )
        )
        commands: Commands = []
        runs: set[str] = set()
        for i, (ns, cid) in enumerate(refs):
            record, writes = replies[2 * i], replies[2 * i + 1]
            if b"checkpoint" not in record:
                continue
            # Owners name checkpoint ids, which the copy keeps, so records copy verbatim.
            commands += [
                ("DEL", dst.checkpoint(ns, cid), dst.writes(ns, cid)),
                ("HSET", dst.checkpoint(ns, cid), *flatten(record)),
                ("ZADD", dst.index(ns), 0, cid),
                ("SADD", dst.namespaces, ns),
            ]
            if writes:
                commands.append(("HSET", dst.writes(ns, cid), *flatten(writes)))
            if b"run_id" in record:
                runs.add(as_text(record[b"run_id"]))
        if not commands:
            return
        yield Batch((("SADD", THREADS, target), *(("SADD", run_key(r), target) for r in runs)))
        # the copy is stored in the source's layout: its version goes with it
        commands.append(("SET", dst.version, version) if version else ("DEL", dst.version))
        yield Batch(tuple(commands), atomic=True)

    # --- serialisation ---

    def dumps(self, value: Any) -> bytes:
        """A value as stored: its serializer type, a newline, its bytes."""
        kind, payload = self.serde.dumps_typed(value)
        return pack([kind], payload)


def _adopt(
    keys: ThreadKeys,
    owners_of: dict[Ref, dict[str, str]],
    rescued: Sequence[tuple[Ref, str, bytes | None]],
) -> Commands:
    """Commands that store each rescued value in the survivor that inherited it and make the
    survivor its owner (a value already gone is dropped from the owners)."""
    commands: Commands = []
    changed: dict[Ref, dict[str, str]] = {}
    for ref, channel, raw in rescued:
        owners = changed.setdefault(ref, owners_of[ref])
        if raw is None:
            del owners[channel]
        else:
            owners[channel] = ref[1]
            commands.append(("HSET", keys.checkpoint(*ref), "value:" + channel, raw))
    for ref, owners in changed.items():
        commands.append(("HSET", keys.checkpoint(*ref), "owners", json.dumps(owners)))
    return commands


def everything(entries: list[tuple[str, str | None]]) -> set[str]:
    """Every checkpoint (delete a thread)."""
    return {cid for cid, _ in entries}


def all_but_newest(entries: list[tuple[str, str | None]]) -> set[str]:
    """Every checkpoint but the newest (prune, keep_latest)."""
    ids = {cid for cid, _ in entries}
    return ids - {max(ids)} if ids else set()


def of_runs(run_ids: frozenset[str], entries: list[tuple[str, str | None]]) -> set[str]:
    """The checkpoints made by ``run_ids``."""
    return {cid for cid, run in entries if run in run_ids}


def prune_selector(strategy: str) -> Selector:
    """The selector of a prune ``strategy``; InvalidInput for an unknown one."""
    if strategy == "keep_latest":
        return all_but_newest
    if strategy == "delete":
        return everything
    raise InvalidInput("unknown prune strategy; use 'keep_latest' or 'delete'", strategy=strategy)


def _forgotten(
    thread_id: str,
    run_of: dict[tuple[str, str], str | None],
    doomed: set[tuple[str, str]],
    survivors: list[tuple[str, str]],
) -> Commands:
    """Once the ``doomed`` checkpoints are gone: the thread out of the sets of the runs
    no survivor was written by, and out of the threads when none survives."""
    gone_runs = {run_of[ref] for ref in doomed} - {run_of[ref] for ref in survivors}
    cleanup: Commands = [
        ("SREM", run_key(run), thread_id) for run in sorted(r for r in gone_runs if r)
    ]
    if not survivors:
        cleanup.append(("SREM", THREADS, thread_id))
    return cleanup
