"""A played character's own view: what the person playing it is shown beside their input.

A person who plays a character writes its part of a turn in place of its agent; what they
are shown is what that character knows — its beliefs, where it thinks it is and who it
thinks is with it, what it lived, its goals — read through its own mind
(:class:`~fabula.memory.acl.CharacterMind`, on its own Redis user), never from the world
or another character's beliefs. A false belief stays false here, as it is in that mind.
The engine's proposal for the character (what its agent would do, from the same mind) is
shown with it, for the person to take instead of writing their own.

What the person writes is that character's part only (:func:`own_part`): a sentence that
tells what another character does, says or perceives is left out of the passage, beside
it a finding, and the other answers from its own mind.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict

from fabula.agents.contracts import Action, CharacterBrief, Proposal
from fabula.memory.records import Belief, Entity
from fabula.memory.text import split_clauses, split_sentences

if TYPE_CHECKING:  # the view is a turn's checkpointed record: reading it loads no reader
    from fabula.memory.acl import CharacterMind

MEMORIES_SHOWN = 6
"""How many of its last first-person memories a played character's view shows."""


class PlayedView(BaseModel):
    """What a played character knows, in words, read from its own mind only."""

    model_config = ConfigDict(frozen=True)

    character: str
    """The character's id."""
    name: str
    """Its name."""
    place: str | None = None
    """Where it believes it is (None: it does not know)."""
    company: tuple[str, ...] = ()
    """Who it believes is with it there."""
    beliefs: tuple[str, ...] = ()
    """What it believes, one sentence each (a false belief as it holds it)."""
    memories: tuple[str, ...] = ()
    """What it last lived (witnessed), as the text said it, oldest first."""
    goals: tuple[str, ...] = ()
    """Its goals (its brief's: its own)."""
    suggestion: str = ""
    """What its agent would do (the engine's proposal from the same mind), in words."""


def intent_words(action: Action, name: Mapping[str, str]) -> str:
    """One intent as the person reads it ("search the desk drawer", "ask Mara where the
    brass key is"), with ``name`` its character's names for the ids ("the desk drawer",
    "Mara")."""

    def n(entity: str | None) -> str:
        return name.get(entity, entity) if entity else "something"

    k = action.kind
    words = {
        "go": f"go to {n(action.target)}",
        "search": f"search {n(action.target)}",
        "take": f"take {n(action.object)}",
        "put": f"put {n(action.object)} in {n(action.target)}",
        "give": f"give {n(action.object)} to {n(action.listener)}",
        "ask": f"ask {n(action.listener)} where {n(action.about)} is",
        "tell": f"tell {n(action.listener)} that the {action.attribute} of {n(action.about)} "
        f"is {n(action.claim)}",
        "say": f'say "{action.line or ""}"'
        + (f" to {n(action.listener)}" if action.listener else ""),
        "wait": "wait" + (f" and think of {n(action.object)}" if action.object else ""),
    }
    return words.get(k, k)


async def played_view(
    mind: CharacterMind, brief: CharacterBrief, suggestion: Proposal | None = None
) -> PlayedView:
    """``mind``'s character's view (see the module docstring): every read goes through its
    own connection, which Redis restricts to its own keyspace."""
    me = mind.character
    entities = await mind.entities()
    beliefs = await mind.beliefs()
    memories = await mind.memories(last=MEMORIES_SHOWN)
    names = {i: e.name if e.kind == "character" else f"the {e.name}" for i, e in entities.items()}
    here = beliefs.where(me)
    company = tuple(
        sorted(
            e.name
            for c, e in entities.items()
            if e.kind == "character" and c != me and here is not None and beliefs.where(c) == here
        )
    )
    ordered = sorted(
        beliefs.beliefs.values(), key=lambda b: (b.subject != me, b.subject, b.attribute)
    )
    return PlayedView(
        character=me,
        name=brief.name,
        place=entities[here].name if here in entities else here,
        company=company,
        beliefs=tuple(_sentence(b, names, entities) for b in ordered),
        memories=tuple(dict.fromkeys(m.quote for m in memories)),
        goals=brief.goals,
        suggestion="; ".join(intent_words(a, names) for a in suggestion.actions)
        if suggestion is not None
        else "",
    )


def _sentence(b: Belief, name: Mapping[str, str], entities: Mapping[str, Entity]) -> str:
    """One belief as a sentence ("the brass key is in the desk drawer", "the brass key is
    with Leo", "the colour of the brass key is dull gold"), ``name`` as in
    :func:`intent_words`."""
    subject, value = name.get(b.subject, b.subject), name.get(b.value, b.value)
    never = "" if b.polarity else "not "
    if b.attribute == "location":
        held = b.value in entities and entities[b.value].kind == "character"
        return f"{subject} is {never}{'with' if held else 'in'} {value}"
    return f"the {b.attribute} of {subject} is {never}{value}"


class OwnPart(BaseModel):
    """A played part cut to its character's own: the sentences that tell only what it does
    and says, and each sentence that tells what others do, say or perceive, with them."""

    model_config = ConfigDict(frozen=True)

    words: str
    """The character's own sentences, as the person wrote them (may be empty)."""
    others: tuple[tuple[str, tuple[str, ...]], ...] = ()
    """Each sentence left out, with the ids of the others it speaks for."""


_QUOTED = re.compile(r'"[^"]*"|“[^”]*”')


def own_part(words: str, character: str, entities: Mapping[str, Entity]) -> OwnPart:
    """The part of ``words`` that is ``character``'s own (issue 45): a person plays one
    character, and "Ann hands over the key. Bob sees it and takes it." moves Bob too. A
    sentence is the character's if every doer the reader finds in it (a verb's subject,
    named or a pronoun, and a name opening it: "Bob nods.") is the character; what is said
    inside quotation marks is the character's line, not what happens. The other sentences
    are left out, each with the others it speaks for, for a finding beside it; the others
    act from their own minds."""
    from fabula.agents.reading.prose import read_doers  # the reader: when a part is read

    text = " ".join(words.split())
    # a line's words are what is said, not done: blanked, offsets kept
    plain = _QUOTED.sub(lambda m: " " * len(m.group()), text)
    doers = read_doers(plain, entities)
    names = {
        e.name.casefold(): i
        for i, e in entities.items()
        if e.kind == "character" and i != character
    }
    kept: list[str] = []
    others: list[tuple[str, tuple[str, ...]]] = []
    for start, end in split_sentences(text):
        who = {c for at, cs in doers if start <= at < end for c in cs if c != character}
        who |= _named_doers(text, plain, start, end, names)
        if who:
            others.append((text[start:end], tuple(sorted(who))))
        else:
            kept.append(text[start:end])
    return OwnPart(words=" ".join(kept), others=tuple(others))


_WORDS = re.compile(r"[A-Za-z][A-Za-z'’-]*")


def _named_doers(text: str, plain: str, start: int, end: int, names: Mapping[str, str]) -> set[str]:
    """The others a sentence of ``text`` (``plain``: its lines blanked) names as doers
    where the reader finds no verb of theirs: a name opening one of its clauses ("Bob
    nods", ", and Bob laughs") or after a line's verb of saying ('"Thanks," said Bob').
    """
    from fabula.agents.reading.verbs import verb_classes

    found: set[str] = set()
    for a, b in split_clauses(plain, start, end):
        first = _WORDS.search(plain, a, b)
        if first is not None and first.group().casefold() in names:
            found.add(names[first.group().casefold()])
    for m in _SAID_BY.finditer(text, start, end):
        said = verb_classes(m.group(1).lower())
        if said is not None and "tell" in said[0] and m.group(2).casefold() in names:
            found.add(names[m.group(2).casefold()])
    return found


# a line's tag with its speaker after the verb: '"Thanks," said Bob'
_SAID_BY = re.compile(r"[\"”,]\s*([A-Za-z]+)\s+([A-Za-z]+)")
