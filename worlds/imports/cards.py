"""Character cards V1, V2 and V3 (as parsed JSON), read into a character of a pack.

========================  =============================================================
card field                where it lands
========================  =============================================================
name                      ``characters[].name`` (an ASCII form if it has none; the card's
                          own name then in ``aliases``)
description               ``characters[].description`` (its prose), ``.traits`` (its W++,
                          PList and labelled lists), ``.examples`` (its Ali:Chat examples):
                          read by :func:`fabula.worlds.cardtext.read_card_text`; its
                          instructions to a model are left to the kept card
personality               ``characters[].voice`` (a W++ or PList personality: traits)
scenario                  the pack's ``premise`` (the scenarios of the cast, joined)
first_mes                 ``opening.greetings`` (this character's first)
alternate_greetings       ``opening.greetings`` (after the first)
group_only_greetings      ``opening.greetings`` (``group_only = true``)
mes_example               ``characters[].examples``, split at ``<START>``
character_book            a lorebook owned by the character (``lore.books``)
everything else           ``lore.cards[]``: ``data`` (creator_notes, system_prompt,
                          post_history_instructions, tags, creator, character_version,
                          extensions, assets, nickname, creator_notes_multilingual,
                          source, creation_date, modification_date, unknown fields) and
                          ``top`` (unknown fields beside ``spec``/``data``), verbatim
========================  =============================================================

Macros are resolved in the mapped texts: ``{{char}}``/``<BOT>``/``<char>``/``<CHR>`` to the card's
``nickname`` or else its name, ``{{user}}``/``<USER>`` to the user's name (any case). A card
whose texts speak of ``{{user}}`` brings the user into the cast, as a character a person
plays (:func:`fabula.worlds.imports.assemble.import_paths`).
"""

from __future__ import annotations

import json
import re
import unicodedata
from dataclasses import dataclass, field
from typing import Any

from fabula.memory.records import slug
from fabula.worlds.cardtext import CardText, narrated, read_card_text
from fabula.worlds.imports.fields import BadSource, obj, strings, text
from fabula.worlds.imports.limits import ImportLimits
from fabula.worlds.imports.lorebooks import read_card_book
from fabula.worlds.lore import (
    CHARACTER_EXTENSION,
    SOURCE_EXTENSION,
    WORLD_EXTENSION,
    Greeting,
    KeptCard,
    LoreBook,
)

TEXTS = (  # the mapped texts a card gets back on export as they came (macros unresolved)
    "description",
    "personality",
    "scenario",
    "first_mes",
    "mes_example",
    "alternate_greetings",
    "group_only_greetings",
)
MAPPED = {"name", *TEXTS, "character_book"}  # read into the pack; the others kept as they came
_V1_FIELDS = ("description", "personality", "scenario", "first_mes", "mes_example")
_START = re.compile(r"<START>", re.IGNORECASE)
_CHAR = re.compile(r"\{\{char\}\}|<bot>|<char>|<chr>", re.IGNORECASE)
_USER = re.compile(r"\{\{user\}\}|<user>", re.IGNORECASE)


@dataclass(frozen=True)
class CardRead:
    """One card, read: the character's fields, its greetings, book and kept fields."""

    name: str
    aliases: tuple[str, ...]
    description: str
    voice: str
    scenario: str
    examples: tuple[str, ...]
    greetings: tuple[Greeting, ...]
    book: LoreBook | None
    kept: KeptCard
    image: bytes | None = None
    assets: dict[str, bytes] = field(default_factory=dict)
    secrets: tuple[str, ...] = ()  # a card Fabula exported: its character's own secrets
    goals: tuple[str, ...] = ()  # ... its character's goals
    world: dict[str, Any] | None = None  # ... its world's title, style, outline, rules
    names_user: bool = False  # its texts speak of {{user}}: the person who plays (see assemble)
    traits: dict[str, tuple[str, ...]] = field(default_factory=dict)


def detect_card(doc: Any) -> str | None:
    """``chara_card_v1``/``v2``/``v3`` for a parsed card, the unknown ``spec`` it names, or
    None for a document that is no card."""
    if not isinstance(doc, dict):
        return None
    spec = doc.get("spec")
    if isinstance(spec, str) and spec.startswith("chara_card"):
        return spec
    if (
        spec is None
        and isinstance(doc.get("name"), str)
        and any(f in doc for f in _V1_FIELDS)
        and "entries" not in doc  # a lorebook with a name and a description (Agnai)
    ):
        return "chara_card_v1"
    return None


def resolve_macros(value: str, char: str, user: str) -> str:
    """``value`` with the character and user macros replaced (any case)."""
    return _USER.sub(lambda _: user, _CHAR.sub(lambda _: char, value))


def split_examples(mes_example: str) -> tuple[str, ...]:
    """A card's example dialogues: ``mes_example`` split at each ``<START>``, trimmed."""
    return tuple(p.strip() for p in _START.split(mes_example) if p.strip())


@dataclass(frozen=True)
class CardFields:
    """A card's description, personality and examples as the pack holds them (see the
    module docstring)."""

    description: str
    voice: str
    traits: dict[str, tuple[str, ...]]
    examples: tuple[str, ...]


def card_fields(
    description: str,
    personality: str,
    mes_example: str,
    name: str,
    aliases: tuple[str, ...],
    user: str,
) -> CardFields:
    """A card's texts (macros resolved) read for the pack: the description's prose, the
    personality as a voice (a W++ or PList one as traits), the traits of both, the
    description's example dialogues then ``mes_example``'s."""
    others = tuple(a for a in aliases if a != name)
    about = read_card_text(description, name, aliases=others, users=(user,))
    said = read_card_text(personality, name, aliases=others, users=(user,))
    return CardFields(
        description=about.prose,
        voice=said.prose if said.traits else personality.strip(),
        traits=card_traits(about, said),
        examples=(*about.examples, *split_examples(mes_example)),
    )


def card_traits(*texts: CardText) -> dict[str, tuple[str, ...]]:
    """The traits of a card's texts, by category (one category listed twice: its values
    together, each once)."""
    out: dict[str, tuple[str, ...]] = {}
    for read in texts:
        for trait in read.traits:
            had = out.get(trait.category, ())
            out[trait.category] = had + tuple(v for v in trait.values if v not in had)
    return out


def ascii_name(name: str, fallback: str) -> str:
    """``name`` if it makes an identifier, else its accents folded away (Zoë: Zoe), else
    ``fallback`` (a name in another script has no ASCII form Fabula could guess)."""
    folded = unicodedata.normalize("NFKD", name).encode("ascii", "ignore").decode().strip()
    for candidate in (name, folded, fallback):
        if candidate and candidate.isascii():
            try:
                slug(candidate)
            except ValueError:
                continue
            return candidate
    return fallback


def _version(spec: str, raw: Any) -> str:
    major = {"chara_card_v2": 2, "chara_card_v3": 3}[spec]
    if not isinstance(raw, str):
        raise BadSource(f'spec_version: expected text like "{major}.0", got {raw!r}')
    try:
        number = float(raw)
    except ValueError:
        raise BadSource(f"spec_version {raw!r} is not a version number") from None
    if int(number) != major:
        raise BadSource(f"{spec} with spec_version {raw!r}: Fabula reads {major}.x")
    return raw


def _fabula_goals_and_world(
    data: dict[str, Any],
) -> tuple[tuple[str, ...], dict[str, Any] | None]:
    """A card Fabula exported: its character's goals (``fabula/character``) and its world's
    title, style, outline and rules (``fabula/world``), read back (not kept: the next export
    writes them again)."""
    ext = data.get("extensions")
    if not isinstance(ext, dict):
        return (), None
    mine = ext.get(CHARACTER_EXTENSION)
    goals = mine.get("goals") if isinstance(mine, dict) else None
    found = (
        tuple(goals) if isinstance(goals, list) and all(isinstance(g, str) for g in goals) else ()
    )
    world = ext.get(WORLD_EXTENSION)
    return found, world if isinstance(world, dict) else None


def _fabula_extensions(
    data: dict[str, Any], spec: str, version: str, name: str, aliases: tuple[str, ...]
) -> tuple[dict[str, Any], str, str, str, tuple[str, ...], tuple[str, ...]]:
    """A card Fabula exported: its ``fabula/character`` extension gives back the name,
    aliases and secrets, ``fabula/source`` the kept fields of a source that was no card (a
    BookWorld role); both are read, not kept (the next export writes them again)."""
    ext = data.get("extensions")
    secrets: tuple[str, ...] = ()
    if not isinstance(ext, dict) or not any(
        k in ext for k in (CHARACTER_EXTENSION, SOURCE_EXTENSION)
    ):
        return data, spec, version, name, aliases, secrets
    ext = dict(ext)
    ext.pop(WORLD_EXTENSION, None)
    mine = ext.pop(CHARACTER_EXTENSION, None)
    if isinstance(mine, dict) and isinstance(mine.get("name"), str):
        name = ascii_name(mine["name"], name)
        found = mine.get("aliases")
        if isinstance(found, list) and all(isinstance(a, str) for a in found):
            aliases = tuple(found)
        kept_secrets = mine.get("secrets")
        if isinstance(kept_secrets, list) and all(isinstance(a, str) for a in kept_secrets):
            secrets = tuple(kept_secrets)
    source = ext.pop(SOURCE_EXTENSION, None)
    data = {**data, "extensions": ext}
    if (
        isinstance(source, dict)
        and isinstance(source.get("spec"), str)
        and isinstance(source.get("data"), dict)
    ):
        mapped = {k: data[k] for k in MAPPED if k in data}
        return {**source["data"], **mapped}, source["spec"], "", name, aliases, secrets
    return data, spec, version, name, aliases, secrets


def _card_spec(doc: dict[str, Any]) -> tuple[str, str, dict[str, Any], dict[str, Any]]:
    """The card's spec, its version, its data and its other top-level fields (a V1 card
    is all data). Raises BadSource for an unknown spec or version."""
    spec = detect_card(doc)
    if spec not in ("chara_card_v1", "chara_card_v2", "chara_card_v3"):
        raise BadSource(
            f"unknown card spec {doc.get('spec')!r} (Fabula reads chara_card_v1, v2, v3)"
        )
    if spec == "chara_card_v1":
        return spec, "", doc, {}
    version = _version(spec, doc.get("spec_version"))
    data = obj(doc.get("data"), "data")
    top = {k: v for k, v in doc.items() if k not in ("spec", "spec_version", "data")}
    return spec, version, data, top


def greeting_text(raw: str, name: str, char: str, user: str) -> str:
    """A card's greeting as the story tells it: macros resolved (``{{char}}`` as ``char``,
    ``{{user}}`` as ``user``), its ``*actions*`` narration and its words quoted
    (:func:`~fabula.worlds.cardtext.narrated`, ``name`` the character's)."""
    return narrated(resolve_macros(raw, char, user), name, user)


def _greetings(data: dict[str, Any], where: str, name: str, char: str, user: str) -> list[Greeting]:
    """The card's greetings (the first message, the alternates, the group-only ones), as
    the story tells them (:func:`greeting_text`), the blank ones left out."""
    greetings: list[Greeting] = []
    first = greeting_text(text(data, "first_mes", where), name, char, user)
    if first.strip():
        greetings.append(Greeting(text=first, character=name))
    for key, group in (("alternate_greetings", False), ("group_only_greetings", True)):
        for g in strings(data, key, where):
            if g.strip():
                greetings.append(
                    Greeting(
                        text=greeting_text(g, name, char, user), character=name, group_only=group
                    )
                )
    return greetings


def _book_texts(data: dict[str, Any], char: str, user: str) -> dict[str, str]:
    """The card's own lorebook entries whose content holds a macro, as read -> as they came
    (an export gives each back as it came while the story still holds it as read)."""
    book = data.get("character_book")
    entries = book.get("entries") if isinstance(book, dict) else None
    out: dict[str, str] = {}
    for entry in entries if isinstance(entries, list) else ():
        content = entry.get("content") if isinstance(entry, dict) else None
        if isinstance(content, str) and (read := resolve_macros(content, char, user)) != content:
            out[read] = content
    return out


def _card_book(
    data: dict[str, Any], where: str, name: str, char: str, user: str, limits: ImportLimits
) -> LoreBook | None:
    """The card's own lorebook (``character_book``), its entries' macros resolved — in
    their content, and in their keys and secondary keys, as SillyTavern substitutes them in
    every key it tests (``substituteParams``, world-info.js 3900-3903, 3932-3933); None
    when it has none."""
    if data.get("character_book") is None:
        return None
    book = read_card_book(
        data["character_book"], f"{where}.character_book", name, "character_book", limits
    )
    return book.model_copy(
        update={
            "entries": tuple(
                e.model_copy(
                    update={
                        "content": resolve_macros(e.content, char, user),
                        "keys": tuple(resolve_macros(k, char, user) for k in e.keys),
                        "secondary_keys": tuple(
                            resolve_macros(k, char, user) for k in e.secondary_keys
                        ),
                    }
                )
                for e in book.entries
            )
        }
    )


def read_card(doc: dict[str, Any], fallback: str, user: str, limits: ImportLimits) -> CardRead:
    """Read a card (a parsed V1, V2 or V3 document). ``fallback`` is the character's name
    when the card's has no ASCII form (the file's name); ``user`` replaces ``{{user}}``.

    Raises BadSource for an unknown spec or version and for a field of the wrong type.
    """
    spec, version, data, top = _card_spec(doc)
    where = "data" if spec != "chara_card_v1" else "(card)"
    card_name = text(data, "name", where).strip()
    if not card_name:
        raise BadSource(f"{where}.name: a card needs a name")
    name = ascii_name(card_name, fallback)
    aliases: tuple[str, ...] = (card_name,) if card_name != name else ()
    goals, world = _fabula_goals_and_world(data)
    data, spec, version, name, aliases, secrets = _fabula_extensions(
        data, spec, version, name, aliases
    )
    char = text(data, "nickname", where) or card_name

    def mapped(key: str) -> str:
        return resolve_macros(text(data, key, where), char, user)

    greetings = _greetings(data, where, name, char, user)
    book = _card_book(data, where, name, char, user, limits)
    kept = KeptCard(
        character=name,
        spec=spec,
        spec_version=version,
        data={k: v for k, v in data.items() if k not in MAPPED},
        top=top,
        texts={k: data[k] for k in TEXTS if k in data},
        macros={"char": char, "user": user},
        book_texts=_book_texts(data, char, user),
    )
    texts = json.dumps({k: data.get(k) for k in MAPPED}, ensure_ascii=False)
    fields = card_fields(
        mapped("description"),
        mapped("personality"),
        mapped("mes_example"),
        name,
        (*aliases, char),
        user,
    )
    return CardRead(
        names_user=_USER.search(texts) is not None,
        name=name,
        aliases=aliases,
        description=fields.description,
        voice=fields.voice,
        traits=fields.traits,
        scenario=mapped("scenario"),
        examples=fields.examples,
        greetings=tuple(greetings),
        book=book,
        kept=kept,
        secrets=secrets,
        goals=goals,
        world=world,
    )
