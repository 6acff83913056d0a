"""What one file is: a card (JSON, PNG or CHARX), a lorebook, or a BookWorld preset.

The format is read from the bytes, not the file's name: a PNG signature is a card PNG
(its ``ccv3`` chunk preferred to its ``chara``), a zip a CHARX, and JSON is told apart by
its shape (:func:`~fabula.worlds.imports.cards.detect_card`,
:func:`~fabula.worlds.imports.lorebooks.detect_lorebook`,
:func:`~fabula.worlds.imports.bookworld.is_preset`).
"""

from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from fabula.errors import LimitExceeded
from fabula.limits import read_bounded
from fabula.worlds.imports.bookworld import BookWorldRead, is_preset, read_preset
from fabula.worlds.imports.cards import CardRead, detect_card, read_card
from fabula.worlds.imports.charx import CharxError, embedded_path, read_charx
from fabula.worlds.imports.fields import BadSource, parse_json
from fabula.worlds.imports.limits import Budget, ImportLimits
from fabula.worlds.imports.lorebooks import check_book, detect_lorebook, read_lorebook
from fabula.worlds.imports.png import (
    PngError,
    picture_format,
    read_text_chunks,
    without_card_chunks,
)
from fabula.worlds.lore import LoreBook, WorldInfoSettings


@dataclass(frozen=True)
class Source:
    """One file, read: exactly one of a card, a world lorebook or a preset; ``kind`` says
    what it was read as (shown by ``fabula import``)."""

    path: str
    kind: str
    card: CardRead | None = None
    book: LoreBook | None = None
    world: BookWorldRead | None = None
    settings: WorldInfoSettings | None = None
    """A SillyTavern ``settings.json``'s World Info settings."""
    findings: tuple[str, ...] = ()
    """What the import changed to make the file work, one line each (an entry imported
    disabled, naming it and why)."""


def _json(raw: bytes, what: str, limits: ImportLimits) -> Any:
    if len(raw) > limits.max_card_bytes:
        raise BadSource(
            f"{what} is {len(raw)} bytes, more than the {limits.max_card_bytes} allowed"
        )
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise BadSource(f"{what} is not UTF-8 text ({exc})") from None
    return parse_json(text, what, limits.max_json_depth)


def _b64(raw: bytes, keyword: str, limits: ImportLimits) -> bytes:
    # base64 grows 4/3: refuse before decoding what would decode past the card limit
    if len(raw) > limits.max_card_bytes * 4 // 3 + 4:
        raise BadSource(
            f"the {keyword!r} chunk is larger than the {limits.max_card_bytes} bytes a card may be"
        )
    try:
        return base64.b64decode(raw, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise BadSource(f"the {keyword!r} chunk is not valid base64 ({exc})") from None


def _card(
    doc: Any, path: Path, user: str, limits: ImportLimits, budget: Budget
) -> tuple[CardRead, tuple[str, ...]]:
    """The card, its book as Fabula can activate it, and the findings of that book."""
    card = read_card(doc, _fallback(path), user, limits)
    if card.book is None:
        return card, ()
    book, findings = check_book(card.book, budget)
    where = "data.character_book."
    return replace(card, book=book), tuple(where + f for f in findings)


def _fallback(path: Path) -> str:
    stem = path.name.split(".")[0]
    return stem if stem.isascii() and any(ch.isalnum() for ch in stem) else "Character"


def _read(path: Path, limits: ImportLimits) -> bytes:
    """The file's bytes. Raises BadSource for no such file or one over the size limit."""
    if not path.is_file():
        raise BadSource("no such file")
    size = path.stat().st_size
    if size > limits.max_file_bytes:
        raise BadSource(f"{size} bytes, more than the {limits.max_file_bytes} a file may be")
    try:  # bounded as it is read, too: it may grow since its size was read
        return read_bounded(path, limits.max_file_bytes)
    except LimitExceeded:
        raise BadSource(f"more than the {limits.max_file_bytes} bytes a file may be") from None


def _png(
    name: str, raw: bytes, path: Path, user: str, limits: ImportLimits, budget: Budget
) -> Source:
    """A PNG character card (its ``ccv3`` or ``chara`` text chunk), the picture without
    it. Raises BadSource for a PNG with no card in it."""
    try:
        chunks = read_text_chunks(raw)
    except PngError as exc:
        raise BadSource(str(exc)) from None
    keyword = "ccv3" if "ccv3" in chunks else "chara" if "chara" in chunks else None
    if keyword is None:
        raise BadSource("a PNG with no character card in it (no 'chara' or 'ccv3' text chunk)")
    doc = _json(_b64(chunks[keyword], keyword, limits), f"the {keyword!r} chunk", limits)
    if detect_card(doc) is None:
        raise BadSource(f"the {keyword!r} chunk holds no character card")
    card, findings = _card(doc, path, user, limits, budget)
    image = without_card_chunks(raw)
    return Source(
        name,
        f"card {card.kept.spec} (PNG, {keyword})",
        card=replace(card, image=image),
        findings=findings,
    )


def _charx(
    name: str, raw: bytes, path: Path, user: str, limits: ImportLimits, budget: Budget
) -> Source:
    """A CHARX archive's card and its assets (unpacked members taken from ``budget``).
    Raises BadSource for a bad archive or one with no card."""
    try:
        archive = read_charx(raw, limits, budget)
    except CharxError as exc:
        raise BadSource(f"CHARX: {exc}") from None
    doc = _json(archive.card_json, "card.json", limits)
    if detect_card(doc) is None:
        raise BadSource("CHARX: card.json holds no character card")
    card, findings = _card(doc, path, user, limits, budget)
    assets = _charx_assets(card, archive.members)
    return Source(
        name,
        f"card {card.kept.spec} (CHARX, {len(assets)} assets)",
        card=replace(card, assets=assets, image=_icon(card, assets)),
        findings=findings,
    )


def read_source(
    path: Path, user: str, limits: ImportLimits, budget: Budget | None = None
) -> Source:
    """Read one file, taking what it holds from the import's ``budget`` (a file that is not
    an archive: its bytes; an archive: its unpacked members). Raises BadSource (what and
    why) for a file Fabula cannot import."""
    budget = budget or Budget(limits)
    raw = _read(path, limits)
    name = str(path)
    if not raw.startswith(b"PK"):
        budget.take(len(raw), "the file")
    if raw.startswith(b"\x89PNG"):
        return _png(name, raw, path, user, limits, budget)
    if raw.startswith(b"PK"):
        return _charx(name, raw, path, user, limits, budget)
    doc = _json(raw, "the file", limits)
    spec = detect_card(doc)
    if spec is not None:
        card, findings = _card(doc, path, user, limits, budget)
        return Source(name, f"card {card.kept.spec} (JSON)", card=card, findings=findings)
    if is_preset(doc):
        world = read_preset(path, doc, limits, budget)
        books, found = [], []
        for book in world.books:
            checked, findings = check_book(book, budget)
            books.append(checked)
            found += [f"book {book.name!r}: {f}" for f in findings]
        return Source(
            name,
            f"BookWorld preset ({len(world.roles)} roles)",
            world=replace(world, books=tuple(books)),
            findings=tuple(found),
        )
    if isinstance(doc, dict) and isinstance(doc.get("world_info_settings"), dict):
        settings = world_info_settings(doc["world_info_settings"], doc)
        return Source(name, "SillyTavern settings (World Info)", settings=settings)
    fmt = detect_lorebook(doc)
    if fmt is not None:
        book = read_lorebook(doc, fmt, _fallback(path), limits)
        book, findings = check_book(book, budget)
        return Source(
            name, f"lorebook {fmt} ({len(book.entries)} entries)", book=book, findings=findings
        )
    if isinstance(doc, dict) and "spec" in doc:
        raise BadSource(
            f"unknown spec {doc['spec']!r} (Fabula reads chara_card_v1/v2/v3, lorebook_v3)"
        )
    raise BadSource("not a character card, lorebook or BookWorld preset Fabula knows")


_ST_SETTINGS = {
    # settings.json's world_info_settings field -> WorldInfoSettings field, its type
    "world_info_case_sensitive": ("case_sensitive", bool),
    "world_info_match_whole_words": ("match_whole_words", bool),
    "world_info_recursive": ("recursive", bool),
    "world_info_max_recursion_steps": ("max_recursion_steps", int),
    "world_info_depth": ("depth", int),
    "world_info_budget": ("budget", int),
    "world_info_budget_cap": ("budget_cap", int),
    "world_info_include_names": ("include_names", bool),
    "world_info_min_activations": ("min_activations", int),
    "world_info_min_activations_depth_max": ("min_activations_depth_max", int),
    "world_info_use_group_scoring": ("use_group_scoring", bool),
}


def world_info_settings(
    raw: dict[str, Any], whole: dict[str, Any] | None = None
) -> WorldInfoSettings:
    """A SillyTavern ``settings.json``'s ``world_info_settings`` (as its
    ``setWorldInfoSettings`` reads them, world-info.js 767-800: a field it does not hold keeps
    the fresh install's default; numbers as ``Number`` reads them, so ``"3"`` is 3), with,
    from the ``whole`` file, the context the budget is a percent of (:func:`max_context`)
    and its tags, id to name (``tags``, for the entries' character filters). Raises
    BadSource naming a field of the wrong type or out of range."""
    found: dict[str, Any] = {}
    for field, (name, kind) in _ST_SETTINGS.items():
        if field not in raw:
            continue
        value = raw[field]
        where = f"world_info_settings.{field}"
        if kind is bool:
            if not isinstance(value, bool):
                raise BadSource(f"{where}: {value!r} is not true or false")
            found[name] = value
            continue
        number = _count(value)
        if number is None:
            raise BadSource(f"{where}: {value!r} is not a whole number of 0 or more")
        found[name] = number
    whole = whole or {}
    found["context"] = max_context(whole)
    tags = whole.get("tags")
    if isinstance(tags, list):
        found["tags"] = {
            str(t["id"]): t["name"]
            for t in tags
            if isinstance(t, dict) and "id" in t and isinstance(t.get("name"), str)
        }
    return WorldInfoSettings(**found)


def _count(value: Any) -> int | None:
    """``value`` as a whole number of 0 or more, as ``Number`` reads it, or None."""
    if isinstance(value, bool):
        return None
    try:
        number = int(value)
    except (TypeError, ValueError):
        return None
    return number if number >= 0 else None


def max_context(settings: dict[str, Any]) -> int | None:
    """The context World Info's budget is a percent of, as SillyTavern's
    ``getMaxContextSize`` gives it to ``checkWorldInfo`` (script.js 4840-4876, 3587, 3663)
    from a ``settings.json``: for a Chat Completion API (``main_api`` ``openai``) its
    ``oai_settings.openai_max_context`` less ``openai_max_tokens``, else ``max_context``
    less ``amount_gen`` (NovelAI's per-model limits, 4850-4869, are not applied); None
    where the file holds neither, or the response takes it all."""
    if settings.get("main_api") == "openai":
        oai = settings.get("oai_settings")
        if not isinstance(oai, dict):
            return None
        size, reply = _count(oai.get("openai_max_context")), _count(oai.get("openai_max_tokens"))
    else:
        size, reply = _count(settings.get("max_context")), _count(settings.get("amount_gen"))
    if size is None:
        return None
    context = size - (reply or 0)
    return context if context >= 1 else None


_CLAIMS = {"png": "png", "jpg": "jpeg", "jpeg": "jpeg", "webp": "webp"}
"""A CHARX asset's ``ext`` that claims a picture format, and which."""


def _charx_assets(card: CardRead, members: dict[str, bytes]) -> dict[str, bytes]:
    """The archive's members, by path, once every ``embeded://`` asset the card references
    is known to be one of them."""
    found: dict[str, bytes] = {}
    assets = card.kept.data.get("assets") or []
    if not isinstance(assets, list):
        raise BadSource("data.assets: expected a list")
    for i, asset in enumerate(assets):
        if not isinstance(asset, dict) or not isinstance(asset.get("uri"), str):
            raise BadSource(f"data.assets[{i}]: expected an object with a uri")
        try:
            member = embedded_path(asset["uri"])
        except CharxError as exc:
            raise BadSource(f"CHARX: data.assets[{i}].uri: {exc}") from None
        if member is None:
            continue
        if member not in members:
            raise BadSource(f"CHARX: data.assets[{i}].uri: no member {member!r} in the archive")
        claimed = _CLAIMS.get(str(asset.get("ext", "")).lower())
        found_as = picture_format(members[member])
        if claimed is not None and found_as != claimed:
            raise BadSource(
                f"CHARX: data.assets[{i}]: {member!r} is not the {claimed} picture its ext "
                f"says ({f'a {found_as}' if found_as else 'no picture Fabula knows'})"
            )
    # every member is kept (an application's own JSON at the root, unreferenced assets)
    found.update(members)
    return found


def _icon(card: CardRead, assets: dict[str, bytes]) -> bytes | None:
    """The card's main icon, if it is an embedded picture (PNG, JPEG or WebP)."""
    for asset in card.kept.data.get("assets") or []:
        if asset.get("type") == "icon" and asset.get("name", "main") == "main":
            member = embedded_path(asset["uri"])
            if member in assets and picture_format(assets[member]) is not None:
                return assets[member]
    return None
