"""Phase 4, a part: what a perception names — a thing with its adjectives ("sees a full
jar"), a that-clause's states ("notices that the jar is empty", "believes that Juliet is
dead"), or an act told as it is done ("watched as Bo emptied it", "saw her colleague Ahmed
empty the basket"), which becomes an event frame of its own that the perception names.
:class:`~.frames.ClauseReader` reads a perception's complement with these."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from fabula.agents.reading import unseen
from fabula.agents.reading.phases import lexicon as lx
from fabula.agents.reading.phases.appearance import contained
from fabula.agents.reading.phases.clauses import bare_verb_at, past_modifiers
from fabula.agents.reading.phases.doers import doer_of
from fabula.agents.reading.phases.mentions import Mention, phrase
from fabula.agents.reading.phases.predicates import Predicates, negation
from fabula.agents.reading.phases.readings import Frame, StateReading
from fabula.agents.reading.phases.tokens import Sentence, Token
from fabula.agents.reading.phases.values import attributive, content_roots, value_of
from fabula.agents.reading.verbs import verb_classes


def no_verb(word: str) -> bool:
    """No word is a verb of perceiving (:func:`.unseen.find_cues` keeps every cue)."""
    return False


class Perceiving(Predicates):
    """The perception side of a clause reader."""

    _told: list[Frame]  # the acts a perception of the clause told
    frames: list[Frame]  # the turn's frames, its sentences before this one
    _focus: Mention | None  # the sentence before's character

    if TYPE_CHECKING:

        def _verb_phrase(
            self, frame: Frame, subject: Mention | None, rest: Sequence[Token]
        ) -> None: ...

    def _seen_by(self, frame: Frame, after: Sequence[Token]) -> Sequence[Token]:
        """How a thing seems is how it seems to someone: the character "to" names at the
        predicate's end ("appears pristine to Ann"), else the sentence before's character
        (:meth:`sentence`); the frame is that
        character's perception. ``after`` without the "to" phrase."""
        holder = None
        place = len(after) > 1 and after[0].lower in lx.PLACE_PREPOSITIONS
        if place and after[1].lower in lx.DETERMINERS:
            return after  # "a storm appears on the horizon": it comes, it seems nothing
        for j in range(1, len(after) - 1):
            if after[j].lower == "to" and after[j + 1].capital:
                found = self.r.mention(after[j + 1 :])
                if (
                    found is not None
                    and found.character
                    and len(found.tokens) == len(after) - j - 1
                ):
                    holder, after = found, after[:j]
                    break
        holder = holder or self._focus
        if holder is not None:
            frame.kind, frame.holder, frame.inferred = "perceive", holder, True
        return after

    def _seen_as(self, frame: Frame, tokens: Sequence[Token]) -> None:
        """A thing perceived with its adjectives ("sees a full jar of honey"): the
        adjectives are its condition as perceived."""
        np = self.r._declared(tokens) or phrase(tokens)
        if not np:
            return
        adjectives, rest = attributive(np)
        if not adjectives or not rest:
            return
        thing = self.r.mention(rest)
        if thing is None or thing.character:
            return
        self.r.note(thing, subject=False)
        frame.states.append(StateReading(thing, "condition", value_of(adjectives)))

    def _perceived(
        self, frame: Frame, rest: Sequence[Token], clause: bool, witnessed: bool
    ) -> None:
        """A character's perception (``frame`` becomes a ``perceive``) of what ``rest``
        names: an act seen as it is done ("watched as Bo emptied it", "saw Bo swapping
        it"; not after "that": ``witnessed`` false), a that-clause's states, the thing
        "it" names ("did not see it": that thing's event, by its roots), or a thing with
        its adjectives ("sees a full jar")."""
        frame.kind = "perceive"
        if witnessed and self._witnessed(frame, rest):
            return
        if clause:
            self._embedded(frame, rest)
        elif rest and rest[0].lower in lx.PRONOUNS:
            seen = self.r.mention(rest[:1])
            if seen is not None and not seen.character:
                frame.roots = frozenset(lx.root(w) for w in seen.name.split())
        else:
            self._seen_as(frame, rest)

    def _had(self, frame: Frame, owner: Mention, tokens: Sequence[Token]) -> bool:
        """A thing one has, said with its adjectives ("has a fresh batch of flour"): its
        condition, known to the one who has it, as if seen (:meth:`_seen_as`). False
        where the phrase says no condition ("has a plan", "had a cat")."""
        frame.kind, frame.holder = "perceive", owner
        self._seen_as(frame, tokens)
        if not frame.states:
            frame.kind = "event"
        return bool(frame.states)

    def _is_clause(self, tokens: Sequence[Token]) -> bool:
        """Whether ``tokens`` are a clause: a noun phrase (not "Gia's"), then a finite verb."""
        np = self.r._declared(tokens) or phrase(tokens)
        after = past_modifiers(tokens[len(np) :]) if np else ()
        if not after or np[-1].lower.endswith("'s"):
            return False
        w = after[0].lower
        if w in lx.COPULAS or w in lx.AUXILIARIES or negation(w):
            return True
        return lx.verb(w) is not None and not w.endswith("ing")

    def _witnessed(self, frame: Frame, tokens: Sequence[Token]) -> bool:
        """An act perceived as it is done ("watched as Ann emptied the basket", "did not
        notice when a cat tipped it over", "saw Bo lock it"): told here, it is an event
        frame of its own after the perception, which names it (:mod:`.events`); never the
        latest event read, nor one that only shares a thing with it. False where ``tokens``
        tell no act."""
        subject = self.r.mention(tokens[: bare_verb_at(tokens)])  # "saw a cat knock it"
        # a thing is no doer: "sees the cans knocked over" is how they are, not their act
        if subject is None or doer_of(subject, frame.start, self.r.entities) is None:
            return False
        inner = Frame("event", frame.sentence, frame.start, frame.end)
        rest = past_modifiers(tokens[len(subject.tokens) :])
        self._verb_phrase(inner, subject, rest)
        if inner.kind != "event":
            return False
        if not any(s.act for s in inner.states):
            head = rest[0].lower if rest else ""
            if not head or head in lx.COPULAS or head in lx.AUXILIARIES or negation(head):
                return False
            if lx.verb(head) is None or head.endswith("ing"):
                return False
            # an act this reader finds no change in ("watched as Ann bent the key"): still
            # the act the perception names, never an earlier event that shares a thing
            inner.states.clear()
        inner.doer = inner.doer or subject
        inner.holder = subject if subject.character else None
        inner.roots = content_roots(tokens, None)
        frame.retold = self._retold(inner, tokens[len(subject.tokens) :])
        self._told.append(inner)
        return True

    def _retold(self, act: Frame, after: Sequence[Token]) -> Frame | None:
        """The event of the turn ``act`` tells again, or None: the same doer doing the same
        verb to a thing it did it to before ("A gull knocks the jug over, and the cider
        spills out … Tove sees the gull knock the jug over"). The perception names that
        event too; a new verb is a new act ("tore the scarf" … "watched as he washed it"),
        but not a force's: a storm, an outage is an event, and what it does to a thing is
        that event ("an outage shuts the oven off … notices the outage affecting the
        oven")."""
        verb = next(filter(None, (lx.verb(t.lower) for t in after)), None)
        if act.doer is None or verb is None:
            return None
        things = {s.subject.name for s in act.states}
        doer = doer_of(act.doer, act.start, self.r.entities)
        force = doer is not None and doer.force  # a force's doing is its one event
        for before in reversed(self.frames):
            if before.kind != "event" or before.doer is None:
                continue
            same = before.doer.name == act.doer.name
            same = same and (force or lx.root(verb.lemma) in before.roots)
            if same and things & {s.subject.name for s in before.states}:
                return before
        return None

    def _embedded(self, frame: Frame, tokens: Sequence[Token]) -> None:
        """A that-clause's states, read into ``frame`` (its kind is kept); of a character,
        only what a copula says of it ("believes that Juliet is dead", "is asleep")."""
        subject = self.r.mention(tokens)
        if subject is None:
            return
        if subject.character:
            after = tokens[len(subject.tokens) :]
            if len(after) > 1 and after[0].lower in lx.COPULAS and not negation(after[1].lower):
                self._predicate(frame, subject, after[1:])
            return
        self.r.note(subject, subject=False)
        after = past_modifiers(tokens[len(subject.tokens) :])
        said = lx.verb(after[0].lower) if len(after) > 2 and after[1].lower == "that" else None
        if said is not None and said.classes[0] == "communication":
            # "the map indicates that the orchid is near the boulder": what it says
            self._embedded(frame, after[2:])
            return
        inner = Frame("event", frame.sentence, frame.start, frame.end)
        self._verb_phrase(inner, subject, after)
        inner.states.extend(contained(self.r, tokens))
        frame.states.extend(inner.states)

    def _attending(self, sentence: Sentence, frames: Sequence[Frame]) -> Mention | None:
        """The character a next sentence's "the jar looks empty" is seen by: this
        sentence's subject, where it is a character that does, perceives or wants
        something here — not one that left, is away or asleep, has its back turned or
        does not see ("Ann left. The jar looks empty." is seen by no one)."""
        who = self.r.last_subject
        if who is None or not who.character:
            return None
        words = [t.lower for t in sentence.tokens]
        if unseen.find_cues(words, no_verb):
            return None
        if any((found := verb_classes(w)) and "leave" in found[0][:1] for w in words):
            return None
        for f in frames:
            if f.kind == "occupied" or (f.kind == "perceive" and f.negated):
                return None
            if any(s.subject.name == who.name for s in f.states):
                return None  # "Ann is away", "Ann is asleep": a condition of hers
        mine = (f.holder or f.doer for f in frames if f.kind != "event" or f.doer)
        return who if any(m is not None and m.name == who.name for m in mine) else None
