"""Writing an imported world as a pack folder a user can read and edit.

The folder gets ``world.toml`` (the pack, ``lore = "lore.json"``), ``lore.json`` (its
lore: lorebooks and every kept source field, as JSON) and ``assets/`` (pictures). It is
written into a fresh temporary folder beside the target and renamed into place, so a
failed write leaves nothing; a target that exists and is not empty is refused.
"""

from __future__ import annotations

import json
import re
import shutil
import tempfile
from pathlib import Path
from typing import Any

from fabula.errors import FabulaError, InvalidInput
from fabula.worlds.imports.assemble import check_asset_names
from fabula.worlds.loader import load_world
from fabula.worlds.pack import WorldPack

LORE_FILE = "lore.json"
"""The name of the lore file beside ``world.toml``."""


def _string(value: str) -> str:
    # a JSON string is a TOML basic string, but for DEL, which TOML wants escaped
    return json.dumps(value, ensure_ascii=False).replace("\x7f", "\\u007f")


_BARE = re.compile(r"[A-Za-z0-9_-]+")


def _key(key: str) -> str:
    """``key`` as a TOML key: bare where TOML allows it (ASCII letters, digits, ``_`` and
    ``-`` only), quoted otherwise ("Größe" is an identifier to Python, not to TOML)."""
    return key if _BARE.fullmatch(key) else _string(key)


def _value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return json.dumps(value)
    if isinstance(value, str):
        return _string(value)
    if isinstance(value, list):
        return "[" + ", ".join(_value(v) for v in value) + "]"
    raise TypeError(f"no TOML for {type(value).__name__}")


def _is_tables(value: Any) -> bool:
    return isinstance(value, list) and bool(value) and all(isinstance(v, dict) for v in value)


def _table(path: str, data: dict[str, Any], out: list[str]) -> None:
    for key, value in data.items():
        if not isinstance(value, dict) and not _is_tables(value) and value is not None:
            out.append(f"{_key(key)} = {_value(value)}")
    for key, value in data.items():
        sub = f"{path}.{_key(key)}" if path else _key(key)
        if isinstance(value, dict):
            out.append(f"\n[{sub}]")
            _table(sub, value, out)
        elif _is_tables(value):
            for row in value:
                out.append(f"\n[[{sub}]]")
                _table(sub, row, out)


def pack_toml(pack: WorldPack, lore_file: str | None) -> str:
    """The pack as ``world.toml`` text, naming ``lore_file`` for its lore (None: no lore)."""
    data = pack.model_dump(mode="json", exclude={"lore"}, exclude_defaults=True)
    head = {k: v for k, v in data.items() if k in ("id", "title", "premise", "style", "outline")}
    if lore_file:
        head["lore"] = lore_file
    rest = {k: v for k, v in data.items() if k not in head}
    lines = ["# Imported by `fabula import`: edit freely; `fabula new --world DIR` makes a story."]
    _table("", {**head, **rest}, lines)
    return "\n".join(lines) + "\n"


def write_pack(pack: WorldPack, assets: dict[str, bytes], folder: Path) -> Path:
    """Write the pack folder (see the module's docstring); returns ``folder/world.toml``.

    Raises :class:`InvalidInput` when ``folder`` exists and is not empty, or an asset's name
    would climb out of it or could be no file's (:func:`check_asset_names`). The written
    pack is loaded back before it is put in place.
    """
    if folder.exists() and (not folder.is_dir() or any(folder.iterdir())):
        raise InvalidInput(
            f"{folder}: exists and is not an empty folder; choose a new one", path=str(folder)
        )
    check_asset_names(assets)
    folder.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=".fabula-import-", dir=folder.parent))
    try:
        lore = pack.lore.model_dump(mode="json", exclude_defaults=True)
        (work / "world.toml").write_text(
            pack_toml(pack, LORE_FILE if lore else None), encoding="utf-8"
        )
        if lore:
            (work / LORE_FILE).write_text(
                json.dumps(lore, ensure_ascii=False, indent=1) + "\n", encoding="utf-8"
            )
        for name, data in assets.items():
            target = work / name
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
        try:
            loaded = load_world(work)
        except FabulaError as exc:  # said of the folder the user named, not the temporary one
            raise InvalidInput(str(exc).replace(str(work), str(folder)), path=str(folder)) from None
        if loaded.model_dump() != pack.model_dump():
            raise InvalidInput(f"{folder}: the written pack does not read back as imported (a bug)")
        if folder.exists():
            folder.rmdir()
        work.rename(folder)
    except BaseException:
        shutil.rmtree(work, ignore_errors=True)
        raise
    return folder / "world.toml"
