"""Size limits on what one turn may write, checked before anything is written.

A turn's text and its delta are bounded so a commit stays short inside Redis: the commit is
one function call that the server runs to its end, during which it answers nobody else.
Measured on the development machine (2 busy cores): the commit function takes ~90 ms per MB
of payload, and dense controlled English makes ~75 bytes of payload per byte of text. The
defaults keep a commit around a second and a half at most, well inside Redis's busy-reply
threshold (5 s) and redis-py's socket timeout (5 s).

The payload limit is checked twice: while the delta is built (the memory-builder's
:class:`~fabula.memory.delta.DeltaBuilder` keeps a running lower-bound estimate of the
payload and refuses, in one line naming the turn and the sentence, the record that takes it
past the limit, so a turn too large is never built whole) and, exactly, on the encoded
payload before it is sent.

=========================  ==============================  ==========
limit                      setting                         default
=========================  ==============================  ==========
a turn's text (UTF-8)      ``FABULA_MAX_TURN_TEXT``        64 KiB
a commit's payload         ``FABULA_MAX_DELTA_BYTES``      16 MiB
a file a command reads     (its own, or ``FILE_BYTES``)    32 MiB
one sentence read          ``FABULA_MAX_SENTENCE_WORDS``   256 words
a turn's reading           ``FABULA_READING_DEADLINE``     30 s
=========================  ==============================  ==========

Every file a command reads (a turn's text, a world pack and its lore and pictures, cards,
lorebooks, presets) is read through :func:`read_bounded`, never whole: a file past its bound
is refused in one line after reading one byte more than the bound, whatever it is. The
size a file's metadata gives is not trusted: ``edit --text-file /dev/zero`` says 0 bytes,
and a plain ``read_bytes`` of it grew to 23 GB in a minute (issue 45).

The last two bound the offline prose reader (issue 45): what it reads of one sentence
and how long it may read one turn. Past either, the rest stays ``narration``, with the
reason beside its sentence (a ``reading`` finding), and the turn goes on: nothing is
refused. Every record the reader makes from a sentence cites that sentence's span, so a
sentence of *n* words that told *n* events would make a delta of *n*² bytes; bounded,
one sentence costs at most a constant, and a turn's delta grows with its text. The
longest sentence in the benchmarks' prose (OpenToM, 12,021 sentences) has 41 words and
marks; 256 leaves room for long literary sentences. Reading is linear in the text, about
2 s for 64 KiB on the development machine, so the deadline is a safety net that ordinary
turns never meet.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from fabula.errors import InvalidInput, LimitExceeded

DEFAULT_TURN_TEXT_BYTES = 64 * 1024
DEFAULT_DELTA_BYTES = 16 * 1024 * 1024
FILE_BYTES = 32 * 1024 * 1024
"""The most a file with no bound of its own is read to (a world pack's ``world.toml``, its
lore file, a character's picture): as much as the largest file an import reads."""
_CHUNK = 1024 * 1024


def read_bounded(path: Path, limit: int, what: str = "the file", setting: str = "") -> bytes:
    """The bytes of ``path``, at most ``limit`` of them, read a chunk at a time.

    Raises :class:`LimitExceeded` (one line naming the file, ``what`` it is, the bound and
    ``setting``, the variable that sets it, when one does) for a file with more, having read
    one byte past the bound and no more (a device or a pipe that never ends, a file that
    grows while it is read); :class:`InvalidInput` for one that cannot be read.
    """
    parts: list[bytes] = []
    size = 0
    try:
        with path.open("rb") as file:
            while size <= limit:
                part = file.read(min(_CHUNK, limit + 1 - size))
                if not part:
                    break
                parts.append(part)
                size += len(part)
    except OSError as exc:
        message = f"{path}: cannot read {what}: {exc.strerror or exc}"
        raise InvalidInput(message, path=str(path)) from None
    if size > limit:
        named = f" ({setting})" if setting else ""
        raise LimitExceeded(
            f"{path}: {what} may be at most {limit:,} bytes, this one has more{named}; "
            "nothing was read",
            path=str(path),
        )
    return b"".join(parts)


DEFAULT_SENTENCE_WORDS = 256
"""The most words (and punctuation marks) of one sentence the prose reader reads."""
DEFAULT_READING_SECONDS = 30.0
"""The most seconds the prose reader spends on one turn's text."""


@dataclass(frozen=True)
class Limits:
    """The largest turn text and commit payload accepted, in bytes, and the bounds of the
    prose reader: words read of one sentence, seconds spent on one turn."""

    turn_text_bytes: int = DEFAULT_TURN_TEXT_BYTES
    delta_bytes: int = DEFAULT_DELTA_BYTES
    sentence_words: int = DEFAULT_SENTENCE_WORDS
    reading_seconds: float = DEFAULT_READING_SECONDS

    def check_text(self, text: str, **context: object) -> None:
        """Raise :class:`LimitExceeded` when ``text`` is longer than a turn may be."""
        self.check_text_size(len(text.encode("utf-8")), **context)

    def check_text_size(self, size: int, **context: object) -> None:
        """Raise :class:`LimitExceeded` when a text of ``size`` bytes is too long for a turn."""
        if size > self.turn_text_bytes:
            raise LimitExceeded(
                f"a turn's text may be at most {self.turn_text_bytes:,} bytes, this one has "
                f"{size:,} (FABULA_MAX_TURN_TEXT); nothing was written",
                **context,
            )

    def check_delta(self, size: int, **context: object) -> None:
        """Raise :class:`LimitExceeded` when a commit's payload is larger than allowed."""
        if size > self.delta_bytes:
            raise LimitExceeded(
                f"the turn's delta is {size:,} bytes, more than the {self.delta_bytes:,} a "
                "commit may send (FABULA_MAX_DELTA_BYTES); nothing was written",
                **context,
            )
