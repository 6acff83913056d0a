"""Phase 4, a part: a clause's words as a state's value, and as the roots it is matched by.

A value is its words as the text has them, in lower case ("cracked", "smooth and
untouched"); a verb that says a change is given as the state it leaves, its past
participle: "the frost cracks the kettle", "has cracked it" and "the kettle is cracked"
are one value, ``cracked`` (:func:`.lexicon.participle`). A clause's roots
(:func:`.lexicon.root`), not its values, are what readings are matched by.
"""

from __future__ import annotations

from collections.abc import Sequence

from fabula.agents.reading.phases import lexicon as lx
from fabula.agents.reading.phases.mentions import Mention
from fabula.agents.reading.phases.tokens import Token


def content_roots(tokens: Sequence[Token], skip: Mention | None) -> frozenset[str]:
    """The roots of a clause's content words (its grammar's words and ``skip``'s left
    out): what a perception and the event it names are matched by."""
    skipped = {t.start for t in skip.tokens} if skip else set()
    out = set()
    for t in tokens:
        w = t.lower
        if t.start in skipped or w in lx.PRONOUNS or len(w) < 3:
            continue
        if w in lx.DETERMINERS or w in lx.PREPOSITIONS or w in lx.COPULAS:
            continue
        if w in lx.AUXILIARIES or w in lx.CONJUNCTIONS or w in lx.SUBORDINATORS:
            continue
        if w in lx.NEGATIONS or w.endswith("n't") or w in ("that", "which", "who"):
            continue
        out.add(lx.root(w))
    return frozenset(out)


def value_of(tokens: Sequence[Token], verbal: bool = False) -> str:
    """A predicate's words as a value, as the text has them but in lower case:
    determiners, adverbs of degree and time, and what follows "by", "due" or "because"
    left out. ``verbal``: the words begin with a verb ("causing it to *wilt*"), which is
    given as the state it leaves, its past participle ("wilted")."""
    words: list[str] = []
    for t in tokens:
        w = t.lower
        if w in ("by", "due", "because", "from", "as", "while", "when", "for"):
            break
        if w in lx.DETERMINERS or w in ("still", "now", "also", "once", "then", "very"):
            continue
        if verbal and not words and (found := lx.verb(w)) and not lx.is_adjective(w):
            w = w if w.endswith(("ed", "en")) else lx.participle(found.lemma)
        words.append(w)
    return " ".join(words)


def normal_value(value: str) -> str:
    """A value someone else wrote (a model's reading), as this reader gives values: lower
    case, an auxiliary or copula before a verb left out, and a verb given as the state it
    leaves ("Has wilted", "wilts", "is wilting" → ``wilted``; "cracked" and "in tune" stay
    as they are)."""
    words = value.lower().split()
    k = 0
    while k + 1 < len(words) and (words[k] in lx.AUXILIARIES or words[k] in lx.COPULAS):
        k += 1
    if k and lx.verb(words[k]) is None:
        k = 0  # "is broken" stays whole where "broken" is no verb form; "has a crack" too
    words = words[k:]
    if not words or words[0] in lx.AUXILIARIES or words[0] in lx.COPULAS:
        return " ".join(words)  # "has a crack": a possession, not a change
    if (found := lx.verb(words[0])) and not lx.is_adjective(words[0]):
        w = words[0]
        words[0] = w if w.endswith(("ed", "en")) else lx.participle(found.lemma)
    return " ".join(words)


def complement_at(np: Sequence[Token]) -> int:
    """Where a noun phrase read after a verb of causing ran on into the state it is left
    in ("leaving *the cookies half-baked*", "left the area devoid of fish"): in a phrase
    that opens with a determiner, the first adjective after a noun (not after "of" or an
    owner's name: "the outcome of Cam's subtle gesture"); else the phrase's length."""
    if not np or np[0].lower not in lx.DETERMINERS:
        return len(np)
    for k in range(2, len(np)):
        before = np[k - 1].lower
        if before in lx.DETERMINERS or _adjective(before) or before.endswith(("ly", "'s")):
            continue
        if before in lx.PREPOSITIONS or before in ("of", "quite", "very", "so", "too"):
            continue
        if _adjective(np[k].lower) and not np[k].capital:
            return k
    return len(np)


def _adjective(word: str) -> bool:
    """An adjective, or a compound whose last part is one ("half-baked", "sun-dried")."""
    return lx.is_adjective(word) or ("-" in word and lx.is_adjective(word.rsplit("-", 1)[1]))


def attributive(np: Sequence[Token]) -> tuple[list[Token], list[Token]]:
    """A noun phrase's adjectives before its noun, and the rest ("a carefully raked sand
    pattern" → "carefully raked", "sand pattern"): an adverb of manner before its
    adjective, a participle as one, a hyphened adjective ("the sand-filled entrance"),
    never the phrase's last word (its noun)."""
    described = [t for t in np if t.lower not in lx.DETERMINERS]
    adjectives: list[Token] = []
    for k, t in enumerate(described):
        manner = t.lower.endswith("ly") and k + 1 < len(described)
        participle = t.lower.endswith("ed") and lx.verb(t.lower) is not None
        participle = participle or lx.is_compound_adjective(t.lower)  # "sand-filled"
        if t.lower == "of" or not (lx.is_adjective(t.lower) or manner or participle):
            break
        adjectives.append(t)
    return adjectives, described[len(adjectives) :]


def reached(after: Sequence[Token]) -> str:
    """The state an act took its object to, said with "to" and an adjective
    ("overcooked the steak to well-done", "heated the water to lukewarm"): " to …", or ""
    (a place, a person or a number is no such state: "moved it to the shelf")."""
    if len(after) < 2 or after[0].lower != "to":
        return ""
    word = after[1].lower
    if lx.is_adjective(word) or lx.is_compound_adjective(word):
        return f" to {word}"
    return ""
