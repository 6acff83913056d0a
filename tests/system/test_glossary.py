"""The glossary kept true: a word it retires is gone from the code, the studio and the docs.

``docs/glossary.md`` retires a word in one form, ``(The name *WORD* is gone``, optionally
naming a phrase that keeps it (``"dense retrieval" still names``). This reads those
sentences, so retiring a word there is what puts it under this check, and scans the
package's modules (the benchmarks and the test helpers included), the studio's templates,
the README and the docs, as the settings test scans for reads of the environment. The
tests' own prose and data are not scanned (a story may fold a scarf).
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import fabula

PACKAGE = Path(fabula.__file__).resolve().parent
ROOT = PACKAGE.parent
GLOSSARY = ROOT / "docs" / "glossary.md"

RETIRED = re.compile(r"\(The name \*(\w+)\* is gone([^)]*)\)")
KEPT_PHRASE = re.compile(r'"([^"]+)" still names')
ENDINGS = r"(?:s|es|ed|ing)?"

# files that use a retired word in another sense, and why (the word is retired as a name
# for one concept, not from English)
OTHER_SENSES = {
    "worlds/imports/keys.py": "case folding, as Python's `re` applies it",
    "worlds/imports/cards.py": "a name's accents folded away (Zoë: Zoe)",
    "agents/schemas.py": "a schema's $refs folded into it",
    "graph/web/present.py": "the studio's nested rows folded into one row",
    "graph/web/shared.py": "the minds page folding nested chains for display",
    "docs/guides/studio.md": "the minds page's nested chains folded, opened on a click",
    "docs/benchmarks.md": "the minds page's holders folded once (as graph/web/shared.py)",
    "memory/records.py": "a name's case folded (str.casefold) for matching",
    "memory/summarise.py": "whitespace folded into single spaces",
    "memory/branch_tasks.py": "calls made while a task runs folded into one more run",
    "memory/index/indexer.py": "a commit made while indexing runs folded into that task",
    "memory/projections.py": "a chain's belief records folded in story order (reduced)",
    "memory/tracking/nested.py": "fold(): a chain's records reduced in story order",
}


def retired_words() -> dict[str, tuple[str, ...]]:
    """Each word the glossary retires, with the phrases it says still keep it."""
    text = " ".join(GLOSSARY.read_text(encoding="utf-8").split())
    return {m[1]: tuple(KEPT_PHRASE.findall(m[2])) for m in RETIRED.finditer(text)}


def scanned() -> dict[str, str]:
    """The text of each file scanned, by its path from the repository's root."""
    found: dict[str, str] = {}
    for folder, _, files in os.walk(PACKAGE, followlinks=True):
        for name in files:
            if name.endswith((".py", ".html", ".js")):
                path = Path(folder) / name
                found[path.relative_to(PACKAGE).as_posix()] = path.read_text(encoding="utf-8")
    for path in [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]:
        if path != GLOSSARY:
            found[path.relative_to(ROOT).as_posix()] = path.read_text(encoding="utf-8")
    return found


def test_the_glossary_retires_the_words_it_says() -> None:
    """The retirements this test enforces are read from the glossary: the three renames of
    issues 36 and 46 among them (a sentence reworded out of the form would drop one)."""
    words = retired_words()
    assert {"extractor", "fold", "retrieval"} <= set(words)
    assert words["retrieval"] == ("dense retrieval",)


def test_no_retired_word_is_used() -> None:
    """No module, template or page uses a retired word (but in a phrase the glossary keeps,
    or a file named above for another sense of it). Reproduction: "extractor" in five
    docstrings, "folded" in `fabula show scenes`, "retrieval" in two dozen places."""
    files = scanned()
    assert len(files) > 200 and "docs/tutorial/run.md" in files
    hits: list[str] = []
    for word, kept in retired_words().items():
        pattern = re.compile(rf"\b{word}{ENDINGS}\b", re.I)
        for path, text in files.items():
            if path in OTHER_SENSES and word == "fold":
                continue
            for kept_phrase in kept:
                text = re.sub(re.escape(kept_phrase), "", text, flags=re.I)
            for match in pattern.finditer(text):
                line = text.count("\n", 0, match.start()) + 1
                hits.append(f"{path}:{line}: {match.group(0)}")
    assert hits == []
