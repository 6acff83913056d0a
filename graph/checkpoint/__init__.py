"""A LangGraph checkpointer on plain Redis 8: hashes, sorted sets and sets, nothing else.

No RedisJSON and no RediSearch: the embedded server is a bare Redis, so the layout below is
built from core types only, and metadata filters are evaluated by the client.

Key layout (``T`` thread, ``N`` checkpoint namespace, ``C`` checkpoint id, ``R`` run id;
each percent-encoded, so ``:``, ``{`` and ``}`` never appear inside a part)::

    fab:ckpt:{T}:version              string the version of the layout T is stored in
    fab:ckpt:{T}:namespaces           set    namespaces of T that hold checkpoints
    fab:ckpt:{T}:index:N              zset   checkpoint ids of (T, N), all scored 0
    fab:ckpt:{T}:checkpoint:N:C       hash   one checkpoint (fields below)
    fab:ckpt:{T}:writes:N:C           hash   pending writes of C: [task, idx] -> write
    fab:ckpt:threads                  set    thread ids            (outside every thread's slot)
    fab:ckpt:run:R                    set    threads written by R  (outside every thread's slot)

A checkpoint hash holds ``checkpoint`` (the checkpoint less its channel values), ``metadata``,
``parent``, ``run_id``, ``owners`` and one ``value:<channel>`` field per channel whose new
version this checkpoint stored. Every key of a thread carries the hash tag ``{T}``, so one
checkpoint's writes go to a single cluster slot in one MULTI/EXEC; the two global sets only
index threads, are written just before that transaction and may over-approximate.

Checkpoint ids are uuid6 strings, which sort in creation order, so the zset read with
``ZREVRANGEBYLEX`` gives newest first, and ``before`` is an exclusive lexicographic bound.

Forks never overwrite each other. Savers that key channel values by ``(channel, version)``
lose a value when two checkpoints that share a parent each write the same channel: both
branches produce the same next version, and the second write replaces the first. Here a value
is stored in the checkpoint that wrote it, and ``owners`` maps each channel to the checkpoint
holding its current value (itself, or an ancestor's entry copied from the parent when the
checkpoint is put). A put writes only its own checkpoint's hash, so siblings cannot disturb
each other; removing a checkpoint (prune, runs) first copies the values survivors inherit from
it into the survivors.

Pending writes follow LangGraph: a regular write is set only if its ``(task, idx)`` is new
(``HSETNX``, so a retried task adds nothing); the special channels of ``WRITES_IDX_MAP``
(errors, interrupts, resumes) take negative indexes and overwrite. No key has a TTL.

The checkpointer owns its versions (:mod:`~fabula.graph.checkpoint.migrations`): each
thread's ``version`` is checked by every load and put, and the saver's ``migrate`` brings a
thread stored by an older Fabula up to date with the checkpointer's own ``MIGRATIONS``.
Stored types are named by registry name, not module path
(:mod:`~fabula.graph.checkpoint.serde`), so moving a class changes nothing stored.

Each operation is written once, as a generator that yields batches of commands and receives
their replies; one driver runs it on the synchronous client, the other on the asyncio client.
The saver loads on first use (with LangGraph); :mod:`~fabula.graph.checkpoint.waiting` reads
which threads wait at an interrupt without it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from fabula.graph.checkpoint.keys import THREADS
from fabula.lazy import exports as _exports

if TYPE_CHECKING:
    from fabula.graph.checkpoint.saver import RedisCheckpointSaver as RedisCheckpointSaver
    from fabula.graph.checkpoint.saver import delete_threads as delete_threads
    from fabula.graph.checkpoint.serde import RegistrySerializer as RegistrySerializer
    from fabula.graph.checkpoint.serde import TypeRegistry as TypeRegistry

_HOMES = {
    "RegistrySerializer": "fabula.graph.checkpoint.serde",
    "TypeRegistry": "fabula.graph.checkpoint.serde",
    "RedisCheckpointSaver": "fabula.graph.checkpoint.saver",
    "delete_threads": "fabula.graph.checkpoint.saver",
}
__all__ = ["THREADS", *sorted(_HOMES)]
__getattr__ = _exports(__name__, _HOMES)[0]  # the saver loads LangGraph: only when asked
