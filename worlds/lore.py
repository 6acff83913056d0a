"""Lore a world pack carries: lorebooks, their entries, and what an import kept for export.

A pack's ``lore`` (``lore = "lore.json"`` in ``world.toml``: a JSON file beside it, since
lore holds arbitrary JSON that TOML cannot) is a :class:`Lore`:

- ``books``: lorebooks (World Info). A book with no ``owner`` is the world's, the author's;
  a book owned by a character (a card's ``character_book``, a BookWorld role's relations)
  is what that character knows.
- ``cards``: for each character imported from a card (or a BookWorld role), every field of
  the source that the pack has no place for, verbatim — ``extensions`` and unknown fields
  included — so an export writes them back byte for byte.
- ``kept``: everything else an import read and the pack has no place for (a BookWorld map's
  distances, a preset's own fields), by source.

Who knows an entry: a world book's entries are the author's (no character's), a character's
own book is what that character knows; ``extensions["fabula/visibility"]`` on an entry
says otherwise — ``"common"`` (every character knows it), ``"author"`` (no character),
``"owner"`` (its book's owner only), or a list of character names (those, and the book's
owner). What a character may know is copied into its own keyspace when a story starts
(:func:`known_to`); nothing else of the lore ever reaches it.

Entries follow SillyTavern's World Info and the character-card V3 lorebook: keys, secondary
keys with their logic, case, whole words, regex keys, ``constant``, ``enabled``, insertion
order and priority; what a source has beyond those is in the entry's ``kept``.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from fabula.errors import InvalidInput

CHARACTER_EXTENSION = "fabula/character"
"""The extension of an exported card holding the character's Fabula name and aliases."""
SOURCE_EXTENSION = "fabula/source"
"""The extension holding what a source that was no card kept (a BookWorld role's fields,
a SillyTavern entry's own fields)."""
BELIEF_EXTENSION = "fabula/belief"
"""The extension of an exported card's book entry holding one of the character's beliefs
(subject, attribute, value, polarity, attitude, mode, speaker, event, valid_from, valid_to);
imported again, a belief about an entity the pack has is the character's from turn 0."""
WORLD_EXTENSION = "fabula/world"
"""The extension of an exported card holding what only Fabula knows of its world: the
pack's title, style, outline and world rules; imported again (with no BookWorld preset),
they are the new pack's."""
ENTITY_EXTENSION = "fabula/entity"
"""The extension of an exported lorebook's entry holding an entity (id, kind, name, ...)."""
STATE_EXTENSION = "fabula/state"
"""The extension of an exported lorebook's entry holding a fact of W, with its validity."""

_ACTIVATION = frozenset(
    {
        "uid",
        "delayUntilRecursion",
        "useProbability",
        "probability",
        "group",
        "groupOverride",
        "groupWeight",
        "useGroupScoring",
        "scanDepth",
        "sticky",
        "cooldown",
        "delay",
        "characterFilter",
    }
)
"""What activation reads of a World Info entry's kept fields (its ``uid`` tells it from a
card's entry): a character's copy of its lore keeps these."""
_ACTIVATION_EXTENSIONS = frozenset(
    {
        "delay_until_recursion",
        "useProbability",
        "probability",
        "group",
        "group_override",
        "group_weight",
        "use_group_scoring",
        "scan_depth",
        "sticky",
        "cooldown",
        "delay",
    }
)
"""What activation reads of a card book entry's ``extensions`` (as SillyTavern's
``convertCharacterBook`` maps them)."""


def activation_fields(kept: dict[str, Any]) -> dict[str, Any]:
    """Of an entry's kept fields, those activation reads (see :data:`_ACTIVATION`)."""
    out = {k: v for k, v in kept.items() if k in _ACTIVATION}
    ext = kept.get("extensions")
    if isinstance(ext, dict):
        read = {k: v for k, v in ext.items() if k in _ACTIVATION_EXTENSIONS}
        if read:
            out["extensions"] = read
    return out


VISIBILITY_EXTENSION = "fabula/visibility"
"""The extension of an entry saying who knows it (see the module's docstring)."""

SecondaryLogic = Literal["and_any", "not_all", "not_any", "and_all"]
"""How secondary keys combine with the primary match (SillyTavern's ``selectiveLogic`` 0-3):
AND ANY (one secondary key present), NOT ALL (not every one present), NOT ANY (none
present), AND ALL (every one present)."""

_DECORATOR = re.compile(r"^@@@?[A-Za-z_][A-Za-z0-9_]*(?:[ \t].*)?$")


class _Spec(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class LoreEntry(_Spec):
    """One lore entry: when it activates (keys and their rules) and what it says."""

    keys: tuple[str, ...] = ()
    content: str = ""  # verbatim, its ``@@`` decorator lines included (see split_decorators)
    secondary_keys: tuple[str, ...] = ()
    selective: bool = False  # the secondary keys apply
    logic: SecondaryLogic = "and_any"
    name: str = ""  # a title or comment: never matched, never shown to a model
    enabled: bool = True
    constant: bool = False  # active whatever the keys
    case_sensitive: bool | None = None  # None: the book's (or the engine's) default
    whole_words: bool | None = None
    use_regex: bool = False  # every key is a regular expression
    order: int = 100  # insertion order: lower goes first
    priority: int | None = None  # kept first when the budget is short
    position: str | None = None
    exclude_recursion: bool = False  # not activated by another entry's text
    prevent_recursion: bool = False  # its text activates no other entry
    kept: dict[str, Any] = Field(default_factory=dict)  # the source's other fields, verbatim


class LoreBook(_Spec):
    """A lorebook: its entries and its scanning settings; ``owner`` a character's name, or
    None for the world's (the author's) book."""

    name: str = ""
    description: str = ""
    owner: str | None = None
    format: str  # the source format: lorebook_v3, character_book, sillytavern, novelai, ...
    scan_depth: int | None = None
    token_budget: int | None = None
    recursive_scanning: bool | None = None
    entries: tuple[LoreEntry, ...] = ()
    kept: dict[str, Any] = Field(default_factory=dict)


class KeptCard(_Spec):
    """What a character's source card holds that the pack has no place for, verbatim."""

    character: str  # the character's name in the pack
    spec: str  # chara_card_v1, chara_card_v2, chara_card_v3, bookworld_role
    spec_version: str = ""
    data: dict[str, Any] = Field(default_factory=dict)  # unmapped fields of the card's data
    top: dict[str, Any] = Field(default_factory=dict)  # unknown fields beside spec and data
    image: str | None = None  # the asset name of its picture (a PNG), if it had one
    # the card's mapped texts as they came (macros, empty fields), and what its macros
    # stood for ({"char": ..., "user": ...}): an export gives back each text the pack
    # still holds as it was read
    texts: dict[str, Any] = Field(default_factory=dict)
    macros: dict[str, str] = Field(default_factory=dict)
    # its own lorebook's entries that held a macro: content as read -> as it came
    book_texts: dict[str, str] = Field(default_factory=dict)


class Greeting(_Spec):
    """An opening to choose from: a card's ``first_mes``, an alternate or group-only greeting,
    a BookWorld intervention. ``character`` is who greets (None: the narrator)."""

    text: str = Field(min_length=1)
    character: str | None = None
    group_only: bool = False


class WorldInfoSettings(_Spec):
    """SillyTavern's World Info settings, as its ``settings.json`` keeps them
    (``world_info_settings``; read by ``setWorldInfoSettings``, world-info.js 767-800), with
    the defaults of a fresh install (its ``default/content/settings.json``; world-info.js
    63-76 for the rest). Activation applies case, whole words, recursion and its step
    limit, the budget (a percent of ``context`` with its cap), and, where it scans a story's
    turns as a chat, the depth and minimum activations; names in the scan and the global
    group scoring are kept, not applied."""

    case_sensitive: bool = False
    """``world_info_case_sensitive``: keys match in their case."""
    match_whole_words: bool = True
    """``world_info_match_whole_words``: a one-word key must stand as a word."""
    recursive: bool = True
    """``world_info_recursive``: activated entries' text is scanned again."""
    max_recursion_steps: int = Field(default=0, ge=0)
    """``world_info_max_recursion_steps``: the most scans, the first included (0: none)."""
    depth: int = Field(default=2, ge=0)
    """``world_info_depth``: the newest messages (a story's turns) an entry without its own
    ``scanDepth`` scans, where the scan is of the story's turns."""
    budget: int = Field(default=25, ge=0)
    """``world_info_budget``: the percent of ``context`` the activated entries may hold
    (:func:`lore_budget`; without a ``context``, Fabula's lore budget stands for it)."""
    budget_cap: int = Field(default=0, ge=0)
    """``world_info_budget_cap``: the most tokens, whatever the percent (0: no cap)."""
    context: int | None = Field(default=None, ge=1)
    """The context, in tokens, the budget is a percent of: what SillyTavern's
    ``getMaxContextSize`` gives (script.js 4840-4876) from the imported ``settings.json``'s
    ``max_context`` less ``amount_gen`` (a Chat Completion one's ``oai_settings``:
    ``openai_max_context`` less ``openai_max_tokens``); None where none was imported or set."""
    include_names: bool = True
    """``world_info_include_names`` (kept, not applied)."""
    min_activations: int = Field(default=0, ge=0)
    """``world_info_min_activations``: while fewer entries are active, the depth widens by a
    turn (where the scan is of the story's turns)."""
    min_activations_depth_max: int = Field(default=0, ge=0)
    """``world_info_min_activations_depth_max``: the widest that makes (0: the story's
    length)."""
    use_group_scoring: bool = False
    """``world_info_use_group_scoring`` (kept; an entry's own ``useGroupScoring`` applies)."""
    tags: dict[str, str] = Field(default_factory=dict)
    """SillyTavern's tags, id to name (the imported ``settings.json``'s ``tags``): an entry's
    ``characterFilter.tags`` holds ids, a character's card its tags by name."""


SETTINGS: dict[str, str] = {
    "case_sensitive": "world_info_case_sensitive",
    "match_whole_words": "world_info_match_whole_words",
    "recursive": "world_info_recursive",
    "max_recursion_steps": "world_info_max_recursion_steps",
    "depth": "world_info_depth",
    "budget": "world_info_budget",
    "budget_cap": "world_info_budget_cap",
    "context": "max_context",
    "include_names": "world_info_include_names",
    "min_activations": "world_info_min_activations",
    "min_activations_depth_max": "world_info_min_activations_depth_max",
    "use_group_scoring": "world_info_use_group_scoring",
}
"""The World Info settings a user shows and sets (``fabula lore settings``), by Fabula's
name, each with SillyTavern's (``context`` stands for ``getMaxContextSize``'s answer)."""

KEPT_SETTINGS = frozenset({"include_names", "use_group_scoring"})
"""The settings of :data:`SETTINGS` kept but not applied (see :class:`WorldInfoSettings`
and the lore guide): shown as such wherever the settings are."""


def lore_budget(settings: WorldInfoSettings, default: int) -> int:
    """The lore budget, in tokens, ``settings`` give, as ``checkWorldInfo`` computes it
    (world-info.js 3731-3736): ``budget`` percent of the ``context``, rounded half up, and 1
    for 0; then no more than ``budget_cap`` when it is above 0. Without a ``context``,
    ``default`` (Fabula's lore budget, ``FABULA_LORE_BUDGET``) is that share, and the cap
    applies to it."""
    share = default
    if settings.context is not None:
        share = math.floor(settings.budget * settings.context / 100 + 0.5) or 1
    if settings.budget_cap > 0 and share > settings.budget_cap:
        share = settings.budget_cap
    return share


def budget_from(settings: WorldInfoSettings, default: int) -> str:
    """How ``settings`` give the lore budget, in words: "25% of a context of 1000, capped
    at 200", or "FABULA_LORE_BUDGET (1024): no context set" (``default``, Fabula's lore
    budget, stands for the share where no context is set; see
    :func:`lore_budget`)."""
    if settings.context is None:
        source = f"FABULA_LORE_BUDGET ({default}): no context set"
    else:
        source = f"{settings.budget}% of a context of {settings.context}"
    cap = f", capped at {settings.budget_cap}" if settings.budget_cap else ""
    return source + cap


def with_setting(settings: WorldInfoSettings, name: str, value: str) -> WorldInfoSettings:
    """``settings`` with the one named ``name`` (Fabula's name or SillyTavern's, see
    :data:`SETTINGS`) set to ``value`` as a user types it: ``true``/``false`` for a switch,
    a whole number of 0 or more for a number (``none`` for the context: no context).
    Raises :class:`~fabula.errors.InvalidInput`, in one line, for an unknown name or a
    value of the wrong kind."""
    field = name.strip()
    by_st = {v: k for k, v in SETTINGS.items()}
    field = by_st.get(field, field)
    if field not in SETTINGS:
        raise InvalidInput(f"{name!r} is no World Info setting (one of: {', '.join(SETTINGS)})")
    text = value.strip().lower()
    if isinstance(getattr(settings, field), bool):
        if text not in ("true", "false"):
            raise InvalidInput(f"{field}: {value!r} is not true or false")
        return settings.model_copy(update={field: text == "true"})
    if field == "context" and text in ("none", ""):
        return settings.model_copy(update={"context": None})
    least = 1 if field == "context" else 0
    if not text.isdigit() or int(text) < least:
        raise InvalidInput(f"{field}: {value!r} is not a whole number of {least} or more")
    return settings.model_copy(update={field: int(text)})


EXCLUDED_TAGS = frozenset({"ROOT", "TAVERN"})
"""The tags SillyTavern never imports from a card (``IMPORT_EXLCUDED_TAGS``, tags.js 707)."""
MAX_TAGS = 15
"""The most tags SillyTavern imports from a card (``ANTI_TROLL_MAX_TAGS``, tags.js 708)."""


def card_tags(card: KeptCard | None) -> tuple[str, ...]:
    """A character's tags as SillyTavern gives them to it when it imports its card
    (``handleTagImport``, tags.js 746-750): the card's ``tags`` trimmed, the empty ones and
    :data:`EXCLUDED_TAGS` left out, the first :data:`MAX_TAGS`; none for no card."""
    raw = card.data.get("tags") if card is not None else None
    if not isinstance(raw, list):
        return ()
    found = [t.strip() for t in raw if isinstance(t, str) and t.strip()]
    return tuple(t for t in found if t not in EXCLUDED_TAGS)[:MAX_TAGS]


class Lore(_Spec):
    """All the lore of a pack (see the module's docstring)."""

    books: tuple[LoreBook, ...] = ()
    cards: tuple[KeptCard, ...] = ()
    kept: dict[str, Any] = Field(default_factory=dict)
    world_info: WorldInfoSettings = Field(default_factory=WorldInfoSettings)
    holder_tags: tuple[str, ...] = ()
    """In a character's copy (:func:`known_to`): its tags (:func:`card_tags`), for the
    entries' character filters; empty in a pack."""

    def card_of(self, character: str) -> KeptCard | None:
        """The kept card of the character named ``character``, if it came from one."""
        return next((c for c in self.cards if c.character == character), None)

    def books_of(self, owner: str | None) -> list[LoreBook]:
        """The books ``owner`` (a character's name; None: the world) holds."""
        return [b for b in self.books if b.owner == owner]


def extension(entry: LoreEntry, name: str) -> Any:
    """The entry's kept extension ``name`` (None if it has none)."""
    ext = entry.kept.get("extensions")
    return ext.get(name) if isinstance(ext, dict) else None


def audience(book: LoreBook, entry: LoreEntry, cast: Sequence[str]) -> frozenset[str]:
    """The names (of ``cast``) of the characters who know ``entry`` of ``book``: by its
    ``fabula/visibility`` extension, else the book's owner (none for a world book).
    ValueError for a visibility that is none of ``common``, ``author``, ``owner`` or a
    list of names of the cast."""
    seen = extension(entry, VISIBILITY_EXTENSION)
    owner = frozenset() if book.owner is None else frozenset([book.owner])
    if seen is None or seen == "owner":
        return owner
    if seen == "common":
        return frozenset(cast)
    if seen == "author":
        return frozenset()
    if isinstance(seen, list) and all(isinstance(n, str) for n in seen):
        unknown = [n for n in seen if n not in cast]
        if unknown:
            raise ValueError(f"{VISIBILITY_EXTENSION}: {unknown[0]!r} is not a character")
        return owner | frozenset(seen)
    raise ValueError(
        f"{VISIBILITY_EXTENSION}: {seen!r} is none of 'common', 'author', 'owner' or a list "
        "of names"
    )


def known_to(lore: Lore, character: str, cast: Sequence[str]) -> Lore:
    """What the character named ``character`` may know of ``lore``: the books holding an
    entry it knows (see :func:`audience`), each with those entries only, owned by it, and
    stripped of what a source kept (whose names, extensions and fields are no lore; only
    what activation reads of it stays), with the story's World Info settings and the
    character's tags (its card's, for the character filters)."""
    books = []
    for book in lore.books:
        entries = tuple(
            e.model_copy(update={"kept": activation_fields(e.kept)})
            for e in book.entries
            if character in audience(book, e, cast)
        )
        if entries:
            books.append(
                book.model_copy(update={"owner": character, "entries": entries, "kept": {}})
            )
    return Lore(
        books=tuple(books),
        world_info=lore.world_info,
        holder_tags=card_tags(lore.card_of(character)),
    )


@functools.lru_cache(maxsize=64)
def parse_lore(document: str) -> Lore:
    """A lore document (JSON) as :class:`Lore`, parsed once per document (the same entry
    objects each time, so activation reuses what it compiled for them)."""
    return Lore.model_validate_json(document)


def split_decorators(content: str) -> tuple[list[str], str]:
    """An entry's ``@@`` decorator lines (character-card V3: lines at the top of the content;
    ``@@@`` is a fallback of the decorator above it) and the text after them, the newlines
    around them trimmed.

    >>> split_decorators("@@depth 4\\n@@@instruct_depth 4\\nThe tower is old.")
    (['@@depth 4', '@@@instruct_depth 4'], 'The tower is old.')
    """
    if not content.lstrip().startswith("@@"):
        return [], content
    lines = content.split("\n")
    decorators: list[str] = []
    for line in lines:
        if not _DECORATOR.match(line.strip()):
            break
        decorators.append(line.strip())
    body = "\n".join(lines[len(decorators) :])
    return decorators, body.strip("\n") if decorators else body
