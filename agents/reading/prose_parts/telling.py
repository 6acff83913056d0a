"""The prose reader's telling: a sentence of speech, which states nothing of the world.

What a character tells another ("Ann whispered to Ben that the scarf is in the box") is
read by the phases (:mod:`fabula.agents.reading.phases.telling`), as a feeling about a
thing is (:mod:`fabula.agents.reading.phases.feeling`); the prose reader only knows the
sentence for speech, so that it reads no placement from it.
"""

from __future__ import annotations

from fabula.agents.reading.prose_parts.base import _Base
from fabula.agents.reading.prose_parts.state import _Verb


class _Telling(_Base):
    """A sentence of telling, seen for what it is."""

    def _tell(self, verb: _Verb, who: tuple[str, ...], why: str | None, lo: int, hi: int) -> bool:
        """A verb of telling with one subject and a listener, or "that" after it: the
        sentence is speech (:attr:`spoken`), so that what it says is never read as the
        narrator's statement of where a thing is ("Ann whispered to Ben that the scarf is
        in the box" tells Cal, in the garden, nothing). What is told, and to whom, is the
        phases' reading."""
        if verb.negated or len(who) != 1:
            return False
        listener = self._first(lo, min(hi, lo + 3), ("character",))
        said = lo < len(self.toks) and self.toks[lo].low == "that"
        if (listener is None or listener.ids[0] == who[0]) and not said:
            return False  # "a plum lying inside": no telling
        self.spoken = True
        return True
