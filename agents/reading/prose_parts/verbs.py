"""The prose reader's verbs: a sentence's verbs, their phrases, and who does each.

A verb is a word or phrase the verb table knows (classed by WordNet:
:func:`fabula.agents.reading.verbs.verb_classes`), not in a noun's position ("the move")
and, in its bare form, only where a bare form is a verb ("to move", "could move"). Each
verb reads the words up to the next verb (:meth:`_Verbs._segment`); it is negated by a
negation just before it in its clause, and irrealis under a modal or a condition ("so that
she could eat it"). Its subject is the nearest character before it (a pronoun resolved),
an object-controlled one ("asked Bo to move it"), the main clause's for a
sentence-initial participle, or the clause before's for a clause with none of its own.
"""

from __future__ import annotations

from collections.abc import Sequence

from fabula.agents.reading.phases import lexicon
from fabula.agents.reading.prose_parts.base import _Base
from fabula.agents.reading.prose_parts.state import _Tok, _Verb
from fabula.agents.reading.prose_parts.words import (
    _ADVERBISH,
    _BASE_BEFORE,
    _CLAUSE_EDGE,
    _INTENDING,
    _MODALS,
    _NEGATIONS,
    _NOUN_DETERMINERS,
    _OBJECT_PRONOUNS,
    _POSSESSIVES,
    _PREPOSITIONS,
    _SUBJECTS,
)
from fabula.agents.reading.verbs import PARTICLES, longest_from, longest_phrase, verb_classes


class _Verbs(_Base):
    """A sentence's verbs, and who does each."""

    # -- verbs ------------------------------------------------------------------------
    def _find_verbs(self) -> list[_Verb]:
        verbs: list[_Verb] = []
        toks = self.toks
        span = longest_phrase()
        # each token as the verb table spells a phrase's words, made once a sentence
        spelled = ["one's" if t.low in _POSSESSIVES or t.low == "one's" else t.low for t in toks]
        i = 0
        while i < len(toks):
            tok = toks[i]
            if i in self.by_token or (tok.text[0].isupper() and i > 0) or not tok.low.isalpha():
                i += 1
                continue
            if self._noun_position(i):
                i += 1
                continue
            found = None
            for n in range(min(span, len(toks) - i, longest_from(spelled[i])), 0, -1):
                hit = verb_classes(" ".join(spelled[i : i + n]))
                if hit is not None:
                    found = (n, hit)
                    break
            if found is None:
                i += 1
                continue
            n, (classes, lemma) = found
            split = self._separated_particle(i) if n == 1 else None
            if split is not None:
                classes, lemma = split
            if tok.low == lemma.split()[0] and not self._takes_base_form(i):
                i += 1
                continue
            negated = self._negated(i)
            verbs.append(_Verb(i, i + n - 1, classes, lemma, negated, self._irrealis(i)))
            i += n
        return verbs

    def _negated(self, i: int) -> bool:
        """Whether a negation comes in the three words before the verb at token ``i``, in
        its own clause ("Bo never saw it"; not "not Ann, but Bo saw it")."""
        for j in range(i - 1, max(-1, i - 4), -1):
            low = self.toks[j].low
            if low in (",", "but"):
                return False
            if low in _NEGATIONS:
                return True
        return False

    def _irrealis(self, i: int) -> bool:
        """Whether the verb at token ``i`` is under a modal or a condition in its clause
        ("so that she could eat it later", "if he moved it"), or an intention's ("decided
        to move it", "wanted to take it"): told as possible or meant, not as done."""
        return self._modal(i) is not None or self._intended(i)

    def _intended(self, i: int) -> bool:
        """Whether "to" + a verb of intending come right before the verb at token ``i``."""
        if i < 2 or self.toks[i - 1].low != "to":
            return False
        found = lexicon.verb(self.toks[i - 2].low)  # WordNet's lemma of any verb
        return found is not None and found.lemma in _INTENDING

    def _modal(self, i: int) -> str | None:
        """The modal or condition word the verb at token ``i`` is under in its clause: the
        latest one before it, unless a clause's edge comes after it."""
        if self._latest is None:
            self._latest = _latest_marks(self.toks)
        j = i - 1
        if j >= 0 and self.toks[j].low in ("and", "or"):
            j -= 1  # "to find and access it": a verb joined to the one before
        if j < 0:
            return None
        edge, modal = self._latest[j]
        return self.toks[modal].low if modal > edge else None

    def _separated_particle(self, i: int) -> tuple[tuple[str, ...], str] | None:
        """A phrasal verb split by its pronoun object ("picking it up", "threw them away"):
        the phrase's classes, not the bare verb's."""
        toks = self.toks
        if i + 2 >= len(toks) or toks[i + 1].low not in ("it", "them", "him", "her"):
            return None
        if toks[i + 2].low not in PARTICLES:
            return None
        return verb_classes(f"{toks[i].low} {toks[i + 2].low}")

    def _noun_position(self, i: int) -> bool:
        """Whether token ``i`` follows a determiner with no verb between: a noun ("the
        place", "a somewhat devious move", "Ben's dislike")."""
        for j in range(i - 1, max(-1, i - 4), -1):
            tok = self.toks[j]
            if (j in self.by_token and not tok.possessive) or tok.low in _SUBJECTS:
                return False
            if tok.possessive or tok.low in _NOUN_DETERMINERS:
                return True
            if not tok.low.isalpha() or tok.low in ("and", "or", "but"):
                return False
        return False

    def _takes_base_form(self, i: int) -> bool:
        """Whether a verb's bare form at token ``i`` is a verb there: after ``to``, a modal,
        ``and``/``or`` (a second verb), a plural or first/second person subject, or at the
        sentence's start (an imperative)."""
        if i == 0:
            return True
        for j in range(i - 1, max(-1, i - 3), -1):
            low = self.toks[j].low
            if low in _BASE_BEFORE or low in ("they", "we", "i", "you", "he", "she"):
                return True  # after a singular subject, a past tense like "put" or "set"
            if j in self.by_token and self.by_token[j].kind == "character":
                return True
            if low not in _ADVERBISH and not low.endswith("ly"):
                return False
        return False

    def _segment(self, verbs: Sequence[_Verb], k: int) -> tuple[int, int]:
        lo = verbs[k].end + 1
        hi = verbs[k + 1].at if k + 1 < len(verbs) else len(self.toks)
        return lo, hi

    def _subject(self, verbs: Sequence[_Verb], k: int) -> tuple[tuple[str, ...], str | None]:
        """The characters doing verb ``k``, and why that reading is unsure."""
        at = verbs[k].at
        if at > 1 and self.toks[at - 1].low == "to":
            # object control: "led him to move it", "asked Bo to move it"
            m = self.by_token.get(at - 2)
            low = self.toks[at - 2].low
            if m is not None and m.kind == "character" and not m.possessive:
                return m.ids, None
            if low in ("him", "her") and (low != "her" or not self._next_is_noun(at - 2)):
                return self._pronoun_subject(_OBJECT_PRONOUNS[low], at - 2)
        for j in range(at - 1, -1, -1):
            tok = self.toks[j]
            if tok.low in (";",):
                break
            m = self.by_token.get(j)
            if tok.low == "who":
                prev = self.by_token.get(j - 2 if j > 1 and self.toks[j - 1].low == "," else j - 1)
                if prev is not None and prev.kind == "character":
                    return prev.ids, None
            if m is not None and m.kind == "character":
                if m.possessive or (m.first > 0 and self.toks[m.first - 1].low in _PREPOSITIONS):
                    continue
                return m.ids, None
            if tok.low in _SUBJECTS:
                return self._pronoun_subject(tok.low, j)
        # a participle opening the sentence ("Entering the room, Ann ..."): the main
        # clause's subject; a finite verb after a subject the pack does not name ("most
        # people turned up their noses, Ann ...") is that subject's, not the main clause's
        opening = all(
            t.low in _ADVERBISH or t.low.endswith("ly") or t.low in ("having", "being", "after")
            for t in self.toks[:at]
        )
        if not opening:
            return self._inherited()
        for j in range(at + 1, len(self.toks)):
            if self.toks[j].low != ",":
                continue
            for k2 in range(j + 1, min(j + 4, len(self.toks))):
                m = self.by_token.get(k2)
                if m is not None and m.kind == "character" and not m.possessive:
                    return m.ids, None
                if self.toks[k2].low in _SUBJECTS:
                    return self._pronoun_subject(self.toks[k2].low, k2)
            break
        return self._inherited()

    def _inherited(self) -> tuple[tuple[str, ...], str | None]:
        """A clause after the first with no subject of its own shares the one before
        ("He took the plum, and quickly left"): coordination leaves it out."""
        if not self.first_clause and self.state.clause_subject:
            return self.state.clause_subject, None
        return (), "no subject"

    def _pronoun_subject(self, pronoun: str, at: int) -> tuple[tuple[str, ...], str | None]:
        if pronoun == "they":
            for m in self.mentions:
                if m.kind == "character" and len(m.ids) > 1:
                    return m.ids, None
            for subject in reversed(self.state.subjects[-3:]):
                if len(subject) > 1:
                    return subject, None
            if len(self.state.company) > 1:
                return tuple(sorted(self.state.company)), None
            who, why = self._resolve("they", at)
            return ((who,) if who else ()), why
        who, why = self._resolve(pronoun, at)
        return ((who,) if who else ()), why


def _latest_marks(toks: Sequence[_Tok]) -> list[tuple[int, int]]:
    """For each token, the index of the latest clause edge and of the latest modal or
    condition word at or before it (-1: none), in one pass."""
    edge = modal = -1
    out = []
    for j, tok in enumerate(toks):
        if tok.low in _CLAUSE_EDGE:
            edge = j
        elif tok.low in _MODALS:
            modal = j
        out.append((edge, modal))
    return out
