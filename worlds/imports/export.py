"""Back out: a character as a V3 card, the world as a ``lorebook_v3``.

A card (:func:`character_card`) is the character's pack fields, every field its source card
had that the pack kept (verbatim: ``extensions`` and unknown fields byte for byte), its
greetings and example dialogues, and a ``character_book`` with the character's own lore
and what it believes as of a turn — one entry per belief, whose
``extensions["fabula/belief"]`` holds the belief (subject, attribute, value, polarity,
attitude) with its validity (``valid_from``, ``valid_to``) and how it was learned
(``mode``, ``speaker``, ``event``). ``extensions["fabula/character"]`` holds what a card
has no field for (the character's Fabula name, aliases and own secrets), read back
on import.

A lorebook (:func:`world_lorebook`) is the world's own lore, one entry per entity (its
description; ``extensions["fabula/entity"]``) and one per fact of W as of a turn
(``extensions["fabula/state"]``, with its validity).

Entries from other formats (SillyTavern, NovelAI, ...) carry their source's own fields
under ``extensions["fabula/source"]``.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Mapping, Sequence
from typing import Any

from fabula.memory.records import slug
from fabula.worlds.cardtext import PERSONA
from fabula.worlds.imports.cards import card_fields, greeting_text, resolve_macros
from fabula.worlds.imports.lorebooks import LOGIC_CODES
from fabula.worlds.imports.png import with_text_chunks
from fabula.worlds.lore import (
    BELIEF_EXTENSION,
    CHARACTER_EXTENSION,
    ENTITY_EXTENSION,
    SOURCE_EXTENSION,
    STATE_EXTENSION,
    WORLD_EXTENSION,
    KeptCard,
    LoreBook,
    LoreEntry,
    extension,
)
from fabula.worlds.pack import CharacterSpec, WorldPack

_CARD_FORMATS = ("character_book", "lorebook_v3")
_CODES = {logic: code for code, logic in LOGIC_CODES.items()}
_V3_DEFAULTS: dict[str, Any] = {
    "creator_notes": "",
    "system_prompt": "",
    "post_history_instructions": "",
    "tags": [],
    "creator": "",
    "character_version": "",
    "extensions": {},
}


def lorebook_entry(entry: LoreEntry, fmt: str) -> dict[str, Any]:
    """A lore entry as a V3 lorebook entry. Its kept fields come back: an entry read from a
    card or a V3 book gets them back as they were (``extensions`` verbatim); one from
    another format keeps them under ``extensions["fabula/source"]``."""
    kept = dict(entry.kept)
    ext = dict(kept.pop("extensions", None) or {})
    out: dict[str, Any] = {
        "keys": list(entry.keys),
        "content": entry.content,
        "extensions": ext,
        "enabled": entry.enabled,
        "insertion_order": entry.order,
        "use_regex": entry.use_regex,
        "constant": entry.constant,
        "selective": entry.selective,
        "secondary_keys": list(entry.secondary_keys),
    }
    if fmt == "character_book":
        # SillyTavern reads a card entry's case from its extensions (convertCharacterBook)
        if entry.case_sensitive is not None or "case_sensitive" in ext:
            ext["case_sensitive"] = entry.case_sensitive
    elif entry.case_sensitive is not None:
        out["case_sensitive"] = entry.case_sensitive
    if entry.name and kept.get("comment") != entry.name:
        out["name"] = entry.name
    if entry.priority is not None:
        out["priority"] = entry.priority
    if entry.position is not None:
        out["position"] = entry.position
    # SillyTavern's own fields, where SillyTavern writes them in a card: its extensions
    if entry.logic != "and_any" or "selectiveLogic" in ext:
        ext["selectiveLogic"] = _CODES[entry.logic]
    if entry.whole_words is not None or "match_whole_words" in ext:
        ext["match_whole_words"] = entry.whole_words
    for key, value in (
        ("exclude_recursion", entry.exclude_recursion),
        ("prevent_recursion", entry.prevent_recursion),
    ):
        if value or key in ext:
            ext[key] = value
    if fmt in _CARD_FORMATS:
        out.update(kept)
    elif kept:
        ext[SOURCE_EXTENSION] = {"format": fmt, "fields": kept}
    return out


def _book(books: Sequence[LoreBook], name: str) -> dict[str, Any]:
    """One V3 Lorebook of several (a card has one): the first's settings, every entry."""
    first = books[0] if books else None
    book: dict[str, Any] = {"name": (first.name if first else "") or name}
    if first is not None:
        if first.description:
            book["description"] = first.description
        for key in ("scan_depth", "token_budget", "recursive_scanning"):
            if getattr(first, key) is not None:
                book[key] = getattr(first, key)
        book.update({k: v for k, v in first.kept.items() if k != "top"})
    book.setdefault("extensions", {})
    book["entries"] = [lorebook_entry(e, b.format) for b in books for e in b.entries]
    return book


TOP_EXTENSION = "fabula/top"
"""Where an exported card keeps the fields its source had beside ``spec`` and ``data`` (a V2
card's copies of its V1 fields): the V3 spec's card has no others."""


def _number_entries(entries: list[dict[str, Any]], added: list[dict[str, Any]]) -> None:
    """Give each entry Fabula ``added`` to a card's book an ``id`` no entry of the book can
    have, and a ``comment`` (its name). SillyTavern files a card's entry under its ``id``,
    numbering one without an id by its place (``convertCharacterBook``, world-info.js
    4523-4526), so added entries without one overwrote the card's own entries of those
    numbers; and it titles an entry by its ``comment`` alone. The card's own entries stay as
    they came."""
    ids = [
        e["id"] for e in entries if isinstance(e.get("id"), int) and not isinstance(e["id"], bool)
    ]
    free = max([*ids, len(entries) - 1]) + 1
    for e in added:
        e["id"] = free
        free += 1
        e["comment"] = e.get("name") or ""


def _belief_entry(
    belief: Mapping[str, Any], names: Mapping[str, str], order: int
) -> dict[str, Any]:
    subject = names.get(belief["subject"], belief["subject"])
    value = names.get(belief["value"], belief["value"])
    keys = [subject, *([value] if belief["value"] in names else [])]
    negated = "" if belief.get("polarity", True) else "not "
    attitude = belief.get("attitude", "believes")
    content = f"{subject}: {belief['attribute']} is {negated}{value} ({attitude}, {belief['mode']})"
    record = {k: v for k, v in belief.items() if k != "id"}
    name = f"{subject} {belief['attribute']}"
    return _entry(keys, content, {BELIEF_EXTENSION: record}, order, name)


def _entry(
    keys: list[str], content: str, extensions: dict[str, Any], order: int, name: str
) -> dict[str, Any]:
    """A plain lorebook entry: always keyed, never constant nor selective."""
    return {
        "keys": keys,
        "content": content,
        "extensions": extensions,
        "enabled": True,
        "insertion_order": order,
        "use_regex": False,
        "constant": False,
        "selective": False,
        "secondary_keys": [],
        "name": name,
    }


def _is_belief(entry: LoreEntry) -> bool:
    return extension(entry, BELIEF_EXTENSION) is not None


def _spec(pack: WorldPack, name: str) -> CharacterSpec:
    return next(c for c in pack.characters if c.name == name)


def character_card(
    pack: WorldPack,
    character: str,
    beliefs: Sequence[Mapping[str, Any]],
    names: Mapping[str, str],
    *,
    as_of: int | None,
) -> dict[str, Any]:
    """Character ``character`` (its name in ``pack``) as a V3 card whose book holds its own
    lore and ``beliefs`` (as :class:`~fabula.memory.records.Belief` fields), entity ids
    named by ``names``."""
    spec = _spec(pack, character)
    kept = pack.lore.card_of(character)
    data: dict[str, Any] = {}
    top: dict[str, Any] = {}
    card_name = spec.name
    if kept is not None and kept.spec.startswith("chara_card"):
        data.update(kept.data)
        top = dict(kept.top)
        card_name = spec.aliases[0] if spec.aliases else spec.name
    elif kept is not None:
        data["extensions"] = {SOURCE_EXTENSION: {"spec": kept.spec, "data": kept.data}}
    for key, value in _V3_DEFAULTS.items():
        data.setdefault(key, value)
    greetings = [g for g in pack.opening.greetings if g.character == character]
    plain = [g.text for g in greetings if not g.group_only]
    ext = dict(data["extensions"])
    ext[CHARACTER_EXTENSION] = {
        "name": spec.name,
        "aliases": list(spec.aliases),
        "secrets": list(spec.secrets),  # its own: a card is what its character knows
        "goals": list(spec.goals),
    }
    ext[WORLD_EXTENSION] = {
        "title": pack.title,
        "style": pack.style,
        "outline": list(pack.outline),
        "rules": pack.rules.model_dump(mode="json"),
    }
    data.update(
        name=card_name,
        description=described(spec.description, spec.name, spec.traits),
        personality=spec.voice,
        scenario=pack.premise,
        first_mes=plain[0] if plain else "",
        alternate_greetings=plain[1:],
        group_only_greetings=[g.text for g in greetings if g.group_only],
        mes_example="\n".join(f"<START>\n{e}" for e in spec.examples),
        extensions=ext,
    )
    if kept is not None and kept.spec.startswith("chara_card"):
        data.update(_as_they_came(kept, data))
    # the beliefs a card brought are the story's now: the story's own replace them
    own = [
        b.model_copy(update={"entries": tuple(e for e in b.entries if not _is_belief(e))})
        for b in pack.lore.books_of(character)
    ]
    book = _book(own, f"{spec.name}'s lore")
    if kept is not None and set(kept.macros) == {"char", "user"}:
        for entry in book["entries"]:  # an entry the story still holds as read, as it came
            entry["content"] = kept.book_texts.get(entry["content"], entry["content"])
    start = max((e["insertion_order"] for e in book["entries"]), default=0) + 1
    added = [_belief_entry(b, names, start + i) for i, b in enumerate(beliefs)]
    book["entries"] += added
    _number_entries(book["entries"], added)
    book["extensions"] = {**book["extensions"], "fabula/as_of": as_of}
    data["character_book"] = book
    if top:  # the V3 spec's card is spec, spec_version and data: the rest rides in data
        data["extensions"] = {**data["extensions"], TOP_EXTENSION: top}
    return {"spec": "chara_card_v3", "spec_version": "3.0", "data": data}


def described(description: str, name: str, traits: Mapping[str, tuple[str, ...]]) -> str:
    """A card's description from a character's: its prose, then its traits as a PList
    (``[Mara's clothes: apron, blue scarf]``), which an import reads back as traits."""
    lists = "; ".join(
        f"{name}: {', '.join(v)}" if k == PERSONA else f"{name}'s {k}: {', '.join(v)}"
        for k, v in traits.items()
    )
    return "\n".join(t for t in (description, f"[{lists}]" if lists else "") if t)


def _as_they_came(kept: KeptCard, exported: Mapping[str, Any]) -> dict[str, Any]:
    """The card's own texts (``{{user}}``, ``{{char}}``, empty fields) where the pack still
    holds what the import read them as: a card exported again is the card it was, but for
    what the story changed."""
    macros = kept.macros
    if set(macros) != {"char", "user"}:
        return {}

    def read(value: str) -> str:
        return resolve_macros(value, macros["char"], macros["user"])

    texts = kept.texts
    out: dict[str, Any] = {}
    originals = [texts.get(k, "") for k in ("description", "personality", "mes_example")]
    if all(isinstance(t, str) for t in originals):
        description, personality, mes_example = (read(str(t)) for t in originals)
        fields = card_fields(
            description,
            personality,
            mes_example,
            kept.character,
            (macros["char"],),
            macros["user"],
        )
        made = {
            "description": described(fields.description, kept.character, fields.traits),
            "personality": fields.voice,
            "mes_example": "\n".join(f"<START>\n{e}" for e in fields.examples),
        }
        for key, original in zip(made, originals, strict=True):
            if exported[key] == made[key]:
                out[key] = original
    scenario = texts.get("scenario", "")
    if isinstance(scenario, str):
        premise = str(exported["scenario"])
        parts = premise.split("\n\n")
        mine = read(scenario)
        # the premise is the cast's scenarios joined, or "A story of ..." where none had one
        if (mine.strip() and mine.strip() in (premise, *parts)) or (
            not mine.strip() and premise.startswith("A story of ")
        ):
            out["scenario"] = scenario

    def told(value: str) -> str:  # a greeting as the import told it (its actions narrated)
        return greeting_text(value, kept.character, macros["char"], macros["user"])

    greetings = [texts.get("first_mes", ""), *(texts.get("alternate_greetings") or [])]
    if all(isinstance(g, str) for g in greetings):
        said = [g for g in greetings if told(g).strip()]
        if [told(g) for g in said] == [exported["first_mes"], *exported["alternate_greetings"]]:
            out["first_mes"] = greetings[0]
            out["alternate_greetings"] = greetings[1:]
    group = texts.get("group_only_greetings") or []
    if isinstance(group, list) and all(isinstance(g, str) for g in group):
        said = [g for g in group if told(g).strip()]
        if [told(g) for g in said] == exported["group_only_greetings"]:
            out["group_only_greetings"] = group
    return out


def world_lorebook(
    pack: WorldPack,
    entities: Sequence[Mapping[str, Any]],
    facts: Sequence[Mapping[str, Any]],
    *,
    as_of: int | None,
) -> dict[str, Any]:
    """The world as of a turn as a ``lorebook_v3``: the world's own books' entries, an entry
    per entity (``entities``: id, kind, name, description) and per fact of W (``facts``:
    :class:`~fabula.memory.records.State` fields)."""
    book = _book(pack.lore.books_of(None), pack.title)
    names = {e["id"]: e["name"] for e in entities}
    aliases = {slug(c.name): list(c.aliases) for c in pack.characters}
    aliases |= {slug(p.name): list(p.aliases) for p in pack.places}
    order = max((e["insertion_order"] for e in book["entries"]), default=0) + 1
    for e in entities:
        keys = [e["name"], *aliases.get(e["id"], [])]
        content = e.get("description") or e["name"]
        book["entries"].append(_entry(keys, content, {ENTITY_EXTENSION: dict(e)}, order, e["name"]))
        order += 1
    for f in facts:
        subject = names.get(f["subject"], f["subject"])
        value = names.get(f["value"], f["value"])
        negated = "" if f.get("polarity", True) else "not "
        book["entries"].append(
            _entry(
                [subject],
                f"{subject}: {f['attribute']} is {negated}{value}",
                {STATE_EXTENSION: {k: v for k, v in f.items() if k != "id"}},
                order,
                f"{subject} {f['attribute']}",
            )
        )
        order += 1
    book["extensions"] = {**book["extensions"], "fabula/as_of": as_of}
    book["name"] = book["name"] or pack.title
    return {"spec": "lorebook_v3", "data": book}


_ST_FROM_EXTENSIONS = (
    # (SillyTavern's World Info field, the card extension convertCharacterBook reads it from,
    #  its default there: world-info.js 4519-4566)
    ("selectiveLogic", "selectiveLogic", 0),
    ("excludeRecursion", "exclude_recursion", False),
    ("preventRecursion", "prevent_recursion", False),
    ("delayUntilRecursion", "delay_until_recursion", False),
    ("probability", "probability", 100),
    ("useProbability", "useProbability", True),
    ("depth", "depth", 4),
    ("group", "group", ""),
    ("groupOverride", "group_override", False),
    ("groupWeight", "group_weight", 100),
    ("scanDepth", "scan_depth", None),
    ("caseSensitive", "case_sensitive", None),
    ("matchWholeWords", "match_whole_words", None),
    ("useGroupScoring", "use_group_scoring", None),
    ("automationId", "automation_id", ""),
    ("role", "role", 0),
    ("vectorized", "vectorized", False),
    ("sticky", "sticky", None),
    ("cooldown", "cooldown", None),
    ("delay", "delay", None),
)


def world_info(lorebook: Mapping[str, Any]) -> dict[str, Any]:
    """A ``lorebook_v3`` (as :func:`world_lorebook` writes it) in SillyTavern's World Info
    format, the one its World Info import takes (its entries at the top level, keyed by
    ``uid``; it refuses anything else as "not a valid world info file"). Each entry is
    mapped as SillyTavern's own ``convertCharacterBook`` maps a card's (world-info.js
    4519-4566), gets a unique ``uid`` (its place) and a ``comment`` (its name, else its first
    key); the fields a SillyTavern entry had when imported come back as they were; and its
    ``extensions`` ride along, where SillyTavern keeps them and Fabula reads them back
    (``fabula/entity``, ``fabula/state``: the world round-trips)."""
    data = lorebook["data"]
    entries: dict[str, Any] = {}
    for uid, e in enumerate(data["entries"]):
        ext = dict(e.get("extensions") or {})
        source = ext.pop(SOURCE_EXTENSION, None)
        fields = (
            dict(source["fields"])
            if isinstance(source, dict) and source.get("format") == "sillytavern"
            else {}
        )
        keys = list(e.get("keys") or [])
        comment = e.get("comment") or e.get("name") or (keys[0] if keys else f"entry {uid}")
        case = e.get("case_sensitive")
        entry: dict[str, Any] = {
            "uid": uid,
            "key": keys,
            "keysecondary": list(e.get("secondary_keys") or []),
            "comment": comment,
            "content": e.get("content", ""),
            "constant": bool(e.get("constant")),
            "selective": bool(e.get("selective", True)),
            "order": e.get("insertion_order", 100),
            "position": ext.get("position", 0 if e.get("position") == "before_char" else 1),
            "disable": not e.get("enabled", True),
            "addMemo": bool(comment),
            "displayIndex": ext.get("display_index", uid),
        }
        for field, name, default in _ST_FROM_EXTENSIONS:
            entry[field] = ext.get(name, default)
        if entry["caseSensitive"] is None and isinstance(case, bool):
            entry["caseSensitive"] = case
        entry.update({k: v for k, v in fields.items() if k != "uid"})
        entry["extensions"] = ext
        entries[str(uid)] = entry
    out: dict[str, Any] = {"entries": entries}
    if data.get("name"):
        out["name"] = data["name"]
    return out


def card_png(card: Mapping[str, Any], image: bytes) -> bytes:
    """A card written into its picture: the base64 of its JSON in a ``ccv3`` chunk and, for
    readers of V2 only, the same in ``chara``."""
    text = base64.b64encode(json.dumps(card, ensure_ascii=False).encode("utf-8"))
    return with_text_chunks(image, {"chara": text, "ccv3": text})
