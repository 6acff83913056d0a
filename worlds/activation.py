"""Which lore entries a text activates, as SillyTavern's World Info documents it.

Pure: entries and a text in, the activated entries (each with what fired it) out.

- **Keys.** An entry activates when one of its keys is in the text: case-insensitive unless
  the entry (or the book) is case-sensitive; with whole-word matching (on by default, as
  in SillyTavern) a one-word key must stand as a word ("king" is in "long live the king",
  not in "liking"), a key of several words is matched as written. ``/pattern/flags`` keys,
  and every key of a ``use_regex`` entry, are regular expressions; one that does not
  compile matches nothing (character-card V3).
- **Secondary keys** (``selective``, and only when there are any) combine with the primary
  match: AND ANY (one of them present), AND ALL (all), NOT ANY (none), NOT ALL (not all).
- **constant** entries are active whatever the keys; a disabled entry never is.
- **Recursion.** The text of activated entries is scanned again, up to ``max_recursion``
  steps: an entry that prevents recursion activates nothing by its text, a non-recursable
  one (``exclude_recursion``) is activated by the text only, one that delays until
  recursion (SillyTavern's ``delayUntilRecursion``) by other entries only.
- **Budget.** Constant entries are admitted first, then what the text activated directly,
  then each recursion step; within a step, higher ``priority`` first, then higher ``order``
  (SillyTavern: "constant entries will be inserted first, then entries with higher order
  numbers"). Once an entry does not fit, no more are admitted. The admitted entries are
  returned in insertion order (lower ``order`` first).
- **Decorators** (V3, at the top of the content; ``@@@`` a fallback of the one above):
  ``@@activate``, ``@@dont_activate``, ``@@additional_keys`` (also needs one of them),
  ``@@exclude_keys`` (none of them), ``@@activate_only_after N`` and
  ``@@activate_only_every N`` (with ``turn``); the others (positions, depths, roles) have no
  meaning here and are ignored, their fallbacks considered instead.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

from fabula.worlds.imports.keys import KeyError_, is_regex_key, key_matches
from fabula.worlds.lore import LoreEntry, split_decorators

__all__ = ["Activated", "Fired", "activate", "decorators_of"]

Fired = Literal["constant", "key", "recursion", "decorator"]
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


def decorators_of(entry: LoreEntry) -> dict[str, str]:
    """The decorators Fabula applies, name to value: of each decorator and its ``@@@``
    fallbacks the first Fabula knows, and of several with one name the first."""
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
        chosen = next(((n, v) for n, v in group if n in _KNOWN), None)
        if chosen is not None:
            found.setdefault(*chosen)
    return found


@functools.lru_cache(maxsize=8)
def _lower(text: str) -> str:
    return text.lower()


_WORD = re.compile(r"\w+")


@functools.lru_cache(maxsize=8)
def _words(text: str) -> frozenset[str]:
    """The words of ``text`` (``\\w+`` runs, as the whole-word pattern's ``\\W`` bounds them)."""
    return frozenset(_WORD.findall(text))


def _hits(keys: Sequence[str], text: str, entry: LoreEntry, case: bool, whole: bool) -> list[str]:
    out = []
    for key in keys:
        if not entry.use_regex and not is_regex_key(key):
            # a plain key must be in the text as a substring: a fast test before the regex
            needle = key.strip() if case else key.strip().lower()
            hay = text if case else _lower(text)
            if whole and _WORD.fullmatch(needle):
                # one word, matched whole: it is a word of the text, or absent
                if needle in _words(hay):
                    out.append(key)
                continue
            if needle not in hay:
                continue
        try:
            if key_matches(
                key, text, use_regex=entry.use_regex, case_sensitive=case, whole_words=whole
            ):
                out.append(key)
        except KeyError_:
            continue  # an invalid regular expression matches nothing
    return out


def _number(value: str | None) -> int | None:
    try:
        return int(value) if value is not None else None
    except ValueError:
        return None


def _match(
    entry: LoreEntry,
    deco: dict[str, str],
    text: str,
    case: bool,
    whole: bool,
    turn: int | None,
    context: str | None = None,
) -> str | None:
    """The key that activates ``entry`` on ``text`` (decorators and secondary logic
    applied; secondary and additional keys are looked for in ``context``, the text and
    what recursion added, when given), or None."""
    context = text if context is None else context
    after = _number(deco.get("activate_only_after"))
    every = _number(deco.get("activate_only_every"))
    if turn is not None and ((after is not None and turn < after) or (every and turn % every)):
        return None
    case = entry.case_sensitive if entry.case_sensitive is not None else case
    whole = entry.whole_words if entry.whole_words is not None else whole
    hits = _hits(entry.keys, text, entry, case, whole)
    if not hits:
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
        total = len(entry.secondary_keys)
        ok = {
            "and_any": found > 0,
            "and_all": found == total,
            "not_any": found == 0,
            "not_all": found < total,
        }[entry.logic]
        if not ok:
            return None
    return hits[0]


def _delayed(entry: LoreEntry) -> bool:
    return entry.kept.get("delayUntilRecursion") not in (None, False, 0)


def activate(
    entries: Sequence[LoreEntry],
    text: str,
    *,
    budget: int | None = None,
    count_tokens: Callable[[str], int] = lambda s: len(s.split()),
    recursive: bool = True,
    max_recursion: int = 3,
    case_sensitive: bool = False,
    whole_words: bool = True,
    turn: int | None = None,
) -> list[Activated]:
    """The entries ``text`` activates, within ``budget`` tokens (None: no bound), in
    insertion order (see the module's docstring for the rules). ``case_sensitive`` and
    ``whole_words`` are the defaults of entries that do not say; ``turn`` is the story's
    turn, for the decorators that count turns."""
    live: dict[int, LoreEntry] = {}
    decos: dict[int, dict[str, str]] = {}
    for i, e in enumerate(entries):
        if not e.enabled:
            continue
        deco = decos[i] = decorators_of(e)
        if "dont_activate" not in deco or "activate" in deco:
            live[i] = e
    admitted: list[Activated] = []
    used = 0
    full = False

    def admit(step_found: list[Activated]) -> list[Activated]:
        nonlocal used, full
        step_found.sort(
            key=lambda a: (a.fired != "constant", -(a.entry.priority or 0), -a.entry.order)
        )
        taken = []
        for a in step_found:
            if full:
                break
            if budget is not None and used + a.tokens > budget:
                full = True
                break
            used += a.tokens
            taken.append(a)
        admitted.extend(taken)
        return taken

    def found(i: int, fired: Fired, key: str | None, step: int) -> Activated:
        _, body = split_decorators(live[i].content)
        return Activated(i, live[i], fired, key, step, count_tokens(body))

    first: list[Activated] = []
    for i, e in live.items():
        deco = decos[i]
        if e.constant or "activate" in deco:
            first.append(found(i, "constant" if e.constant else "decorator", None, 0))
        elif not _delayed(e):
            key = _match(e, deco, text, case_sensitive, whole_words, turn)
            if key is not None:
                first.append(found(i, "key", key, 0))
    latest = admit(first)
    done = {a.index for a in admitted} | {a.index for a in first}
    for step in range(1, max_recursion + 1 if recursive else 1):
        scan = "\n".join(
            split_decorators(a.entry.content)[1] for a in latest if not a.entry.prevent_recursion
        )
        if not scan or full:
            break
        context = "\n".join([text, *(split_decorators(a.entry.content)[1] for a in admitted)])
        more = []
        for i, e in live.items():
            if i in done or e.exclude_recursion:
                continue
            key = _match(e, decos[i], scan, case_sensitive, whole_words, turn, context)
            if key is not None:
                more.append(found(i, "recursion", key, step))
        done |= {a.index for a in more}
        latest = admit(more)
        if not latest:
            break
    return sorted(admitted, key=lambda a: (a.entry.order, a.index))
