"""Matching one lore key against text, as SillyTavern's World Info does (its
``public/scripts/world-info.js`` at release 1.12.6; line numbers cite that file).

A key is plain text, or a regular expression: a key written ``/pattern/flags`` that
SillyTavern reads as one (:func:`slashed`: ``parseRegexFromString``, 2231-2257), or any key
of an entry with ``use_regex`` (a pack written for Fabula; a card's ``use_regex`` is ignored,
as SillyTavern's ``convertCharacterBook`` does). A ``/pattern/flags`` key is tested on the
text as written with its own flags only (``matchKeys``, 243-250: ``/rose/`` does not fire
on "Rose"); one JavaScript would not compile (``/[oops/``, ``/r/fantasy``) is plain text.
Plain keys match case-insensitively unless the entry is case-sensitive; with whole-word
matching a one-word key must stand as a word, bounded by JavaScript's ASCII ``\\W``
(252-270; a key with a space in it is matched as written).

A regular expression comes from whoever wrote the card or book, so it is matched by RE2
(``google-re2``), whose time is linear in the text whatever the pattern — ``/(a+)+$/``
against forty ``a`` and a ``!`` answers at once, where a backtracking engine would not in a
lifetime — and whose memory is bounded (:data:`KEY_MEM` per pattern). What RE2 cannot
compile (backreferences, lookaround, a pattern past the memory bound) is not a key Fabula
can match: :func:`compile_key` raises :class:`KeyError_` for it, which the import turns into
one finding naming the entry and the key, the entry imported disabled; there is no fallback
to a backtracking engine.

Memory (issue 45): a key's program and the caches of its DFAs live within :data:`KEY_MEM`
(RE2's ``max_mem``; a program that does not fit is refused when it is compiled, before it
takes the memory); what one import's keys may hold together is bounded by the import's
limits (``max_book_program``, ``max_story_program``); and the keys compiled so far are kept
within :data:`CACHE_BYTES`, each counted at the most it can use, the oldest dropped first.
Measured (``/usr/bin/time -v``): ``\\pL{300}N`` was read as 300 letters, a program of
358,805 instructions that RE2 took under the 8 MiB bound kept before (issue 45: 5.7 MB
each); a 77 KB book of 640 such keys made ``fabula import`` peak at 2.05 GB (94 s) and
``fabula recall`` at 2.06 GB (85 s). Now ``/\\p{L}{300}N/u`` (the same pattern as JavaScript
reads it; without ``u``, ``\\pL`` is the letters ``pL``) is refused before it is built: the
import of 640 of them peaks at 252 MB (7 s), the recall at 208 MB. Within 512 KiB a program
holds at most 43,636 instructions (8 bytes each): ``\\p{L}{27}`` is the longest run of
letters a key may hold, and a hundred keys of 20,000 instructions grew the process by 16 MB.

Flags of a ``/pattern/flags`` key (JavaScript's): ``i`` ignores case, ``m`` makes ``^`` and
``$`` match at line ends, ``s`` lets ``.`` match a newline; ``u`` is what RE2 always does
(Unicode), ``g`` and ``y`` have no meaning for a key (it is found or not); with any other
flag the key is plain text, as in SillyTavern. Without ``m``, ``$`` matches at the very
end of the text only (as in JavaScript).
As in JavaScript, ``\\w``, ``\\d`` and ``\\b`` are ASCII classes; ``\\p{L}`` is any letter with
``u`` (without it ``\\p`` is the letter ``p``, as in JavaScript). Kept apart on purpose:
RE2's ``\\s`` is ASCII where JavaScript's is Unicode.

A plain key is its text, found where Python's ``re`` would find it escaped (case ignored
character by character as ``re.IGNORECASE`` does), by string search: no pattern is compiled.
"""

from __future__ import annotations

import _sre  # type: ignore[import-not-found]  # Python's own case folding, as re applies it
import functools
import re
from collections import OrderedDict
from re._casefix import _EXTRA_CASES  # type: ignore[import-not-found]
from typing import Protocol

import re2  # google-re2: linear-time matching of the regex keys users write

_SLASHED = re.compile(r"/([\s\S]+?)/([gimsuy]*)")
r"""SillyTavern's ``/pattern/flags`` (``parseRegexFromString``, world-info.js 2231-2257 at
1.12.6: ``/^\/([\w\W]+?)\/([gimsuy]*)$/``), matched whole: the shortest pattern that
leaves only flags after its closing slash."""
_BARE_SLASH = re.compile(r"(^|[^\\])/")
"""An unescaped ``/`` inside the pattern: SillyTavern reads such a key as plain text."""
_FLAGS = {"i": "i", "m": "m", "s": "s", "u": "", "g": "", "y": ""}
"""A JavaScript flag, and the RE2 flag it becomes (empty: none needed)."""
_NO_U_PROPERTY = re.compile(r"(?<!\\)((?:\\\\)*)\\([pP])")
"""``\\p`` or ``\\P`` (an odd run of backslashes before it): without JavaScript's ``u``
flag it is the letter itself (an identity escape), not a Unicode property."""


KiB = 1024
MiB = 1024 * KiB

KEY_MEM = 512 * KiB
"""The memory one regex key may use in RE2 (``max_mem``: its program, at most two thirds of
it, and its DFAs' caches, 512 KiB): a pattern whose program does not fit is refused at
compile time, before it is built; a search whose DFA fills its cache goes on in RE2's NFA,
still in linear time. Real keys (names, alternations of a few dozen words, ``\\w+`` runs)
are programs of tens to a few thousand instructions of 16 bytes."""
MAX_MEM = KEY_MEM
"""The name this bound had before (kept for callers)."""

CACHE_BYTES = 128 * MiB
"""The most the keys compiled so far may hold together (a regex key counted at
:data:`KEY_MEM`, the most it can use; a plain key at its text's size): past it, the least
recently used are dropped (and compiled again when next needed: a key of the largest size
compiles in a few milliseconds)."""


class KeyError_(ValueError):
    """A key that cannot be compiled (an invalid regular expression, or one RE2 cannot
    match in linear time)."""


class Matcher(Protocol):
    """A compiled key: ``search(text)`` is a match, or None."""

    def search(self, text: str, /) -> object | None: ...


def regex_options() -> re2.Options:
    """The RE2 options of every regex key: bounded memory, no logging of refused patterns
    (a bad key is reported once, by whoever compiles it). Case and the flags are written in
    the pattern (see :func:`linear_pattern`), so one set of options serves a whole set."""
    options = re2.Options()
    options.max_mem = KEY_MEM
    options.log_errors = False
    return options


_OPTIONS = regex_options()


@functools.lru_cache(maxsize=8)
def _utf8(text: str) -> bytes:
    """``text`` as RE2 reads it (a lone surrogate kept as its bytes, matching nothing)."""
    return text.encode("utf-8", "surrogatepass")


class _Linear:
    """A regex key compiled by RE2."""

    __slots__ = ("_regexp",)

    def __init__(self, regexp: re2._Regexp) -> None:
        self._regexp = regexp

    @property
    def size(self) -> int:
        """The instructions of its RE2 program."""
        return int(self._regexp._regexp.ProgramSize())

    def search(self, text: str, /) -> object | None:
        found: object | None = self._regexp.search(_utf8(text))
        return found


class _Fold(dict[int, int]):
    """A character's stand-in for its case: one of the characters Python's ``re`` matches
    it with when case is ignored (its simple lowercase and that one's special cases, a
    word character first), filled in as characters are met."""

    def __missing__(self, code: int) -> int:
        lower = _sre.unicode_tolower(code)
        orbit = {lower, *_EXTRA_CASES.get(lower, ())}
        words = [c for c in orbit if chr(c).isalnum()]
        found: int = min(words or orbit)
        self[code] = found
        return found


_FOLD = _Fold()


@functools.lru_cache(maxsize=8)
def _folded(text: str) -> str:
    """``text`` with each character its case's stand-in: a plain key is in ``text`` when
    case is ignored only if its folded form is in the folded text."""
    return text.translate(_FOLD)


class _Plain:
    """A plain key: its text, found as Python's ``re`` would find it escaped (ignoring case:
    character by character, as ``re.IGNORECASE`` compares them, see :func:`_folded`), and,
    matched whole, with no word character (:func:`_is_word`) just before or after it."""

    __slots__ = ("_case", "_needle", "_whole")

    def __init__(self, needle: str, case: bool, whole: bool) -> None:
        self._needle = needle if case else _folded(needle)
        self._case = case
        self._whole = whole

    def search(self, text: str, /) -> object | None:
        hay = text if self._case else _folded(text)
        at = hay.find(self._needle)
        if not self._whole:
            return True if at >= 0 else None
        end = len(self._needle)
        while at >= 0:
            before = text[at - 1] if at else ""
            after = text[at + end] if at + end < len(text) else ""
            if not self._case:  # SillyTavern bounds words in the lowercased text
                before, after = before.lower()[-1:], after.lower()[:1]
            if not _is_word(before) and not _is_word(after):
                return True
            at = hay.find(self._needle, at + 1)
        return None


def _is_word(char: str) -> bool:
    """Whether ``char`` is a word character as JavaScript's ``\\w`` has it: an ASCII letter,
    digit or ``_`` (none: no). SillyTavern bounds a whole word by ``(?:^|\\W)`` and
    ``(?:$|\\W)`` (world-info.js 262-263), so a Cyrillic or Chinese key is whole wherever
    its ends meet no ASCII word character: inside an inflected word, in unspaced text."""
    return char.isascii() and (char.isalnum() or char == "_")


def slashed(key: str) -> tuple[str, str] | None:
    """The pattern and flags of a key SillyTavern reads as ``/pattern/flags``, or None for a
    key it reads as plain text (``parseRegexFromString``, world-info.js 2231-2257): the
    shape ``/.../`` with only ``gimsuy`` after it (so ``/r/fantasy`` is plain), no
    unescaped ``/`` inside, no flag twice (``new RegExp`` throws: plain); its first ``\\/``
    unescaped, as SillyTavern's ``replace`` does. Whether JavaScript would compile the
    pattern is :func:`compile_key`'s to say (one it would not is plain text too)."""
    found = _SLASHED.fullmatch(key)
    if found is None:
        return None
    pattern, flags = found.group(1), found.group(2)
    if _BARE_SLASH.search(pattern) or len(set(flags)) != len(flags):
        return None
    return pattern.replace("\\/", "/", 1), flags


def linear_pattern(key: str, use_regex: bool, case_sensitive: bool) -> str | None:
    """The RE2 pattern of a regex key, its flags written inline (``(?ims)``), or None for a
    plain key. A ``/pattern/flags`` key (:func:`slashed`) has its own flags and no other:
    SillyTavern tests it on the text as written, whatever the entry's case
    (``matchKeys``, world-info.js 243-250); without ``u``, ``\\p`` is the letter ``p``, as
    in JavaScript. A key of a ``use_regex`` entry (a pack written for Fabula) ignores case
    unless the entry is case-sensitive."""
    form = slashed(key)
    if form is not None:
        pattern, flags = form
        if "u" not in flags:
            pattern = _NO_U_PROPERTY.sub(r"\1\2", pattern)
        inline = {_FLAGS[f] for f in flags if _FLAGS[f]}
    elif use_regex:
        pattern, inline = key, set() if case_sensitive else {"i"}
    else:
        return None
    return f"(?{''.join(sorted(inline))}){pattern}" if inline else pattern


def _javascript_would_compile(key: str) -> bool:
    """Whether a ``/pattern/flags`` key RE2 refused is still a regular expression (one that
    needs backtracking: lookaround, backreferences), as told by Python's ``re``, whose
    syntax JavaScript's shares there; otherwise SillyTavern's ``new RegExp`` throws and it
    reads the key as plain text. Python's ``re`` only compiles it, never matches."""
    form = slashed(key)
    if form is None:
        return False
    try:
        re.compile(form[0])
    except (re.error, RecursionError, OverflowError, ValueError):
        return False
    return True


def _reason(exc: Exception) -> str:
    reason = exc.args[0] if exc.args else exc
    if isinstance(reason, bytes):
        reason = reason.decode("utf-8", "replace")
    return " ".join(str(reason).split())


def compile_key(key: str, use_regex: bool, case_sensitive: bool, whole_words: bool) -> Matcher:
    """The pattern that finds ``key`` in text; KeyError_ for a regular expression RE2 cannot
    compile (invalid, or needing backtracking: backreferences, lookaround)."""
    compiled = _compiled(key, use_regex, case_sensitive, whole_words)
    if isinstance(compiled, str):
        raise KeyError_(compiled)
    return compiled


_CacheKey = tuple[str, bool, bool, bool]


class _Cache:
    """The keys compiled so far, and why the others did not compile, within
    :data:`CACHE_BYTES` (see :func:`_cost`), least recently used dropped first."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.used = 0
        self._items: OrderedDict[_CacheKey, tuple[Matcher | str, int]] = OrderedDict()

    def get(self, key: _CacheKey) -> Matcher | str | None:
        found = self._items.get(key)
        if found is None:
            return None
        self._items.move_to_end(key)
        return found[0]

    def put(self, key: _CacheKey, value: Matcher | str) -> None:
        cost = _cost(key[0], value)
        if key in self._items:
            self.used -= self._items.pop(key)[1]
        self._items[key] = (value, cost)
        self.used += cost
        while self.used > self.limit and len(self._items) > 1:
            self.used -= self._items.popitem(last=False)[1][1]

    def clear(self) -> None:
        self._items.clear()
        self.used = 0

    def __len__(self) -> int:
        return len(self._items)


def _cost(key: str, value: Matcher | str) -> int:
    """The most a compiled key may hold: a regex key its RE2 bound (:data:`KEY_MEM`), a plain
    key or a refusal its text (and the reason's) with the objects around it."""
    if isinstance(value, _Linear):
        return KEY_MEM
    return 256 + 4 * len(key) + (4 * len(value) if isinstance(value, str) else 0)


_CACHE = _Cache(CACHE_BYTES)


def _compiled(key: str, use_regex: bool, case_sensitive: bool, whole_words: bool) -> Matcher | str:
    """The compiled key, or why it does not compile (kept too: a stored story's bad key is
    tried on every recall), from :data:`_CACHE` when it holds it."""
    ident = (key, use_regex, case_sensitive, whole_words)
    found = _CACHE.get(ident)
    if found is None:
        found = _compile_one(key, use_regex, case_sensitive, whole_words)
        _CACHE.put(ident, found)
    return found


def _compile_one(
    key: str, use_regex: bool, case_sensitive: bool, whole_words: bool
) -> Matcher | str:
    pattern = linear_pattern(key, use_regex, case_sensitive)
    if pattern is not None:
        try:
            return _Linear(re2.compile(pattern, _OPTIONS))
        except (re2.error, UnicodeError) as exc:
            reason = _reason(exc)
            if "pattern too large" in reason:
                return (
                    f"key {key!r} is too large: its RE2 program needs more than the "
                    f"{KEY_MEM // KiB} KiB one key may use"
                )
            if not use_regex and not _javascript_would_compile(key):
                # not a regular expression JavaScript compiles: SillyTavern's plain text
                return _plain(key, case_sensitive, whole_words)
            return (
                f"key {key!r} is not a valid regular expression for RE2, which matches in "
                f"linear time (no backreferences, no lookaround): {reason}"
            )
    return _plain(key, case_sensitive, whole_words)


def _plain(key: str, case_sensitive: bool, whole_words: bool) -> _Plain:
    """A plain key, trimmed; matched whole only when it is one word (SillyTavern splits it
    on whitespace, world-info.js 257-260: a key of several words is found as written)."""
    needle = key.strip()
    return _Plain(needle, case_sensitive, whole_words and not any(c.isspace() for c in needle))


def program_size(key: str, use_regex: bool, case_sensitive: bool) -> int:
    """The instructions of the RE2 program of a regex key (0 for a plain key); KeyError_ for
    one that does not compile."""
    compiled = compile_key(key, use_regex, case_sensitive, False)
    return compiled.size if isinstance(compiled, _Linear) else 0


def is_regex_key(key: str) -> bool:
    """Whether ``key`` is a regular expression as SillyTavern reads it: ``/pattern/flags``
    (:func:`slashed`) that JavaScript would compile; RE2 may still refuse it (then
    :func:`compile_key` raises KeyError_ for it)."""
    if not key.startswith("/") or slashed(key) is None:
        return False
    return not isinstance(_compiled(key, False, True, False), _Plain)


def key_matches(
    key: str, text: str, *, use_regex: bool, case_sensitive: bool, whole_words: bool
) -> bool:
    """Whether ``key`` is found in ``text`` (an empty key never is); KeyError_ for a
    regular expression RE2 cannot compile."""
    if not key.strip():
        return False
    return compile_key(key, use_regex, case_sensitive, whole_words).search(text) is not None


_SET_PROGRAM = 100_000
"""The most RE2 instructions one set of keys holds (its patterns' programs together), so
that its DFA's cache, the rest of :data:`_SET_MEM`, holds thousands of states."""
_SET_MEM = 64 * 1024 * 1024


class _Group:
    """Patterns searched for in one pass: an RE2 set, and who owns each pattern."""

    def __init__(self) -> None:
        self.patterns: list[bytes] = []
        self.owners: list[int] = []
        self.size = 0
        self.set: re2.Set | None = None

    def seal(self) -> bool:
        """Compile the set; False when RE2 will not (its owners are then scanned)."""
        options = regex_options()
        options.max_mem = _SET_MEM
        found = re2.Set.SearchSet(options)
        try:
            for pattern in self.patterns:
                found.Add(pattern)
            found.Compile()
        except re2.error:
            return False
        self.set = found
        return True

    def find(self, text: bytes, into: set[int]) -> None:
        assert self.set is not None
        for i in self.set.Match(text) or ():
            into.add(self.owners[i])


class KeyFinder:
    """Which of many entries' keys may be in a text, found in one pass of RE2 over it per
    group of keys, not one search per key: ``add`` each key with its owner, ``seal`` once,
    then ``candidates(text)``. A regex key is found as :func:`key_matches` finds it; a plain
    key wherever its text is (ignoring case, by :func:`_folded`), so the candidates hold
    every owner one of whose keys :func:`key_matches` finds, and a few more (a one-word key
    inside a longer word) for the caller to test. A key RE2 will not take in a set (a lone
    surrogate) makes its owner a candidate of every text."""

    def __init__(self) -> None:
        self._groups: dict[str, list[_Group]] = {"exact": [], "folded": [], "regex": []}
        self._everywhere: set[int] = set()

    def add(self, owner: int, key: str, *, use_regex: bool, case_sensitive: bool) -> None:
        """Look for ``key`` (of ``owner``) too; KeyError_ for a regex key RE2 cannot compile."""
        if not key.strip():
            return  # never in a text
        pattern = linear_pattern(key, use_regex, case_sensitive)
        if pattern is not None:
            compiled = compile_key(key, use_regex, case_sensitive, False)
            if isinstance(compiled, _Linear):
                self._put("regex", pattern.encode(), compiled.size, owner)
                return
            # a /pattern/ JavaScript would not compile: plain text, as SillyTavern reads it
        needle = key.strip() if case_sensitive else _folded(key.strip())
        try:
            literal = re2.escape(needle.encode())
        except UnicodeError:
            self._everywhere.add(owner)
            return
        self._put("exact" if case_sensitive else "folded", literal, len(literal) + 2, owner)

    def _put(self, kind: str, pattern: bytes, size: int, owner: int) -> None:
        groups = self._groups[kind]
        if not groups or groups[-1].size + size > _SET_PROGRAM:
            groups.append(_Group())
        group = groups[-1]
        group.patterns.append(pattern)
        group.owners.append(owner)
        group.size += size

    def seal(self) -> None:
        """Compile every group (once every key is added)."""
        for kind, groups in self._groups.items():
            kept = []
            for group in groups:
                if group.seal():
                    kept.append(group)
                else:
                    self._everywhere.update(group.owners)
            self._groups[kind] = kept

    def candidates(self, text: str) -> set[int]:
        """The owners one of whose keys may be in ``text`` (see the class)."""
        found = set(self._everywhere)
        raw = _utf8(text)
        for group in self._groups["exact"] + self._groups["regex"]:
            group.find(raw, found)
        if self._groups["folded"]:
            folded = _utf8(_folded(text))
            for group in self._groups["folded"]:
                group.find(folded, found)
        return found
