"""Who did a change: the doer of an event's state, declared by the story or not.

"A stray cat knocked over the basket", "the wind blew the hat off", "her colleague Ahmed
emptied the jar": the subject of a clause that changes a thing is its doer. A doer the
story knows keeps its known name. One it does not know is a doer only if its head noun
names one — WordNet's noun classes decide (:func:`~.lexicon.doer`): a person or an animal
is a character ("thief", "cat", "coworker"), a phenomenon, an event or a process is a force
("wind", "storm", "flood") — or if it is a name the dictionary lacks ("Ahmed"). A thing
("the basket fell") does no deed: its change is its own, with no doer.

The name is the noun phrase as the text says it, its determiners dropped ("stray cat"); a
name in apposition after a common noun is the doer's name ("her colleague Ahmed" → Ahmed).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from fabula.agents.reading.phases import lexicon as lx
from fabula.agents.reading.phases.mentions import Mention
from fabula.agents.reading.phases.tokens import Token
from fabula.memory.records import Entity


@dataclass(frozen=True)
class Doer:
    """Who did a change: ``name`` as the story will know it, and whether it is a force."""

    name: str
    force: bool = False


def doer_of(
    mention: Mention | None, sentence_start: int, entities: Mapping[str, Entity]
) -> Doer | None:
    """The doer ``mention`` names, or None (no mention, or a mere thing)."""
    if mention is None:
        return None
    if mention.entity is not None:
        return _known(mention, entities)
    if mention.tokens[0].lower in lx.PRONOUNS:
        # "it" for a doer met before ("a stray cat wandered in; it knocked ...")
        kind = lx.doer(mention.name.split()[-1])
        return Doer(mention.name, force=kind == "force") if kind is not None else None
    words = [t for t in mention.tokens if t.lower not in lx.DETERMINERS]
    if "of" in (t.lower for t in words):
        words = words[: [t.lower for t in words].index("of")]  # "a pair of crows" → pair
    if not words:
        return None
    names = _apposed(words, sentence_start)
    if names:
        return Doer(" ".join(t.text for t in names))
    head = words[-1]
    kind = lx.doer(head.lower)
    if kind is None and _name(head, sentence_start):
        kind = "character"
    if kind is None:
        return None
    said = " ".join(t.text if _name(t, sentence_start) else t.lower for t in words)
    return Doer(said, force=kind == "force")


def _known(mention: Mention, entities: Mapping[str, Entity]) -> Doer | None:
    """A doer the story knows: a character, or an entity marked a force (a thing it
    declared is no doer)."""
    entity = entities.get(mention.entity) if mention.entity is not None else None
    if entity is None:
        return None
    if entity.kind == "character":
        return Doer(entity.name)
    if entity.is_force:
        return Doer(entity.name, force=True)
    return None


def _apposed(words: list[Token], sentence_start: int) -> list[Token]:
    """The name after a common noun naming a person ("colleague Ahmed" → Ahmed), or []."""
    k = len(words)
    while k > 0 and _name(words[k - 1], sentence_start):
        k -= 1
    if k == 0 or k == len(words) or lx.doer(words[k - 1].lower) != "character":
        return []
    return words[k:]


def _name(token: Token, sentence_start: int) -> bool:
    """Whether ``token`` is a proper name: capitalised where a common word would not be
    (first in its sentence, a word the dictionary knows is just capitalised there)."""
    if not token.capital:
        return False
    if token.start > sentence_start:
        return True
    w = token.lower
    known = lx.verb(w) or lx.is_adjective(w) or lx.derived_verb(w) or lx.doer(w)
    return not known and w not in lx.DETERMINERS
