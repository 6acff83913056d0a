"""Index terms: bm25s's token pattern and English stop words, stemmed with PyStemmer.

The same function reads an episode when it is indexed and a request when it is searched,
so both sides agree on every term. Terms are lower-case Snowball stems of word tokens of
two characters or more; common function words (bm25s's extended English list) are left
out, and so are the question words a request is phrased with.
"""

from __future__ import annotations

import re
from collections import Counter
from functools import lru_cache

import Stemmer

_TOKEN = re.compile(r"(?u)\b\w\w+\b")  # bm25s's default token pattern
_TALK = frozenset(
    # words of asking and of talk that carry no topic
    (
        "what",
        "which",
        "who",
        "whom",
        "whose",
        "when",
        "where",
        "why",
        "how",
        "would",
        "could",
        "should",
        "might",
        "may",
        "must",
        "shall",
        "will",
        "also",
        "ever",
        "likely",
        "kind",
        "sort",
        "get",
        "got",
        "yes",
        "yeah",
        "oh",
        "wow",
        "hey",
        "hi",
        "thanks",
        "thank",
        "really",
        "like",
        "just",
        "lot",
        "much",
        "many",
        "one",
        "something",
        "anything",
        "thing",
        "things",
    )
)


@lru_cache(maxsize=1)
def stop_words() -> frozenset[str]:
    """The words left out of the index: bm25s's extended English list and words of asking
    and of talk (read on first use: importing bm25s loads numpy, which a command that
    indexes nothing, such as ``fabula --help``, need not wait for)."""
    from bm25s.stopwords import STOPWORDS_EN_PLUS

    return frozenset(STOPWORDS_EN_PLUS) | _TALK


@lru_cache(maxsize=1)
def _stemmer() -> Stemmer.Stemmer:
    return Stemmer.Stemmer("english")


@lru_cache(maxsize=200_000)
def _stem(word: str) -> str:
    return str(_stemmer().stemWord(word))


def terms(text: str) -> list[str]:
    """The index terms of ``text``, in order (repeats kept)."""
    stop = stop_words()
    return [_stem(w) for w in _TOKEN.findall(text.lower()) if w not in stop]


def term_counts(text: str) -> Counter[str]:
    """How often each index term occurs in ``text``."""
    return Counter(terms(text))
