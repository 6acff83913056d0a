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

from fabula.errors import Remedy, StoryOutdated

SCHEMA_VERSION = 2
"""The version this Fabula writes and reads."""

SCHEMA_FIELD = "schema"
"""The field of the story's record that holds its version."""


def stored_version(raw: str | None) -> int:
    """The version a story's record holds (``raw``: its :data:`SCHEMA_FIELD`; None: 1)."""
    return 1 if raw is None else int(raw)


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
