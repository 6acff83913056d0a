"""Lore as memory retrieves it: the entries a situation activates, for whoever may know them.

Two holders, never mixed:

- **the author** (the writer, the planner, ``fabula recall``): the world's books of the
  story's pack (no character's own book), read from the story's pack, parsed once per pack
  (by its digest);
- **a character**: its own lore only — the document its keyspace holds (its card's book,
  and what the author made known to it: see :func:`fabula.worlds.lore.known_to`), read
  through its own Redis user by :meth:`~fabula.memory.acl.CharacterMind.lore`. Nothing of
  the pack is read for it.

Either way the entries are activated as SillyTavern's World Info does it
(:mod:`fabula.worlds.activation`), within the lore's own budget — beside the memory's,
as SillyTavern gives World Info its own share of the context: the story's
``world_info_budget`` percent of its ``context`` (capped by ``world_info_budget_cap``) where
a context was imported or set, else ``FABULA_LORE_BUDGET``
(:data:`fabula.settings.LORE_BUDGET` by default) — and each book's own ``token_budget``. An
entry that activates but does not fit is not dropped in silence: :func:`recall_books`
returns it among the ``left_out``, with its size and the budget it did not fit.
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from fabula.memory.records import Memory
from fabula.memory.store.view import StoryReads
from fabula.settings import LORE_BUDGET
from fabula.worlds.activation import Activated, Activation, Chat, Timed, activation, count_words
from fabula.worlds.lore import (
    LoreBook,
    LoreEntry,
    WorldInfoSettings,
    lore_budget,
    parse_lore,
    split_decorators,
)
from fabula.worlds.pack import WorldPack
from fabula.worlds.timed import chat_activations

if TYPE_CHECKING:
    from fabula.memory.acl import CharacterMind

LIVED = 100_000  # a character's memories read to build the chat it lived (all of them)


@dataclass(frozen=True)
class Books:
    """The entries of some lorebooks, read once: each entry's book, the books' budgets, and
    whether they scan recursively (yes, as a fresh SillyTavern install does, unless a
    ``lorebook_v3`` book says ``recursive_scanning: false``; a card's own book's is not
    read, as SillyTavern's ``convertCharacterBook``, world-info.js 4519-4566, does not)."""

    entries: tuple[LoreEntry, ...]
    book_of: tuple[str, ...]
    limits: tuple[int, ...]
    recursive: bool
    sillytavern: frozenset[int] = frozenset()  # entries of SillyTavern World Info exports
    case_sensitive: bool = False
    whole_words: bool = True
    max_recursion: int = 0
    depth: int = 2  # world_info_depth: the turns a chat scan sees
    min_activations: int = 0
    min_depth_max: int = 0
    key: str = ""  # what its timed effects are remembered by (see fabula.worlds.timed)
    world_info: WorldInfoSettings = field(default_factory=WorldInfoSettings)  # read with these
    holder_tags: tuple[str, ...] = ()  # a character's copy: its tags, for the filters

    def bound(self, budget: int) -> int:
        """The budget of an activation of these books: the settings' World Info budget
        (:func:`fabula.worlds.lore.lore_budget`: a percent of the context, capped; ``budget``,
        Fabula's lore budget, where no context is set) and no more than each book's own
        ``token_budget``."""
        return min([lore_budget(self.world_info, budget), *self.limits])


@dataclass(frozen=True)
class Lit:
    """An activated entry and the name of its book; ``text`` is its content without its
    decorators (what a prompt shows)."""

    book: str
    activated: Activated

    @property
    def text(self) -> str:
        return split_decorators(self.activated.entry.content)[1]


def books_of(
    books: Sequence[LoreBook],
    settings: WorldInfoSettings | None = None,
    holder_tags: Sequence[str] = (),
) -> Books | None:
    """``books`` read for activation with the story's World Info ``settings`` (a fresh
    SillyTavern install's when None), or None if they hold no entry; ``holder_tags``: the
    tags of the character whose lore they are (its copy's, :func:`character_lore`)."""
    settings = settings or WorldInfoSettings()
    pairs = [(b, e) for b in books for e in b.entries]
    if not pairs:
        return None
    return Books(
        entries=tuple(e for _, e in pairs),
        book_of=tuple(b.name for b, _ in pairs),
        limits=tuple(b.token_budget for b in books if b.token_budget),
        # on, as in a fresh SillyTavern install (its default settings.json:
        # world_info_recursive true), unless a lorebook_v3 file turns it off; a card's
        # own book's recursive_scanning is not read, as convertCharacterBook does not
        recursive=settings.recursive
        and not any(b.recursive_scanning is False for b in books if b.format != "character_book"),
        case_sensitive=settings.case_sensitive,
        whole_words=settings.match_whole_words,
        max_recursion=settings.max_recursion_steps,
        sillytavern=frozenset(i for i, (b, _) in enumerate(pairs) if b.format == "sillytavern"),
        depth=settings.depth,
        min_activations=settings.min_activations,
        min_depth_max=settings.min_activations_depth_max,
        key=hashlib.sha256(
            "\n".join([settings.model_dump_json(), *(b.model_dump_json() for b in books)]).encode()
        ).hexdigest(),
        world_info=settings,
        holder_tags=tuple(holder_tags),
    )


@dataclass(frozen=True)
class Recalled:
    """What a text activates of some books: the entries ``lit`` within ``budget`` tokens
    (the lore budget given, or a book's own ``token_budget`` where smaller), in insertion
    order, and those it activated that did not fit (``left_out``, each with its size in
    its ``activated.tokens``)."""

    lit: list[Lit]
    left_out: list[Lit]
    budget: int


def recall_books(
    books: Books | None,
    text: str,
    *,
    budget: int = LORE_BUDGET,
    count_tokens: Callable[[str], int] | None = None,
    turn: int | None = None,
) -> Recalled:
    """The entries of ``books`` that ``text`` activates within ``budget`` tokens and each
    book's own ``token_budget`` (in insertion order), and those left out."""
    if books is None:
        return Recalled([], [], budget)
    bound = books.bound(budget)
    found = activation(
        books.entries,
        text,
        budget=max(bound, 0),
        turn=turn,
        recursive=books.recursive,
        sillytavern=books.sillytavern,
        case_sensitive=books.case_sensitive,
        whole_words=books.whole_words,
        max_recursion=books.max_recursion,
        count_tokens=count_tokens or count_words,
    )
    return Recalled(
        [Lit(books.book_of[a.index], a) for a in found.admitted],
        [Lit(books.book_of[a.index], a) for a in found.left_out],
        bound,
    )


def recall_chat(
    books: Books | None,
    turns: Sequence[str],
    *,
    budget: int = LORE_BUDGET,
    count_tokens: Callable[[str], int] | None = None,
    character: str | None = None,
) -> Recalled:
    """What the scan of a story's ``turns`` (oldest first; the last the one at hand)
    activates of ``books``, as SillyTavern scans a chat of as many messages: each entry sees
    the newest turns to its depth (its ``scanDepth``, else the story's
    ``world_info_depth``), the depth widens for minimum activations, an entry's character
    filter is matched against ``character`` (None: the author's, no filter applies), and
    the timed effects (``sticky``, ``cooldown``, ``delay``) are those the turns before leave
    (:func:`fabula.worlds.timed.chat_activations`: computed from them, so a rewind or a fork
    has its own). Within ``budget`` tokens and each book's ``token_budget``."""
    if books is None:
        return Recalled([], [], budget)
    bound = books.bound(budget)
    count = count_tokens or count_words

    def scan(chat: Chat, timed: Timed) -> Activation:
        return activation(
            books.entries,
            chat,
            budget=max(bound, 0),
            turn=len(chat.messages),
            recursive=books.recursive,
            sillytavern=books.sillytavern,
            case_sensitive=books.case_sensitive,
            whole_words=books.whole_words,
            max_recursion=books.max_recursion,
            count_tokens=count,
            timed=timed,
            character=character,
            character_tags=books.holder_tags,
            tag_names=books.world_info.tags,
        )

    def chat(messages: Sequence[str]) -> Chat:
        return Chat(tuple(messages), books.depth, books.min_activations, books.min_depth_max)

    found = chat_activations(
        scan, books.entries, turns, chat, key=f"{books.key}:{character}:{bound}"
    )
    return Recalled(
        [Lit(books.book_of[a.index], a) for a in found.admitted],
        [Lit(books.book_of[a.index], a) for a in found.left_out],
        bound,
    )


def activate_books(
    books: Books | None,
    text: str,
    *,
    budget: int = LORE_BUDGET,
    count_tokens: Callable[[str], int] | None = None,
    turn: int | None = None,
) -> list[Lit]:
    """The entries of ``books`` that ``text`` activates, within ``budget`` tokens and each
    book's own ``token_budget``, in insertion order (:func:`recall_books`'s ``lit``)."""
    return recall_books(books, text, budget=budget, count_tokens=count_tokens, turn=turn).lit


_WORLD: OrderedDict[str, Books | None] = OrderedDict()
_WORLD_KEPT = 16
_OWN: OrderedDict[str, Books | None] = OrderedDict()
_OWN_KEPT = 256


async def world_books(store: StoryReads) -> Books | None:
    """The world books of the story's pack (the author's; None: no pack, or no entries),
    parsed once per pack: the same entry objects at every call, so activation reuses what
    it compiled for them."""
    digest = await store.pack_digest()
    if digest is not None and digest in _WORLD:
        _WORLD.move_to_end(digest)
        return _WORLD[digest]
    document = await store.pack_document()
    if document is None:
        return None
    lore = WorldPack.model_validate_json(document).lore
    found = books_of(lore.books_of(None), lore.world_info)
    if digest is not None:
        _WORLD[digest] = found
        while len(_WORLD) > _WORLD_KEPT:
            _WORLD.popitem(last=False)
    return found


def character_lore(document: str | None) -> Books | None:
    """A character's own lore document (what ``CharacterMind.lore`` read from its own
    keyspace) read for activation, once per document."""
    if not document:
        return None
    if document in _OWN:
        _OWN.move_to_end(document)
        return _OWN[document]
    own = parse_lore(document)
    found = _OWN[document] = books_of(own.books, own.world_info, own.holder_tags)
    while len(_OWN) > _OWN_KEPT:
        _OWN.popitem(last=False)
    return found


def turn_lore(
    books: Books | None,
    said: Sequence[str],
    at_hand: str,
    *,
    budget: int = LORE_BUDGET,
    count_tokens: Callable[[str], int] | None = None,
    character: str | None = None,
) -> Recalled:
    """The lore of the turn at hand, the one scan every holder's lore goes through: the
    chat of the turns ``said`` so far (oldest first) and ``at_hand`` (what the turn is
    about: the plan, the direction, a question, a character's situation) as its newest
    message, scanned by :func:`recall_chat` — the story's World Info settings (depth,
    minimum activations, recursion, case, whole words), each entry's scan depth, character
    filter (matched against ``character``; None: the author's, no filter) and the timed
    effects the turns before leave."""
    return recall_chat(
        books,
        [*said, at_hand],
        budget=budget,
        count_tokens=count_tokens,
        character=character,
    )


async def author_lore(
    store: StoryReads,
    at_hand: str,
    *,
    budget: int = LORE_BUDGET,
    count_tokens: Callable[[str], int] | None = None,
    as_of: int | None = None,
) -> Recalled:
    """The author's lore for the turn after ``as_of`` (default: the head): the world's books
    (no character's own) scanned by :func:`turn_lore` over the branch's turns up to it and
    ``at_hand``. The writer, the planner and ``fabula recall`` read it."""
    books = await world_books(store)
    if books is None:
        return Recalled([], [], budget)
    head = as_of if as_of is not None else await store.head()
    said = [t.text for t in await store.turn_texts(1, head)] if head >= 1 else []
    return turn_lore(books, said, at_hand, budget=budget, count_tokens=count_tokens)


def lived_turns(memories: Sequence[Memory], upto: int | None = None) -> list[str]:
    """The story's turns as a character lived them, oldest first: each turn's text the
    quotes of its memories of that turn (nothing where it witnessed nothing, so a turn
    counts as SillyTavern counts a message), up to turn ``upto`` (default: the last it
    lived); memories from before the story (turn 0) are read with its first turn."""
    last = upto if upto is not None else max((m.turn for m in memories), default=0)
    by_turn: dict[int, list[str]] = {}
    for m in memories:
        if m.turn <= last:
            by_turn.setdefault(max(m.turn, 1), []).append(m.quote)
    return ["\n".join(by_turn.get(t, [])) for t in range(1, last + 1)]


async def own_lore(
    mind: CharacterMind,
    name: str,
    at_hand: str | None,
    *,
    budget: int = LORE_BUDGET,
    count_tokens: Callable[[str], int] | None = None,
    as_of: int | None = None,
) -> Recalled:
    """A character's lore for a turn: its own lore only (its keyspace's document: its
    card's book and what the author made known to it, with its tags, read through its own
    connection) scanned by :func:`turn_lore` over the turns as it lived them (its own
    memories, :func:`lived_turns`, by turn ``as_of``) and ``at_hand``, with its ``name``
    and tags for the character filters. Nothing of the pack or the story's text is read
    for it.

    ``at_hand`` is the turn at hand (its prompt's situation, a recall's request); None:
    the turn ``as_of`` itself, as it lived it, is the newest message — what the turns up
    to it activated for the character, which the studio's Lore page shows. Its prompt, a
    recall ``--as`` it and the Lore page all come here, so the same turns give the same
    lore."""
    books = character_lore(await mind.lore())
    if books is None:
        return Recalled([], [], budget)
    said = lived_turns(await mind.memories(last=LIVED, as_of=as_of), as_of)
    if at_hand is None:
        said, at_hand = said[:-1], (said[-1] if said else "")
    return turn_lore(books, said, at_hand, budget=budget, count_tokens=count_tokens, character=name)
