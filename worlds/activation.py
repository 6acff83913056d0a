"""Which lore entries a text activates, as SillyTavern's World Info does it: its
``checkWorldInfo`` in ``public/scripts/world-info.js`` at release 1.12.6 (line numbers
below cite that file; its code is not copied here, only its rules).

Pure: entries and a text in, the activated entries (each with what fired it) out.

- **Defaults** are a fresh SillyTavern install's (``default/content/settings.json``):
  keys case-insensitive, matched as whole words, recursion on, no limit on recursion
  steps; an entry's own ``caseSensitive`` / ``matchWholeWords`` overrides them (193-196,
  252).
- **Keys** (:mod:`fabula.worlds.imports.keys`, ``matchKeys`` 243-276): a one-word key
  matched whole must stand between ASCII non-word characters (JavaScript's ``\\W``, so a
  Cyrillic key is found inside an inflected word); a key of several words is matched as
  written. ``/pattern/flags`` keys are regular expressions on the text as written with
  their own flags, matched in linear time by RE2; one that does not compile matches nothing
  and is logged once (``lore_key_refused``): an import disables such an entry, but a story
  stored before may hold one.
- **Secondary keys** (``selective``, and only when there are any, 3911-3916) combine with
  the primary match: AND ANY, AND ALL, NOT ANY, NOT ALL (3925-3960), looked for in the same
  text as the primary keys: the chat and every recursed text.
- **constant** entries are active whatever the keys; a disabled entry never is.
- **Recursion** (:func:`recurse`): the text of activated entries joins the scanned text
  while new entries activate; an entry that prevents recursion adds nothing to it, a
  non-recursable one (``exclude_recursion``) is activated by the first scan only, one that
  delays until recursion (``delayUntilRecursion``, a level) waits for its level.
- **Budget.** Each step's entries are admitted by ``order``, highest first (``sortFn``,
  82), below the budget (a total that reaches it overflows, 4026-4028); once one does not
  fit, no more are admitted: it and the rest of its step are the
  activation's ``left_out`` (never dropped in silence: a recall lists them, with their
  size). The admitted entries are returned in insertion order (lower ``order`` first).
- **Decorators** (V3, at the top of the content; ``@@@`` a fallback of the one above):
  ``@@activate``, ``@@dont_activate``, ``@@additional_keys`` (also needs one of them),
  ``@@exclude_keys`` (none of them), ``@@activate_only_after N`` and
  ``@@activate_only_every N`` (with ``turn``); the others (positions, depths, roles) have no
  meaning here and are ignored, their fallbacks considered instead.
"""

from __future__ import annotations

import functools
import random
import re
from collections import OrderedDict
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, TypedDict, Unpack

from fabula.logs import get_logger
from fabula.worlds.imports.keys import (
    KeyError_,
    KeyFinder,
    Matcher,
    compile_key,
    is_regex_key,
    key_matches,
)
from fabula.worlds.lore import LoreEntry, split_decorators

log = get_logger(__name__)

Fired = Literal["constant", "key", "recursion", "decorator", "sticky"]
_KNOWN = {
    "activate",
    "dont_activate",
    "additional_keys",
    "exclude_keys",
    "activate_only_after",
    "activate_only_every",
}


@dataclass(frozen=True)
class Activated:
    """An activated entry: its index in the entries given, how it fired, the key that did
    (None for a constant one), and the recursion step (0: the text itself)."""

    index: int
    entry: LoreEntry
    fired: Fired
    key: str | None
    step: int
    tokens: int


_SILLYTAVERN = frozenset({"activate", "dont_activate"})
"""The decorators SillyTavern knows (``KNOWN_DECORATORS``, world-info.js 93): in a World
Info export only these apply, the others are dropped (``parseDecorators``, 3646-3692)."""


def decorators_of(entry: LoreEntry, sillytavern: bool = False) -> dict[str, str]:
    """The decorators Fabula applies, name to value: of each decorator and its ``@@@``
    fallbacks the first Fabula knows (``sillytavern``: an entry of a SillyTavern World Info
    export, only SillyTavern's two), and of several with one name the first."""
    known = _SILLYTAVERN if sillytavern else _KNOWN
    lines, _ = split_decorators(entry.content)
    groups: list[list[tuple[str, str]]] = []
    for line in lines:
        fallback = line.startswith("@@@")
        name, _, value = line.lstrip("@").partition(" ")
        if fallback and groups:
            groups[-1].append((name, value.strip()))
        else:
            groups.append([(name, value.strip())])
    found: dict[str, str] = {}
    for group in groups:
        chosen = next(((n, v) for n, v in group if n in known), None)
        if chosen is not None:
            found.setdefault(*chosen)
    return found


@functools.lru_cache(maxsize=8)
def _lower(text: str) -> str:
    return text.lower()


_WORD = re.compile(r"[A-Za-z0-9_]+")
"""A word as JavaScript's ``\\w`` has it (ASCII): SillyTavern bounds whole words by ``\\W``."""


@functools.lru_cache(maxsize=8)
def _words(text: str) -> frozenset[str]:
    """The words of ``text`` (ASCII ``\\w+`` runs, as the whole-word pattern's ``\\W`` bounds
    them)."""
    return frozenset(_WORD.findall(text))


def _word_needle(key: str, entry: LoreEntry, case: bool, whole: bool) -> str | None:
    """The word ``key`` must be in the text as, when it is a plain one-word key matched
    whole (found by a set lookup, not a scan), else None."""
    if entry.use_regex or is_regex_key(key) or not whole:
        return None
    needle = key.strip() if case else key.strip().lower()
    return needle if _WORD.fullmatch(needle) else None


def _hit(key: str, text: str, entry: LoreEntry, case: bool, whole: bool) -> bool:
    """Whether ``key`` is in ``text`` (an invalid regular expression never is)."""
    if not entry.use_regex and not is_regex_key(key):
        # a plain key must be in the text as a substring: a fast test before the regex
        needle = key.strip() if case else key.strip().lower()
        hay = text if case else _lower(text)
        if whole and _WORD.fullmatch(needle):
            # one word, matched whole: it is a word of the text, or absent
            return needle in _words(hay)
        if needle not in hay:
            return False
    try:
        return key_matches(
            key, text, use_regex=entry.use_regex, case_sensitive=case, whole_words=whole
        )
    except KeyError_ as exc:
        _refused(str(exc))
        return False  # an invalid regular expression matches nothing


@functools.lru_cache(maxsize=1024)
def _refused(reason: str) -> None:
    """Log, once per key, that a stored key does not compile and so never fires."""
    log.warning("lore_key_refused", error=reason)


def _hits(keys: Sequence[str], text: str, entry: LoreEntry, case: bool, whole: bool) -> list[str]:
    return [key for key in keys if _hit(key, text, entry, case, whole)]


def _number(value: str | None) -> int | None:
    try:
        return int(value) if value is not None else None
    except ValueError:
        return None


@dataclass(frozen=True)
class _Entry:
    """One live entry, read once: its decorators, its text without them, its own case and
    whole-word settings, and its primary keys, each with the word it needs (or None)."""

    index: int
    entry: LoreEntry
    deco: dict[str, str]
    body: str
    case: bool
    whole: bool
    keys: tuple[tuple[str, str | None], ...]
    plain: tuple[tuple[str, Matcher] | None, ...]  # each key's needle and matcher, if plain
    delayed: bool
    depth: int | None  # its own scan depth (``scanDepth``), or None: the global one


_EDGE = 3  # the length of the ends of words that anchor a key of several words


@functools.lru_cache(maxsize=16)
def _edges(text: str, lengths: frozenset[int], last: bool) -> frozenset[str]:
    """The beginnings (``last``: the ends) of the words of ``text``, of each of ``lengths``
    characters (a shorter word: the whole of it)."""
    words = _words(text)
    if last:
        return frozenset(w[-k:] for w in words for k in lengths)
    return frozenset(w[:k] for w in words for k in lengths)


Anchor = tuple[str, str | None, str | None]
"""What a plain key's text must hold for the key to be in it: ``("word", w, None)`` the
word ``w``; ``("edges", end, start)`` a word ending in ``end`` and one beginning with
``start`` (either may be None); ``("scan", None, None)`` nothing the words tell."""


def _anchor(needle: str) -> Anchor:
    """The anchor of a plain key (``needle`` in the case it is matched in). A ``\\w`` run of
    the key with a non-word character on each side is a whole word of any text holding
    the key; the key's first run, with one after it, ends a word; its last, with one
    before it, begins one."""
    runs = [(m.start(), m.end()) for m in _WORD.finditer(needle)]
    inner = [needle[a:b] for a, b in runs if a > 0 and b < len(needle)]
    if inner:
        return ("word", max(inner, key=len), None)
    end = start = None
    if runs and runs[0][0] == 0 and runs[0][1] < len(needle):
        end = needle[runs[0][0] : runs[0][1]][-_EDGE:]
    if runs and runs[-1][0] > 0 and runs[-1][1] == len(needle):
        start = needle[runs[-1][0] : runs[-1][1]][:_EDGE]
    if end is None and start is None:
        return ("scan", None, None)
    return ("edges", end, start)


@dataclass
class _Words:
    """The entries a text's words point to, for the keys matched in one case."""

    words: dict[str, list[int]] = field(default_factory=dict)  # a word the text must have
    # a word's beginning (and the end of another) the text must have
    starts: dict[str, list[tuple[str | None, int]]] = field(default_factory=dict)
    ends: dict[str, list[int]] = field(default_factory=dict)  # a word's end (no beginning known)
    keys: tuple[frozenset[str], frozenset[str], frozenset[str]] = (frozenset(),) * 3
    lengths: tuple[frozenset[int], frozenset[int]] = (frozenset(), frozenset())

    def add(self, anchor: Anchor, i: int) -> None:
        """Point ``anchor`` to entry ``i``."""
        kind, a, b = anchor
        if kind == "word" and a is not None:
            self.words.setdefault(a, []).append(i)
        elif b is not None:
            self.starts.setdefault(b, []).append((a, i))
        elif a is not None:
            self.ends.setdefault(a, []).append(i)

    def seal(self) -> None:
        """Freeze the keys looked up (once every anchor is added)."""
        self.keys = (frozenset(self.words), frozenset(self.starts), frozenset(self.ends))
        ends = {len(e) for pairs in self.starts.values() for e, _ in pairs if e is not None}
        self.lengths = (
            frozenset(map(len, self.starts)),
            frozenset(ends | set(map(len, self.ends))),
        )

    def __bool__(self) -> bool:
        return bool(self.words or self.starts or self.ends)

    def find(self, hay: str, into: set[int]) -> None:
        """Add to ``into`` the entries whose anchors ``hay`` holds."""
        words, starts, ends = self.keys
        for word in _words(hay) & words:
            into.update(self.words[word])
        if starts:
            last = _edges(hay, self.lengths[1], True)
            for start in _edges(hay, self.lengths[0], False) & starts:
                into.update(i for end, i in self.starts[start] if end is None or end in last)
        if ends:
            for end in _edges(hay, self.lengths[1], True) & ends:
                into.update(self.ends[end])


@dataclass
class _Index:
    """The entries of one call, compiled: the live ones, the constant ones, the entries each
    key's anchor points to (by the words of the text, lowered or as written), the entries
    with a plain key no word anchors (a one-word key matched anywhere: "power" in
    "powers"), found by one pass of RE2 over the text (:class:`KeyFinder`), and the
    entries with a regex key, which are tested one by one."""

    entries: Sequence[LoreEntry]  # held, so that the ids in the cache's key stay theirs
    live: dict[int, _Entry]
    always: list[int]  # constant, or activated by a decorator
    lowered: _Words  # keys matched without their case
    exact: _Words  # case-sensitive keys
    scanned: list[int]
    tokens: dict[Callable[[str], int], dict[int, int]]
    finder: KeyFinder | None = None  # plain keys found anywhere in the text

    def candidates(self, text: str) -> set[int]:
        """The live entries one of whose primary keys may be in ``text``: those whose
        anchor the text holds, those one of whose loose keys the finder finds in it, and
        every entry with a regex key. A key that is in the text is always among them (the
        anchors are what it implies)."""
        found = set(self.scanned)
        if self.lowered:
            self.lowered.find(_lower(text), found)
        if self.exact:
            self.exact.find(text, found)
        if self.finder is not None:
            found |= self.finder.candidates(text)
        return found

    def count(self, i: int, count_tokens: Callable[[str], int]) -> int:
        """The tokens of entry ``i``'s text, counted once per counter."""
        counts = self.tokens.get(count_tokens)
        if counts is None:
            if len(self.tokens) >= 4:
                self.tokens.clear()
            counts = self.tokens[count_tokens] = {}
        if i not in counts:
            counts[i] = count_tokens(self.live[i].body)
        return counts[i]


def _compile(
    entries: Sequence[LoreEntry], case: bool, whole: bool, sillytavern: frozenset[int]
) -> _Index:
    index = _Index(tuple(entries), {}, [], _Words(), _Words(), [], {})
    finder = KeyFinder()
    loose = False
    for i, e in enumerate(entries):
        if not e.enabled:
            continue
        deco = decorators_of(e, i in sillytavern)
        if "dont_activate" in deco and "activate" not in deco:
            continue
        own_case = e.case_sensitive if e.case_sensitive is not None else case
        own_whole = e.whole_words if e.whole_words is not None else whole
        keys = tuple((k, _word_needle(k, e, own_case, own_whole)) for k in e.keys)
        plain = tuple(_plain(k, e, own_case, own_whole) for k in e.keys)
        index.live[i] = _Entry(
            index=i,
            entry=e,
            deco=deco,
            body=split_decorators(e.content)[1],
            case=own_case,
            whole=own_whole,
            keys=keys,
            plain=plain,
            delayed=delayed(e),
            depth=scan_depth(e),
        )
        if e.constant or "activate" in deco:
            index.always.append(i)
            continue
        anchors: set[Anchor] = set()
        found_anywhere: list[str] = []  # plain keys no word anchors: the finder's
        for key, word in keys:
            if word is not None:
                anchors.add(("word", word, None))
            elif not key.strip():
                continue  # an empty key is never in a text
            elif e.use_regex or is_regex_key(key):
                anchors.add(("scan", None, None))
            else:
                anchor = _anchor(key.strip() if own_case else key.strip().lower())
                if anchor[0] == "scan":
                    found_anywhere.append(key)
                else:
                    anchors.add(anchor)
        if ("scan", None, None) in anchors:
            index.scanned.append(i)
            continue
        for key in found_anywhere:
            finder.add(i, key, use_regex=False, case_sensitive=own_case)
            loose = True
        for anchor in anchors:
            (index.exact if own_case else index.lowered).add(anchor, i)
    index.lowered.seal()
    index.exact.seal()
    if loose:
        finder.seal()
        index.finder = finder
    return index


_INDEXES: OrderedDict[tuple[Any, ...], _Index] = OrderedDict()
_INDEXES_KEPT = 16


def _index(
    entries: Sequence[LoreEntry], case: bool, whole: bool, sillytavern: frozenset[int]
) -> _Index:
    """The compiled index of ``entries`` (the same entry objects, the same defaults: the
    one compiled before; entries are immutable, and the cache holds them, so their ids
    cannot be another's)."""
    key = (tuple(map(id, entries)), case, whole, sillytavern)
    found = _INDEXES.get(key)
    if found is None:
        found = _INDEXES[key] = _compile(entries, case, whole, sillytavern)
        while len(_INDEXES) > _INDEXES_KEPT:
            _INDEXES.popitem(last=False)
    else:
        _INDEXES.move_to_end(key)
    return found


def _plain(key: str, entry: LoreEntry, case: bool, whole: bool) -> tuple[str, Matcher] | None:
    """A plain key's needle (in the case it is matched in) and its compiled matcher, which
    together find it as :func:`_hit` does; None for a regex key or an empty one."""
    if entry.use_regex or is_regex_key(key) or not key.strip():
        return None
    needle = key.strip() if case else key.strip().lower()
    return needle, compile_key(key, False, case, whole)


def _primary(item: _Entry, text: str) -> str | None:
    """The first of the entry's primary keys in ``text``, or None."""
    words: frozenset[str] | None = None
    for (key, word), plain in zip(item.keys, item.plain, strict=True):
        if word is not None:
            if words is None:
                words = _words(text if item.case else _lower(text))
            if word in words:
                return key
        elif plain is not None:
            # as _hit: a substring test first, then the key as the matcher finds it
            needle, matcher = plain
            hay = text if item.case else _lower(text)
            if needle in hay and matcher.search(text) is not None:
                return key
        elif _hit(key, text, item.entry, item.case, item.whole):
            return key
    return None


def _match(item: _Entry, text: str, turn: int | None, context: str | None = None) -> str | None:
    """The key that activates the entry on ``text`` (decorators and secondary logic
    applied; secondary and additional keys are looked for in ``context``, the text and
    what recursion added, when given), or None."""
    context = text if context is None else context
    deco, entry, case, whole = item.deco, item.entry, item.case, item.whole
    after = _number(deco.get("activate_only_after"))
    every = _number(deco.get("activate_only_every"))
    if turn is not None and ((after is not None and turn < after) or (every and turn % every)):
        return None
    key = _primary(item, text)
    if key is None:
        return None
    if "additional_keys" in deco:
        extra = [k.strip() for k in deco["additional_keys"].split(",") if k.strip()]
        if not _hits(extra, context, entry, case, whole):
            return None
    if "exclude_keys" in deco:
        banned = [k.strip() for k in deco["exclude_keys"].split(",") if k.strip()]
        if _hits(banned, context, entry, case, whole):
            return None
    if entry.selective and entry.secondary_keys:
        found = len(_hits(entry.secondary_keys, context, entry, case, whole))
        if not secondary_holds(entry, found):
            return None
    return key


def secondary_holds(entry: LoreEntry, found: int) -> bool:
    """Whether ``found`` of the entry's secondary keys in the text satisfy its logic
    (``and_any``: one at least; ``and_all``: all; ``not_any``: none; ``not_all``: not all)."""
    total = len(entry.secondary_keys)
    return {
        "and_any": found > 0,
        "and_all": found == total,
        "not_any": found == 0,
        "not_all": found < total,
    }[entry.logic]


def delay_level(entry: LoreEntry) -> int:
    """The recursion level ``entry`` waits for (``delayUntilRecursion``; a card's
    ``extensions.delay_until_recursion``, as ``convertCharacterBook`` reads it, world-info.js
    4536): 0 none, ``true`` 1, a number that level (world-info.js 3741-3744)."""
    value = entry.kept.get("delayUntilRecursion")
    ext = entry.kept.get("extensions")
    if value is None and isinstance(ext, dict):
        value = ext.get("delay_until_recursion")
    if value is True:
        return 1
    if isinstance(value, int) and not isinstance(value, bool) and value > 0:
        return value
    return 0


def delayed(entry: LoreEntry) -> bool:
    """Whether ``entry`` waits for recursion (:func:`delay_level`): no key of the first scan
    activates it, only a recursion step's (world-info.js 3843-3851)."""
    return delay_level(entry) > 0


@dataclass
class Admission:
    """The entries a call activates, admitted step by step below ``budget`` tokens (None:
    no bound; as ``checkWorldInfo``, 4026-4028, an entry that brings the total to the budget
    does not fit): each step's by ``order``, highest first (SillyTavern's ``sortFn``;
    constants and priority have no precedence there), until one does not fit, after which the budget
    is ``full`` and nothing more is admitted; that one and the rest of its step are ``left_out``."""

    budget: int | None
    sticky: frozenset[int] = frozenset()  # entries admitted first (4004-4009)
    admitted: list[Activated] = field(default_factory=list)
    used: int = 0
    full: bool = False
    left_out: list[Activated] = field(default_factory=list)

    def admit(self, found: list[Activated]) -> list[Activated]:
        """Admit what one step ``found``, as far as the budget allows: those taken."""
        # sticky entries first, then by order alone, highest first, ties as found
        # (world-info.js 82, 4004-4009)
        found.sort(key=lambda a: (a.index not in self.sticky, -a.entry.order))
        taken = []
        for k, a in enumerate(found):
            if self.full:
                self.left_out.extend(found[k:])
                break
            # SillyTavern's test: the total reaching the budget overflows it (4026-4028)
            if self.budget is not None and self.used + a.tokens >= self.budget:
                self.full = True
                self.left_out.extend(found[k:])
                break
            self.used += a.tokens
            taken.append(a)
        self.admitted.extend(taken)
        return taken

    def in_order(self) -> list[Activated]:
        """Every entry admitted, in insertion order (the entry's order, then its index)."""
        return sorted(self.admitted, key=lambda a: (a.entry.order, a.index))


def count_words(text: str) -> int:
    """The default token count of an entry: its words."""
    return len(text.split())


@dataclass(frozen=True)
class Activation:
    """What a text activates: the entries ``admitted`` within the budget, in insertion
    order, and those it activated that did not fit (``left_out``, in order of precedence:
    the first is the one that found the budget full), each with its size in ``tokens``."""

    admitted: list[Activated]
    left_out: list[Activated]


@dataclass(frozen=True)
class Chat:
    """A chat to scan, as SillyTavern's ``checkWorldInfo`` takes it (world-info.js 3704):
    its ``messages`` (oldest first: a story's turns), the global scan ``depth``
    (``world_info_depth``: the newest messages an entry without its own ``scanDepth``
    sees), and minimum activations: while fewer than ``min_activations`` entries are
    admitted, the depth widens by one message and the chat is scanned again, up to
    ``min_depth_max`` (0: the chat's length; 4054-4068)."""

    messages: tuple[str, ...]
    depth: int = 2
    min_activations: int = 0
    min_depth_max: int = 0


@dataclass(frozen=True)
class Timed:
    """The entries (their indices) under a timed effect at one scan (world-info.js 386-690):
    ``sticky`` ones are active whatever their keys, ``cooldown`` ones (not sticky) and
    ``delay`` ones are not activated at all (3827-3841). :mod:`fabula.worlds.timed` finds
    them from the activations of the turns before."""

    sticky: frozenset[int] = frozenset()
    cooldown: frozenset[int] = frozenset()
    delay: frozenset[int] = frozenset()


def _count_or_none(value: Any) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return int(value)


def scan_depth(entry: LoreEntry) -> int | None:
    """The entry's own scan depth: a World Info entry's ``scanDepth``, a card book entry's
    ``extensions.scan_depth`` (``convertCharacterBook``, 4552); None: the global one (the
    editor keeps 0 to 1000, 3033)."""
    value = _count_or_none(_field(entry, "scanDepth", "scan_depth"))
    return None if value is None or value < 0 else value


def timing(entry: LoreEntry) -> tuple[int, int, int]:
    """The entry's ``sticky``, ``cooldown`` and ``delay`` in messages (a card book entry's
    ``extensions``, 4561-4563); 0 where it has none (falsy: no effect, 601-604, 574-577)."""

    def read(name: str) -> int:
        value = _count_or_none(_field(entry, name, name))
        return value if value is not None and value > 0 else 0

    sticky, cooldown, delay = read("sticky"), read("cooldown"), read("delay")
    return sticky, cooldown, delay


def filter_admits(
    entry: LoreEntry,
    character: str,
    tags: Collection[str] = (),
    tag_names: Mapping[str, str] | None = None,
) -> bool:
    """Whether the entry's ``characterFilter`` lets ``character`` activate it, as
    ``checkWorldInfo`` applies it (world-info.js 3801-3826), its two tests one after the
    other:

    - **names** (3802-3809): with any, ``character`` (the name of the character whose chat
      it is: SillyTavern compares its card's file name, ``getCharaFilename``) must be one
      of them (``isExclude``: none of them);
    - **tags** (3812-3826): with any, one of the character's ``tags`` (its card's, as
      SillyTavern imports them: :func:`fabula.worlds.lore.card_tags`) must be one of them
      (``isExclude``: none of them). The filter holds SillyTavern's tag ids, read as names
      through ``tag_names`` (the imported ``settings.json``'s tags); an id with no name
      there is taken as a name. Names compare in any case, as SillyTavern matches a card's
      tags to its own (tags.js 752). A character with no tags has none in the filter
      (SillyTavern gives it an empty tag map, tags.js 457-461).

    So an entry filtered to a name and a tag needs both; an exclusion of either keeps out
    a character that has it."""
    found = entry.kept.get("characterFilter")
    if not isinstance(found, dict):
        return True
    exclude = bool(found.get("isExclude"))
    names = found.get("names")
    if isinstance(names, list) and names:
        included = character in names
        if included == exclude:  # 3804: filtered
            return False
    wanted = found.get("tags")
    if isinstance(wanted, list) and wanted:
        names_of = tag_names or {}
        filter_tags = {str(names_of.get(str(t), t)).lower() for t in wanted}
        has = any(t.lower() in filter_tags for t in tags)  # 3820
        if has == exclude:  # 3821: filtered
            return False
    return True


class Options(TypedDict, total=False):
    """:func:`activation`'s options (each as it documents it), which :func:`activate` takes
    too."""

    budget: int | None
    count_tokens: Callable[[str], int]
    recursive: bool
    max_recursion: int
    case_sensitive: bool
    whole_words: bool
    turn: int | None
    sillytavern: frozenset[int]
    seed: int | None
    timed: Timed | None
    character: str | None
    character_tags: Collection[str]
    tag_names: Mapping[str, str] | None


def activate(
    entries: Sequence[LoreEntry], text: str | Chat, **options: Unpack[Options]
) -> list[Activated]:
    """The entries ``text`` activates within ``budget`` tokens (None: no bound), in
    insertion order: :func:`activation`'s ``admitted``."""
    return activation(entries, text, **options).admitted


def activation(
    entries: Sequence[LoreEntry],
    text: str | Chat,
    *,
    budget: int | None = None,
    count_tokens: Callable[[str], int] = count_words,
    recursive: bool = True,
    max_recursion: int = 0,
    case_sensitive: bool = False,
    whole_words: bool = True,
    turn: int | None = None,
    sillytavern: frozenset[int] = frozenset(),
    seed: int | None = None,
    timed: Timed | None = None,
    character: str | None = None,
    character_tags: Collection[str] = (),
    tag_names: Mapping[str, str] | None = None,
) -> Activation:
    """The entries ``text`` activates, those within ``budget`` tokens (None: no bound) in
    insertion order and those left out (see the module's docstring for the rules).
    ``text`` is one plain text, scanned whole, or a :class:`Chat`: its messages, scanned to
    each entry's depth, with minimum activations. ``case_sensitive`` and ``whole_words``
    are the defaults of entries that do not say, and
    ``recursive`` whether activated entries' text is scanned again: a fresh SillyTavern
    install's (its ``default/content/settings.json``: case off, whole words on, recursion
    on). ``max_recursion`` is SillyTavern's ``world_info_max_recursion_steps``: the most
    scans, the first included (0: no limit; world-info.js 3757-3761). ``turn`` is the
    story's turn, for the decorators that count turns; ``sillytavern`` the indices of the
    entries of SillyTavern World Info exports, whose decorators are only SillyTavern's two;
    ``seed`` what the rolls of probability and inclusion groups are drawn from (the turn, or
    0, when None: see :class:`Chance`). ``timed`` the entries sticky, cooling down or
    delayed at this scan (see :mod:`fabula.worlds.timed`); ``character`` the character
    whose lore it is, with its ``character_tags``, for the entries' character filters
    (None: none applies; ``tag_names`` reads the filters' tag ids: see
    :func:`filter_admits`).

    The entries are compiled once (kept for the same entry objects): a one-word key is
    found by looking the text's words up (matched whole) or by one pass of RE2 over the
    text for all such keys (matched anywhere), not by testing every entry, so a call costs
    what the text and the entries it names cost, not the size of the book."""
    index = _index(entries, case_sensitive, whole_words, sillytavern)
    live = index.live
    timed = timed or Timed()
    chat = text if isinstance(text, Chat) else None
    buffer = (
        Buffer(messages=list(reversed(chat.messages)), depth=chat.depth)
        if chat is not None
        else Buffer(str(text))
    )
    taken = Admission(budget, sticky=timed.sticky)
    depths = {item.depth for item in live.values()}

    def found(i: int, fired: Fired, key: str | None, step: int) -> Activated:
        return Activated(i, live[i].entry, fired, key, step, index.count(i, count_tokens))

    def blocked(item: _Entry) -> bool:
        """Whether the entry's character filter or its timed effects keep it out of every
        scan (3800-3850)."""
        i = item.index
        if character is not None and not filter_admits(
            item.entry, character, character_tags, tag_names
        ):
            return True
        if i in timed.delay:
            return True
        return i in timed.cooldown and i not in timed.sticky

    def scan(done: set[int], step: int, level: int, state: str) -> list[Activated]:
        """One scan of ``state`` (initial, recursion or widened), as the loop's body does it
        (3763-3957), in index order."""
        widened = state == "widened"
        out = []
        head = buffer.widest(depths, widened)
        pool = index.candidates(head) | timed.sticky & live.keys()
        if state == "initial":
            pool |= set(index.always)
        for i in sorted(pool):
            if i in done:
                continue
            item = live[i]
            if blocked(item):
                continue
            sticky = i in timed.sticky
            if not sticky:
                lvl = delay_level(item.entry)
                if state != "recursion" and lvl:  # 3843-3846
                    continue
                if state == "recursion" and lvl > level:  # 3848-3851
                    continue
                if state == "recursion" and recursive and item.entry.exclude_recursion:
                    continue  # 3853-3856
            if i in index.always:
                if state != "initial":
                    continue
                out.append(found(i, "constant" if item.entry.constant else "decorator", None, 0))
                continue
            if sticky:  # 3881-3885
                out.append(found(i, "sticky", None, step))
                continue
            key = _match(item, buffer.get(item.depth, widened), turn)
            if key is not None:
                out.append(found(i, "recursion" if state == "recursion" else "key", key, step))
        return out

    def more(_b: Buffer, done: set[int], step: int, level: int, widened: bool) -> list[Activated]:
        return scan(done, step, level, "widened" if widened else "recursion")

    first = scan(set(), 0, 0, "initial")
    levels = sorted({delay_level(item.entry) for item in live.values()} - {0})
    chance = Chance(
        seed if seed is not None else (turn or 0),
        taken,
        _scorer(index),
        lambda a, widened: buffer.get(live[a.index].depth, widened),
        timed.sticky,
    )

    def bodies(a: Activated) -> str:
        return live[a.index].body

    recurse(
        taken,
        first,
        buffer,
        recursive,
        max_recursion,
        levels,
        bodies,
        more,
        chance.choose,
        minimum=chat.min_activations if chat is not None else 0,
        most_depth=chat.min_depth_max if chat is not None else 0,
    )
    return Activation(taken.in_order(), taken.left_out)


def _scorer(index: _Index) -> Callable[[Activated, str], int]:
    """An entry's score in ``text`` (``WorldInfoBuffer.getScore``, world-info.js 336-380):
    its primary keys found, plus its secondary keys found when its logic is AND ANY, or AND
    ALL and every one is found."""

    def score(a: Activated, text: str) -> int:
        item = index.live[a.index]
        e = item.entry
        if not e.keys:
            return 0
        primary = len(_hits(e.keys, text, e, item.case, item.whole))
        secondary = len(_hits(e.secondary_keys, text, e, item.case, item.whole))
        if e.secondary_keys and (
            e.logic == "and_any" or (e.logic == "and_all" and secondary == len(e.secondary_keys))
        ):
            return primary + secondary
        return primary

    return score


def _field(entry: LoreEntry, name: str, card_name: str) -> Any:
    """A SillyTavern field of ``entry``: a World Info export's ``name``, or a card book's
    ``extensions[card_name]`` (as ``convertCharacterBook`` maps it, world-info.js 4519-4566);
    None when it has neither."""
    if name in entry.kept:
        return entry.kept[name]
    ext = entry.kept.get("extensions")
    return ext.get(card_name) if isinstance(ext, dict) else None


def _number_of(value: Any, default: float) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return default
    return float(value)


def _uses_probability(entry: LoreEntry) -> bool:
    """Whether ``entry`` rolls for its probability: a World Info entry's ``useProbability``,
    a card book entry's ``extensions.useProbability`` (true when it does not say, 4543)."""
    if "useProbability" in entry.kept:
        return bool(entry.kept["useProbability"])
    ext = entry.kept.get("extensions")
    card = isinstance(ext, dict) and "useProbability" not in entry.kept and "uid" not in entry.kept
    return bool(ext.get("useProbability", True)) if card and isinstance(ext, dict) else False


class Chance:
    """Inclusion groups and probability, as SillyTavern applies them to each step's entries
    before the budget (``filterByInclusionGroups`` 4299-4386, then the probability checks
    3977-4001), with the rolls drawn from ``seed`` (the story's turn: a recall of one turn
    gives one answer) instead of ``Math.random``.

    - **Groups** (``group``, several split at commas): once an entry of a group is active,
      no other of it activates; of several found together, with scoring
      (``useGroupScoring``) only those of the highest score stay (``filterGroupsByScoring``
      4203-4246), then the one with ``groupOverride`` and the highest order wins, else one
      drawn by ``groupWeight`` (100 by default).
    - **Probability**: an entry with ``useProbability`` (a card's, unless it says not) and a
      ``probability`` below 100 activates when a roll in [0, 100) is at most it; one that
      fails never activates in this call."""

    def __init__(
        self,
        seed: int,
        taken: Admission,
        score: Callable[[Activated, str], int],
        text_of: Callable[[Activated, bool], str],
        sticky: frozenset[int] = frozenset(),
    ) -> None:
        self.seed = seed
        self.taken = taken
        self.score = score
        self.text_of = text_of
        self.sticky = sticky
        self.rolls = 0

    def roll(self) -> float:
        """The next roll in [0, 1), the same for the same seed and the same calls."""
        self.rolls += 1
        return random.Random(f"{self.seed}:{self.rolls}").random()

    def choose(self, found: list[Activated], widened: bool = False) -> list[Activated]:
        """What of ``found`` (one step's entries) its groups and probability let through
        (``widened``: found by a minimum-activations scan, whose text scores the groups).
        A sticky entry goes first, rolls no probability (3987-3991), and in its group the
        sticky ones win (``filterGroupsByTimedEffects``, 4248-4289)."""
        # as newEntries, 4004-4009: sticky first, then as sortedEntries (by order)
        kept = sorted(found, key=lambda a: (a.index not in self.sticky, -a.entry.order))
        kept = self._groups(kept, widened)
        out = []
        for a in kept:
            if a.index in self.sticky:
                out.append(a)
                continue
            use = _uses_probability(a.entry)
            chance = _number_of(_field(a.entry, "probability", "probability"), 100)
            if use and chance != 100 and not self.roll() * 100 <= chance:
                continue
            out.append(a)
        return out

    def _groups(self, found: list[Activated], widened: bool) -> list[Activated]:
        groups: dict[str, list[Activated]] = {}
        for a in found:
            names = _field(a.entry, "group", "group")
            if isinstance(names, str):
                for name in (n for n in re.split(r",\s*", names) if n):
                    groups.setdefault(name, []).append(a)
        if not groups:
            return found
        out = list(found)
        active = {_field(x.entry, "group", "group") for x in self.taken.admitted}
        for name, group in groups.items():
            stuck = [a for a in group if a.index in self.sticky]
            if stuck:  # only the sticky ones stay, and no roll (4256-4268, 4334-4339)
                out = [a for a in out if a in stuck or a not in group]
                continue
            scored = [a for a in group if _field(a.entry, "useGroupScoring", "use_group_scoring")]
            if scored:
                scores = [self.score(a, self.text_of(a, widened)) for a in group]
                best = max(scores)
                group = [
                    a for a, sc in zip(group, scores, strict=True) if a not in scored or sc == best
                ]
                out = [a for a in out if a in group or a not in scored]
            if name in active:
                out = [a for a in out if a not in group]
                continue
            if len(group) <= 1:
                continue
            first = [a for a in group if _field(a.entry, "groupOverride", "group_override")]
            if first:
                winner: Activated | None = first[0]
            else:
                weights = [
                    _number_of(_field(a.entry, "groupWeight", "group_weight"), 100) for a in group
                ]
                point, winner, total = self.roll() * sum(weights), None, 0.0
                for a, w in zip(group, weights, strict=True):
                    total += w
                    if point <= total:
                        winner = a
                        break
                if winner is None:
                    continue
            out = [a for a in out if a is winner or a not in group]
        return out


MAX_SCAN_DEPTH = 1000
"""The deepest scan (world-info.js 91, ``MAX_SCAN_DEPTH``)."""


class Buffer:
    """What one activation scans, as SillyTavern's ``WorldInfoBuffer`` (world-info.js
    130-381) holds it: the chat's messages (``messages``: newest first, each trimmed, 169-180)
    or one plain ``text``, and the texts recursion added.

    - From a chat, an entry sees the newest ``depth`` messages (its own ``scanDepth`` when it
      has one, else the global ``world_info_depth`` plus the ``skew`` minimum activations
      added; none for a depth of 0, at most :data:`MAX_SCAN_DEPTH`; ``get``, 204-240),
      then the recursed texts, except in a minimum-activations scan (233-236).
    - A plain ``text`` (a recall's request, the planner's scene) is scanned whole by every
      entry, its ``scanDepth`` aside: it is no list of messages to count."""

    def __init__(
        self, text: str = "", messages: Sequence[str] | None = None, depth: int = 2
    ) -> None:
        self.text = text
        self.messages = None if messages is None else [m.strip() for m in messages]
        self.depth = depth
        self.skew = 0
        self.recursed: list[str] = []

    def global_depth(self) -> int:
        """``getDepth`` (347-349): the global depth and the skew."""
        return self.depth + self.skew

    def get(self, own_depth: int | None, widened: bool = False) -> str:
        """The text an entry with ``own_depth`` (its ``scanDepth``; None: the global) scans;
        ``widened``: a minimum-activations scan, which leaves recursion out (233-236)."""
        if self.messages is None:
            head = self.text
        else:
            depth = self.global_depth() if own_depth is None else own_depth
            if depth <= 0:  # 206-208: startDepth is 0
                return ""
            head = "\n".join(self.messages[: min(depth, MAX_SCAN_DEPTH)])
        if self.recursed and not widened:
            return "\n".join([head, *self.recursed])
        return head

    def widest(self, depths: Iterable[int | None], widened: bool = False) -> str:
        """The text the widest of ``depths`` scans: every other's is a part of it."""
        if self.messages is None:
            return self.get(None, widened)
        deepest = max((self.global_depth() if d is None else d for d in depths), default=0)
        return self.get(max(deepest, self.global_depth()), widened)

    def widen(self, most: int) -> bool:
        """One message more for the global depth, unless it is past ``most`` (the
        ``world_info_min_activations_depth_max``; 0: none) or the chat's length
        (4077-4081): whether it widened."""
        chat = len(self.messages) if self.messages is not None else 1
        if (most > 0 and self.global_depth() > most) or self.global_depth() > chat:
            return False
        self.skew += 1
        return True


def recurse(
    taken: Admission,
    first: list[Activated],
    buffer: Buffer,
    recursive: bool,
    max_steps: int,
    levels: list[int],
    body: Callable[[Activated], str],
    more: Callable[[Buffer, set[int], int, int, bool], list[Activated]],
    choose: Callable[[list[Activated], bool], list[Activated]] | None = None,
    *,
    minimum: int = 0,
    most_depth: int = 0,
) -> None:
    """Admit ``first`` into ``taken``, then scan again as SillyTavern's ``checkWorldInfo``
    loop does (world-info.js 3756-4112):

    - after a scan whose chosen entries (``choose``: inclusion groups and probability, see
      :class:`Chance`) hold one that does not prevent recursion, with ``recursive`` and the
      budget not full, recursion: their text joins ``buffer`` (4040-4043, 4100-4104) and
      ``more(buffer, done, step, level, widened)`` finds the entries not yet activated;
    - a minimum-activations scan is always followed by a recursive one when recursion added
      text (4047-4051);
    - when the scan would stop with fewer than ``minimum`` entries admitted
      (``world_info_min_activations``) and the budget not full, the global depth widens by
      one message, up to ``most_depth`` and the chat's length, and the chat is scanned again
      without the recursed text (``widened``; 4054-4068);
    - when it would stop and a delay-until-recursion level is still closed, the next opens
      (lowest first) and recursion goes on (4071-4076), even with recursion off.

    ``max_steps`` bounds the scans, the first included (0: none; 3756-3761). Every scan
    admits a new entry, widens the chat or opens a level, so it ends. The indexed
    activation and the naive baseline share it."""
    pick = choose or (lambda found, _widened: found)
    chosen = pick(first, False)
    taken.admit(chosen)
    done = {a.index for a in chosen} | {a.index for a in first}
    pending = list(levels)
    level = pending.pop(0) if pending else 0
    widened = False
    scans = 1
    while not (max_steps and scans >= max_steps):
        carried = [a for a in chosen if not a.entry.prevent_recursion]
        state: str | None = None
        if recursive and not taken.full and carried:
            state = "recursion"
        if recursive and not taken.full and widened and buffer.recursed:
            state = "recursion"
        short = not taken.full and len(taken.admitted) < minimum
        if state is None and short and buffer.widen(most_depth):
            state = "widened"
        if state is None and pending:
            state = "recursion"
            level = pending.pop(0)
        if state is None:
            break
        widened = state == "widened"
        buffer.recursed.append("\n".join(body(a) for a in carried))
        found = more(buffer, done, scans, level, widened)
        scans += 1
        chosen = pick(found, widened)
        done |= {a.index for a in found}
        taken.admit(chosen)
