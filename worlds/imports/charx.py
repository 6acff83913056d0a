"""CHARX: a zip holding a V3 card (``card.json``) and its assets (``assets/...``).

The archive is checked from its directory before anything is read: its member count, the
sum of the sizes it declares (against :class:`ImportLimits`), and every member's path —
one that is absolute, climbs out of the archive (``..``), could not be a file's name
(a part past :data:`MAX_NAME_BYTES`, a path past :data:`MAX_PATH_BYTES` or
:data:`MAX_PATH_PARTS` deep) or is a folder of another member's path (``assets/a`` and
``assets/a/b``) is refused. Members are then unpacked a chunk at a time with a running
count, never trusting what they declare: each stops at its declared size, at the
member's, the archive's and the import's bounds, and at the compression ratio a zip bomb
needs (see :mod:`fabula.worlds.imports.limits`). Assets the card references as
``embeded://path`` (sic, the spec's spelling) must be members of the archive.

:func:`write_charx` writes one: ``card.json`` first, then the members (each path checked
as a read would check it), with fixed timestamps so the same card gives the same bytes.
"""

from __future__ import annotations

import io
import json
import zipfile
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import PurePosixPath

from fabula.worlds.imports.limits import Budget, ImportLimits

MAX_NAME_BYTES = 255
"""The longest one part of a member's path may be (UTF-8): a file name on common systems."""
MAX_PATH_BYTES = 1024
"""The longest a member's path may be (UTF-8): well inside a system's path limit, with the
folder it is written under."""
MAX_PATH_PARTS = 32
"""The most parts a member's path may have (real assets are two or three deep)."""
_CHUNK = 64 * 1024


class CharxError(ValueError):
    """The archive is not a CHARX Fabula will read (the message says why)."""


@dataclass(frozen=True)
class Charx:
    """A read CHARX: the text of its ``card.json`` and its other members, by path."""

    card_json: bytes
    members: dict[str, bytes] = field(default_factory=dict)


def _short(name: str) -> str:
    return repr(name if len(name) <= 80 else f"{name[:40]}...{name[-20:]}")


def safe_member(name: str) -> str:
    """``name`` as a relative archive path, or CharxError if it is absolute, climbs out
    (``..``), uses backslashes, drive letters or NUL, or could not be a file's name (see
    :data:`MAX_NAME_BYTES`, :data:`MAX_PATH_BYTES`, :data:`MAX_PATH_PARTS`)."""
    path = PurePosixPath(name)
    if (
        not name
        or "\\" in name
        or "\0" in name
        or path.is_absolute()
        or ".." in path.parts
        or (path.parts and ":" in path.parts[0])
    ):
        raise CharxError(f"member {_short(name)} climbs out of the archive")
    if len(name.encode("utf-8")) > MAX_PATH_BYTES or len(path.parts) > MAX_PATH_PARTS:
        raise CharxError(
            f"member {_short(name)} has a path longer than {MAX_PATH_BYTES} bytes or "
            f"deeper than {MAX_PATH_PARTS} folders"
        )
    if any(len(part.encode("utf-8")) > MAX_NAME_BYTES for part in path.parts):
        raise CharxError(f"member {_short(name)} has a name longer than {MAX_NAME_BYTES} bytes")
    return str(path)


def tree_clash(names: Iterable[str]) -> tuple[str, str] | None:
    """Two of ``names`` (file paths) that cannot both be files, the one a folder of the
    other (``assets/a`` and ``assets/a/b``), or None."""
    files = set(names)
    for name in sorted(files):
        parts = PurePosixPath(name).parts
        for n in range(1, len(parts)):
            folder = "/".join(parts[:n])
            if folder in files:
                return folder, name
    return None


def _read_bounded(
    archive: zipfile.ZipFile, info: zipfile.ZipInfo, limits: ImportLimits, left: int, budget: Budget
) -> bytes:
    """The member unpacked a chunk at a time, refused as soon as it passes its declared
    size, the member bound, ``left`` (what the archive may still unpack), what the import's
    ``budget`` has left, or the ratio; the member's bytes are then taken from ``budget``."""
    name = _short(info.filename)
    chunks: list[bytes] = []
    size = 0
    with archive.open(info) as member:
        while chunk := member.read(_CHUNK):
            size += len(chunk)
            if size > info.file_size:
                raise CharxError(f"member {name} unpacks past the size it declares")
            if size > limits.max_member_bytes:
                raise CharxError(
                    f"member {name} unpacks past the {limits.max_member_bytes} bytes a member may"
                )
            if size > left:
                raise CharxError(
                    f"it unpacks past the {limits.max_unpacked_bytes} bytes an archive may "
                    f"(at member {name})"
                )
            if size > budget.left:
                budget.take(size, f"member {name}")  # refused: past the import's bound
            if size > limits.ratio_floor_bytes and size > limits.max_ratio * max(
                info.compress_size, 1
            ):
                raise CharxError(
                    f"member {name} unpacks to more than {limits.max_ratio} times its "
                    f"{info.compress_size} compressed bytes"
                )
            chunks.append(chunk)
    budget.take(size, f"member {name}")
    return b"".join(chunks)


def read_charx(data: bytes, limits: ImportLimits, budget: Budget | None = None) -> Charx:
    """Read a CHARX archive from its bytes within ``limits`` (and the import's ``budget``,
    which its unpacked members are taken from); CharxError when it is not a zip, is
    encrypted, would unpack past the limits, has a member path that climbs out or could be
    no file's, or has no ``card.json``."""
    budget = budget or Budget(limits)
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
    except (zipfile.BadZipFile, OSError) as exc:
        raise CharxError(f"not a zip archive ({exc})") from None
    with archive:
        infos = archive.infolist()
        if len(infos) > limits.max_archive_members:
            raise CharxError(
                f"{len(infos)} members, more than the {limits.max_archive_members} allowed"
            )
        declared = sum(i.file_size for i in infos)
        if declared > limits.max_unpacked_bytes:
            raise CharxError(
                f"it would unpack to {declared} bytes, more than the "
                f"{limits.max_unpacked_bytes} allowed"
            )
        for info in infos:
            safe_member(info.filename)
            if info.flag_bits & 0x1:
                raise CharxError(f"member {_short(info.filename)} is encrypted")
        names: dict[str, zipfile.ZipInfo] = {}
        for info in infos:
            name = safe_member(info.filename)
            if name in names:
                raise CharxError(f"two members named {_short(name)}")
            if not info.is_dir():
                names[name] = info
        if "card.json" not in names:
            raise CharxError("no card.json at the root of the archive")
        clash = tree_clash(names)
        if clash is not None:
            raise CharxError(
                f"member {_short(clash[1])} is inside {_short(clash[0])}, which is a file"
            )
        members: dict[str, bytes] = {}
        unpacked = 0
        for name, info in names.items():
            left = limits.max_unpacked_bytes - unpacked
            try:
                members[name] = _read_bounded(archive, info, limits, left, budget)
            except (zipfile.BadZipFile, OSError, EOFError, NotImplementedError) as exc:
                raise CharxError(f"member {_short(name)} cannot be read ({exc})") from None
            unpacked += len(members[name])
    card = members.pop("card.json")
    return Charx(card_json=card, members=members)


def embedded_path(uri: str) -> str | None:
    """The archive path of an ``embeded://`` asset URI (None for any other URI); CharxError
    when the path climbs out of the archive."""
    prefix = "embeded://"
    if not uri.startswith(prefix):
        return None
    return safe_member(uri[len(prefix) :])


_EPOCH = (1980, 1, 1, 0, 0, 0)  # the zip format's first date: the same bytes every time


def write_charx(card: Mapping[str, object], members: Mapping[str, bytes]) -> bytes:
    """A CHARX archive of ``card`` (as ``card.json``, UTF-8) and ``members`` (archive path
    to bytes, in sorted order); CharxError for a member path that :func:`safe_member`
    refuses or that is ``card.json``."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as archive:
        text = json.dumps(card, ensure_ascii=False, indent=2) + "\n"
        archive.writestr(
            zipfile.ZipInfo("card.json", _EPOCH), text.encode("utf-8"), zipfile.ZIP_DEFLATED
        )
        for name in sorted(members):
            if safe_member(name) == "card.json":
                raise CharxError("a member may not be named card.json")
            info = zipfile.ZipInfo(name, _EPOCH)
            archive.writestr(info, members[name], zipfile.ZIP_DEFLATED)
    return buf.getvalue()
