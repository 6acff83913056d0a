"""Phase 1: sentences and tokens, with exact character spans.

Sentences are cut as the prose reader cuts them (:func:`fabula.memory.text.split_sentences`:
at a line break, and at ``.``, ``!`` or ``?`` before a space outside quotes); a *segment* is a
stretch of a sentence between commas, semicolons and dashes — the unit the later phases
read a clause from. Every token keeps its offsets in the turn's text, so each reading
cites its source exactly.
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass, field

from fabula.memory.text import split_sentences

# a hyphen alone between spaces is a dash ("in common - they both ..."), a break
_TOKEN = re.compile(r"[A-Za-z0-9]+(?:[-'’][A-Za-z0-9]+)*|n't|[,;:—–]|--|(?<=\s)-(?=\s)")
_BREAK = frozenset([",", ";", ":", "—", "–", "--", "-"])
# what someone says, in straight or curly double quotes: speech, which the prose reader
# reads (who said it, to whom); the phases read what happens, never what is said
_QUOTED = re.compile(r"\"[^\"]*\"|“[^”]*”")


@dataclass(frozen=True, slots=True)
class Token:
    """A word or a break at ``start``..``end``; ``lower`` is its lowercase form (curly
    apostrophes straightened), made once: the later phases test it many times a clause."""

    text: str
    start: int
    end: int
    lower: str = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "lower", self.text.lower().replace("’", "'"))

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
    """``text``'s sentences, each with its tokens (empty stretches dropped).

    What is said in quotes is left out of the tokens, and a question's tokens with it
    ("What are your powers?" says no state of anything): both stay the prose reader's."""
    speech = [(m.start(), m.end()) for m in _QUOTED.finditer(text)]
    out = []
    for start, end in split_sentences(text):  # as the prose reader cuts them
        asked = text[start:end].rstrip("\"')]”’ ").endswith("?")
        tokens = tuple(
            Token(t.group(), start + t.start(), start + t.end())
            for t in _TOKEN.finditer(text[start:end])
            if not asked and not (speech and _inside(start + t.start(), speech))
        )
        if tokens:
            out.append(Sentence(start, end, tokens))
    return out


def _inside(offset: int, spans: list[tuple[int, int]]) -> bool:
    """Whether ``offset`` is in one of ``spans`` (in order, apart): a binary search."""
    k = bisect.bisect_right(spans, (offset, len(spans) and spans[-1][1] + 1)) - 1
    return k >= 0 and spans[k][0] <= offset < spans[k][1]
