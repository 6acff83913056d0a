"""A fact or belief said in names: one rule for the offline character, the lived story and
the studio's evidence page."""

from __future__ import annotations

import pytest

from fabula.memory.records import Entity, slug
from fabula.memory.sentences import called, fact_clause, fact_sentence

_KINDS = {
    "Leo": "character",
    "brass key": "object",
    "desk drawer": "object",
    "Excalibur": "object",
    "Eldoria": "place",
    "glade": "place",
}
ENTITIES = {slug(n): Entity(id=slug(n), kind=k, name=n) for n, k in _KINDS.items()}


@pytest.mark.parametrize(
    ("entity", "said"),
    [
        ("leo", "Leo"),
        ("brass_key", "the brass key"),
        ("excalibur", "Excalibur"),
        ("eldoria", "Eldoria"),
        ("glade", "the glade"),
        ("old_mill", "old mill"),
    ],
)
def test_what_a_sentence_calls_an_entity(entity: str, said: str) -> None:
    assert called(entity, ENTITIES) == said


@pytest.mark.parametrize(
    ("fact", "said"),
    [
        (("brass_key", "location", "desk_drawer", True), "the brass key is in the desk drawer"),
        (("brass_key", "location", "leo", True), "the brass key is with Leo"),
        (("excalibur", "location", "eldoria", False), "Excalibur is not in Eldoria"),
        (("leo", "location", "old_mill", True), "Leo is in the old mill"),
        (("brass_key", "colour", "dull gold", True), "the colour of the brass key is dull gold"),
        (("leo", "hair_colour", "red", False), "the hair colour of Leo is not red"),
        (("brass_key", "condition", "bent", True), "the brass key is bent"),
        (
            ("brass_key", "condition", "have a chipped tooth", True),
            "the brass key has a chipped tooth",
        ),
        (("desk_drawer", "contents", "cold soup", True), "the desk drawer holds cold soup"),
        (("desk_drawer", "contents", "letters", False), "the desk drawer does not hold letters"),
    ],
)
def test_a_fact_as_a_clause(fact: tuple[str, str, str, bool], said: str) -> None:
    assert fact_clause(*fact, ENTITIES) == said


def test_a_fact_as_a_sentence() -> None:
    """A made-up place is named bare in a sentence too (the lived story once said "in the
    Eldoria")."""
    assert fact_sentence("leo", "location", "eldoria", True, ENTITIES) == "Leo is in Eldoria."
