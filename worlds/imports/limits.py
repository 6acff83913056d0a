"""How large an import may be: every limit checked before the thing it bounds is read.

An import reads files a user was sent by others (cards from sharing sites, archives), so
each is bounded before it is decoded or unpacked: a PNG, JSON or CHARX file past
``max_file_bytes`` is not read at all; a card's JSON past ``max_card_bytes`` is not parsed;
a CHARX archive is refused from its directory — before anything is extracted — when it has
more than ``max_archive_members`` members or their declared sizes add up past
``max_unpacked_bytes`` (a zip bomb declares small sizes only if it lies, and then reading
stops at the declared size: see :mod:`fabula.worlds.imports.charx`).
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["ImportLimits"]


@dataclass(frozen=True)
class ImportLimits:
    """The bounds of one import (defaults: the largest real cards are a few MiB)."""

    max_file_bytes: int = 64 * 1024 * 1024
    """A file larger than this is refused before it is read (64 MiB)."""
    max_card_bytes: int = 8 * 1024 * 1024
    """A card's (or a lorebook's) JSON text larger than this is refused before parsing (8 MiB)."""
    max_unpacked_bytes: int = 128 * 1024 * 1024
    """The most a CHARX archive may unpack to, all members together (128 MiB)."""
    max_archive_members: int = 4096
    """The most members a CHARX archive may have."""
    max_entries: int = 20_000
    """The most entries one lorebook may have."""
