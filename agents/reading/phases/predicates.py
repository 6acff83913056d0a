"""Phase 4, a part: what a clause says of a thing — where it is or its condition after a
copula ("is in the pantry", "was torn by Ahmed": the doer of a passive), where a thing
put now is ("placed the cake in the refrigerator"), and the state a verb of causing
leaves it in ("causing it to wilt"); what a swap leaves where ("swapped the oat milk
for almond milk": the pitcher that held oat milk holds almond milk).
:class:`~.frames.ClauseReader` reads clauses with these; they read only the resolver
(``r``) and write the frame they are given."""

from __future__ import annotations

from collections.abc import Sequence

from fabula.agents.reading.phases import lexicon as lx
from fabula.agents.reading.phases.clauses import PARTICLES
from fabula.agents.reading.phases.doers import doer_of
from fabula.agents.reading.phases.mentions import Mention, Resolver, phrase
from fabula.agents.reading.phases.readings import Frame, StateReading
from fabula.agents.reading.phases.tokens import Token
from fabula.agents.reading.phases.values import complement_at, value_of

# verbs of putting a thing somewhere: "placed the cake in the refrigerator"
PUTTING = frozenset(["put", "place", "set", "lay", "store", "stash", "tuck", "hide", "move"])


def negation(word: str) -> bool:
    """Whether ``word`` denies ("not", "never", "didn't")."""
    return word in lx.NEGATIONS or word.endswith("n't")


def goes_on(verb: lx.Verb | None, word: str) -> bool | None:
    """For a verb of aspect before a gerund ("stopped heating", "kept dripping"): whether
    the doing goes on after it; None where the two words are no such pair."""
    if verb is None or verb.lemma not in lx.ASPECTUAL or not word.endswith("ing"):
        return None
    return lx.ASPECTUAL[verb.lemma] if lx.verb(word) is not None else None


def past(verb: lx.Verb, word: str) -> bool:
    """Whether ``word`` is ``verb``'s past participle ("stolen", "torn")."""
    return lx.participle(verb.lemma) == word


def unparticled(tail: Sequence[Token]) -> Sequence[Token]:
    """``tail`` past the verb's particles ("over the basket" → "the basket")."""
    j = 0
    while j < len(tail) and tail[j].lower in PARTICLES:
        j += 1
    return tail[j:]


def _manner(token: Token) -> bool:
    """An adverb of manner ("slowly", "quickly")."""
    return token.lower.endswith("ly") and not lx.is_adjective(token.lower)


# verbs of position that say a thing is there as a copula does ("there lay a scarf")
_POSITION = frozenset(["lay", "lies", "stood", "stands", "sat", "sits", "remained", "remains"])


def held_in(place: Mention, held: Sequence[Token], negated: bool = False) -> StateReading:
    """What ``place`` holds: "a pearl" → contents pearl; "no pearl" (or ``negated``: "there
    was not a crumb") → it holds no pearl, the same slot denied."""
    no = bool(held) and held[0].lower == "no"
    return StateReading(place, "contents", value_of(held[1:] if no else held), negated or no)


def _infinitive_after(tokens: Sequence[Token]) -> bool:
    """Whether a noun phrase of a few words opens ``tokens`` and "to" and a verb follow it
    ("the cake layers to slowly warm up")."""
    for j in range(2, min(len(tokens) - 1, 7)):
        w = tokens[j].lower
        if w == "to":
            nxt = (
                tokens[j + 1] if not _manner(tokens[j + 1]) else tokens[min(j + 2, len(tokens) - 1)]
            )
            return lx.verb(nxt.lower) is not None
        if w in lx.CONJUNCTIONS or w in lx.DETERMINERS or w in lx.PREPOSITIONS:
            return False
    return False


def coordinated(tokens: Sequence[Token]) -> list[Sequence[Token]]:
    """An infinitive's coordinated verbs, each with what follows it ("shift and reveal the
    chamber" → "shift", "reveal the chamber"; "stop working and the cake to warm up" →
    "stop working", "the cake to warm up"): cut at "and" or "or" before a verb's base
    form (never a participle: "murky and contaminated" is one state) or before a thing
    and its "to"."""
    parts: list[Sequence[Token]] = []
    start = 0
    for k in range(1, len(tokens) - 1):
        nxt = tokens[k + 1].lower
        found = lx.verb(nxt)
        verb = found is not None and found.lemma == nxt and not lx.is_adjective(nxt)
        thing = nxt in lx.DETERMINERS and _infinitive_after(tokens[k + 1 :])
        if tokens[k].lower in ("and", "or") and (verb or thing):
            parts.append(tokens[start:k])
            start = k + 1
    parts.append(tokens[start:])
    return [p for p in parts if p]


class Predicates:
    """The thing side of a clause reader."""

    r: Resolver

    def _done_to(self, frame: Frame, part: Sequence[Token]) -> None:
        """A later verb of a result with its own object ("causing the slab to shift and
        reveal the chamber"): the object's state, not the first thing's."""
        found = lx.verb(part[0].lower)
        thing = self.r.mention(part[1:])
        if found is None or thing is None or thing.character:
            return
        self.r.note(thing, subject=False)
        frame.states.append(StateReading(thing, "condition", lx.participle(found.lemma), act=True))

    @staticmethod
    def _left(who: Mention, part: Sequence[Token], verb: bool) -> list[StateReading]:
        """The state one verb of a result leaves ``who`` in: "shift" → shifted, "mix into
        muted shades" → mixed into muted shades, "stop heating" → not heating; ``verb``:
        the first word is a verb even where it is an adjective too ("to cool")."""
        found = lx.verb(part[0].lower)
        on = goes_on(found, part[1].lower) if len(part) > 1 else None
        if on is not None:
            return [StateReading(who, "condition", part[1].lower, not on, act=True)]
        if verb and found is not None and found.lemma == part[0].lower:
            rest = value_of(part[1:])
            value = lx.participle(found.lemma) + (f" {rest}" if rest else "")
        else:
            value = value_of(part, verbal=True)
        return [StateReading(who, "condition", value, act=True)] if value else []

    def _predicate(
        self,
        frame: Frame,
        subject: Mention,
        after: Sequence[Token],
        degree: Sequence[Token] = (),
    ) -> None:
        """What a copula says of ``subject``: where it is, or its condition (with the
        adverbs of ``degree`` before it: "perfectly in tune")."""
        head = after[0].lower
        if head in lx.PLACE_PREPOSITIONS and len(after) > 1:
            # a place phrase has a determiner or names an entity ("in the pantry"); "in
            # full bloom", "in good condition" are conditions
            place = self.r.mention(after[1:])
            named = place is not None and place.entity is not None
            if place is not None and not named and after[1].lower in lx.POSSESSIVES:
                return  # "remained in their new hiding place": a place said before, by
                # a description the story declared nowhere (as :meth:`_put` reads none)
            if place is not None and (after[1].lower in lx.DETERMINERS or named):
                frame.states.append(StateReading(subject, "location", place.name, frame.negated))
                return
        value = value_of([*degree, *after])
        doer = self._agent(after)
        if doer is not None:
            frame.doer = doer  # "was knocked over by a stray cat": the cat's act
        if value:
            frame.states.append(
                StateReading(subject, "condition", value, frame.negated, act=doer is not None)
            )

    def _agent(self, after: Sequence[Token]) -> Mention | None:
        """The doer of a passive ("torn by her colleague Ahmed", "knocked over by the
        wind"): "by" right after the participle (and its particles), then a doer."""
        verb = lx.verb(after[0].lower)
        if verb is None or not (after[0].lower.endswith("ed") or past(verb, after[0].lower)):
            return None
        k = 1 + len(after[1:]) - len(unparticled(after[1:]))
        if k >= len(after) - 1 or after[k].lower != "by":
            return None
        who = self.r.mention(after[k + 1 :])
        return (
            who if who is not None and doer_of(who, who.tokens[0].start, self.r.entities) else None
        )

    def _there(self, frame: Frame, rest: Sequence[Token], before: Mention | None) -> bool:
        """ "there is no pearl in the oyster", "there were cookies inside": what a place
        holds, said as a thing's being there (the place said, or after a bare "inside",
        the clause before's object ``before``); the same fact as "the oyster contains no
        pearl". False where the clause is no such sentence."""
        if len(rest) < 3 or rest[0].lower != "there":
            return False
        if rest[1].lower not in lx.COPULAS and rest[1].lower not in _POSITION:
            return False  # "there was", "there lay a pair of slacks"
        tail = list(rest[2:])
        negated = bool(tail) and negation(tail[0].lower)
        if negated:
            tail = tail[1:]  # "there was not a crumb left": the "no" goes with the thing
        held = phrase(tail)
        if not held:
            return False
        after = tail[len(held) :]
        if len(after) > 1 and after[0].lower in ("left", "inside", "stored", "kept"):
            after = after[1:]  # "no cookies left in the jar"
        place: Mention | None = None
        if after and after[0].lower in lx.PLACE_PREPOSITIONS:
            place = self.r.mention(after[1:]) if len(after) > 1 else before
        if place is None or place.character:
            return True  # "there is a storm coming": nothing held anywhere
        frame.states.append(held_in(place, held, negated))
        return True

    def _put(self, frame: Frame, target: Mention, after: Sequence[Token]) -> bool:
        """ "placed the cake in the refrigerator": where the thing put now is (not "tucked it
        under her arm": what one holds is the prose reader's, with its holder)."""
        if len(after) < 3 or after[0].lower not in lx.PLACE_PREPOSITIONS:
            return False
        if after[1].lower not in lx.DETERMINERS or after[1].lower in lx.POSSESSIVES:
            return False
        # the place's phrase ends at the next determiner: "in the refrigerator an hour ago"
        end = len(after)  # ("in the center of the table": "of" joins the next phrase)
        for j in range(len(after) - 1, 1, -1):
            end = j if after[j].lower in lx.DETERMINERS and after[j - 1].lower != "of" else end
        place = self.r.mention(after[1:end])
        if place is None or place.character or place.name == target.name:
            return False
        self.r.note(place, subject=False)
        frame.states.append(StateReading(target, "location", place.name, act=True))
        return True

    def _result(self, frame: Frame, tail: Sequence[Token], target: Mention | None = None) -> None:
        """ "causing it to wilt", "leaving the hive empty", "making them soft", "leaving the
        cookies half-baked" (where the object's phrase ran on into its state)."""
        if not tail or tail[0].lower in lx.PREPOSITIONS:
            return
        who = self.r.mention(tail)
        who = self.r.mention(who.tokens[: complement_at(who.tokens)]) if who else None
        if who is None or who.character:
            return
        self.r.note(who, subject=False)
        rest = list(tail[len(who.tokens) :])
        infinitive = bool(rest) and rest[0].lower == "to"
        if infinitive and len(rest) > 2 and _manner(rest[1]):
            rest.pop(1)  # "to slowly warm up"
        popped = 0
        while rest and rest[0].lower in ("to", "be", "become", "get", "turn"):
            rest.pop(0)
            popped += 1
        if infinitive:
            # "causing the slab to shift and reveal the chamber", "causing the fridge to
            # stop working and the cake to warm up": each coordinated verb (or thing and
            # verb) is a result of its own
            for k, part in enumerate(coordinated(rest)):
                if k and lx.verb(part[0].lower) is None:
                    self._result(frame, part)
                elif k and len(part) > 1 and part[1].lower in lx.DETERMINERS:
                    self._done_to(frame, part)  # "… and reveal the chamber": the chamber's
                else:  # right after "to" a word is a verb ("to cool"), after "become" not
                    frame.states.extend(self._left(who, part, popped == 1 or k > 0))
            return
        value = value_of(rest, verbal=True)
        if value:
            frame.states.append(StateReading(who, "condition", value, act=True))

    def _substituted(
        self, frame: Frame, lemma: str, tail: Sequence[Token], before: Sequence[Frame]
    ) -> bool:
        """ "swapped the oat milk for almond milk", "replaced the scarf with a blue one",
        "substituted almond milk for the oat milk": the slot an earlier state of the turn
        (``before``) gave the one thing as its value now has the other ("the pitcher
        contains oat milk" → almond milk); a thing the story tracks, replaced, is
        ``replaced``. False where the clause names no two things."""
        rest = list(unparticled(tail))
        at = next((k for k, t in enumerate(rest) if t.lower in ("for", "with")), None)
        if at is None or at == 0 or at == len(rest) - 1:
            return False
        gone, new = rest[:at], rest[at + 1 :]
        if lemma == "substitute":
            gone, new = new, gone
        old_value, new_value = value_of(phrase(gone) or gone), value_of(phrase(new) or new)
        if not old_value or not new_value:
            return False
        said = self.r.mention(gone)
        old_names = {old_value, said.name} if said is not None else {old_value}
        for earlier in reversed(before):
            slot = next((s for s in earlier.states if s.value in old_names), None)
            if slot is not None:
                frame.states.append(StateReading(slot.subject, slot.attribute, new_value, act=True))
                return True
        if said is not None and said.tracked and not said.character:
            self.r.note(said, subject=False)
            frame.states.append(StateReading(said, "condition", lx.participle(lemma), act=True))
        return bool(frame.states)
