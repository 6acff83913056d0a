"""Phase 4, a part: how a clause hangs on the one before it — a relative clause after a
comma ("…, which was empty": the phrase before is its subject), a fact an act made plain
(", revealing that there was no pearl inside"), and a noun phrase set beside the subject
("Ann, a talented chef, …", "Cal, her colleague, …"), which names no one new.
:class:`~.frames.ClauseReader` reads its clauses with these."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from fabula.agents.reading.phases import lexicon as lx
from fabula.agents.reading.phases.mentions import Mention
from fabula.agents.reading.phases.perceiving import Perceiving
from fabula.agents.reading.phases.readings import Frame
from fabula.agents.reading.phases.tokens import Sentence, Token


class Relating(Perceiving):
    """The side of a clause reader that ties a clause to the one before."""

    _subject: Mention | None  # the subject a participle clause continues
    _object: Mention | None  # the object a participle may describe
    _last: Frame | None  # the clause before, in this sentence

    if TYPE_CHECKING:

        def _clause(
            self, index: int, sentence: Sentence, tokens: tuple[Token, ...]
        ) -> Frame | None: ...

    def _antecedent(self, relative: str, verb: str) -> Mention | None:
        """What a relative clause after a comma is about: "which" the thing the clause
        before ended on (its object), "who" the character named last; a verb of causing
        after "which" ("which caused it to crack") continues the clause before's doer."""
        found = lx.verb(verb)
        if relative == "which" and found is not None and found.lemma in lx.RESULTATIVE:
            return self._subject
        if relative == "which":
            subject = self._subject
            return self._object or (subject if subject and not subject.character else None)
        return self.r.last_character or self._subject

    def _revealed(self, index: int, sentence: Sentence, tokens: Sequence[Token]) -> bool:
        """ ", revealing that there is no pearl inside": the "that" clause of a verb of
        making plain (:data:`.lexicon.REVEALING`) is a fact of the act before, read as a
        clause of its own and told with that act, so that whoever saw the act sees it."""
        found = lx.verb(tokens[0].lower) if len(tokens) > 2 else None
        if found is None or found.lemma not in lx.REVEALING or tokens[1].lower != "that":
            return False
        last = self._last
        if last is None or last.kind != "event":
            return False
        kept = self._subject, self._object
        inner = self._clause(index, sentence, tuple(tokens[2:]))
        self._subject, self._object, self._last = (*kept, last)
        if inner is not None:
            last.states.extend(inner.states)
            last.roots |= inner.roots
        return True

    def _apposed(self, np: Mention, after: Sequence[Token]) -> bool:
        """Whether a clause is only a noun phrase set beside the subject before it, in
        its sentence ("Ann, *a talented chef in a small village*, is cooking"; "Cal,
        *her colleague*, hated peas too"): an indefinite phrase, or a possessive one whose
        noun names a person (WordNet's, :func:`.lexicon.doer`), with no verb, which names
        no one new."""
        first = np.tokens[0].lower
        kin = first in lx.POSSESSIVES and lx.doer(np.tokens[-1].lower) == "character"
        if self._subject is None or np.entity is not None or not (first in ("a", "an") or kin):
            return False
        for k, t in enumerate(after):
            if t.lower in lx.COPULAS or t.lower in lx.AUXILIARIES:
                return False
            if lx.verb(t.lower) is not None and (
                k == 0 or after[k - 1].lower not in lx.DETERMINERS
            ):
                return False  # a verb ("a chef who cooks"), not a noun after its article
        return True
