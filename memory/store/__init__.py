"""The story store: one branch of one story in Redis — creation, atomic idempotent
commits, forks, and raw reads.

:class:`StoryStore` is composed of one class per concern, each in its module (a
newcomer's map, from the bottom):

- :mod:`.handle` — :class:`~.handle.StoreHandle`, the ids, the connection, the limits;
- :mod:`.lineage` — which branch holds a turn (ancestry, branch_for, branches);
- :mod:`.reads` — the story's records: existence, creation info, entities, head, turns'
  texts, events;
- :mod:`.pack` — the pack, rules, files, voices and who is played (reads, and the two
  writes a story's settings take);
- :mod:`.usage` — the model usage of a branch (reads, and the work outside its turns);
- :mod:`.view` — :class:`StoryReads`, every read and no write: the read view;
- :mod:`.commits` — the commit path: ``commit`` in one round trip, the decision lock,
  the wait for the disk;
- :mod:`.lifecycle` — creating, finishing and deleting a story.

A caller that only reads holds a :class:`StoryReads` (mypy refuses it ``commit`` or
``delete``); one that writes holds a :class:`StoryStore`, which is a :class:`StoryReads`.
"""

from __future__ import annotations

from fabula.memory.store.commits import DECISION_LOCK_S as DECISION_LOCK_S
from fabula.memory.store.commits import CommitResult as CommitResult
from fabula.memory.store.lifecycle import Lifecycle
from fabula.memory.store.pack import PackWrites
from fabula.memory.store.reads import StoryInfo as StoryInfo
from fabula.memory.store.reads import TurnText as TurnText
from fabula.memory.store.reads import list_stories as list_stories
from fabula.memory.store.usage import UsageWrites
from fabula.memory.store.view import StoryReads as StoryReads


class StoryStore(StoryReads, Lifecycle, PackWrites, UsageWrites):
    """One branch of one story in Redis: every read (:class:`StoryReads`) and every write
    (the commit path, the lifecycle, the pack's and usage's writes)."""
