"""The reader of states, perception and mental states, built in phases.

1. :mod:`.tokens` — sentences and tokens with exact spans;
2. :mod:`.mentions` — noun phrases anchored on the story's entities, pronouns by salience;
3. :mod:`.frames` — clauses (cut by :mod:`.clauses`), their verbs' WordNet classes
   (:mod:`.lexicon`), and frames (:mod:`.readings`): perception, belief, goal, a character
   occupied, an event and the states it says — what a copula, a put, a passive's "by" or
   a swap says of a thing (:mod:`.predicates`), what a perception names
   (:mod:`.perceiving`), how a clause hangs on the one before ("…, which was empty";
   ", revealing that …": :mod:`.relating`), how a thing looks and what it holds said
   beside it (:mod:`.appearance`), who did it (:mod:`.doers`), each state's value in
   words reduced to roots (:mod:`.values`); a character's liking or disliking of a thing,
   a group's too (:mod:`.feeling`); what one character tells another (:mod:`.telling`);
4. :mod:`.events` — events with their perceivers, as story actions.

:func:`read_story` is the offline reader: the prose reader's reading of where things go
(:func:`~fabula.agents.reading.prose.read_prose`), with these phases' reading of
each sentence the prose reader left as narration, or read as a belief, an intention or a
perception it could not attach — there the phases' actions replace the prose reader's.
A feeling and a telling are the phases' alone: the prose reader no longer reads them.
"""

from __future__ import annotations

from collections.abc import Mapping

from fabula.agents.reading.phases.events import attach
from fabula.agents.reading.phases.frames import ClauseReader
from fabula.agents.reading.phases.mentions import Resolver
from fabula.agents.reading.phases.readings import Frame
from fabula.agents.reading.phases.tokens import sentences
from fabula.limits import Limits
from fabula.memory.actions import StoryAction
from fabula.memory.records import Entity, slug

# what the prose reader reads of a sentence that the phases may read better
_WEAK = frozenset(["narration", "see", "think", "feel"])
# what the prose reader reads of a belief or a wish that is no act and no world fact
# (a world fact; an act in the same sentence, "thinking it safer, she moved it", is kept)
_MISREAD = frozenset(["state", "locate"])
# how the prose reader marks a move it read with no destination
_NO_DESTINATION = "a move with no destination"


def read_frames(
    text: str, entities: Mapping[str, Entity], limits: Limits | None = None
) -> tuple[list[Frame], list[tuple[int, int]]]:
    """The frames of ``text`` and each sentence's span.

    A sentence longer than ``limits.sentence_words`` tokens is not read (its span is
    kept): the prose reader reads its first words and says why it stopped."""
    bound = (limits or Limits()).sentence_words
    reader = ClauseReader(Resolver(entities))
    spans = []
    for k, sentence in enumerate(sentences(text)):
        if len(sentence.tokens) <= bound:
            reader.sentence(k, sentence)
        spans.append((sentence.start, sentence.end))
    return reader.frames, spans


def read_states(text: str, entities: Mapping[str, Entity]) -> list[StoryAction]:
    """The phases' actions alone (states, perceptions, beliefs), in text order."""
    frames, _ = read_frames(text, entities)
    found = attach(frames, entities)
    return [a for k in sorted(found) for a in found[k]]


def read_story(
    text: str, entities: Mapping[str, Entity], limits: Limits | None = None
) -> list[StoryAction]:
    """``text`` as story actions (a :data:`~fabula.agents.memory_builder.offline.Reader`),
    within ``limits`` (:func:`~fabula.agents.reading.prose.read_prose`'s bounds).

    Per sentence: a sentence of the controlled grammar is the prose reader's alone (its
    exact core); a belief or a goal is the phases' (the prose reader would make it a
    world fact or an act; an act it reads beside a goal, "decided to move it", is kept,
    marked unsure); elsewhere the prose reader's reading is kept (its places and
    its perceptions), the phases' reading replaces a sentence it left as narration, and
    the phases' conditions and contents (never places, never a narration) are added
    beside its reading.
    """
    from fabula.agents.reading.extract import parse_sentence
    from fabula.agents.reading.prose import read_with_unseen

    prose, blind = read_with_unseen(text, entities, limits)
    frames, spans = read_frames(text, entities, limits)
    found = attach(frames, entities)
    mental = {f.sentence for f in frames if f.kind == "believe"}
    meant = {f.sentence for f in frames if f.kind == "goal"}
    out: list[StoryAction] = []
    for k, (start, end) in enumerate(spans):
        mine = found.get(k, [])
        theirs = [a for a in prose if start <= a.start < end]
        if k in meant:
            theirs = [_decided(a) for a in theirs]
        if not mine or parse_sentence(text[start:end], start).kind != "narration":
            out.extend(theirs)
        elif k in mental or k in meant:
            # a belief or a wish states nothing of the world ("hoped to put it in the bin")
            out.extend(a for a in theirs if a.kind not in _MISREAD and a.kind not in _WEAK)
            out.extend(mine)
        elif all(a.kind == "narration" for a in theirs):
            out.extend(mine)
        else:
            changed = {slug(a.clause.subject) for a in mine if a.kind == "state" and a.clause}
            dropped = [a for a in theirs if _undirected(a, changed)]
            theirs = [a for a in theirs if a not in dropped]
            mine = [_unseen_as(a, dropped) for a in mine]
            out.extend(theirs)
            placed = any(
                a.target is not None or (a.clause is not None and a.clause.attribute == "location")
                for a in theirs
            )
            out.extend(a for a in mine if _beside(a, placed))
    spanned = {id(a) for a in out}
    out.extend(a for a in prose if id(a) not in spanned and not _inside(a, spans))
    out = [_unseen(a, blind, entities) if a.kind == "state" else a for a in out]
    return sorted(out, key=lambda a: a.start)


# the prose reader's acts: what a sentence of intention may tell as done
_ACTS = frozenset(["move", "put", "take", "give", "drop"])
_DECIDED = (
    "an act told with an intention ('decided to move it'): read as carried out, as stories "
    "tell their acts so; the text does not say it outright"
)


def _decided(action: StoryAction) -> StoryAction:
    """An act the prose reader read in a sentence of intention, marked unsure (a verb of
    wanting or hoping is no act at all there: the prose reader reads none)."""
    if action.kind not in _ACTS or action.unsure is not None:
        return action
    return action.model_copy(update={"unsure": _DECIDED})


def _unseen(
    action: StoryAction,
    blind: list[tuple[int, int, tuple[str, ...]]],
    entities: Mapping[str, Entity],
) -> StoryAction:
    """A state told in a sentence where the prose reader found someone not perceiving
    ("Cal emptied the basket while Ann slept", "Ann was asleep. Ben tore the scarf."):
    not seen by them either, unless the text says they saw it."""
    names = {
        name
        for start, end, who in blind
        if action.start <= start < action.end or start <= action.start < end
        for c in who
        for name in (c, entities[c].name if c in entities else c)
    }
    seen = {n.lower() for n in action.seen_by}
    had = {n.lower() for n in action.unseen_by}  # "Ann" from the phases is "ann" here
    unseen = [n for n in sorted(names) if n.lower() not in seen | had and n in entities]
    if not unseen:
        return action
    return action.model_copy(update={"unseen_by": (*action.unseen_by, *unseen)})


def _undirected(action: StoryAction, changed: set[str]) -> bool:
    """A move the prose reader read with no destination, and said so ("locked the box",
    "tore it": a take of the thing, by the nearest name), where the phases read a change
    of that same thing: the change is the reading, its doer the phases' ("Cal did not
    notice when her colleague Ahmed locked the box" is no act of Cal's)."""
    unsure = action.unsure or ""
    return unsure.startswith(_NO_DESTINATION) and slug(action.obj or "") in changed


def _unseen_as(action: StoryAction, dropped: list[StoryAction]) -> StoryAction:
    """A change with who did not perceive the prose reader's reading of it ("Cal did not
    see the scarf. Ann tore it.": not seen by Cal either way)."""
    if action.clause is None:
        return action
    blind = [
        n for a in dropped if slug(a.obj or "") == slug(action.clause.subject) for n in a.unseen_by
    ]
    seen = {slug(n) for n in action.seen_by}
    unseen = tuple(dict.fromkeys((*action.unseen_by, *(n for n in blind if slug(n) not in seen))))
    return action.model_copy(update={"unseen_by": unseen}) if unseen != action.unseen_by else action


def _beside(action: StoryAction, placed: bool) -> bool:
    """Whether a phases' action may stand beside the prose reader's reading: a condition
    or contents; a place only where the prose reader's reading of the sentence put
    nothing anywhere (``placed`` false: "placed the cake in the refrigerator" read as an
    act with no place); never a narration (a sentence read is no longer narration:
    "Mara went to Castle Eldmoor." is a move alone)."""
    if action.kind in ("feel", "tell", "inform"):
        return True  # a feeling, a telling: the phases' alone (:mod:`.feeling`, :mod:`.telling`)
    if action.kind == "narration" or action.clause is None:
        return False
    return action.clause.attribute != "location" or not placed


def _inside(action: StoryAction, spans: list[tuple[int, int]]) -> bool:
    return any(start <= action.start < end for start, end in spans)
