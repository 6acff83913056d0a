"""Lorebooks of every format Fabula imports, read into :class:`~fabula.worlds.lore.LoreBook`.

=================  ================================================================
format             recognised by
=================  ================================================================
lorebook_v3        ``{"spec": "lorebook_v3", "data": Lorebook}`` (character-card V3)
character_book     a card's ``data.character_book`` (V2/V3), or such a book alone
sillytavern        ``{"entries": {uid: entry}}``, entries with ``key``/``keysecondary``
koboldai           KoboldAI World Info: a list of entries, ``{"worldinfo": [...]}``, or
                   ``{"entries": {uid: entry}, "folders": ...}`` (entries with ``folder``)
novelai            ``{"lorebookVersion": n, "entries": [...]}`` (``.lorebook``)
agnai              ``{"kind": "memory", "entries": [...]}`` (an Agnai memory book)
=================  ================================================================

Each entry's fields with a meaning in Fabula are mapped (see docs/guides/imports.md); every
other field — ``extensions`` included — is kept verbatim in the entry's ``kept``, and the
book's own other fields in the book's ``kept``. :func:`check_book` disables, with a finding,
an entry whose regex keys RE2 cannot run or that would pass the import's bounds on them,
and refuses a book whose recursive scanning would go round in a cycle.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from fabula.worlds.imports.fields import (
    BadSource,
    boolean,
    integer,
    obj,
    optional_bool,
    strings,
    text,
)
from fabula.worlds.imports.keys import KeyError_, KeyFinder, key_matches, program_size
from fabula.worlds.imports.limits import Budget, ImportLimits
from fabula.worlds.lore import LoreBook, LoreEntry, SecondaryLogic

LOGIC_CODES: dict[int, SecondaryLogic] = {0: "and_any", 1: "not_all", 2: "not_any", 3: "and_all"}
"""SillyTavern's ``selectiveLogic`` numbers."""


def _logic(value: Any, where: str) -> SecondaryLogic:
    if value is None:
        return "and_any"
    if isinstance(value, bool) or not isinstance(value, int) or value not in LOGIC_CODES:
        raise BadSource(f"{where}: selectiveLogic {value!r} is not 0, 1, 2 or 3")
    return LOGIC_CODES[value]


def _rest(data: dict[str, Any], mapped: set[str]) -> dict[str, Any]:
    return {k: v for k, v in data.items() if k not in mapped}


_CARD_ENTRY = {
    "keys",
    "content",
    "secondary_keys",
    "selective",
    "enabled",
    "constant",
    "case_sensitive",
    "use_regex",
    "insertion_order",
    "priority",
    "position",
    "name",
}


_AS_SILLYTAVERN = _CARD_ENTRY - {"use_regex", "case_sensitive"}
"""The fields of a card's book entry SillyTavern maps (``convertCharacterBook``, world-info.js
4519-4566): ``use_regex`` and the top-level ``case_sensitive`` are not among them."""


def _card_entry(raw: Any, where: str, as_sillytavern: bool) -> LoreEntry:
    """A V2/V3 lorebook entry; SillyTavern's own fields are read from its extensions.

    ``as_sillytavern`` (a card's own book): read as SillyTavern's ``convertCharacterBook``
    reads it (world-info.js 4519-4566), the reader the book's author saw it work in:
    ``use_regex`` is ignored (SillyTavern's card export writes ``true`` on every entry, so
    honouring it made "king" fire on "liking" and a key ``c++`` refuse a card), the case
    comes from ``extensions.case_sensitive`` (4549) and not the top-level field, both kept
    verbatim so an export gives them back. A ``lorebook_v3`` file (which SillyTavern does not
    import) is read as the V3 spec has it."""
    e = obj(raw, where)
    ext = obj(e.get("extensions") or {}, f"{where}.extensions")
    whole = ext.get("match_whole_words")
    if as_sillytavern:
        case = ext.get("case_sensitive")
        case_sensitive = case if isinstance(case, bool) else None
        use_regex = False
    else:
        case_sensitive = optional_bool(e, "case_sensitive", where)
        use_regex = boolean(e, "use_regex", where, False)
    return LoreEntry(
        keys=strings(e, "keys", where),
        content=text(e, "content", where),
        secondary_keys=strings(e, "secondary_keys", where),
        selective=boolean(e, "selective", where, False),
        logic=_logic(ext.get("selectiveLogic"), f"{where}.extensions"),
        name=text(e, "name", where) or text(e, "comment", where),
        enabled=boolean(e, "enabled", where, True),
        constant=boolean(e, "constant", where, False),
        case_sensitive=case_sensitive,
        whole_words=whole if isinstance(whole, bool) else None,
        use_regex=use_regex,
        order=integer(e, "insertion_order", where, 100) or 0,
        priority=integer(e, "priority", where, None),
        position=text(e, "position", where) or None,
        exclude_recursion=ext.get("exclude_recursion") is True,
        prevent_recursion=ext.get("prevent_recursion") is True,
        kept=_kept_card_entry(e, as_sillytavern),
    )


def _kept_card_entry(e: dict[str, Any], as_sillytavern: bool) -> dict[str, Any]:
    """A card entry's fields Fabula does not map, verbatim; read as SillyTavern does,
    ``use_regex`` among them when it is true (false is what every export writes)."""
    if not as_sillytavern:
        return _rest(e, _CARD_ENTRY)
    kept = _rest(e, _AS_SILLYTAVERN)
    if kept.get("use_regex") is False:
        del kept["use_regex"]
    return kept


_CARD_BOOK = {"name", "description", "scan_depth", "token_budget", "recursive_scanning", "entries"}


def read_card_book(
    raw: Any, where: str, owner: str | None, fmt: str, limits: ImportLimits
) -> LoreBook:
    """A V2/V3 ``Lorebook`` object (a card's ``character_book`` or a ``lorebook_v3``'s data)."""
    book = obj(raw, where)
    entries = book.get("entries")
    if not isinstance(entries, list):
        raise BadSource(f"{where}.entries: expected a list of entries")
    _count(entries, where, limits)
    return LoreBook(
        name=text(book, "name", where),
        description=text(book, "description", where),
        owner=owner,
        format=fmt,
        scan_depth=integer(book, "scan_depth", where, None),
        token_budget=integer(book, "token_budget", where, None),
        recursive_scanning=optional_bool(book, "recursive_scanning", where),
        entries=tuple(
            _card_entry(e, f"{where}.entries[{i}]", fmt == "character_book")
            for i, e in enumerate(entries)
        ),
        kept=_rest(book, _CARD_BOOK),
    )


_ST_ENTRY = {
    "key",
    "keysecondary",
    "content",
    "comment",
    "constant",
    "selective",
    "selectiveLogic",
    "order",
    "disable",
    "excludeRecursion",
    "preventRecursion",
    "caseSensitive",
    "matchWholeWords",
}


def _kobold_fields(e: dict[str, Any], where: str) -> dict[str, Any]:
    """The fields a KoboldAI entry has, which SillyTavern's entries have too."""
    return {
        "keys": strings(e, "key", where),
        "content": text(e, "content", where),
        "secondary_keys": strings(e, "keysecondary", where),
        "selective": boolean(e, "selective", where, False),
        "name": text(e, "comment", where),
        "constant": boolean(e, "constant", where, False),
    }


def _st_entry(raw: Any, where: str) -> LoreEntry:
    e = obj(raw, where)
    return LoreEntry(
        **_kobold_fields(e, where),
        logic=_logic(e.get("selectiveLogic"), where),
        enabled=not boolean(e, "disable", where, False),
        case_sensitive=optional_bool(e, "caseSensitive", where),
        whole_words=optional_bool(e, "matchWholeWords", where),
        order=integer(e, "order", where, 100) or 0,
        exclude_recursion=boolean(e, "excludeRecursion", where, False),
        prevent_recursion=boolean(e, "preventRecursion", where, False),
        kept=_rest(e, _ST_ENTRY),
    )


_KOBOLD_ENTRY = {"key", "keysecondary", "content", "comment", "constant", "selective"}


def _kobold_entry(raw: Any, where: str) -> LoreEntry:
    e = obj(raw, where)
    return LoreEntry(**_kobold_fields(e, where), kept=_rest(e, _KOBOLD_ENTRY))


_NOVELAI_ENTRY = {"text", "displayName", "keys", "enabled", "forceActivation"}


def _novelai_entry(raw: Any, where: str) -> LoreEntry:
    e = obj(raw, where)
    config = obj(e.get("contextConfig") or {}, f"{where}.contextConfig")
    return LoreEntry(
        keys=strings(e, "keys", where),
        content=text(e, "text", where),
        name=text(e, "displayName", where),
        enabled=boolean(e, "enabled", where, True),
        constant=boolean(e, "forceActivation", where, False),
        # NovelAI keys are case-insensitive; its budgetPriority orders what is kept
        case_sensitive=False,
        priority=integer(config, "budgetPriority", f"{where}.contextConfig", None),
        kept=_rest(e, _NOVELAI_ENTRY),
    )


_AGNAI_ENTRY = {"name", "entry", "keywords", "priority", "enabled"}


def _agnai_entry(raw: Any, where: str) -> LoreEntry:
    e = obj(raw, where)
    return LoreEntry(
        keys=strings(e, "keywords", where),
        content=text(e, "entry", where),
        name=text(e, "name", where),
        enabled=boolean(e, "enabled", where, True),
        priority=integer(e, "priority", where, None),
        kept=_rest(e, _AGNAI_ENTRY),
    )


def _count(entries: list[Any] | dict[str, Any], where: str, limits: ImportLimits) -> None:
    if len(entries) > limits.max_entries:
        raise BadSource(
            f"{where}: {len(entries)} entries, more than the {limits.max_entries} allowed"
        )


def detect_lorebook(doc: Any) -> str | None:
    """The lorebook format of a parsed JSON document (see the module's table), or None."""
    if isinstance(doc, list):
        return "koboldai" if all(isinstance(e, dict) and "key" in e for e in doc) else None
    if not isinstance(doc, dict):
        return None
    if doc.get("spec") == "lorebook_v3":
        return "lorebook_v3"
    if "lorebookVersion" in doc:
        return "novelai"
    if doc.get("kind") == "memory":
        return "agnai"
    if isinstance(doc.get("worldinfo"), list):
        return "koboldai"
    entries = doc.get("entries")
    if isinstance(entries, dict):
        values = list(entries.values())
        if "folders" in doc or any(isinstance(e, dict) and "folder" in e for e in values):
            return "koboldai"
        return "sillytavern"
    if isinstance(entries, list) and "spec" not in doc:
        return "character_book"
    return None


def _kobold_book(doc: Any, name: str, limits: ImportLimits) -> LoreBook:
    """A KoboldAI world info (its entries a dict or a list, under ``worldinfo`` or
    ``entries`` or the document itself), its layout kept."""
    raw: Any = doc
    if isinstance(doc, dict):
        raw = doc.get("worldinfo") if "worldinfo" in doc else doc["entries"]
    items = list(raw.items()) if isinstance(raw, dict) else list(enumerate(raw))
    _count(items, "entries", limits)
    kept = _rest(doc, {"entries", "worldinfo"}) if isinstance(doc, dict) else {}
    read = tuple(_kobold_entry(e, f"entries[{k!r}]") for k, e in items)
    return LoreBook(
        name=name,
        format="koboldai",
        entries=read,
        kept={**kept, "layout": "dict" if isinstance(raw, dict) else "list"},
    )


def read_lorebook(doc: Any, fmt: str, name: str, limits: ImportLimits) -> LoreBook:
    """Read a world lorebook of format ``fmt`` (from :func:`detect_lorebook`); ``name`` is
    its name when it has none (the file's). Raises BadSource naming the field."""
    if fmt == "lorebook_v3":
        data = obj(doc.get("data"), "data")
        book = read_card_book(data, "data", None, fmt, limits)
        kept = _rest(doc, {"spec", "data"})
        return book.model_copy(
            update={
                "name": book.name or name,
                "kept": {**book.kept, **({"top": kept} if kept else {})},
            }
        )
    if fmt == "character_book":
        book = read_card_book(doc, "(book)", None, fmt, limits)
        return book.model_copy(update={"name": book.name or name})
    if fmt == "sillytavern":
        entries = obj(doc["entries"], "entries")
        _count(entries, "entries", limits)
        read = tuple(_st_entry(e, f"entries[{uid!r}]") for uid, e in entries.items())
        return LoreBook(
            name=text(doc, "name", "(book)") or name,
            format=fmt,
            entries=read,
            kept=_rest(doc, {"entries", "name"}),
        )
    if fmt == "koboldai":
        return _kobold_book(doc, name, limits)
    if fmt == "novelai":
        entries = doc.get("entries")
        if not isinstance(entries, list):
            raise BadSource("entries: expected a list of entries")
        _count(entries, "entries", limits)
        read = tuple(_novelai_entry(e, f"entries[{i}]") for i, e in enumerate(entries))
        return LoreBook(name=name, format=fmt, entries=read, kept=_rest(doc, {"entries"}))
    if fmt == "agnai":
        entries = doc.get("entries")
        if not isinstance(entries, list):
            raise BadSource("entries: expected a list of entries")
        _count(entries, "entries", limits)
        read = tuple(_agnai_entry(e, f"entries[{i}]") for i, e in enumerate(entries))
        return LoreBook(
            name=text(doc, "name", "(book)") or name,
            description=text(doc, "description", "(book)"),
            format=fmt,
            entries=read,
            kept=_rest(doc, {"entries", "name", "description"}),
        )
    raise BadSource(f"unknown lorebook format {fmt!r}")


def _label(book: LoreBook, i: int) -> str:
    entry = book.entries[i]
    return repr(entry.name or (entry.keys[0] if entry.keys else f"entry {i}"))


def check_book(book: LoreBook, budget: Budget | None = None) -> tuple[LoreBook, tuple[str, ...]]:
    """The book as Fabula can activate it, and one finding for each entry it imported
    disabled. An entry is disabled, with one line naming it (``entries[i] ('name'): ...``),
    when one of its keys is a regular expression RE2 cannot run (a lookahead, a
    backreference, a program past :data:`~fabula.worlds.imports.keys.KEY_MEM`), or when its
    regex keys would take the book past ``max_book_program`` RE2 instructions or the import
    (``budget``) past ``max_story_program``; the rest of the book works (issue 49, as
    SillyTavern runs the rest of a book whose one key throws, ``world-info.js``; and issue
    45: what keys may hold is bounded at import, so no recall compiles more). An entry
    disabled by its author is not compiled at all.

    Raises BadSource naming the entries when the book scans recursively and entries
    activate each other in a cycle."""
    budget = budget or Budget(ImportLimits())
    limits = budget.limits
    entries = list(book.entries)
    findings: list[str] = []
    used = 0
    for i, entry in enumerate(entries):
        if not entry.enabled:
            continue
        size = 0
        why = None
        for key in (*entry.keys, *entry.secondary_keys):
            try:
                size += program_size(key, entry.use_regex, bool(entry.case_sensitive))
            except KeyError_ as exc:
                why = str(exc)
                break
        if why is None and size:
            if used + size > limits.max_book_program:
                why = (
                    f"its regex keys would take the book past the {limits.max_book_program} "
                    "RE2 instructions one book may hold"
                )
            elif not budget.take_program(size):
                why = (
                    f"its regex keys would take the import past the "
                    f"{limits.max_story_program} RE2 instructions one story may hold"
                )
            else:
                used += size
        if why is not None:
            findings.append(f"entries[{i}] ({_label(book, i)}): imported disabled: {why}")
            entries[i] = entry.model_copy(update={"enabled": False})
    if findings:
        book = book.model_copy(update={"entries": tuple(entries)})
    if book.recursive_scanning is True:
        cycle = _cycle(book)
        if cycle:
            names = " -> ".join(_label(book, i) for i in cycle)
            raise BadSource(
                f"entries {names} activate each other in a cycle through recursive scanning; "
                "set prevent_recursion on one of them or turn recursive_scanning off"
            )
    return book, tuple(findings)


def _fires(entry: LoreEntry, text_: str) -> bool:
    return any(
        key_matches(
            k,
            text_,
            use_regex=entry.use_regex,
            case_sensitive=bool(entry.case_sensitive),
            whole_words=entry.whole_words is True,
        )
        for k in entry.keys
    )


def _cycle(book: LoreBook) -> list[int]:
    """A cycle of recursive activation (entry indices, the first repeated last), or [].

    Entry ``i`` leads to ``j`` when a key of ``j`` is in ``i``'s text. The pairs are not all
    tried: a :class:`KeyFinder` names, in one pass over each text, the entries one of whose
    keys may be in it, and only those are tested, so a book of 20,000 entries is checked in
    seconds; and an entry's are tested when the walk reaches it, but for entries already
    done. The walk is depth-first, without recursion (a chain of entries as long as the book
    is no deeper for Python than one entry)."""
    entries = book.entries
    live = [i for i, e in enumerate(entries) if e.enabled and not e.constant]
    finder = KeyFinder()
    for j in live:
        entry = entries[j]
        if entry.exclude_recursion:
            continue
        for key in entry.keys:
            finder.add(j, key, use_regex=entry.use_regex, case_sensitive=bool(entry.case_sensitive))
    finder.seal()
    sources = {i for i in live if not entries[i].prevent_recursion}
    state: dict[int, int] = {}  # 1: on the path, 2: done

    def leads(i: int) -> Iterator[int]:
        """The entries ``i``'s text activates, in order, but those already done (which
        lead to no cycle), tested only when the walk reaches them."""
        if i not in sources:
            return
        text_ = entries[i].content
        for j in sorted(finder.candidates(text_)):
            if j != i and state.get(j) != 2 and _fires(entries[j], text_):
                yield j

    for root in sorted(sources):
        if root in state:
            continue
        state[root] = 1
        path = [root]
        stack = [leads(root)]
        while stack:
            for j in stack[-1]:
                if state.get(j) == 1:
                    return [*path[path.index(j) :], j]
                if j not in state:
                    state[j] = 1
                    path.append(j)
                    stack.append(leads(j))
                    break
            else:
                stack.pop()
                state[path.pop()] = 2
    return []
