"""The version of the shape a story is stored in, and the refusal of an older one.

A story's record (``fab:{S}:meta``) holds ``schema``: the version of the layout its keys,
its characters' minds and its turns' checkpoints were written in, set when the story is
made. A story without it was made before versions existed: version 1. Every door to a story
(``StoryStore.require``) reads it together with the story's existence (one round trip) and
refuses an older one with :class:`~fabula.errors.StoryOutdated`; ``fabula migrate`` brings
it up to :data:`SCHEMA_VERSION` once, so no read on a hot path carries compatibility code.

Versions::

    1  before versions: a story's characters may lack their rosters (``c:C:B:ent``, added
       after stories were first made), and its turns' checkpoints may hold plain JSON where
       the typed graph keeps the contracts (an approval payload with ``turn_delta``)
    2  every character has its roster on every branch, every checkpoint is typed
"""

from __future__ import annotations

from fabula.errors import Conflict, Remedy, StoryOutdated

SCHEMA_VERSION = 2
"""The version this Fabula writes and reads."""

SCHEMA_FIELD = "schema"
"""The field of the story's record that holds its version."""


def stored_version(raw: str | bytes | None, story: str = "?") -> int:
    """The version ``story``'s record holds (``raw``: its :data:`SCHEMA_FIELD`; None: 1).

    Raises :class:`~fabula.errors.Conflict` (one line naming the story and the value) for a
    value that is no version: a story this Fabula cannot read is left as it is, never read
    or written as if it were of some version (it used to be a ``ValueError`` traceback)."""
    if raw is None:
        return 1
    text = raw.decode(errors="replace") if isinstance(raw, bytes) else raw
    if not text.isascii() or not text.isdigit() or int(text) < 1:
        raise Conflict(
            f"story {story!r} has an unreadable schema version ({text[:40]!r}): it is left as "
            "it is, neither read nor written",
            story=story,
        )
    return int(text)


def check_version(story: str, raw: str | bytes | None) -> int:
    """The version ``story`` is stored at, which this Fabula reads and writes; raises
    :class:`~fabula.errors.StoryOutdated` for an older one (:func:`outdated`), and
    :class:`~fabula.errors.Conflict` for a newer one (:func:`newer`) or none it can read."""
    version = stored_version(raw, story)
    if version < SCHEMA_VERSION:
        raise outdated(story, version)
    if version > SCHEMA_VERSION:
        raise newer(story, version)
    return version


def newer(story: str, version: int) -> Conflict:
    """The one-line refusal of ``story`` stored at ``version``, newer than this Fabula's: a
    story stored with schema 99 used to be read and written by version 2 (issue 45)."""
    return Conflict(
        f"story {story!r} was stored by a newer Fabula (schema {version}, this one reads "
        f"{SCHEMA_VERSION}): it is left as it is; use that Fabula",
        story=story,
        version=version,
        current=SCHEMA_VERSION,
    )


def outdated(story: str, version: int) -> StoryOutdated:
    """The one-line refusal of ``story`` stored at ``version`` (older than this Fabula's)."""
    return StoryOutdated(
        f"story {story!r} was stored by an older Fabula (schema {version}, this one reads "
        f"{SCHEMA_VERSION}): it must be migrated first",
        remedy=Remedy("migrate_story", {"story": story}),
        story=story,
        version=version,
        current=SCHEMA_VERSION,
    )
