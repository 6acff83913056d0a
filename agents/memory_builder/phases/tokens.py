"""Phase 1: sentences and tokens, with exact character spans.

A sentence ends at ``.``, ``!`` or ``?`` followed by space (or the end); a *segment* is a
stretch of a sentence between commas, semicolons and dashes — the unit the later phases
read a clause from. Every token keeps its offsets in the turn's text, so each reading
cites its source exactly.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_SENTENCE = re.compile(r"[^.!?]+(?:[.!?]+[\"')\]]*|$)")
_TOKEN = re.compile(r"[A-Za-z0-9]+(?:[-'’][A-Za-z0-9]+)*|n't|[,;:—–]|--")
_BREAK = frozenset([",", ";", ":", "—", "–", "--"])


@dataclass(frozen=True)
class Token:
    text: str
    start: int
    end: int

    @property
    def lower(self) -> str:
        return self.text.lower().replace("’", "'")

    @property
    def capital(self) -> bool:
        return self.text[:1].isupper()


@dataclass(frozen=True)
class Sentence:
    start: int
    end: int
    tokens: tuple[Token, ...]

    def segments(self) -> list[tuple[Token, ...]]:
        """The sentence's tokens cut at commas, semicolons, colons and dashes."""
        out: list[tuple[Token, ...]] = []
        current: list[Token] = []
        for token in self.tokens:
            if token.text in _BREAK:
                if current:
                    out.append(tuple(current))
                current = []
            else:
                current.append(token)
        if current:
            out.append(tuple(current))
        return out


def sentences(text: str) -> list[Sentence]:
    """``text``'s sentences, each with its tokens (empty stretches dropped)."""
    out = []
    for m in _SENTENCE.finditer(text):
        start, end = m.start(), m.end()
        while start < end and text[start].isspace():
            start += 1
        while end > start and text[end - 1].isspace():
            end -= 1
        if start == end:
            continue
        tokens = tuple(
            Token(t.group(), start + t.start(), start + t.end())
            for t in _TOKEN.finditer(text[start:end])
        )
        if tokens:
            out.append(Sentence(start, end, tokens))
    return out
