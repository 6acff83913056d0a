"""Uploaded files made into a world pack: the studio's import of character cards and
lorebooks, named in errors by their own file names, bounded as one request."""

from __future__ import annotations

import asyncio
import json
import tempfile
from collections.abc import Sequence
from pathlib import Path, PurePath

from fabula.errors import InvalidInput, Remedy
from fabula.worlds.imports import Imported, ImportLimits, import_paths
from fabula.worlds.imports.bookworld import is_preset

MAX_IMPORT_FILES = 16  # files one studio import reads (cards and lorebooks: one cast)
UPLOAD_LIMITS = ImportLimits(max_import_bytes=8 * 1024 * 1024)
"""An upload's import bounds: as the command line's, but one request (one story) holds at
most 8 MiB, files and unpacked archives together. The studio takes bodies of some hundreds
of KiB, so real cards unpack to a few MiB at most (pictures hardly compress); an archive
that inflates is stopped at this, whatever it says of itself."""
MAX_UPLOAD_NAME = 100  # characters of an uploaded file's name kept (its suffix kept whole)


def _is_preset(data: bytes, limits: ImportLimits) -> bool:
    """Whether uploaded ``data`` is a BookWorld preset (JSON naming its roles' folders)."""
    if b"role_agent_codes" not in data or len(data) > limits.max_card_bytes:
        return False
    try:
        return is_preset(json.loads(data))
    except ValueError:
        return False


def _upload_name(name: str) -> str:
    """An uploaded file's base name as a name a file may have: cut to
    :data:`MAX_UPLOAD_NAME` characters and 200 bytes (its suffix, such as ``.charx``,
    kept), NUL and what UTF-8 cannot write dropped. It names a file in a temporary folder,
    and a name past the system's 255 bytes could not."""
    base = PurePath(name.replace("\\", "/").replace("\0", "")).name
    base = base.encode("utf-8", "ignore").decode("utf-8")

    def fits(text: str) -> bool:
        return len(text) <= MAX_UPLOAD_NAME and len(text.encode("utf-8")) <= 200

    if fits(base):
        return base
    suffix = PurePath(base).suffix
    suffix = suffix if len(suffix) <= 16 else ""
    stem = base[: len(base) - len(suffix)][:MAX_UPLOAD_NAME]
    while stem and not fits(stem + suffix):
        stem = stem[:-1]
    return stem + suffix


def _names(files: Sequence[tuple[str, bytes]], limits: ImportLimits) -> list[str]:
    """Each file's name as written in the temporary folder; InvalidInput (one line naming
    the file) for a file that cannot be imported from an upload."""
    if not files:
        raise InvalidInput("an import needs at least one file: a card or a lorebook")
    if len(files) > MAX_IMPORT_FILES:
        raise InvalidInput(f"{len(files)} files; at most {MAX_IMPORT_FILES} import at once")
    names: list[str] = []
    for name, data in files:
        base = _upload_name(name)
        if not base or base.startswith("."):
            raise InvalidInput(f"{name[:80]!r}: a file to import needs a name")
        if base in names:
            raise InvalidInput(f"{base}: two files of that name")
        if len(data) > limits.max_file_bytes:
            raise InvalidInput(
                f"{base}: {len(data)} bytes, more than the {limits.max_file_bytes} a file may have"
            )
        if _is_preset(data, limits):  # its files are beside it, not in the upload
            raise InvalidInput(
                f"{base}: a BookWorld preset reads the folders beside it",
                remedy=Remedy("import_elsewhere"),
            )
        names.append(base)
    return names


async def import_uploads(
    files: Sequence[tuple[str, bytes]], story: str | None, *, user: str
) -> Imported:
    """The pack and assets ``files`` (name and bytes) make, as ``fabula import`` reads
    them: at most :data:`MAX_IMPORT_FILES` files, each within the import's file limit, all
    of them holding at most :data:`UPLOAD_LIMITS`' ``max_import_bytes`` unpacked. Raises
    :class:`InvalidInput` for a bad file (one line naming it by its own name)."""
    limits = UPLOAD_LIMITS
    names = _names(files, limits)
    with tempfile.TemporaryDirectory(prefix="fabula-import-") as folder:
        paths = []
        for base, (_, data) in zip(names, files, strict=True):
            path = Path(folder) / base
            path.write_bytes(data)
            paths.append(path)
        try:
            return await asyncio.to_thread(
                import_paths, paths, story_id=story, user=user, limits=limits
            )
        except InvalidInput as exc:  # named by the file's own name, not the folder's
            line = str(exc).replace(f"{folder}/", "")
            raise InvalidInput(line) from None
