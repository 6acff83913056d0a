"""Matching one lore key against text, as SillyTavern's World Info does.

A key is plain text, or a regular expression: every key of an entry with ``use_regex``
(character-card V3), or a key written ``/pattern/flags`` (SillyTavern). Plain keys match
case-insensitively unless the entry is case-sensitive; with whole-word matching a
one-word key must stand as a word (a key with a space in it is matched as written).
"""

from __future__ import annotations

import functools
import re

__all__ = ["KeyError_", "compile_key", "is_regex_key", "key_matches"]

_SLASHED = re.compile(r"^/(.+)/([a-z]*)$", re.DOTALL)
_FLAGS = {"i": re.IGNORECASE, "m": re.MULTILINE, "s": re.DOTALL, "u": 0, "g": 0, "y": 0}


class KeyError_(ValueError):
    """A key that cannot be compiled (an invalid regular expression)."""


@functools.lru_cache(maxsize=4096)
def compile_key(
    key: str, use_regex: bool, case_sensitive: bool, whole_words: bool
) -> re.Pattern[str]:
    """The pattern that finds ``key`` in text; KeyError_ for an invalid regular expression."""
    slashed = _SLASHED.match(key)
    if use_regex or slashed:
        pattern, flags = (slashed.group(1), slashed.group(2)) if slashed else (key, "")
        bits = 0 if case_sensitive else re.IGNORECASE
        for flag in flags:
            if flag not in _FLAGS:
                raise KeyError_(f"key {key!r}: unknown regex flag {flag!r}")
            bits |= _FLAGS[flag]
        try:
            return re.compile(pattern, bits)
        except re.error as exc:
            raise KeyError_(f"key {key!r} is not a valid regular expression: {exc}") from None
    bits = 0 if case_sensitive else re.IGNORECASE
    escaped = re.escape(key.strip())
    if whole_words and not re.search(r"\s", key.strip()):
        return re.compile(rf"(?:^|\W)({escaped})(?:$|\W)", bits)
    return re.compile(escaped, bits)


def is_regex_key(key: str) -> bool:
    """Whether ``key`` is written as a regular expression (``/pattern/flags``)."""
    return key.startswith("/") and _SLASHED.match(key) is not None


def key_matches(
    key: str, text: str, *, use_regex: bool, case_sensitive: bool, whole_words: bool
) -> bool:
    """Whether ``key`` is found in ``text`` (an empty key never is); KeyError_ for an
    invalid regular expression."""
    if not key.strip():
        return False
    return compile_key(key, use_regex, case_sensitive, whole_words).search(text) is not None
