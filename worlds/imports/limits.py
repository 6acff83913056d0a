"""How large an import may be: every limit checked before, or while, the thing it bounds is
read.

An import reads files a user was sent by others (cards from sharing sites, archives,
presets), so each is bounded before it is decoded or unpacked: a PNG, JSON or CHARX file
past ``max_file_bytes`` is not read at all; a card's JSON past ``max_card_bytes`` is not
parsed, nor one nested past ``max_json_depth`` (a scan of its brackets comes first: Python's
parser recurses, and a pack nested deeper than pydantic reads back could not be stored); a
CHARX archive is refused from its directory — before anything is extracted — when it has
more than ``max_archive_members`` members or their declared sizes add up past
``max_unpacked_bytes``. A zip may lie about its sizes, so its members are then unpacked a
chunk at a time with a running count (:mod:`fabula.worlds.imports.charx`): a member stops
at its declared size, at ``max_member_bytes``, at ``max_unpacked_bytes`` for the archive,
at the import's :class:`Budget`, and once past ``ratio_floor_bytes`` at ``max_ratio`` times
its compressed size.

One import — a ``fabula import`` command, or one studio request, and so the one story it
makes — holds at most ``max_import_bytes`` (:class:`Budget`): every file it reads that is
not an archive, and every archive's unpacked members, together (the studio bounds its
uploads lower still: ``UPLOAD_LIMITS`` in :mod:`fabula.graph.service.uploads`).

The measurements behind the defaults (``/usr/bin/time -v fabula import ... --id S``, Redis
``used_memory`` before and after): a 124 KB CHARX holding 127 MB of zeros made the command
peak at 1.15 GB and Redis grow by 202 MB (assets are stored as base64 in one field); two
CHARX of 15 MiB of pictures each (30 MiB, within these bounds) peak at 452 MB against 200 MB
for the command alone, and grow Redis by 50 MB: an asset costs about eight times its size at
the peak, so 32 MiB keeps one import near 250 MB over the process's own. The largest real
cards are a few MiB; CHARX archives with a set of expression pictures some tens.
"""

from __future__ import annotations

from dataclasses import dataclass

from fabula.worlds.imports.fields import BadSource

MiB = 1024 * 1024


@dataclass(frozen=True)
class ImportLimits:
    """The bounds of one import."""

    max_file_bytes: int = 32 * MiB
    """A file larger than this is refused before it is read (32 MiB)."""
    max_card_bytes: int = 8 * MiB
    """A card's (or a lorebook's) JSON text larger than this is refused before parsing (8 MiB)."""
    max_json_depth: int = 64
    """The deepest a JSON document may nest (arrays and objects), checked before parsing:
    real cards nest about 6 deep; a stored pack adds about 6 and pydantic reads 200."""
    max_unpacked_bytes: int = 24 * MiB
    """The most a CHARX archive may unpack to, all members together (24 MiB)."""
    max_member_bytes: int = 16 * MiB
    """The most one CHARX member may unpack to (16 MiB)."""
    max_ratio: int = 100
    """The most a CHARX member may unpack to per byte it takes in the archive (pictures
    hardly compress; text some ten times; a zip bomb of zeros a thousand)..."""
    ratio_floor_bytes: int = 1 * MiB
    """...once it has unpacked past this (a small text compresses as it likes)."""
    max_archive_members: int = 1024
    """The most members a CHARX archive may have."""
    max_import_bytes: int = 32 * MiB
    """The most one import holds, all files together: each file that is not an archive,
    each archive's unpacked members (32 MiB): see :class:`Budget`."""
    max_entries: int = 20_000
    """The most entries one lorebook may have."""
    max_book_program: int = 250_000
    """The most RE2 instructions the regex keys of one lorebook's live entries may compile
    to together (8 bytes each, 2 MB; one key may take 43,636: see
    :data:`~fabula.worlds.imports.keys.KEY_MEM`). An entry whose keys would pass it is
    imported disabled, with a finding naming it: a recall compiles at most this much of a
    book when its keys are not cached, and a real book's regex keys are a few thousand."""
    max_story_program: int = 1_000_000
    """The same bound for every book of one import (one story) together (8 MB)."""


class Budget:
    """What one import has read so far, against ``limits.max_import_bytes``: every reader
    takes the bytes it holds before (or as) it holds them."""

    def __init__(self, limits: ImportLimits) -> None:
        self.limits = limits
        self.used = 0
        self.program = 0  # RE2 instructions of the regex keys read so far

    @property
    def left(self) -> int:
        """The bytes the import may still read."""
        return self.limits.max_import_bytes - self.used

    def take(self, size: int, what: str) -> None:
        """Count ``size`` more bytes of ``what``; BadSource (nothing counted) when they take
        the import past its bound."""
        if size > self.left:
            raise BadSource(
                f"{what}: the import would hold more than the {self.limits.max_import_bytes} "
                "bytes one import may (its files and unpacked archives together)"
            )
        self.used += size

    def take_program(self, size: int) -> bool:
        """Count ``size`` more RE2 instructions of the import's regex keys; False (nothing
        counted) when they would take it past ``max_story_program``."""
        if self.program + size > self.limits.max_story_program:
            return False
        self.program += size
        return True
