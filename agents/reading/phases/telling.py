"""Phase 3, a part: communication — what a character tells another ("Ann told Bo that the
jar was empty", "whispered to Bo that the vase was broken"), as a ``tell`` frame.

A character, a verb whose first WordNet class is ``communication``, its listener (a
character, after "to" or not) and what it says (a clause, after "that" or not): the
clause's states (:meth:`~.perceiving.Perceiving._embedded`) are told to the listener.
With no listener, "said that …" or "announced that …" is told to whoever is present. A
question ("asked Bo whether the jar was empty") tells nothing.
Said privately ("whispered", "confided", or "privately", "secretly", "quietly" in the
sentence), only the listener hears it; else everyone present does (the tracker's rule).
What is told is the speaker's word, not the story's: the world holds none of it, and a
listener who does not trust the speaker does not believe it (:mod:`fabula.memory.rules`).
"""

from __future__ import annotations

from collections.abc import Sequence

from fabula.agents.reading.phases.mentions import Mention
from fabula.agents.reading.phases.readings import Frame
from fabula.agents.reading.phases.relating import Relating
from fabula.agents.reading.phases.tokens import Token

# verbs of telling that are private by themselves, and words that make a telling private
_PRIVATE_VERBS = frozenset(["whisper", "whispered", "whispers", "confide", "confided"])
_PRIVATELY = frozenset(["privately", "secretly", "quietly"])
# words that open a question, not a clause told ("asked Bo whether the jar was empty")
_ASKED = frozenset(["whether", "if", "what", "how", "why", "when", "where", "who", "which"])


class Telling(Relating):
    """The side of a clause reader that reads what one character tells another."""

    _words: frozenset[str]  # the sentence's words, lower case

    def _telling(self, frame: Frame, speaker: Mention, after: Sequence[Token]) -> bool:
        """Read ``after`` (a verb of communication first) as what ``speaker`` told its
        listener into ``frame`` (True); False where no listener or no clause follows. A
        telling denied or under a modal ("did not tell", "would tell") tells nothing."""
        k = 1
        if k < len(after) and after[k].lower == "to":
            k += 1
        heard = k < len(after) and after[k].lower != "that"  # "said that …": no listener
        listener = self.r.mention(after[k:]) if heard else None
        if listener is not None and (not listener.character or listener.entity is None):
            return False
        if listener is not None:
            if listener.entity == speaker.entity:
                return False
            k += len(listener.tokens)
        elif k != 1 or k >= len(after) or after[k].lower != "that":
            return False  # with no listener, only "said that …", "announced that …"
        if k < len(after) and after[k].lower == "that":
            k += 1
        said = after[k:]
        if not said or said[0].lower in _ASKED or not self._is_clause(said):
            return False
        frame.kind = "tell"
        private = after[0].lower in _PRIVATE_VERBS or bool(self._words & _PRIVATELY)
        if frame.negated or frame.modal or (private and listener is None):
            # "did not tell Bo", "would tell Bo": nothing is told; "whispered that …" to
            # no one named: whoever heard it, the text does not say
            return True
        told = Frame("tell", frame.sentence, frame.start, frame.end)
        self._embedded(told, said)
        frame.states = told.states
        frame.listeners = (listener,) if listener is not None else ()
        frame.private = private
        return True
