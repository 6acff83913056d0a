"""Phase 3, its first step: a segment of a sentence cut into clauses.

A segment (:mod:`.tokens`: a stretch between commas) holds one clause, or several joined by
"and" or "but" before a verb of the same subject ("dusts the shelf and notices the
crack"; "swims by and accidentally tears the nets", adverbs of manner skipped) or before
a pronoun and its verb ("checks the violin and it sounds in tune"). "And"
between two adjectives ("wet and wilted") joins a value, never two clauses.
"""

from __future__ import annotations

from collections.abc import Sequence

from fabula.agents.reading.phases import lexicon as lx
from fabula.agents.reading.phases.mentions import phrase
from fabula.agents.reading.phases.tokens import Token

HELPING = lx.AUXILIARIES | lx.COPULAS  # what comes before a verb: "is", "has", "will"
# pronouns that are a clause's subject ("and it sounds", "but she stays")
_SUBJECTS = frozenset(["it", "he", "she", "they", "we", "i"])
# adverbial particles: "rolls in", "knocks over", "turns off"
PARTICLES = frozenset(["up", "over", "off", "away", "down", "out", "in", "on", "back"])


def particle(tail: Sequence[Token]) -> bool:
    """Whether ``tail`` begins with an adverbial particle, not a preposition with its
    object: "rolls in", "moves away from the area"; not "came off the hills"."""
    if not tail or tail[0].lower not in PARTICLES:
        return False
    nxt = tail[1].lower if len(tail) > 1 else ""
    return not nxt or nxt in lx.PREPOSITIONS or nxt in lx.CONJUNCTIONS or nxt.endswith("ly")


def _adverb(word: str) -> bool:
    """An adverb of manner ("accidentally", "quickly"): a word in -ly that is no verb."""
    return word.endswith("ly") and len(word) > 4 and lx.verb(word) is None


def _finite(word: str) -> bool:
    """A finite verb form after a subject: a copula, an auxiliary or an inflected verb."""
    if word in lx.COPULAS or word in lx.AUXILIARIES:
        return True
    return lx.verb(word) is not None and (
        word.endswith(("s", "ed")) or word not in lx.verb_lemmas()
    )


def split_clauses(segment: Sequence[Token]) -> list[tuple[Token, ...]]:
    """A segment cut before "and"/"but" + a verb: a second clause of the same subject
    ("rubbed his eyes and sighed"), never the first one's value; and before "while" or
    "when" + a subject ("… while Ann is away", "… when Bo broke it"), a clause of its
    own — but not the "when" of a verb of perceiving ("did not notice when Bo broke it")."""
    out: list[list[Token]] = [[]]
    for k, t in enumerate(segment):
        nxt_word = segment[k + 1] if k + 1 < len(segment) else None
        subject = nxt_word is not None and (nxt_word.capital or nxt_word.lower in _SUBJECTS)
        if t.lower == "while" and out[-1] and subject:
            # "… while Ann is away": a clause of its own subject, after the main one
            out.append([t])
            continue
        definite = nxt_word is not None and nxt_word.lower in ("the", "a", "an", "her", "his")
        if t.lower == "when" and out[-1] and (subject or definite) and not _reports(out[-1]):
            # "Ann was asleep when Bo broke the vase": the act is a clause of its own; not
            # what a perception names ("did not notice when Bo broke it")
            out.append([t])
            continue
        if t.lower not in ("and", "but"):
            out[-1].append(t)
            continue
        j = k + 1  # past adverbs: "and accidentally tears the nets"
        while t.lower in ("and", "but") and j + 1 < len(segment) and _adverb(segment[j].lower):
            j += 1
        nxt = segment[j].lower if j < len(segment) else ""
        after = segment[j + 1].lower if j + 1 < len(segment) else ""
        before = segment[k - 1].lower if k else ""
        finite = nxt not in lx.verb_lemmas() or nxt.endswith("ing")
        # a verb taking an object ("and notices the", "and greets them") or none ("and
        # sighed", "and sighed with relief"), not an adjective of a phrase that goes on
        # ("wet and wilted skirt") or of a predicate ("is wet and wilted")
        takes = after in lx.DETERMINERS or after in lx.PRONOUNS or after in ("that",)
        alone = not after or after in lx.PREPOSITIONS or after in PARTICLES
        # (a particle is no adjective there: "scooped it up and swiftly moved towards")
        paired = lx.is_adjective(nxt) and lx.is_adjective(before) and before not in PARTICLES
        takes = takes or (alone and not paired)
        if t.lower in ("and", "but") and out[-1] and finite and lx.verb(nxt) and takes:
            out.append([])
            continue
        if t.lower in ("and", "but") and out[-1] and nxt in _SUBJECTS and _finite(after):
            out.append([])  # a clause of its own subject: "and it sounds in tune"
            continue
        out[-1].append(t)
    return [tuple(c) for c in out if c]


# the classes of a verb whose "when" clause is what it perceives, knows or says
_REPORTING = frozenset(["perception", "cognition", "communication"])


def _article(word: str) -> bool:
    """Whether ``word`` opens a noun phrase: an article, a determiner or a possessive."""
    return word in lx.DETERMINERS or word in lx.POSSESSIVES


def _reports(before: Sequence[Token]) -> bool:
    """Whether the words before a "when" end with a verb of perceiving, knowing or
    saying ("did not notice", "remembered", "asked"), whose object the clause is."""
    if not before or before[-1].lower.endswith("ing"):
        return False  # "was reading when the lamp fell": a time, not what was read
    if len(before) > 1 and _article(before[-2].lower):
        return False  # "closed her eyes when …": a noun ("eyes"), not the verb "eye"
    found = lx.verb(before[-1].lower)
    return found is not None and found.classes[0] in _REPORTING


_OBJECT_PRONOUNS = frozenset(["her", "him", "them", "it", "me", "us", "you"])


def _s_form(word: str) -> bool:
    """Whether ``word`` is a verb's "-s" form ("catches", "indicates")."""
    found = lx.verb(word)
    return found is not None and word.endswith("s") and word != found.lemma


def past_modifiers(tokens: Sequence[Token]) -> Sequence[Token]:
    """``tokens`` after a subject, its prepositional phrases skipped ("the honey in the
    jars is ..." → "is ...")."""
    rest = list(tokens)
    while len(rest) > 1:
        if rest[0].lower in lx.PREPOSITIONS and rest[0].lower != "by":
            np = phrase(rest[1:])
            if not np:
                break
            if 1 + len(np) >= len(rest):
                # the phrase ran to the end, over the clause's verb: "in an area of the
                # garden catches her eye" — cut it at an "-s" verb form after its noun
                cut = [i for i in range(2, len(np)) if _s_form(np[i].lower)]
                if not cut:
                    break
                np = np[: cut[0]]
            rest = rest[1 + len(np) :]
        elif len(rest) > 2 and rest[0].lower in lx.PRONOUNS:
            # a relative clause without "that": "the jar she bought is ...", "the
            # saplings he has ordered are ...", "the vase she is shaping has ..."
            first, second = rest[1].lower, rest[2].lower
            perfect = first in lx.AUXILIARIES and second.endswith(("ed", "en"))
            own = (lx.verb(first) or first in ("has", "have", "had")) and not perfect
            if own and (second in lx.COPULAS or second in lx.AUXILIARIES):
                rest = rest[2:]  # "the yeast he has appears ...": its own verb
                continue
            j = 1
            while j < len(rest) and (rest[j].lower in HELPING):
                j += 1
            if j >= len(rest) or lx.verb(rest[j].lower) is None:
                break
            j += 1
            if j + 1 < len(rest) and rest[j].lower in PARTICLES | lx.PREPOSITIONS:
                j += 1  # "the piece she is working on is ..."
                if j < len(rest) and rest[j].lower in _OBJECT_PRONOUNS:
                    j += 1  # "the map she carries with her indicates ..."
            nxt = rest[j].lower if j < len(rest) else ""
            if not (nxt in lx.COPULAS or nxt in lx.AUXILIARIES or lx.verb(nxt)):
                break
            rest = rest[j:]
        else:
            break
    return rest


def has_object(tokens: Sequence[Token]) -> bool:
    """Whether ``tokens`` begin with a noun phrase with a determiner or a possessive (the
    object of "feels the heat"), not an adjective ("feels tired") or a name."""
    return bool(tokens) and _article(tokens[0].lower)


def bare_verb_at(tokens: Sequence[Token]) -> int:
    """Where a bare verb after a noun phrase begins, or ``len(tokens)``: "saw *a stray cat*
    knock over the basket", "*her colleague Ahmed* empty the basket" — a verb (not the
    phrase's first word, not after an article) followed by an article, a possessive or a
    particle, which a noun phrase read greedily would take for a noun."""
    for k in range(1, len(tokens) - 1):
        word, before, after = tokens[k].lower, tokens[k - 1].lower, tokens[k + 1].lower
        if _article(before) or lx.verb(word) is None:
            continue
        if _article(after) or after in PARTICLES:
            return k
    return len(tokens)
