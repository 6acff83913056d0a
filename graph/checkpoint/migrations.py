"""The checkpointer's own versions: what each stored, the refusals, and its migrations.

Each thread records the version of the layout its checkpoints are stored in, under its own
key (``fab:ckpt:{T}:version``, in the thread's slot with the rest of it): written by the
put that makes the thread, read with every load. A thread holding checkpoints but no
version was stored before versions: version 1. A load or a put refuses an older thread
(:class:`~fabula.errors.StoryOutdated`, "must be migrated first") and a newer one
(:class:`~fabula.errors.Conflict`, "left as it is"), each in one line; nothing on the hot
path reads an old shape.

Versions::

    1  before versions: msgpack objects named by module path (``fabula.graph.state``,
       ``ApprovalRequest``), so moving a class changed the stored shape unannounced
    2  the types of the saver's registry (:mod:`~fabula.graph.checkpoint.serde`) named by
       their registry name (``fabula``, ``ApprovalRequest``)

:data:`MIGRATIONS` lists, for each version after the first, how a value stored at the
version before is stored at it. :func:`migrate_thread` brings one thread to
:data:`CHECKPOINT_VERSION`: every stored value (checkpoint, metadata, channel values,
pending writes) rewritten and the new version set in one MULTI/EXEC on the thread's slot,
watched, so a thread is either whole at its old version or whole at the new one, and a
thread at the current version is left as it is (running it again does nothing twice).
The saver's ``migrate`` checks every thread of a story (:func:`plan_thread`: a newer or
unreadable one refuses the story, nothing written) before it writes any.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from langgraph.checkpoint.serde.base import SerializerProtocol

from fabula.graph.checkpoint.batches import Batch, Op, as_text, pack, unpack
from fabula.graph.checkpoint.keys import ThreadKeys
from fabula.graph.checkpoint.serde import RegistrySerializer, rename
from fabula.graph.checkpoint.versions import CHECKPOINT_VERSION as CHECKPOINT_VERSION
from fabula.graph.checkpoint.versions import check_version as check_version
from fabula.graph.checkpoint.versions import newer as newer
from fabula.graph.checkpoint.versions import stored_version as stored_version

ValueMigration = Callable[[SerializerProtocol, str, bytes], tuple[str, bytes]]
"""One stored value ``(kind, payload)`` as the next version stores it; given the saver's
serializer (for what it knows: a :class:`RegistrySerializer`'s registry)."""


def _registry_names(serde: SerializerProtocol, kind: str, payload: bytes) -> tuple[str, bytes]:
    """1 -> 2: the registry's types, stored by module path, renamed to registry names."""
    if kind != "msgpack" or not isinstance(serde, RegistrySerializer):
        return kind, payload
    return kind, rename(payload, serde.registry.legacy_names())


@dataclass(frozen=True)
class Migration:
    """How a value stored at ``version - 1`` is stored at ``version``."""

    version: int
    what: str
    value: ValueMigration


MIGRATIONS: tuple[Migration, ...] = (
    Migration(2, "types named by registry name, not by module path", _registry_names),
)
"""Every migration, oldest first; the last one's version is :data:`CHECKPOINT_VERSION`."""


@dataclass(frozen=True)
class ThreadPlan:
    """What migrating one thread writes: (key, field, value) to set, at version ``was``."""

    thread: str
    was: int
    updates: tuple[tuple[str, bytes, bytes], ...] = ()


def _migrated(serde: SerializerProtocol, was: int, raw: bytes, head_kind: int) -> bytes:
    """One stored value (made by ``pack``; its kind at ``head[head_kind]``) migrated from
    version ``was`` to :data:`CHECKPOINT_VERSION`."""
    head, payload = unpack(raw)
    kind = head[head_kind]
    for step in MIGRATIONS:
        if step.version > was:
            kind, payload = step.value(serde, kind, payload)
    head[head_kind] = kind
    return pack(head, payload)


_SERIALISED = (b"checkpoint", b"metadata", b"value:")  # the fields a serializer wrote


def plan_thread(serde: SerializerProtocol, thread: str, watch: bool = False) -> Op[ThreadPlan]:
    """Read ``thread`` and compute its migration (nothing written); with ``watch``, every
    key read is watched for the write that follows. Raises the refusal of a newer thread,
    and ``ValueError`` (or the like) for a value that cannot be read."""
    keys = ThreadKeys(thread)
    guard = (keys.version, keys.namespaces) if watch else ()
    raw_version, members = yield Batch(
        (("GET", keys.version), ("SMEMBERS", keys.namespaces)), watch=guard
    )
    was = stored_version(raw_version, thread, has_checkpoints=bool(members))
    if was > CHECKPOINT_VERSION:
        raise newer(thread, was)
    if was == CHECKPOINT_VERSION:
        return ThreadPlan(thread, was)
    namespaces = sorted(as_text(m) for m in members)
    indexes = tuple(keys.index(ns) for ns in namespaces)
    listed = yield Batch(
        tuple(("ZRANGE", ix, 0, -1) for ix in indexes), watch=indexes if watch else ()
    )
    refs = [(ns, as_text(c)) for ns, ids in zip(namespaces, listed, strict=True) for c in ids]
    stored = tuple(k for ref in refs for k in (keys.checkpoint(*ref), keys.writes(*ref)))
    replies = yield Batch(tuple(("HGETALL", k) for k in stored), watch=stored if watch else ())
    updates: list[tuple[str, bytes, bytes]] = []
    for key, hash_ in zip(stored, replies, strict=True):
        writes = key.startswith(f"{keys.prefix}:writes:")
        for field, raw in hash_.items():
            if not writes and not field.startswith(_SERIALISED):
                continue  # owners, parent, run_id: plain text
            new = _migrated(serde, was, raw, 2 if writes else 0)
            if new != raw:
                updates.append((key, field, new))
    return ThreadPlan(thread, was, tuple(updates))


def migrate_thread(serde: SerializerProtocol, thread: str) -> Op[ThreadPlan]:
    """Bring ``thread`` to :data:`CHECKPOINT_VERSION` in one watched MULTI/EXEC (nothing
    for a thread there already); what was written."""
    plan = yield from plan_thread(serde, thread, watch=True)
    if plan.was == CHECKPOINT_VERSION:
        return plan
    keys = ThreadKeys(thread)
    yield Batch(
        (
            *(("HSET", key, field, value) for key, field, value in plan.updates),
            ("SET", keys.version, str(CHECKPOINT_VERSION)),
        ),
        atomic=True,
    )
    return plan


@dataclass(frozen=True)
class CheckpointsMigrated:
    """What the saver's ``migrate`` did to the threads of one prefix (a story)."""

    threads: int = 0
    """How many threads were brought to :data:`CHECKPOINT_VERSION`."""
    values: int = 0
    """How many stored values were rewritten."""
    was: int = CHECKPOINT_VERSION
    """The oldest version a thread was stored at (:data:`CHECKPOINT_VERSION`: none older)."""

    @classmethod
    def of(cls, plans: Sequence[ThreadPlan]) -> CheckpointsMigrated:
        moved = [p for p in plans if p.was < CHECKPOINT_VERSION]
        return cls(
            threads=len(moved),
            values=sum(len(p.updates) for p in moved),
            was=min((p.was for p in moved), default=CHECKPOINT_VERSION),
        )

    def line(self) -> str:
        """What was done, in words (a part of ``fabula migrate``'s line)."""
        if not self.threads:
            return f"checkpoints already at version {CHECKPOINT_VERSION}"
        return (
            f"checkpoints {self.was} -> {CHECKPOINT_VERSION} ({self.threads} "
            f"thread{'' if self.threads == 1 else 's'}, {self.values} "
            f"value{'' if self.values == 1 else 's'} rewritten)"
        )
