"""The words the phased reader knows, from WordNet 3.1 (``data/lexicon.tsv.gz``, built by
``tools/build_lexicon.py``): a verb form's lemma and lexicographer classes (``change``,
``perception``, ``cognition`` ...), a noun's verb of derivation ("swap" → swap,
"replacement" → replace), which words are adjectives, which nouns may name a doer
(a person or an animal: a character; a phenomenon, an event or a process: a force), and
which name an idea, no thing of a scene ("story", "plan", "moment", "eye").

Beside it, the closed classes of English grammar (determiners, pronouns, auxiliaries,
prepositions, subordinators): a grammar's own words, not any text's wording.
"""

from __future__ import annotations

import functools
import gzip
from collections.abc import Collection
from dataclasses import dataclass
from importlib import resources
from typing import Literal


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


DETERMINERS = _words(
    "the a an his her their its my our your this that these those some another each every one "
)
PRONOUNS = {"he": "he", "him": "he", "she": "she", "they": "they", "them": "they", "it": "it"}
COPULAS = frozenset(["is", "are", "was", "were", "be", "been", "being", "becomes", "became"])
COPULAS |= frozenset(["become", "remains", "remained", "stays", "seems", "appears", "looks"])
# verbs of seeming, every finite form: "the bees appear calm", "it seemed empty"
COPULAS |= frozenset(["remain", "stay", "seem", "seemed", "appear", "appeared"])
AUXILIARIES = frozenset(["has", "have", "had", "does", "do", "did", "will", "would", "can"])
AUXILIARIES |= frozenset(["could", "may", "might", "must", "should"])
NEGATIONS = frozenset(["not", "never", "n't", "no"])
PREPOSITIONS = _words(
    "in on at into onto inside under near by with from of to for off over through "
    "around behind beside out about across toward towards against after before during "
    "due despite "
)
PLACE_PREPOSITIONS = frozenset(["in", "on", "at", "inside", "under", "into", "onto", "near"])
SUBORDINATORS = _words(
    "while when as after before because although though since until once if whereas unless "
)
POSSESSIVES = frozenset(["his", "her", "their", "my", "our", "your"])
CONJUNCTIONS = frozenset(["and", "but", "or", "so", "yet", "then"])
# a verb of causing whose object takes the result: "causing it to wilt", "leaving it empty"
RESULTATIVE = frozenset(["cause", "make", "leave", "render", "turn", "get", "keep"])
# a verb of aspect before a gerund, and whether the doing goes on after it ("the oven
# stopped heating": not heating; "the tap started dripping": dripping)
ASPECTUAL = {"stop": False, "cease": False, "quit": False, "start": True, "begin": True}
ASPECTUAL |= {"continue": True, "keep": True, "resume": True}
# a verb that puts one thing where another was: "swapped the oat milk for almond milk"
# ("substitute" names the newcomer first: "substituted almond milk for the oat milk")
SUBSTITUTING = frozenset(["swap", "switch", "exchange", "replace", "substitute", "trade"])
# a verb whose "that" clause the story holds true, a fact the act it follows made plain
# ("opened the oyster, revealing that there was no pearl inside"): not a telling or a
# belief, whose clause is someone's word ("indicates", "claims" are no such verbs)
REVEALING = frozenset(["reveal", "show", "expose", "prove", "demonstrate", "uncover"])
# a verb of possession by which a thing changes hands, its doer no declared character's
# ("a thief stole the key", "sold the last loaf"): the thing is stolen, sold
TAKING = frozenset(["steal", "snatch", "pilfer", "pocket", "swipe", "nab", "sell"])
# verbs of knowing whose clause is a fact, not the knower's view ("knew that Bo hated it",
# "realized how much Bo hated it"); "believe", "think", "assume" are not among them
FACTIVE = frozenset(["know", "realize", "realise", "understand", "remember", "recognize"])


@dataclass(frozen=True)
class Verb:
    lemma: str
    classes: tuple[str, ...]


DoerKind = Literal["character", "force"]
# WordNet's noun lexicographer classes of a doer (``tools/build_lexicon.py``)
_DOER_CLASSES: dict[str, DoerKind] = {
    "person": "character",
    "animal": "character",
    "phenomenon": "force",
    "event": "force",
    "process": "force",
}


@dataclass(frozen=True)
class _Table:
    verbs: dict[str, Verb]
    nouns: dict[str, tuple[str, str]]
    adjectives: frozenset[str]
    doers: dict[str, DoerKind]
    ideas: dict[str, tuple[str, ...]]  # a noun of an idea -> its classes
    nouns_not: frozenset[str]  # adjectives that are no noun, adverbs that are neither
    plurals: dict[str, tuple[str, ...]]  # an irregular plural -> its lemmas


@functools.cache
def _table() -> _Table:
    raw = resources.files("fabula.agents.reading").joinpath("data/lexicon.tsv.gz")
    verbs: dict[str, Verb] = {}
    nouns: dict[str, tuple[str, str]] = {}
    adjectives: set[str] = set()
    doers: dict[str, DoerKind] = {}
    ideas: dict[str, tuple[str, ...]] = {}
    nouns_not: set[str] = set()
    plurals: dict[str, tuple[str, ...]] = {}
    for line in gzip.decompress(raw.read_bytes()).decode().splitlines():
        pos, form, lemma, extra = line.split("\t")
        if pos == "v":
            verbs[form] = Verb(lemma, tuple(extra.split(",")))
        elif pos == "n":
            nouns[form] = (lemma, extra)
        elif pos == "d":
            doers[form] = _DOER_CLASSES[extra]
        elif pos == "i":
            ideas[form] = tuple(extra.split(","))
        elif pos == "p":
            plurals[form] = tuple(lemma.split(","))
        elif pos == "r":
            nouns_not.add(form)
        else:
            adjectives.add(form)
            if extra != "n":
                nouns_not.add(form)
    return _Table(verbs, nouns, frozenset(adjectives), doers, ideas, frozenset(nouns_not), plurals)


def verb(word: str) -> Verb | None:
    """``word`` as a verb form (its lemma and classes, likeliest first), or None."""
    return _table().verbs.get(word.lower())


@functools.cache
def verb_lemmas() -> frozenset[str]:
    """Every verb lemma the table holds (a form not among them is inflected: "got")."""
    return frozenset(v.lemma for v in _table().verbs.values())


@functools.cache
def _forms() -> dict[str, frozenset[str]]:
    """Each verb lemma's forms in the table ("break" → break, breaks, broke, broken, ...)."""
    out: dict[str, set[str]] = {}
    for form, found in _table().verbs.items():
        out.setdefault(found.lemma, set()).add(form)
    return {lemma: frozenset(forms) for lemma, forms in out.items()}


def participle(lemma: str) -> str:
    """A verb's past participle, the form that names the state it leaves ("crack" →
    cracked, "break" → broken, "begin" → begun, "plug" → plugged, "cut" → cut): among
    the irregular forms WordNet lists, one in "-n" or "-ne", else the one with "u"
    (sung, sunk), else the only one (spilt, caught); else the regular spelling."""
    forms = _forms().get(lemma, frozenset())
    stem = lemma[:-1] if lemma.endswith(("e", "y")) else lemma
    doubled = lemma + lemma[-1:]
    regular = {lemma} | {
        base + end
        for base in (lemma, stem, doubled, lemma[:-1] + "i")
        for end in ("s", "es", "d", "ed", "ing")
    }
    irregular = sorted(f for f in forms if f not in regular and not f.endswith(("ing", "s")))
    for form in irregular:
        if form.endswith(("en", "wn", "rn", "ne", "un")):
            return form  # broken, shown, torn, gone, begun
    if doubled + "ed" in forms:
        return doubled + "ed"  # plugged, swapped (not the variant "swopped")
    if len(irregular) > 1 and (vowel := [f for f in irregular if "u" in f[1:]]):
        return vowel[0]  # sung, sunk, rung
    if irregular:
        return irregular[0]  # spilt, caught, made
    if doubled + "ing" in forms and lemma.endswith(("t", "d")):
        return lemma  # "cutting" but no "cutted": cut, put, set, shut
    if lemma.endswith("e"):
        return lemma + "d"
    if lemma.endswith("y") and lemma[-2:-1] not in "aeiou":
        return lemma[:-1] + "ied"
    return lemma + "ed"


def derived_verb(word: str) -> str | None:
    """The verb a noun derives from ("swap" → swap, "replacement" → replace), or None."""
    found = _table().nouns.get(word.lower())
    return found[1] if found else None


def doer(word: str) -> DoerKind | None:
    """What a noun names when it does something: ``"character"`` for a person or an
    animal ("thief", "cat", "coworker"), ``"force"`` for a phenomenon, an event or a
    process ("wind", "flood", "fire"), None for a thing ("basket") or a word WordNet
    lacks. A regular plural is reduced by WordNet's rules ("cats", "women", "ladies")."""
    lemma = _noun_lemma(word.lower(), _table().doers.keys())
    return _table().doers[lemma] if lemma is not None else None


def idea(word: str) -> tuple[str, ...]:
    """The WordNet classes of a noun that names an idea, no thing a scene holds ("story":
    communication; "way": attribute, act; "eyes": body), by its two likeliest senses;
    () for a noun with a physical sense among them ("book"; "letter", a communication by
    both senses, is an idea), a doer ("fate" is an event) or a word WordNet lacks. A
    plural is reduced as :func:`doer` reduces it; an irregular one is an idea where each
    of its lemmas is ("leaves": leaf or leave, none)."""
    w = word.lower()
    table = _table()
    if w in table.plurals:
        found = [table.ideas.get(lemma, ()) for lemma in table.plurals[w]]
        return found[0] if all(found) else ()
    lemma = _noun_lemma(w, table.ideas.keys())
    return table.ideas[lemma] if lemma is not None else ()


def is_noun(word: str) -> bool:
    """Whether ``word`` may be a noun: not an adjective WordNet has no noun of ("sure",
    "oblivious", "frozen"; "empty" and "cold" are nouns too), an adverb alone
    ("however", "always"), a preposition or a determiner, or a relative or question
    word ("what"). A word WordNet lacks may be one (a name, "zorbulator")."""
    w = word.lower()
    closed = w in PREPOSITIONS or w in DETERMINERS or w in _QUESTION
    return not closed and w not in _table().nouns_not


_QUESTION = frozenset(["what", "which", "who", "whom", "whose", "where", "when", "why", "how"])


def _noun_lemma(w: str, known: Collection[str]) -> str | None:
    """``w`` or the lemma its plural ending reduces to, if ``known`` holds it."""
    if w in known:
        return w
    for end, base in _NOUN_DETACHMENT:
        if w.endswith(end) and len(w) > len(end) and w[: -len(end)] + base in known:
            return w[: -len(end)] + base
    return None


# WordNet's detachment rules for nouns (its ``morphy``): a plural's ending → the lemma's
# ("goats" → goat, "women" → woman, "ladies" → lady); the irregular plurals are the table's
_NOUN_DETACHMENT = (
    ("s", ""),
    ("ses", "s"),
    ("xes", "x"),
    ("zes", "z"),
    ("ches", "ch"),
    ("shes", "sh"),
    ("men", "man"),
    ("ies", "y"),
)


def is_adjective(word: str) -> bool:
    return word.lower() in _table().adjectives


def is_compound_adjective(word: str) -> bool:
    """Whether a hyphened word is an adjective by its last part: an adjective or a past
    participle ("sand-filled", "termite-infested", "half-baked", "well-done",
    "medium-rare"); not a noun's compound ("ice-cream") or an "-ing" one."""
    first, _, last = word.lower().rpartition("-")
    if not first or not last.isalpha():
        return False
    if is_adjective(last):
        return True
    found = verb(last)
    return found is not None and last != found.lemma and not last.endswith(("ing", "s"))


def is_adverb(word: str) -> bool:
    """Whether ``word`` is an adverb made from an adjective ("innocently", "happily",
    "gently", "truly"), by WordNet's adjectives; a name in -ly ("Emily") is none."""
    if not word.endswith("ly") or is_adjective(word):
        return False
    bases = (word[:-2], word[:-3] + "y", word[:-1] + "e", word[:-2] + "e")
    return any(len(b) > 2 and is_adjective(b) for b in bases)


def root(word: str) -> str:
    """The word reduced to what it names: a verb form to its lemma ("wilted" → wilt), a
    noun to the verb it derives from, else a plural to its singular; lower case."""
    w = word.lower().removesuffix("'s")
    found = _table().nouns.get(w)
    if found is not None:
        return found[1]
    v = verb(w)
    if v is not None and not (w == v.lemma and is_adjective(w)):
        return v.lemma
    return singular(w)


def singular(w: str) -> str:
    """A plural noun's singular by the regular rules ("boxes" → box, "tomatoes" → tomato;
    "-ies" only loses its "s": "cookies" and "berries" alike); a word ending "ss", "us"
    or "is" is not a plural ("glass", "harmonious", "analysis")."""
    if len(w) <= 3 or not w.endswith("s") or w.endswith(("ss", "us", "is")):
        return w
    if w.endswith(("ches", "shes", "xes", "zes", "sses")) or (w.endswith("oes") and len(w) > 6):
        return w[:-2]
    return w[:-1]
