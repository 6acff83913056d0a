"""The checkpointer's versions, read without LangGraph: the version this Fabula stores and
reads, and the one-line refusals of a thread stored by an older or a newer one.

:mod:`~fabula.graph.checkpoint.migrations` says what each version stored and how one is
brought up to date; this module is apart from it so that a read that needs no saver (what
waits for a decision, :mod:`~fabula.graph.checkpoint.waiting`) checks a thread's version
as the saver does.
"""

from __future__ import annotations

from fabula.errors import Conflict, StoryOutdated


def _text(raw: bytes | str) -> str:
    return raw.decode() if isinstance(raw, bytes) else raw


CHECKPOINT_VERSION = 2
"""The version of the layout this checkpointer writes and reads."""


def stored_version(raw: bytes | str | None, thread: str, *, has_checkpoints: bool) -> int:
    """The version ``thread`` is stored at (``raw``: its version key). No key: version 1
    when it holds checkpoints, else it is new and written at :data:`CHECKPOINT_VERSION`.
    Raises :class:`Conflict` for a value that is no version."""
    if raw is None:
        return 1 if has_checkpoints else CHECKPOINT_VERSION
    text = _text(raw)
    if not text.isascii() or not text.isdigit() or int(text) < 1:
        raise Conflict(
            f"the checkpoints of thread {thread!r} have an unreadable version ({text[:40]!r}): "
            "they are left as they are, neither read nor written",
            thread=thread,
        )
    return int(text)


def check_version(raw: bytes | str | None, thread: str, *, has_checkpoints: bool) -> None:
    """Refuse ``thread`` unless it is stored at :data:`CHECKPOINT_VERSION` (one line)."""
    version = stored_version(raw, thread, has_checkpoints=has_checkpoints)
    if version < CHECKPOINT_VERSION:
        raise StoryOutdated(
            f"the checkpoints of thread {thread!r} were stored by an older Fabula (checkpoint "
            f"version {version}, this one reads {CHECKPOINT_VERSION}): they must be migrated "
            "first",
            thread=thread,
            version=version,
            current=CHECKPOINT_VERSION,
        )
    if version > CHECKPOINT_VERSION:
        raise newer(thread, version)


def newer(thread: str, version: int) -> Conflict:
    """The one-line refusal of ``thread``, stored at a version newer than this one's."""
    return Conflict(
        f"the checkpoints of thread {thread!r} were stored by a newer Fabula (checkpoint "
        f"version {version}, this one reads {CHECKPOINT_VERSION}): they are left as they are; "
        "use that Fabula",
        thread=thread,
        version=version,
        current=CHECKPOINT_VERSION,
    )
