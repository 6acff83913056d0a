"""What a verb does, from WordNet's verb hierarchy: the table the prose reader reads with.

``data/verbs.tsv.gz`` (built by ``tools/build_verb_classes.py`` from WordNet 3.1; see there
for the seed synsets and the few exceptions) maps an inflected form ("strolled", "hid",
"picked up", "made one's way") to its classes, likeliest first:

- ``go``, ``enter``, ``leave``: the subject moves;
- ``put``: the subject places an object somewhere; ``discard``: gets rid of it;
- ``take``: the subject takes hold of an object; ``give``: hands it to someone;
- ``perceive``: sees, notices, watches; ``tell``: says, tells, whispers;
- ``like``, ``dislike``: feelings;
- ``believe``: thinks, assumes, believes (what follows is the believer's view).
"""

from __future__ import annotations

import functools
import gzip
from importlib import resources

VerbClass = str

PARTICLES = frozenset({"up", "away", "out", "off", "in", "down", "back", "over", "aside"})


@functools.cache
def _table() -> dict[str, tuple[tuple[VerbClass, ...], str]]:
    raw = resources.files("fabula.agents.reading").joinpath("data/verbs.tsv.gz")
    out: dict[str, tuple[tuple[VerbClass, ...], str]] = {}
    for line in gzip.decompress(raw.read_bytes()).decode().splitlines():
        form, classes, lemma = line.split("\t")
        out[form] = (tuple(classes.split(",")), lemma)
    return out


@functools.cache
def longest_phrase() -> int:
    """The most words a form in the table has."""
    return max(form.count(" ") + 1 for form in _table())


@functools.cache
def _spans() -> dict[str, int]:
    """The most words a form beginning with each first word has (for a phrase's first
    word; a single word's is 1)."""
    out: dict[str, int] = {}
    for form in _table():
        words = form.split(" ")
        first = words[0].lower()
        out[first] = max(out.get(first, 0), len(words))
    return out


def longest_from(word: str) -> int:
    """The most words a form in the table that begins with ``word`` (lower case) has; 0
    for a word that begins none."""
    return _spans().get(word, 0)


def verb_classes(form: str) -> tuple[tuple[VerbClass, ...], str] | None:
    """``form``'s classes (likeliest first) and lemma; None for a form no class holds."""
    return _table().get(form.lower())
