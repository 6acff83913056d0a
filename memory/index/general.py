"""General words: what a noun is a kind of, so a request in general terms finds the
particular ("which martial arts" finds "taekwondo", "her children" finds "my daughter").

An episode is indexed, besides its own terms, under the *general terms* of its nouns: the
lemmas of their hypernyms in WordNet 3.1, a few levels up (``taekwondo`` -> ``martial
art``, ``daughter`` -> ``child``, ``Rome`` -> ``city``), as a third posting family in the
branch's index. A request is matched against that family with its own terms and their
runs of two and three (``martial arts`` -> ``martial_art``). The table is built once from
WordNet by ``tools/build_general_words.py`` and ships as
``memory/data/general_words.tsv.gz``; it is read when first needed.
"""

from __future__ import annotations

import gzip
from collections import Counter
from collections.abc import Mapping, Sequence
from functools import lru_cache
from importlib import resources

from fabula.memory.index.terms import terms

RUNS = 3  # a request's multi-word terms are matched up to this many words long


@lru_cache(maxsize=1)
def general_table() -> Mapping[str, tuple[str, ...]]:
    """index term -> its general terms (empty if the shipped table is missing)."""
    try:
        packed = resources.files("fabula.memory").joinpath("data", "general_words.tsv.gz")
        text = gzip.decompress(packed.read_bytes()).decode()
    except (OSError, EOFError, gzip.BadGzipFile):
        return {}
    table = {}
    for line in text.splitlines():
        term, _, general = line.partition("\t")
        table[term] = tuple(general.split())
    return table


def general_counts(counts: Mapping[str, int]) -> Counter[str]:
    """The general terms of a text whose index terms are ``counts`` (each as often as the
    terms it generalises occur)."""
    table = general_table()
    out: Counter[str] = Counter()
    for term, n in counts.items():
        for general in table.get(term, ()):
            out[general] += n
    return out


def general_query(terms: Sequence[str]) -> list[str]:
    """What a request with these index terms (in order) is matched with in the general
    family: each term, and each run of two or three (``martial_art``)."""
    out = list(terms)
    for size in range(2, RUNS + 1):
        out += ["_".join(terms[i : i + size]) for i in range(len(terms) - size + 1)]
    return list(dict.fromkeys(out))


_DESCRIBED = frozenset(
    [
        "old",
        "great",
        "grand",
        "high",
        "upper",
        "lower",
        "little",
        "inner",
        "outer",
        "middle",
        "far",
        "northern",
        "southern",
        "eastern",
        "western",
        "red",
        "white",
        "black",
        "grey",
        "gray",
        "green",
        "blue",
        "golden",
        "silver",
        "broken",
        "hollow",
        "crooked",
        "twin",
        "lonely",
        "dark",
    ]
)
"""Words that describe the place a name stands for ("the Old Mill", "the Great Hall",
"the Red Keep"): a name that opens with one takes its article, as English says it."""


def the_place(name: str) -> str:
    """A place's name as a sentence says it: "the glade", "the Laboratory", but a proper
    name stands alone: a made-up one ("Eldoria", "Thornwood": a capitalised name whose
    last word WordNet does not know as a noun) and one of several capitalised words
    ("Sable Crossing", "Gull Rock", "Eldridge Corporation") — unless it opens with a word
    that describes the place ("the Old Mill": :data:`_DESCRIBED`) or names a plural
    ("the Iron Islands"). A name that already begins with "the" is kept as it is."""
    words = name.split()
    if words and words[0].casefold() == "the":
        return name
    if words and all(w[:1].isupper() for w in words):
        table = general_table()
        if len(words) > 1:
            last = words[-1].casefold()
            plural = last.endswith("s") and not last.endswith("ss") and _noun(last[:-1], table)
            if words[0].casefold() not in _DESCRIBED and not plural:
                return name
        elif table and not _noun(words[-1], table):
            return name
    return f"the {name}"


def _noun(word: str, table: Mapping[str, tuple[str, ...]]) -> bool:
    """Whether WordNet (the general table) knows ``word`` as a noun."""
    return any(term in table for term in terms(word))
