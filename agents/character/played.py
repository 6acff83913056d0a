"""A played character's own view: what the person playing it is shown beside their input.

A person who plays a character writes its part of a turn in place of its agent; what they
are shown is what that character knows — its beliefs, where it thinks it is and who it
thinks is with it, what it lived, its goals — read through its own mind
(:class:`~fabula.memory.acl.CharacterMind`, on its own Redis user), never from the world
or another character's beliefs. A false belief stays false here, as it is in that mind.
The engine's proposal for the character (what its agent would do, from the same mind) is
shown with it, for the person to take instead of writing their own.
"""

from __future__ import annotations

from collections.abc import Mapping

from pydantic import BaseModel, ConfigDict

from fabula.agents.contracts import Action, CharacterBrief, Proposal
from fabula.memory.acl import CharacterMind
from fabula.memory.records import Belief, Entity

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
