"""A fact or belief said as a sentence of names, as every reader of a story is shown it.

One rule names what a story knows (:func:`called`): a character or a proper name bare
("Leo", "Excalibur"; a character met only as a doer by what it is, "the stray cat"), a
place as :func:`~fabula.memory.index.general.the_place` says it ("the glade", "Eldoria"),
anything else as "the" thing ("the brass key"). A fact or belief is then a clause of those
names (:func:`fact_clause`: "the brass key is in the desk drawer", "the brass key is with
Leo", "the colour of the brass key is dull gold") or a sentence (:func:`fact_sentence`).
The offline character speaks its beliefs with it, the lived story lists them with it, and
the studio's evidence page shows them with it.
"""

from __future__ import annotations

from collections.abc import Mapping

from fabula.memory.index.general import the_place
from fabula.memory.records import Entity


def called(entity_id: str, entities: Mapping[str, Entity], *, place: bool = False) -> str:
    """``entity_id`` as a sentence names it, from ``entities`` (id → entity); an id it does
    not hold is its words, said as a place when ``place``."""
    entity = entities.get(entity_id)
    if entity is None:
        words = entity_id.replace("_", " ")
        return the_place(words) if place else words
    if entity.kind == "place":
        return the_place(entity.name)
    if (entity.kind == "character" and not entity.is_extra) or entity.name[:1].isupper():
        return entity.name
    return f"the {entity.name}"  # an extra met as "a stray cat" is "the stray cat"


def fact_clause(
    subject: str, attribute: str, value: str, polarity: bool, entities: Mapping[str, Entity]
) -> str:
    """A fact or belief as a clause of names ("the brass key is not in the desk drawer")."""
    be = "is" if polarity else "is not"
    thing = called(subject, entities)
    if attribute == "location":
        holder = entities.get(value)
        if holder is not None and holder.kind == "character":
            return f"{thing} {be} with {holder.name}"
        return f"{thing} {be} in {called(value, entities, place=True)}"
    if attribute == "condition":
        # a condition is said of the thing: "the kettle is cracked", "the tree has
        # sturdy branches" (never "the condition of the kettle is cracked")
        if value.startswith("have "):
            return f"{thing} {'has' if polarity else 'does not have'} {value[5:]}"
        return f"{thing} {be} {value}"
    if attribute == "contents":
        return f"{thing} {'holds' if polarity else 'does not hold'} {value}"
    return f"the {attribute.replace('_', ' ')} of {thing} {be} {value}"


def fact_sentence(
    subject: str, attribute: str, value: str, polarity: bool, entities: Mapping[str, Entity]
) -> str:
    """A fact or belief as a sentence of names ("The brass key is in the desk drawer.")."""
    said = fact_clause(subject, attribute, value, polarity, entities)
    return said[0].upper() + said[1:] + "."
