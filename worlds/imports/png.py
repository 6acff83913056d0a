"""PNG ``tEXt`` chunks, read and written with the standard library (zlib, struct), and what
format a picture is.

A character card in a PNG is the base64 of its JSON in a ``tEXt`` chunk keyed ``chara``
(V2) or ``ccv3`` (V3). Reading checks the signature and each chunk's CRC; writing puts the
text chunks before ``IEND`` and drops any earlier card chunks, so the picture is unchanged.

A picture an import keeps (a role's icon, a card's) is told by its first bytes, not its
name (:func:`picture_format`): BookWorld's ``icon.png`` files are often JPEGs.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Iterator

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
CARD_KEYWORDS = ("chara", "ccv3")
"""The keywords of the text chunks a card is written in (V2, V3)."""


PICTURE_FORMATS = ("png", "jpeg", "webp")
"""The formats a picture may have (what :func:`picture_format` tells), as file extensions."""


class PngError(ValueError):
    """The bytes are not a well-formed PNG (the message says where)."""


def picture_format(data: bytes) -> str | None:
    """``png``, ``jpeg`` or ``webp`` by the picture's signature (its magic bytes), or None
    for bytes that are none of them."""
    if data.startswith(PNG_SIGNATURE):
        return "png"
    if data.startswith(b"\xff\xd8\xff"):
        return "jpeg"
    if len(data) >= 12 and data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "webp"
    return None


def _chunks(data: bytes) -> Iterator[tuple[bytes, memoryview, int]]:
    """Every chunk as (type, data, offset), one at a time, its data a view into ``data``
    (never a copy); PngError for a malformed file.

    One at a time: a 31 MB file of empty chunks (2.6 million of them) took 662 MB to
    import when they were listed first, each with a copy of its body (issue 45)."""
    if not data.startswith(PNG_SIGNATURE):
        raise PngError("not a PNG (no PNG signature)")
    view = memoryview(data)
    last = b""
    pos = len(PNG_SIGNATURE)
    while pos < len(data):
        if pos + 8 > len(data):
            raise PngError(f"truncated chunk header at byte {pos}")
        (length,) = struct.unpack(">I", data[pos : pos + 4])
        kind = data[pos + 4 : pos + 8]
        end = pos + 12 + length
        if end > len(data):
            raise PngError(f"chunk {kind!r} at byte {pos} runs past the end of the file")
        body = view[pos + 8 : pos + 8 + length]
        (crc,) = struct.unpack(">I", data[pos + 8 + length : end])
        if zlib.crc32(body, zlib.crc32(kind)) & 0xFFFFFFFF != crc:
            raise PngError(f"chunk {kind!r} at byte {pos} has a bad CRC")
        yield kind, body, pos
        last = kind
        pos = end
        if kind == b"IEND":
            break
    if last != b"IEND":
        raise PngError("no IEND chunk: the file is truncated")


def read_text_chunks(data: bytes) -> dict[str, bytes]:
    """The ``tEXt`` chunks of a PNG, keyword to text (the first of each keyword).

    Raises :class:`PngError` for bytes that are not a well-formed PNG.
    """
    found: dict[str, bytes] = {}
    for kind, body, pos in _chunks(data):
        if kind != b"tEXt":
            continue
        keyword, sep, text = bytes(body).partition(b"\x00")
        if not sep:
            raise PngError(f"tEXt chunk at byte {pos} has no keyword separator")
        found.setdefault(keyword.decode("latin-1"), text)
    return found


def _chunk(kind: bytes, body: bytes | memoryview) -> bytes:
    crc = zlib.crc32(body, zlib.crc32(kind)) & 0xFFFFFFFF
    return struct.pack(">I", len(body)) + kind + bytes(body) + struct.pack(">I", crc)


def with_text_chunks(data: bytes, texts: dict[str, bytes]) -> bytes:
    """The PNG ``data`` with ``texts`` as ``tEXt`` chunks (before ``IEND``) and no other
    card chunks (:data:`CARD_KEYWORDS`) than those. Raises :class:`PngError` for bytes that
    are not a well-formed PNG."""
    out = bytearray(PNG_SIGNATURE)  # one buffer: no list of millions of small chunks
    for kind, body, _ in _chunks(data):
        if kind == b"tEXt" and _keyword(body) in CARD_KEYWORDS:
            continue
        if kind == b"IEND":
            for k, v in texts.items():
                out += _chunk(b"tEXt", k.encode("latin-1") + b"\x00" + v)
        out += _chunk(kind, body)
    return bytes(out)


def _keyword(body: memoryview) -> str:
    """A ``tEXt`` chunk's keyword (at most 79 bytes, before its NUL)."""
    head = bytes(body[:80])
    return head.partition(b"\x00")[0].decode("latin-1")


def without_card_chunks(data: bytes) -> bytes:
    """The picture of a card PNG: the file with its card chunks removed."""
    return with_text_chunks(data, {})
