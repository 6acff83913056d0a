"""The index's stop words: bm25s's extended English list, read without importing bm25s
(whose package imports numpy and scipy, most of a short command's start)."""

from __future__ import annotations

import json
import subprocess
import sys

from bm25s.stopwords import STOPWORDS_EN_PLUS

from fabula.memory.index.terms import stop_words, terms


def test_stop_words_are_bm25s_list_and_words_of_asking() -> None:
    words = stop_words()
    assert frozenset(STOPWORDS_EN_PLUS) <= words
    assert {"where", "what", "thing"} <= words
    assert terms("Where is the brass key?") == ["brass", "key"]


def test_reading_stop_words_imports_neither_bm25s_nor_numpy() -> None:
    code = (
        "import json, sys\n"
        "from fabula.memory.index.terms import terms\n"
        "terms('Where is the brass key?')\n"
        "print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in "
        "('bm25s', 'numpy', 'scipy'))))\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    assert json.loads(proc.stdout) == []
