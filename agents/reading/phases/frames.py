"""Phases 3 and 4: clauses and their verb classes → frames.

Each segment of a sentence (:mod:`.tokens`) is read as a clause: an optional subordinator
("while", "as"), a subject (:mod:`.mentions`; a participle or "and" clause continues the
subject before it), a verb group (auxiliaries, negation, adverbs, the verb) and what
follows. The verb's WordNet class (:mod:`.lexicon`) and the clause's shape give its frame:

* ``perceive``: a character and a verb of ``perception`` ("sees", "notices", "witnesses"),
  negated or not; what it names is the rest of the sentence (a that-clause is read for
  its states, which the perceiver learns outright; an act perceived as it is done,
  "watched as Bo emptied the jar", "did not notice when a cat tipped it over", "saw Bo
  lock it", is an event frame of its own after the perception, which names it — never
  the latest event read before it); a verb of emotion or cognition with a
  noun phrase for object is one too ("feels the heat", "realizes the change"); how the
  object looks, said beside it, is its condition as perceived (:mod:`.appearance`);
* ``believe``: a character and a verb of ``cognition`` before a clause ("believes the jar
  is empty"): the clause's states are the character's belief, never the world's;
* ``goal``: a character, a verb and "to" + a verb ("wants to buy", "decides to wait"):
  an intention, never an act;
* ``occupied``: a character's state in a subordinate clause ("while Bo is away"): the
  main clause's events are not perceived by it;
* ``event``: anything else; its ``states`` are what it says is so or becomes so —
  ``X is/becomes P`` (a location when P is a place phrase, else a condition), ``X
  contains Y`` and "X containing Y" (contents), a verb of change, contact, consumption,
  creation or weather done to an object or undergone by the subject ("the frost damages
  the roses", "the roses wilt"), and a result ("causing it to wilt", "leaving it empty").

A state is a thing's: a declared entity, or a noun phrase the text treats as a thing. A
character's own doing with no object ("Leo sighed", "is walking"), a touch on the doer's
own ("rubbed his eyes"), where a character goes (the prose reader's) and a thing the story
does not track moving along ("a cold wind came off the hills": scenery) say none; a
thing coming or going ("a fog rolls in") does. "and" + a verb is a second clause of the
same subject ("rubbed his eyes and sighed"); "where" and "which" begin a clause of their
own ("where the clouds are clearing", "which causes it to crack"). A value is the text's
words, a verb of change as its past participle (:mod:`.values`).
"""

from __future__ import annotations

from collections.abc import Sequence

from fabula.agents.reading import unseen
from fabula.agents.reading.phases import feeling
from fabula.agents.reading.phases import lexicon as lx
from fabula.agents.reading.phases.appearance import (
    CONTENTS,
    as_object,
    believer,
    catcher,
    contained,
    described,
    first_named,
    looks,
)
from fabula.agents.reading.phases.clauses import PARTICLES as _PARTICLES
from fabula.agents.reading.phases.clauses import has_object, past_modifiers, split_clauses
from fabula.agents.reading.phases.clauses import particle as _particle
from fabula.agents.reading.phases.doers import doer_of
from fabula.agents.reading.phases.mentions import Mention, Resolver, phrase
from fabula.agents.reading.phases.perceiving import no_verb
from fabula.agents.reading.phases.predicates import (
    PUTTING,
    goes_on,
    held_in,
    negation,
    past,
    unparticled,
)
from fabula.agents.reading.phases.readings import Feeling, Frame, StateReading
from fabula.agents.reading.phases.telling import Telling
from fabula.agents.reading.phases.tokens import Sentence, Token
from fabula.agents.reading.phases.values import complement_at, content_roots, reached, value_of

# a verb's classes that change what they are done to, or what undergoes them
CHANGING = frozenset(["change", "contact", "consumption", "creation", "weather", "body"])
# adjectives of perceiving (WordNet files them under adj.all, with no verb to derive)
AWARE = {"aware": True, "unaware": False, "oblivious": False}
# verbs of perception that link a thing to how it strikes the senses ("it sounds in tune",
# "the milk smells sour"); said of a character they are its perceiving ("Tam smells smoke")
_LINKING = frozenset(["sound", "sounds", "sounded", "smell", "smells", "smelled"])
_LINKING |= frozenset(["taste", "tastes", "tasted", "feel", "feels", "felt"])
# a copula of seeming: how a thing seems to whoever looks ("the bees appear calm")
_SEEMING = frozenset(["seem", "seems", "seemed", "appear", "appears", "appeared", "looks"])
# the classes of a verb that touches or moves the body, and changes nothing else
_TOUCH = frozenset(["contact", "body"])
_CONDITIONAL = frozenset(["if", "unless"])
# verbs of having a thing ("has", "had" are read where the auxiliaries are: ``_had``)
HAVING = frozenset(["own", "possess"])
# adverbs of time and degree between an auxiliary and its verb ("had just filled")
_ADVERBS = frozenset(["still", "also", "just", "already", "recently", "since", "again"])
_ADVERBS |= frozenset(["always", "often", "once"])  # "had always detested spinach"


def _own(target: Mention, doer: Mention | None) -> bool:
    """Whether ``target`` is the doer's own, not a thing the story declared: a character
    doer and a phrase with a possessive ("his tired eyes")."""
    if doer is None or not doer.character or target.entity is not None:
        return False
    return target.tokens[0].lower in lx.POSSESSIVES


class ClauseReader(Telling):
    """Reads the clauses of one turn, in order, into frames."""

    def __init__(self, resolver: Resolver) -> None:
        self.r = resolver
        self.frames: list[Frame] = []
        self._subject: Mention | None = None  # the subject a participle clause continues
        self._object: Mention | None = None  # the object a participle may describe
        self._last: Frame | None = None  # the clause before, in this sentence
        self._told: list[Frame] = []  # the acts a perception of this clause told
        self._focus: Mention | None = None  # the sentence before's character (see sentence)
        self._whom: Mention | None = None  # the one the clause before named first
        self._viewed = False  # the sentence tells someone's view ("In her mind, …")
        self._words: frozenset[str] = frozenset()  # the sentence's words, lower case
        self._feeling: Feeling | None = None  # the latest feeling read ("the same hatred")

    def sentence(self, index: int, sentence: Sentence) -> list[Frame]:
        out: list[Frame] = []
        self._subject = self._object = self._last = self._whom = None
        self._viewed = feeling.in_mind(sentence.tokens)  # "In her mind, …": no feeling is read
        self._words = frozenset(t.lower for t in sentence.tokens)
        for segment in sentence.segments():
            for clause in split_clauses(segment):
                frame = self._clause(index, sentence, clause)
                if frame is not None:
                    out.append(frame)
                out.extend(self._told)  # the acts its perceptions told, after them
                self._told.clear()
                felt = [f.felt for f in out if f.kind == "feel" and f.felt is not None]
                self._feeling = felt[-1] if felt else self._feeling
        self.frames.extend(out)
        self.r.learn(sentence.tokens)
        self._focus = self._attending(sentence, out)
        return out

    # -- one clause ------------------------------------------------------------------
    def _clause(self, index: int, sentence: Sentence, tokens: tuple[Token, ...]) -> Frame | None:
        k = 0
        subordinate = False
        while k < len(tokens) and (
            tokens[k].lower in ("just", "even", "right", "and", "but")
            or lx.is_adverb(tokens[k].lower)
        ):
            k += 1  # "accidentally flattening the dough": the clause is its verb's
        # a relative clause of place is a clause of its own ("where the clouds are ...");
        # "which" or "who" before a verb is the subject before ("which causes it to crack")
        if k < len(tokens) - 1 and tokens[k].lower == "where":
            k += 1
        relative = k < len(tokens) - 1 and tokens[k].lower in ("which", "who")
        if relative and lx.verb(tokens[k + 1].lower) is not None:
            k += 1
        # "while" makes a character's clause a concurrent occupation ("while Bo is away")
        conditional = k < len(tokens) and tokens[k].lower in _CONDITIONAL
        if k < len(tokens) and tokens[k].lower in lx.SUBORDINATORS:
            subordinate, k = tokens[k].lower == "while", k + 1
        rest = tokens[k:]
        if not rest:
            return None
        believed = self._believed_of(index, sentence, rest)
        if believed is not None:
            return believed
        if self._revealed(index, sentence, rest):
            return None
        look = looks(rest) if self._object is not None and rest[0].lower.endswith("ing") else None
        if look is not None and self._object is not None and self._last is not None:
            # ", appearing clean and ready": how the clause before's object looks
            self._last.states.append(StateReading(self._object, "condition", look))
            return None
        frame = Frame("event", index, sentence.start, sentence.end, subordinate=subordinate)
        frame.modal = conditional  # "if the vase breaks": a condition, nothing that happened
        grouped = None if self._viewed else feeling.group_frames(self.r, frame, rest)
        if grouped:
            self._told.extend(grouped)  # "Ann and Bo despised pineapple": a group's feeling
            return None
        if self._there(frame, rest, self._object):
            frame.roots = content_roots(rest, None)
            self._last = frame
            return frame
        first = rest[0].lower
        after_subject: Sequence[Token] = rest
        if relative and k and lx.verb(first) is not None:
            # ", which was empty", ", who was tired": the phrase before is its subject
            continued = self._antecedent(tokens[k - 1].lower, first)
            frame.doer = continued
            self._verb_phrase(frame, continued, rest)
        elif lx.verb(first) is not None and first not in lx.DETERMINERS and self._verbal(rest):
            # a participle or a verb after "and": its subject is the clause before's
            frame.doer = self._subject
            self._verb_phrase(frame, self._subject, rest)
        else:
            subject = self.r.mention(rest)
            if subject is None:
                frame.roots = content_roots(rest, None)
                self.r.note_things(rest)  # "when it came to the jacket": the jacket
                if not self._viewed:  # "Despite Riley's disdain for t-shirts, …"
                    self._told.extend(
                        feeling.noun_frames(self.r, frame, rest, self._subject, self._feeling)
                    )
                return frame
            if self._apposed(subject, rest[len(subject.tokens) :]):
                return None  # "Ann, a talented chef, broke it": the doer is still Ann
            self.r.note(subject, subject=True)
            self.r.note_owner(subject)
            self._subject = subject
            frame.doubt = subject.doubt
            after_subject = rest[len(subject.tokens) :]
            self._verb_phrase(frame, subject, past_modifiers(after_subject))
        self._caught(frame, past_modifiers(after_subject))
        if frame.kind != "believe" and not self._viewed:  # "Bo had a fondness for plums"
            self._told.extend(
                feeling.noun_frames(self.r, frame, rest, self._subject, self._feeling)
            )
        frame.roots |= content_roots(tokens, frame.holder)
        frame.states.extend(contained(self.r, rest))
        self._whom = first_named(self.r, after_subject)
        self._object = as_object(self.r, self._whom)
        self.r.note_named(after_subject)
        self.r.note_things(after_subject)
        if self._object is not None:
            self.r.note(self._object, subject=False)  # "it" may name it next
        seen = described(self.r, after_subject, self._object)
        if seen is not None and frame.kind in ("perceive", "event"):
            self.r.note(seen[0], subject=False)
            frame.states.append(StateReading(seen[0], "condition", seen[1]))
        self._last = frame
        return frame

    def _caught(self, frame: Frame, after: Sequence[Token]) -> None:
        """A thing that "catches Yoshi's eye" is perceived by its owner (:func:`catcher`)."""
        if self._subject is None or self._subject.character:
            return
        holder = catcher(self.r, after)
        if holder is not None:
            frame.kind, frame.holder = "perceive", holder
            self._seen_as(frame, self._subject.tokens)

    def _believed_of(self, index: int, sentence: Sentence, tokens: Sequence[Token]) -> Frame | None:
        """A relative clause of belief about the clause before's object (:func:`believer`)."""
        found = believer(self.r, tokens) if self._object is not None else None
        if found is None or self._object is None:
            return None
        frame = Frame("believe", index, sentence.start, sentence.end)
        frame.holder = found[0]
        self._predicate(frame, self._object, found[1])
        frame.roots = content_roots(tokens, found[0])
        return frame if frame.states else None

    def _verbal(self, tokens: Sequence[Token]) -> bool:
        """Whether a clause begins with its verb: a participle, or an inflected verb form
        that is no noun phrase's start ("notices", "crushing"; not "Tam", "the")."""
        w = tokens[0].lower
        if tokens[0].capital and self._subject is None:
            return False
        return w.endswith("ing") or (self._subject is not None and w not in lx.verb_lemmas())

    def _verb_phrase(self, frame: Frame, subject: Mention | None, rest: Sequence[Token]) -> None:
        k, negated, copula, have, seeming = 0, False, False, False, False
        degree: int | None = None
        while k < len(rest):
            w = rest[k].lower
            if negation(w):
                negated = True
            elif w in lx.COPULAS or (w in _LINKING and not (subject and subject.character)):
                copula = True  # "the violin sounds in tune": how a thing strikes the senses
                seeming = seeming or w in _SEEMING
            elif w in ("has", "have", "had"):
                have = True
            elif not (w in lx.AUXILIARIES or w.endswith("ly") or w in _ADVERBS):
                break
            elif copula and w.endswith("ly") and degree is None:
                degree = k  # "sounds perfectly in tune": the adverb is the value's
            k += 1
        frame.negated = negated
        frame.modal = frame.modal or any(t.lower in feeling.MODALS for t in rest[:k])
        after = rest[k:]
        if copula and len(after) > 2 and after[0].lower == "to" and after[1].lower == "be":
            after = after[2:]  # "appears to be calm": the predicate is "calm"
        character = subject is not None and subject.character
        if not after:
            return
        head = after[0].lower
        verb = lx.verb(head)
        having = have and not copula and character and verb is None and not negated
        owner = subject if having else None  # not "had always been a peculiar character"
        if owner is not None and self._had(frame, owner, after):
            return  # "has a fresh batch of flour" ("has" no auxiliary here)
        if (
            character
            and subject is not None
            and self._character(frame, subject, after, verb, copula)
        ):
            return
        frame.doer = frame.doer or subject
        # "is walking" of a character is a doing (the prose reader's), not its condition
        doing = character and verb is not None and head.endswith("ing")
        if (
            copula
            and subject is not None
            and not doing
            and (verb is None or head.endswith("ed") or lx.is_adjective(head) or past(verb, head))
        ):
            if seeming and not character:
                after = self._seen_by(frame, after)
            self._predicate(frame, subject, after, rest[degree:k] if degree is not None else ())
            return
        if verb is None:
            if have and subject is not None and head != "to":  # "had to leave": no having
                frame.states.append(StateReading(subject, "condition", "have " + value_of(after)))
            return
        tail = after[1:]
        on = goes_on(verb, tail[0].lower) if tail else None
        if on is not None and subject is not None:
            if not subject.character:  # "the oven stopped heating": not heating
                frame.states.append(
                    StateReading(subject, "condition", tail[0].lower, on == negated)
                )
            return
        if verb.lemma in lx.RESULTATIVE:
            self._result(frame, tail)
            return
        if verb.lemma in ("contain", "hold") and subject is not None:
            frame.states.append(held_in(subject, phrase(tail), negated))
            return
        # a verb of motion that also changes its object ("tipped over the basket") is read
        # as a change where it has one
        upset = CHANGING.intersection(verb.classes[:2]) and has_object(unparticled(tail))
        if "motion" in verb.classes[:1] and subject is not None and not upset:
            # "the boulder slid", "the fish move away": where a thing the story tracks went
            # is its state, and so is a thing coming or going ("a fog rolls in": a particle
            # with no object); a thing it does not track moving along ("a cold wind came
            # off the hills") is scenery, and where a character goes is the prose reader's
            particle = _particle(tail)
            if subject.character or not (subject.tracked or particle):
                return
            if not tail or particle or tail[0].lower in lx.PREPOSITIONS:
                moved = lx.participle(verb.lemma) + (f" {tail[0].lower}" if particle else "")
                frame.states.append(StateReading(subject, "condition", moved, negated))
            return
        if verb.lemma in lx.SUBSTITUTING and not negated:
            before = [*self.frames, *([self._last] if self._last else [])]
            if self._substituted(frame, verb.lemma, tail, before):
                return
        changing = CHANGING.intersection(verb.classes[:2])
        if verb.lemma in lx.TAKING:
            changing = frozenset(["possession"])  # "a thief stole the key": the key is stolen
        if not changing:
            return
        j = 0
        while j < len(tail) and tail[j].lower in _PARTICLES:
            j += 1
        target = None
        if j < len(tail) and tail[j].lower not in lx.PREPOSITIONS:
            target = self.r.mention(tail[j:])
            prior = self._object  # the object of the clause before, in this sentence
            if tail[j].lower == "it" and prior is not None and prior is not subject:
                # "knocks over a jar of oil, spilling it into the wok": "it" as an object
                # is the clause before's object (never the clause's own subject)
                target = Mention((tail[j],), prior.name, prior.entity, False, True)
            whom = self._whom
            if tail[j].lower in ("them", "him") and whom is not None:
                # "greets the children and teaches them": the ones the clause before
                # acted on, no thing of the story
                doer = doer_of(whom, frame.start, self.r.entities)
                if doer is not None and not doer.force:
                    target = Mention((tail[j],), whom.name, whom.entity, True, True)
        left: Sequence[Token] = ()  # "pried the shell open": the state it is left in
        cut = complement_at(target.tokens) if target is not None else 0
        if target is not None and 1 < cut < len(target.tokens):
            left = target.tokens[cut:]
            target = self.r.mention(target.tokens[:cut])
        if negated and target is not None:
            return  # "Ann did not break the vase": a denied act changes nothing
        filled = verb.lemma in CONTENTS and any(t.lower == "with" for t in tail)
        if target is not None and _own(target, subject) and not changing - _TOUCH and not filled:
            # a touch on the doer's own ("rubbed his eyes") changes no tracked thing: a
            # gesture; filling one's own thing ("filled her oven with cookies") is not one
            return
        if target is not None and not target.character:
            self.r.note(target, subject=False)
            after_target = tail[j + len(target.tokens) + len(left) :]
            # put somewhere, or sent into or onto a thing ("blew the hat into the river"),
            # or on it by a verb of motion ("spilled coffee on the book")
            onto = ("into", "onto", "on") if "motion" in verb.classes else ("into", "onto")
            sent = bool(after_target) and after_target[0].lower in onto
            if (verb.lemma in PUTTING or sent) and self._put(frame, target, after_target):
                return
            if verb.lemma in CONTENTS and after_target and after_target[0].lower == "with":
                filling = value_of(phrase(after_target[1:]))
                frame.states.append(StateReading(target, "contents", filling, act=True))
            else:
                # the verb's particle, before or after its object: "knocked over the jar",
                # "knocked the jar over" are "knocked over"
                adverb = tail[0].lower if j else ""
                if not adverb and _particle(after_target):
                    adverb = after_target[0].lower
                value = lx.participle(verb.lemma) + (f" {adverb}" if adverb else "")
                value += reached(after_target)
                frame.states.append(StateReading(target, "condition", value, act=True))
            if left:
                frame.states.append(StateReading(target, "condition", value_of(left), act=True))
            self._result(frame, after_target, target)
        elif subject is not None and target is None and not subject.character:
            # "the roses wilt"; a character's own doing with no object ("Leo sighed") is
            # a gesture, not a thing's state
            frame.states.append(
                StateReading(subject, "condition", lx.participle(verb.lemma), negated)
            )

    def _character(
        self,
        frame: Frame,
        subject: Mention,
        after: Sequence[Token],
        verb: lx.Verb | None,
        copula: bool,
    ) -> bool:
        """A character's clause: perceiving, believing, intending, occupied (True); else
        False, to be read as an event it does."""
        frame.holder = subject
        head = after[0].lower
        words = [t.lower for t in after]
        if verb and verb.classes[0] == "communication" and self._telling(frame, subject, after):
            return True  # "told Bo that the jar was empty" (its clause is no cue)
        adjective = copula and lx.verb(head) is None  # "was asleep": a condition, below
        absent = any(c.kind == "state" for c in unseen.find_cues(words, no_verb))
        if absent and not adjective:
            # "was looking the other way", "had her back turned": the events of its
            # sentence are not perceived by it (:mod:`..unseen_cues`)
            frame.kind = "occupied"
            return True
        if head in AWARE:
            frame.kind = "perceive"
            frame.negated = frame.negated != (not AWARE[head])
            return True
        if (copula or verb is None) and frame.subordinate:
            frame.kind = "occupied"
            return True
        condition = head not in lx.PLACE_PREPOSITIONS and head not in lx.DETERMINERS
        if copula and condition and (verb is None or head.endswith("ed")):
            # a character's condition said outright ("Juliet is asleep", "was exhausted");
            # not what it is ("is a teacher at a small school"); where it is, is the prose
            # reader's. Being asleep is no doing: the character perceives nothing by it
            self._predicate(frame, subject, after)
            frame.holder = None
            if absent:  # "was asleep when …": the condition, and the sentence unperceived
                self._told.append(Frame("occupied", frame.sentence, frame.start, frame.end))
                self._told[-1].holder = subject
            return True
        if verb is None:
            return True
        nxt = after[1].lower if len(after) > 1 else ""
        # "to" + a verb; a capital after "to" is a name ("went to Castle Eldmoor"), no verb
        if nxt == "to" and len(after) > 2 and not after[2].capital and lx.verb(after[2].lower):
            frame.kind = "goal"
            return True
        if not self._viewed and feeling.felt(frame, self.r, head, after[1:]):
            return True  # "adored the plum", "did not like it": a feeling
        # "notice when", "watched as": the clause after the subordinator
        rest = after[2:] if nxt in ("that", "when", "how", "as", "while") else after[1:]
        clause = nxt == "that" or self._is_clause(rest)
        perceptual = "perception" in verb.classes[:2]
        if clause and (perceptual or verb.lemma in lx.FACTIVE) and not self._viewed:
            # "knew how much Jorge detested potatoes": Jorge's feeling, a fact
            self._told.extend(feeling.known(self.r, frame, rest))
        # a verb of change first ("cracked", also "crack a code") is an act, not a look
        seeing = perceptual and not clause and verb.classes[0] != "change"
        if verb.classes[0] == "perception" or seeing:
            self._perceived(frame, rest, clause, witnessed=nxt != "that")
            return True
        if "cognition" in verb.classes[:1]:
            if rest and clause:
                frame.kind = "believe"
                self._embedded(frame, rest)
            elif has_object(rest):
                frame.kind = "perceive"  # coming to know a thing: "realizes the change"
            return True
        if "emotion" in verb.classes[:1] and not clause and has_object(rest):
            frame.kind = "perceive"  # sensing a thing: "feels the heat", "feels the quake"
            return True
        if verb.lemma in HAVING and not frame.negated and self._had(frame, subject, rest):
            return True  # "has a fresh batch of flour": its condition, known to its owner
        if frame.subordinate:
            frame.kind = "occupied"
            return True
        return False
