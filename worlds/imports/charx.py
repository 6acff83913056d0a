"""CHARX: a zip holding a V3 card (``card.json``) and its assets (``assets/...``).

The archive is checked from its directory before anything is read: its member count, the
sum of the sizes it declares (against :class:`ImportLimits`), and every member's path —
one that is absolute or climbs out of the archive (``..``) is refused. Members are then
read with their declared size as a hard bound, so a member that lies about its size
cannot unpack past it. Assets the card references as ``embeded://path`` (sic, the spec's
spelling) must be members of the archive.

:func:`write_charx` writes one: ``card.json`` first, then the members (each path checked
as a read would check it), with fixed timestamps so the same card gives the same bytes.
"""

from __future__ import annotations

import io
import json
import zipfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import PurePosixPath

from fabula.worlds.imports.limits import ImportLimits

__all__ = ["Charx", "CharxError", "embedded_path", "read_charx", "safe_member", "write_charx"]


class CharxError(ValueError):
    """The archive is not a CHARX Fabula will read (the message says why)."""


@dataclass(frozen=True)
class Charx:
    """A read CHARX: the text of its ``card.json`` and its other members, by path."""

    card_json: bytes
    members: dict[str, bytes] = field(default_factory=dict)


def safe_member(name: str) -> str:
    """``name`` as a relative archive path, or CharxError if it is absolute, climbs out
    (``..``), or uses backslashes or drive letters."""
    path = PurePosixPath(name)
    if (
        not name
        or "\\" in name
        or path.is_absolute()
        or ".." in path.parts
        or (path.parts and ":" in path.parts[0])
    ):
        raise CharxError(f"member {name!r} climbs out of the archive")
    return str(path)


def _read_bounded(archive: zipfile.ZipFile, info: zipfile.ZipInfo) -> bytes:
    with archive.open(info) as member:
        data = member.read(info.file_size + 1)
    if len(data) > info.file_size:
        raise CharxError(f"member {info.filename!r} unpacks past the size it declares")
    return data


def read_charx(data: bytes, limits: ImportLimits) -> Charx:
    """Read a CHARX archive from its bytes within ``limits``; CharxError when it is not a
    zip, is encrypted, would unpack past the limits, has a member path that climbs out, or
    has no ``card.json``."""
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
                raise CharxError(f"member {info.filename!r} is encrypted")
        names = {i.filename: i for i in infos if not i.is_dir()}
        if "card.json" not in names:
            raise CharxError("no card.json at the root of the archive")
        try:
            members = {name: _read_bounded(archive, info) for name, info in names.items()}
        except (zipfile.BadZipFile, OSError, EOFError, NotImplementedError) as exc:
            raise CharxError(f"a member cannot be read ({exc})") from None
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
