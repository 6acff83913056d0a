"""The prose reader's perception: what a sentence says was seen, not seen, or kept from whom.

A perception verb whose complement is an event ("watched as she moved it", "witnessed his
action", or nothing: "Ben watched, puzzled") marks the event ``seen`` by its subject; one
whose complement is a thing ("spotted the plum") makes its subject a perceiver of the
sentence's placements, and sees the thing where the reader has it (:mod:`.statements`).
Its absence ("did not notice", "was absent", "had already left", "unaware", "behind his
back", "without her noticing", and the cues of :mod:`fabula.agents.reading.unseen`) marks
it ``unseen``; one unaware that it had not gone unnoticed did not know of its watchers
(``unaware``), and one from whom another's not seeing was kept believes they saw
(``believed``). The marks apply in :mod:`.settle`.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Callable, Sequence

from fabula.agents.reading import unseen
from fabula.agents.reading.prose_parts.base import _Base
from fabula.agents.reading.prose_parts.marks import _believed
from fabula.agents.reading.prose_parts.state import _Verb
from fabula.agents.reading.prose_parts.words import (
    _ABSENT,
    _ACTION_NOUNS,
    _BEHIND_BACK,
    _EVENT_KINDS,
    _EVENTISH,
    _LITTLE_DID,
    _NOT_SEEN,
    _OBJECT_PRONOUNS,
    _POSSESSIVES,
    _SUBJECTS,
    _UNAWARE,
    _UNBEKNOWNST,
    _WATCHED,
    _WITHOUT,
    _gender,
)
from fabula.memory.actions import StoryAction


class _Perception(_Base):
    """Seeing and not seeing: the perception marks of a sentence."""

    def _unseen_cues(
        self, verbs: Sequence[_Verb], marks: list[tuple[str, tuple[str, ...]]]
    ) -> list[tuple[str, tuple[str, ...]]]:
        """The cues of not perceiving (:mod:`.unseen`): an act kept from someone ("unseen
        by Bob", "Nobody saw") is an ``unseen`` mark added to ``marks``; a state ("Bob was
        asleep") or its end ("Bob woke") is returned, ``("state" | "ends", who)``, for
        :meth:`_settle` to keep across the sentence and after it."""
        words = [t.low for t in self.toks]
        perceiving = {self.toks[v.at].low for v in verbs if "perceive" in v.classes}
        # "nobody saw": everyone but the clause's doers (every other, if it tells no act)
        doers = {c for a in self.actions if a.kind in _EVENT_KINDS | {"put"} for c in a.actors}
        everyone = tuple(c for c in sorted(set(self.lex.characters.values())) if c not in doers)
        nearest = self._nearest_characters()
        held: list[tuple[str, tuple[str, ...]]] = []
        for cue in unseen.find_cues(words, perceiving.__contains__):
            if cue.role == "everyone":
                who = everyone
            elif cue.role == "after":
                who = self._named_from(cue.at, cue.end + 3)
            else:
                who = nearest(self.toks[cue.at].start)
            if not who:
                continue
            if cue.kind == "event":
                marks.append(("unseen", who))
            else:
                held.append((cue.kind, who))
        # a verb of a state is no perceiving ("Bo looked away": no look at what follows)
        away = {c for kind, who in held if kind == "state" for c in who}
        marks[:] = [m for m in marks if m[0] != "seen" or not set(m[1]) & away]
        return held

    def _named_from(self, lo: int, hi: int) -> tuple[str, ...]:
        """The first character named or meant ("him", "her") at tokens ``lo..hi - 1``."""
        for k in range(lo, min(hi, len(self.toks))):
            m = self.by_token.get(k)
            if m is not None and m.kind == "character":
                return m.ids
            if self.toks[k].low in ("him", "her", "his"):
                return self._who_word(self.toks[k].text, self.toks[k].start)
        return ()

    def _perceive(
        self,
        verb: _Verb,
        who: tuple[str, ...],
        lo: int,
        hi: int,
        marks: list[tuple[str, tuple[str, ...]]],
        perceivers: list[str],
    ) -> bool:
        following = [t.low for t in self.toks[lo : min(hi, lo + 3)] if t.low not in (",",)]
        before = verb.at - 2 if verb.at > 0 and self.toks[verb.at - 1].low in _SUBJECTS else -1
        if before >= 0 and self.toks[before].low in ("what", "whatever", "which"):
            return True  # "what he saw": a thing seen, named before; no event
        if verb.lemma == "look" and not (following and following[0] in ("at", "on", "as")):
            return False
        if verb.irrealis and self._modal(verb.at) != "could":
            # what one will see, or would if it came back ("when he finds it"), is no
            # perception; what one could see is ("she could see him hide it")
            return True
        if verb.negated:
            marks.append(("unseen", who))
            return True
        thing = self._first(lo, hi, ("object",))
        nxt = following[0] if following else None
        action_noun = any(t.low in _ACTION_NOUNS for t in self.toks[lo:hi])
        character = self._first(lo, hi, ("character",))
        eventish = (
            nxt is None
            or lo >= hi
            or nxt in _EVENTISH
            or action_noun
            or (character is not None and character.first <= lo + 1)
            or self.toks[lo].low == ","
        )
        if thing is not None and not action_noun and nxt not in ("as", "while", "how"):
            perceivers.extend(who)
            self.looked.append((who, thing.ids[0]))
            return True
        if eventish:
            marks.append(("seen", who))
            return True
        return False

    def _negative_perception(self, marks: list[tuple[str, tuple[str, ...]]]) -> None:
        """The marks of what the sentence says was not seen, and of what was kept from whom.

        What is kept from a character may be another's not seeing ("Unbeknownst to Ann, Bo
        was nowhere in sight", "Little did she know, Bo never saw it", "Ann was unaware
        that Bo had not seen it"): Ann believes Bo saw her act, and he did not — a
        ``believed`` mark, ``(Ann, Bo)``, which :func:`_marked` applies to Ann's acts.
        """
        text = self.text
        nearest = self._nearest_characters()
        for m in _ABSENT.finditer(text):
            who = nearest(m.start())
            if who:
                marks.append(("unseen", who))
        # who is unaware that another did not see ("Ann was unaware that Bo had not seen
        # it"), with the mark to fall back on if the sentence names no one who did not
        unaware: list[tuple[tuple[str, ...], str]] = []
        for m in _UNAWARE.finditer(text):
            if m.group().lower().startswith("unbeknown"):
                continue
            who = nearest(m.start())
            if not who:
                continue
            rest = text[m.end() :]
            that = re.search(r"\bthat\b", rest[:12]) is not None
            fallback = "unaware" if that and _WATCHED.search(rest[:80]) else "unseen"
            if that and _NOT_SEEN.search(rest[:80]):
                unaware.append((who, fallback))
            else:
                marks.append((fallback, who))
        blind = list(dict.fromkeys(marks))  # what the sentence says of others' not seeing
        believed: list[tuple[str, tuple[str, ...]]] = []
        for who, fallback in unaware:
            found = _believed(blind, who)
            believed += found
            if not found:
                marks.append((fallback, who))
        for pattern in (_UNBEKNOWNST, _LITTLE_DID, _BEHIND_BACK, _WITHOUT):
            for m in pattern.finditer(text):
                who = self._who_word(m.group(1), m.start(1))
                if not who:
                    continue
                found = _believed(blind, who) if pattern in (_UNBEKNOWNST, _LITTLE_DID) else []
                if pattern in (_UNBEKNOWNST, _LITTLE_DID) and not found:
                    doer = self._kept_from_doer(m.group(1), who, blind)
                    found = _believed(blind, doer) if doer else []
                if found:
                    believed += found
                    continue
                if pattern is _LITTLE_DID and not _WATCHED.search(text[m.end() : m.end() + 80]):
                    # what one did not know is no perception unless it is another's seeing
                    # ("Little did she know that he meant well")
                    continue
                # kept from its doer, an act is unseen by others; kept from the doer
                # of the act seen ("Unbeknownst to Ann, Bo watched her"), the watching
                marks.append(("unseen", who))
                marks.append(("unaware", who))
        marks.extend(dict.fromkeys(believed))

    def _kept_from_doer(
        self, word: str, who: tuple[str, ...], blind: Sequence[tuple[str, tuple[str, ...]]]
    ) -> tuple[str, ...]:
        """The doer of the act a sentence is about, for a pronoun the reader took for the
        one the sentence says did not see: "Unbeknownst to him, Bo was absent" keeps Bo's
        absence from another, the act's doer, if the pronoun fits it (else none)."""
        pronoun = _gender(word.lower())
        unseen = {c for kind, cs in blind if kind == "unseen" for c in cs}
        if pronoun not in ("he", "she") or not set(who) <= unseen:
            return ()
        if self.events:
            latest: StoryAction | None = self.actions[self.events[-1]]
        elif self.state.last_event is not None:
            latest = self.state.out[self.state.last_event]
        else:
            latest = None
        if latest is None or len(latest.actors) != 1 or latest.actors[0] in who:
            return ()
        doer = latest.actors[0]
        return (doer,) if self._pronoun_of(doer) in (pronoun, None) else ()

    def _who_word(self, word: str, offset: int) -> tuple[str, ...]:
        low = word.lower().replace("’", "'")
        base = low[:-2] if low.endswith("'s") else low
        if base in self.lex.characters:
            return (self.lex.characters[base],)
        pronoun = _POSSESSIVES.get(base) or _OBJECT_PRONOUNS.get(base) or _SUBJECTS.get(base)
        if pronoun in ("he", "she"):
            at = bisect.bisect_left([t.start for t in self.toks], offset)
            at = at if at < len(self.toks) else 0
            who, _ = self._resolve(pronoun, at)
            return (who,) if who else ()
        return ()

    def _nearest_characters(self) -> Callable[[int], tuple[str, ...]]:
        """For an offset in the sentence, the character named or meant ("he", "she") last
        before it: one pass over the tokens, each pronoun resolved once, then a bisection
        per offset (a rescan per offset made a long sentence cubic)."""
        best: tuple[str, ...] = ()
        after: list[tuple[str, ...]] = []  # the nearest character up to and with token i
        for i, tok in enumerate(self.toks):
            m = self.by_token.get(i)
            if m is not None and m.kind == "character" and not m.possessive:
                best = m.ids
            elif tok.low in ("he", "she"):
                who, _ = self._resolve(tok.low, i)
                best = (who,) if who else best
            after.append(best)
        starts = [t.start for t in self.toks]

        def nearest(offset: int) -> tuple[str, ...]:
            before = bisect.bisect_left(starts, offset)  # the tokens that start before it
            return after[before - 1] if before else ()

        return nearest
