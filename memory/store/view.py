"""The store's read view: :class:`StoryReads`, every read of one branch of one story and
no write.

Hold it where a caller only reads — the service's :class:`~fabula.graph.service.reader.
Reader` and the read functions behind it, the projections W, B[c], D, H, the roles' views:
mypy refuses a ``commit``, ``delete``, ``create`` or ``set_played`` on it, so a read path
cannot write through the store's methods. :class:`~fabula.memory.store.StoryStore` is this
view with the writes; pass a store wherever a view is asked for, and build a view itself
(``StoryReads(client, story, branch)``) where nothing is to be written. The connection
(:attr:`~fabula.memory.store.handle.StoreHandle.client`) is the same one: memory's own
read functions read keys through it.
"""

from __future__ import annotations

from fabula.memory.store.pack import PackReads
from fabula.memory.store.reads import RecordReads
from fabula.memory.store.usage import UsageReads


class StoryReads(RecordReads, PackReads, UsageReads):
    """One branch of one story, read only: its records (:class:`RecordReads`), branches
    (its lineage), pack (:class:`PackReads`) and model usage (:class:`UsageReads`)."""
