"""Index terms: bm25s's token pattern and English stop words, stemmed with PyStemmer.

The same function reads an episode when it is indexed and a request when it is searched,
so both sides agree on every term. Terms are lower-case Snowball stems of word tokens of
two characters or more; common function words (bm25s's extended English list) are left
out, and so are the question words a request is phrased with.
"""

from __future__ import annotations

import importlib.util
import re
import sys
from collections import Counter
from functools import lru_cache
from pathlib import Path

import Stemmer

from fabula.errors import ConfigError

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
    and of talk (read on first use, see :func:`_bm25s_stop_words`)."""
    return _bm25s_stop_words() | _TALK


def _bm25s_stop_words() -> frozenset[str]:
    """bm25s's ``STOPWORDS_EN_PLUS``, read from its ``stopwords`` module alone.

    ``import bm25s.stopwords`` runs the ``bm25s`` package first, and that imports numpy and
    scipy's sparse tools: ~0.15 s of CPU for a command that indexes or searches a few
    sentences (``new``, ``recall``, ``approve``). The module itself is data with no imports
    (a tuple of words), so it is run on its own from the installed package's folder, not
    registered in ``sys.modules``; if bm25s is already imported its module is used."""
    loaded = sys.modules.get("bm25s.stopwords")
    if loaded is None:
        spec = importlib.util.find_spec("bm25s")  # finds the package without running it
        folders = spec.submodule_search_locations if spec else None
        if not folders:
            raise ConfigError("bm25s is not installed: its stop words cannot be read")
        path = Path(next(iter(folders))) / "stopwords.py"
        loader = importlib.util.spec_from_file_location("_fabula_bm25s_stopwords", path)
        if loader is None or loader.loader is None:
            raise ConfigError(f"bm25s's stop words cannot be read from {path}")
        loaded = importlib.util.module_from_spec(loader)
        loader.loader.exec_module(loaded)
    return frozenset(loaded.STOPWORDS_EN_PLUS)


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
