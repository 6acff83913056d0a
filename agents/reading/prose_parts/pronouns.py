"""The prose reader's pronouns: which character a pronoun stands for, and how it is learnt.

A character's pronoun is learnt from a sentence that names it alone and uses "he" or
"she" (or that names no one, right after one that named it alone), and from a reflexive
or "own" its verb's phrase binds ("Bo excused himself"). A pronoun stands for the
characters named before it in the sentence, then the recent subjects, then the others
named latest; of those, the one known by it; where two fit, the previous sentence's
subject (centering), else the reading is unsure. A leading phrase ("Aware of Bo's plan,
she ...") and a that-clause ("Sure that Bo hated it, she ...") name no subject for it.
"""

from __future__ import annotations

import bisect

from fabula.agents.reading.prose_parts.base import _Base
from fabula.agents.reading.prose_parts.words import (
    _DEFINITE,
    _DETERMINERS,
    _OPENERS,
    _POSSESSIVES,
    _REFLEXIVES,
    _SUBJECTS,
    _gender,
    _wordlike,
)
from fabula.agents.reading.verbs import PARTICLES, verb_classes


class _Pronouns(_Base):
    """Whom a pronoun stands for, and each character's pronoun, learnt."""

    # -- pronouns ---------------------------------------------------------------------
    def _learn_pronouns(self) -> None:
        """A character's pronoun from a sentence that names it alone and uses one of "he"
        or "she", or from a sentence that names no one right after one that named it alone
        ("Elliot detested spinach. The mere thought made him cringe.")."""
        named = {i for m in self.mentions if m.kind == "character" for i in m.ids}
        adjacent = not named and self.first_clause and len(self.state.named_before) == 1
        after = 0  # a pronoun points back: only those after the name count
        if adjacent:
            named = set(self.state.named_before)
            if self._pronoun_of(next(iter(named))) is not None:
                return  # known already from a sentence that names it
            if self.state.centre is not None and set(self.state.centre) != named:
                return  # named there, but not its subject ("Knowing Bo was out, she ...")
        elif not named and len(self.state.named_now) == 1:
            named = set(self.state.named_now)  # a later clause of a sentence naming one
        elif len(named) == 1:
            after = min(m.first for m in self.mentions if m.kind == "character")
            lead = self._lead_end()
            # "In her mind, Bo ..., and so she ...": a pronoun used before the name stands
            # for another in the sentence's later clauses too
            self.state.barred |= {_gender(t.low) for t in self.toks[:after]} - {None}
            if lead > 0 and after < lead and self.toks[0].low not in _OPENERS:
                return  # "Knowing Bo hated it, she ...": the pronoun is another's
            if self._after_that(after):
                return  # "Sure that Bo hated it, she ...": a that-clause's subject
        if len(named) != 1:
            return
        [who] = named
        seen = {_gender(t.low) for t in self.toks[after:]} & {"he", "she"}
        # "She waved when Bo joined her": a pronoun the sentence used before the name
        # stands for someone else, and so does the same pronoun after it
        seen -= {_gender(t.low) for t in self.toks[:after]}
        seen -= self.state.barred
        found = [p for p in seen if p is not None]
        if adjacent and any(self._pronoun_of(c) in found for c in self.lex.characters.values()):
            return  # by adjacency only a pronoun no character is known by yet
        if len(found) == 1:
            counts = self.state.pronoun.setdefault(who, {})
            counts[found[0]] = counts.get(found[0], 0) + 1

    def _named_subject(self, at: int) -> bool:
        """Whether the verb at ``at`` has its subject by name (not by a pronoun)."""
        for j in range(at - 1, -1, -1):
            m = self.by_token.get(j)
            if m is not None and m.kind == "character" and not m.possessive:
                return True
            if self.toks[j].low in _SUBJECTS or self.toks[j].low in (";", "who"):
                return False
        return False

    def _learn_bound(self, who: str, lo: int, hi: int) -> None:
        """A reflexive or ``own`` in a verb's phrase is its subject's ("Ann decided to
        take matters into her own hands", "Bo excused himself"): the subject's pronoun."""
        for k in range(lo, hi):
            low = self.toks[k].low
            own = k + 1 < hi and self.toks[k + 1].low == "own" and low in _POSSESSIVES
            if low in _REFLEXIVES or own:
                gender = _gender(low)
                if gender in ("he", "she"):
                    counts = self.state.pronoun.setdefault(who, {})
                    counts[gender] = counts.get(gender, 0) + 1
                return
            if k in self.by_token and self.by_token[k].kind == "character":
                return  # another character named first: it may be the binder

    def _pronoun_of(self, who: str) -> str | None:
        counts = self.state.pronoun.get(who)
        if not counts:
            return None
        return max(counts, key=lambda p: counts[p])  # a tie: the one learnt first

    def _lead_end(self) -> int:
        """Where the main clause starts after a leading adjunct ending at a comma ("As Bo
        watched, ...", "Aware of Bo's plan, ...", "Unbeknownst to Bo, ..."): the token
        after the comma; 0 where the sentence opens with its subject."""
        toks = self.toks
        if not toks or not self.first_clause:
            return 0
        head = toks[0].low
        if 0 in self.by_token or head in _SUBJECTS or head in _DEFINITE | {"a", "an"}:
            return 0
        for k, tok in enumerate(toks[:24]):
            if tok.low == ",":
                return k + 1
            if tok.low in (";", ":", "—"):
                return 0
        return 0

    def _resolve(self, pronoun: str, at: int) -> tuple[str | None, str | None]:
        """The character ``pronoun`` at token ``at`` stands for, and why it is unsure."""
        # the characters named earlier in this sentence, nearest first, then the story's;
        # a pronoun opening the main clause looks past a leading phrase with no subject of
        # its own ("Aware of Bo's plan, she ...": not Bo; but "When Bo saw it, he ..." and
        # "In Bo's mind, he ..." are Bo)
        lead = self._lead_end() if self.toks[0].low not in _OPENERS else 0
        # nor, opening the main clause, to a leading phrase's that-clause's subject ("With
        # the hope that Bo would like it, she ...": not Bo)
        main = self._lead_end() if self.first_clause else 0
        if at == lead:
            before: list[str] = []
        elif at == main:
            before = [
                i
                for m in self.mentions
                if m.kind == "character" and m.last < at and not self._after_that(m.first)
                for i in m.ids
            ]
        else:
            before = self._named_before(at)
        recent = list(reversed(before))
        for subject in reversed(self.state.subjects[-3:]):
            recent += [s for s in subject if s not in recent]
        recent += [s for s in reversed(self.state.mentioned) if s not in recent]
        recent = list(dict.fromkeys(recent))
        if not recent:
            return None, f"no one for {pronoun!r} to stand for"
        fits = [c for c in recent if self._pronoun_of(c) in (pronoun, None)]
        known = [c for c in fits if self._pronoun_of(c) == pronoun]
        centre = self.state.centre
        if (
            len(known) == 1
            and 0 < lead == at
            and not before
            and centre is not None
            and len(centre) == 1
            and centre[0] in fits
            and centre[0] != known[0]
        ):
            # "Determined to end it, he ...": a leading phrase continues the previous
            # sentence's subject, whose pronoun is not known yet, against another known
            # by it: centering decides, unsure
            return centre[0], f"{pronoun!r} may stand for {centre[0]} or {known[0]}"
        if len(known) == 1:
            return known[0], None
        if not fits:
            return recent[0], f"{pronoun!r}: no character known by it"
        # centering: a pronoun before any name in its sentence continues the previous
        # sentence's subject when nothing else tells the characters apart
        if (
            len(fits) > 1
            and not before
            and centre is not None
            and len(centre) == 1
            and centre[0] in (known or fits)
        ):
            return centre[0], None
        if len(fits) > 1:
            return fits[0], f"{pronoun!r} may stand for {' or '.join(fits[:2])}"
        return fits[0], None

    def _named_before(self, at: int) -> list[str]:
        """The characters named before token ``at``, each once, ordered by where it was
        last named, the latest last: a bisection per character, not a scan of the
        sentence's mentions (a pronoun per clause made a long sentence quadratic)."""
        latest = []
        for who, places in self.named_at.items():
            k = bisect.bisect_left(places, (at, -1))
            if k:
                latest.append((places[k - 1], who))
        return [who for _, who in sorted(latest)]

    def _light_noun(self, i: int, hi: int) -> bool:
        """Whether token ``i`` is a bare noun a light verb takes ("care", "part",
        "action"): a word, no determiner, pronoun, particle or entity's."""
        if i >= hi or i in self.by_token:
            return False
        low = self.toks[i].low
        return (
            _wordlike(low)
            and low not in _DETERMINERS
            and low not in PARTICLES
            and _gender(low) is None
            and low not in ("it", "them", "one", "ones")
            and verb_classes(low) is None
        )

    def _after_that(self, i: int) -> bool:
        """Whether token ``i`` opens a that-clause ("that Bo would like it")."""
        return i > 0 and self.toks[i - 1].low in ("that", "whether")
