"""The prose reader's settling of a sentence: its marks applied, its state kept.

After a sentence's verbs are read, a take that only retells the latest event is dropped,
the states of not perceiving ("Bo was asleep") begin or end, the company a group subject
keeps sees an event whose doer the reader cannot place, and the sentence's perception
marks apply to its events (or, with none, to the latest sentence's, or wait for the
next's). Then the reader keeps, for the next sentence, its subjects, the centre a pronoun
continues, the characters named and the container and thing named last.
"""

from __future__ import annotations

from collections.abc import Sequence

from fabula.agents.reading.prose_parts.base import _Base
from fabula.agents.reading.prose_parts.marks import _distinct, _marked
from fabula.agents.reading.prose_parts.state import _mention
from fabula.agents.reading.prose_parts.words import _EVENT_KINDS, _PREPOSITIONS
from fabula.memory.actions import StoryAction


class _Settling(_Base):
    """A sentence's marks applied, and the reader's state kept for the next."""

    def _keep_blind(
        self, subjects: Sequence[tuple[str, ...]], held: Sequence[tuple[str, tuple[str, ...]]]
    ) -> tuple[str, ...]:
        """Bring the reader's ``blind`` up to date with a clause: its states of not
        perceiving begin, and end for whoever acts in it or whose state it ends; the
        characters whose state it tells, returned."""
        state = self.state
        states = tuple(dict.fromkeys(c for kind, who in held if kind == "state" for c in who))
        ended = [c for kind, who in held if kind == "ends" for c in who]
        for who in [*(c for s in subjects for c in s), *ended]:
            if who not in states:
                state.blind.pop(who, None)
        for who in states:
            state.blind[who] = None
        return states

    def _retold(self) -> None:
        """An object event with no destination that repeats the latest one's doer and
        object ("Ben watched as Ann moved the key") tells that event again: it is dropped,
        and what the sentence says of perception applies to the event it repeats."""
        state = self.state
        if state.last_event is None:
            return
        latest = state.out[state.last_event]
        for i in list(self.events):
            action = self.actions[i]
            same = (action.actors, action.obj) == (latest.actors, latest.obj)
            # a move with no destination right after one that had it in a container is
            # that move told again, whoever the reader took its doer to be ("Ann put the
            # key in the box. Bo wondered why she had moved it.")
            retold = (
                id(action) in self.undirected
                and latest.kind in ("move", "put")
                and latest.obj == action.obj
            )
            if action.kind == "take" and action.unsure is not None and (same or retold):
                self.actions[i] = StoryAction(kind="narration", start=self.start, end=self.end)
                self.events.remove(i)
        self.actions = [a for a in self.actions if a.kind != "narration"]
        kept = [a for a in self.actions]
        self.events = [kept.index(a) for a in kept if a.kind in _EVENT_KINDS]

    # long (over 60 lines): the marks apply in order, each reading what the ones before
    # set in the reader's state; one pass keeps that order visible
    def _settle(
        self,
        marks: list[tuple[str, tuple[str, ...]]],
        subjects: list[tuple[str, ...]],
        held: Sequence[tuple[str, tuple[str, ...]]] = (),
    ) -> None:
        """Apply the sentence's perception marks and keep the reader's state."""
        state = self.state
        everyone = sorted(set(self.lex.characters.values()))
        self._retold()
        states = self._keep_blind(subjects, held)
        for subject in subjects:
            if len(subject) > 1:
                state.company |= set(subject)
        # an event whose doer the reader cannot place is seen by the company it keeps
        for i in self.events:
            action = self.actions[i]
            if state.where.get(action.actor):
                continue
            others = tuple(sorted(state.company - {action.actor}))
            if others and action.actor in state.company:
                self.actions[i] = action.model_copy(update={"seen_by": others})
        marks = _distinct(marks)
        unseen_now = {w for kind, who in marks if kind == "unseen" for w in who}
        seen_now = {w for kind, who in marks if kind == "seen" for w in who}
        blind_now = (set(state.blind) | unseen_now) - seen_now - {c for s in subjects for c in s}
        if blind_now:
            state.unseen_at.append((self.start, self.end, tuple(sorted(blind_now))))
        if self.events:
            # who is not perceiving now first, so that what the clause says wins
            blind = (("unseen", tuple(state.blind)),) if state.blind else ()
            for mark in _distinct([*blind, *state.pending, *marks]):
                for i in self.events:
                    self.actions[i] = _marked(self.actions[i], mark, everyone)
            state.pending = []
            state.last_event = len(state.out) + self.events[-1]
            done = [len(state.out) + i for i in self.events]
            if state.events_sentence == state.sentence:
                state.last_events.extend(done)
            else:
                state.last_events, state.events_sentence = done, state.sentence
        else:
            if states and state.events_sentence == state.sentence:
                # a state told after its sentence's act ("Ann took it while Bo slept")
                for index in state.last_events:
                    if index < len(state.out):
                        state.out[index] = _marked(state.out[index], ("unseen", states), everyone)
            # a perception with no event before it is about the next sentence's ("Ben
            # watched. Ann moved the key."), not one told later still
            state.pending = []
            if marks and state.last_event is not None:
                # what a later sentence says of perception is said of the latest
                # sentence's act, each of the verbs that told it
                latest = [i for i in state.last_events if i < len(state.out)]
                for index in latest if state.last_event in latest else [state.last_event]:
                    for mark in marks:
                        state.out[index] = _marked(state.out[index], mark, everyone)
            elif marks:
                # one who watches and then leaves ("saw it, and left") sees nothing later
                gone = {c for a in self.actions if a.kind == "exit" for c in a.actors}
                state.pending = [m for m in marks if m[0] != "seen" or not set(m[1]) & gone]
        first = next(
            (
                m.ids
                for m in self.mentions
                if m.kind == "character"
                and not m.possessive
                and (m.first == 0 or self.toks[m.first - 1].low not in _PREPOSITIONS)
            ),
            None,
        )
        lead = self._lead_end()
        # the main clause's subject, past a leading adjunct ("Realizing that Bo saw it,
        # Ann's face fell": Ann), is the centre the next sentence continues
        main = next(
            (
                m.ids
                for m in self.mentions
                if m.kind == "character"
                and m.first >= lead
                and (not m.possessive or m.first == lead)
                and (m.first == 0 or self.toks[m.first - 1].low not in _PREPOSITIONS)
            ),
            first,
        )
        if lead < len(self.toks) and self.toks[lead].low in ("he", "she"):
            # "Knowing that Bo liked it, he ...": the pronoun is the main clause's subject
            who, _ = self._resolve(self.toks[lead].low, lead)
            main = (who,) if who else main
        if first is not None and not subjects:
            state.subjects.append(first)
        if subjects:
            state.subjects.extend(subjects)
        state.named_now = tuple(
            dict.fromkeys(
                [
                    *state.named_now,
                    *(i for m in self.mentions if m.kind == "character" for i in m.ids),
                ]
            )
        )
        if subjects or first is not None:
            state.clause_subject = subjects[0] if subjects else (first or ())
        elif self.first_clause:
            state.clause_subject = ()
        if subjects or main is not None:
            # the main clause's subject: the first character named, not after a preposition
            state.centre = main if main is not None else subjects[0]
        for m in self.mentions:
            if m.kind == "character":
                _mention(state, m.ids)
            elif m.kind == "object" and self._is_container(m.ids[0]):
                state.last_box = m.ids[0]
            elif m.kind == "object" and not self.actions:
                state.last_object = m.ids[0]  # "it" next is the thing last named
