"""A turn's text cut into sentences and clauses, by offsets (no model, no Redis).

Sentences are what a memory-builder cites and what a character's memory may quote; clauses
are the finer cut used when a sentence tells more than one witness saw (see
:mod:`fabula.memory.recollection`).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterator

# where one clause of a sentence ends and the next begins (outside quotation marks)
_CLAUSE_BREAK = re.compile(
    r"\s*(?:;|:|,\s*(?:and|but|while|then|so|as|before|after|when|whereupon)\b|"
    r"\s(?:and then|while|whereupon|but)\b)\s*"
)


_LETTER = re.compile(r"[^\W\d_]")
# a quotation mark, a line break, or an end mark before white space or the text's end
_SENTENCE_MARK = re.compile(r'["\n]|[.!?](?=\s|\Z)')


def normalised(text: str) -> str:
    """``text`` as a turn's text is read and stored: in Unicode's compatibility form (NFKC:
    full-width letters, ligatures and the like become the plain ones) and without format
    characters (category Cf: bidirectional controls, zero-width spaces and joiners, the
    byte-order mark, soft hyphens), which show nothing and only hide where a sentence ends.

    A zero-width space after a full stop kept two sentences as one, and the reader
    invented an object from the fragment (issue 45). Applied once, where a text enters
    reading (the memory-builders' ``build``), so every span is an offset into the text as
    stored."""
    compatible = unicodedata.normalize("NFKC", text)
    return "".join(ch for ch in compatible if unicodedata.category(ch) != "Cf")


def has_word(text: str) -> bool:
    """Whether ``text`` holds a letter: ``"**"`` or ``"... 12"`` tells nothing."""
    return _LETTER.search(text) is not None


def split_sentences(text: str) -> Iterator[tuple[int, int]]:
    """The ``(start, end)`` span of every sentence of ``text``, in order, trimmed.

    A line break always ends a sentence; ``.``, ``!`` or ``?`` end one when followed by
    white space or the end, outside double quotation marks.
    """
    start = 0
    in_quote = False
    for mark in _SENTENCE_MARK.finditer(text):  # only the characters that can end one
        ch, i = mark.group(), mark.start()
        if ch == '"':
            in_quote = not in_quote
        elif ch == "\n":
            yield from _trimmed(text, start, i)
            start = i + 1
            in_quote = False
        elif not in_quote:
            yield from _trimmed(text, start, i + 1)
            start = i + 1
    yield from _trimmed(text, start, len(text))


def split_clauses(text: str, start: int, end: int) -> list[tuple[int, int]]:
    """The clauses of the sentence ``text[start:end]``: cut at ``;``, ``:`` and at a
    comma or word that joins two clauses (", and", ", but", " while", ...), outside
    quotation marks; each trimmed of white space and of its closing punctuation."""
    sentence = text[start:end]
    quoted = [m.span() for m in re.finditer(r'"[^"]*"', sentence)]
    cuts = [
        m.span()
        for m in _CLAUSE_BREAK.finditer(sentence)
        if not any(a <= m.start() < b for a, b in quoted)
    ]
    out: list[tuple[int, int]] = []
    position = 0
    for cut_start, cut_end in [*cuts, (len(sentence), len(sentence))]:
        a, b = start + position, start + cut_start
        while b > a and text[b - 1] in " .!?,;:":
            b -= 1
        out.extend(_trimmed(text, a, b))
        position = cut_end
    return out


def _trimmed(text: str, start: int, end: int) -> Iterator[tuple[int, int]]:
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    if end > start:
        yield start, end
