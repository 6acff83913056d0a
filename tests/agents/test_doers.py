"""Doers nobody declared (issue 43, item 3), as the phased reader reads them: the lexicon's
noun classes (person, animal → a character; phenomenon, event, process → a force) and the
doer of each change, with sentences of our own."""

from __future__ import annotations

import pytest

from fabula.agents.reading.phases import lexicon as lx
from fabula.agents.reading.phases import read_story
from fabula.memory.actions import StoryAction
from fabula.memory.records import FORCE, Entity

ENTITIES = {
    "mara": Entity(id="mara", kind="character", name="Mara"),
    "jug": Entity(id="jug", kind="object", name="jug"),
    "shed": Entity(id="shed", kind="place", name="shed"),
}


def states(text: str, entities: dict[str, Entity] | None = None) -> list[StoryAction]:
    return [a for a in read_story(text, entities or ENTITIES) if a.kind == "state"]


@pytest.mark.parametrize(
    ("word", "kind"),
    [
        ("goat", "character"),  # noun.animal
        ("goats", "character"),  # a regular plural, reduced
        ("burglar", "character"),  # noun.person
        ("women", "character"),  # a plural by WordNet's detachment rules
        ("ladies", "character"),
        ("thieves", "character"),  # an irregular plural, from noun.exc
        ("coworker", "character"),  # WordNet's "co-worker", written whole
        ("gale", "force"),  # noun.phenomenon
        ("earthquake", "force"),  # noun.event
        ("frost", "force"),  # a substance first, a phenomenon next
        ("jug", None),  # an artifact
        ("machine", None),  # an artifact first: its sense of a person is not read
        ("picasso", None),  # a proper name's sense (an instance) is no doer's class
        ("zzyzx", None),  # not in WordNet
    ],
)
def test_the_lexicon_says_which_nouns_name_a_doer(word: str, kind: str | None) -> None:
    assert lx.doer(word) == kind


def test_an_undeclared_animal_is_the_doer_and_the_one_declared_character_is_not() -> None:
    [state] = states("Mara is in the shed. A hungry goat knocked over the jug.")
    assert state.clause is not None and state.clause.subject == "jug"
    assert state.actors == ("hungry goat",)
    assert not state.by_force
    assert "Mara" not in state.actors and "Mara" not in state.seen_by


def test_a_force_is_the_doer_marked_as_one() -> None:
    [state] = states("Mara is in the shed. A gale knocked the jug off the shelf.")
    assert state.actors == ("gale",) and state.by_force


def test_a_name_in_apposition_is_the_doers_name_and_who_did_not_see_is_kept() -> None:
    [state] = states("Mara is in the shed. Her neighbour Tomas emptied the jug while Mara slept.")
    assert state.actors == ("Tomas",)
    assert "mara" in {n.lower() for n in state.unseen_by}


def test_a_thing_changing_by_itself_has_no_doer() -> None:
    [state] = states("Mara is in the shed. The jug cracked.")
    assert state.actors == ()
    [broke] = states("Mara is in the shed. The old jug broke.")
    assert broke.actors == ()


def test_a_known_doer_keeps_its_known_name() -> None:
    [state] = states("Mara emptied the jug.")
    assert state.actors == ("Mara",)
    known = {**ENTITIES, "hail": Entity(id="hail", kind="object", name="hail")}
    known["hail"] = known["hail"].model_copy(update={"attributes": {"nature": FORCE}})
    [hit] = states("The hail dented the jug.", known)
    assert hit.actors == ("hail",) and hit.by_force


def test_a_pronoun_for_a_doer_met_before_names_it() -> None:
    found = states("A stray goat wandered in. It knocked over the jug.")
    tipped = [a for a in found if a.clause is not None and a.clause.subject == "jug"]
    assert [a.actors for a in tipped] == [("stray goat",)]


def test_a_doers_result_is_its_doing_too() -> None:
    found = states("The flood soaked the jug, causing it to crack.")
    assert len(found) == 2
    assert all(a.actors == ("flood",) and a.by_force for a in found)


def test_a_state_said_of_what_a_doer_met_is_not_its_act() -> None:
    """How a thing looks is said, not done: the goat finding it did not crack it."""
    [state] = states("A goat finds a jug that looks cracked.")
    assert state.clause is not None and state.clause.value == "cracked"
    assert state.actors == ()


KITCHEN = {
    **{n.lower(): Entity(id=n.lower(), kind="character", name=n) for n in ("Ann", "Ben")},
    **{n: Entity(id=n, kind="object", name=n) for n in ("scarf", "basket", "key", "pitcher")},
}


@pytest.mark.parametrize(
    ("text", "doer", "force", "value"),
    [
        ("The scarf was torn by her colleague Ahmed.", "Ahmed", False, "torn"),
        ("The basket was knocked over by the wind.", "wind", True, "knocked over"),
        ("The basket was emptied by a stray cat.", "stray cat", False, "emptied"),
        ("The key was stolen.", None, False, "stolen"),  # no "by": no doer
        ("The key was hidden by noon.", None, False, "hidden"),  # "noon" is no doer
    ],
)
def test_a_passive_names_its_doer_after_by(
    text: str, doer: str | None, force: bool, value: str
) -> None:
    [state] = states(text, KITCHEN)
    assert state.clause is not None and state.clause.value == value
    assert state.actors == ((doer,) if doer else ())
    assert state.by_force == force


def test_a_passive_by_a_declared_character_is_its_act_and_seen_by_it() -> None:
    asleep, state = states("Ben was asleep. The key was hidden by Ann.", KITCHEN)
    assert asleep.clause is not None and asleep.clause.value == "asleep"
    assert state.actors == ("Ann",) and "Ann" in state.seen_by
    assert [n.lower() for n in state.unseen_by] == ["ben"]


def test_a_swap_gives_the_slot_that_held_the_one_thing_the_other() -> None:
    """The pitcher held oat milk; a swap by a doer nobody declared leaves almond milk in
    it, in either order of words ("substituted" names the newcomer first)."""
    for swap in (
        "Her coworker swapped the oat milk for almond milk.",
        "Her coworker substituted almond milk for the oat milk.",
        "Her coworker replaced the oat milk with almond milk.",
    ):
        got = states(f"The pitcher contains oat milk. {swap}", KITCHEN)
        [(subject, attribute, value, actors)] = [
            (a.clause.subject, a.clause.attribute, a.clause.value, a.actors)
            for a in got[1:]
            if a.clause is not None
        ]
        assert (subject, attribute, value) == ("pitcher", "contents", "almond milk"), swap
        assert actors == ("coworker",), swap
    # a thing the story tracks, replaced, with nothing before that held it
    [replaced] = states("A stranger replaced the scarf with a blue one.", KITCHEN)
    assert replaced.clause is not None and replaced.clause.value == "replaced"


def test_a_theft_by_a_doer_nobody_declared_leaves_the_thing_stolen() -> None:
    [state] = states("Ann is in the kitchen. A thief stole the key.", KITCHEN)
    assert state.clause is not None and (state.clause.subject, state.clause.value) == (
        "key",
        "stolen",
    )
    assert state.actors == ("thief",) and "Ann" not in state.actors


def test_a_while_clause_after_the_act_keeps_it_from_the_one_occupied() -> None:
    [state] = states("A stray cat tipped over the basket while Ben was busy.", KITCHEN)
    assert [n.lower() for n in state.unseen_by] == ["ben"]
    [own] = states("Ann tore the scarf while humming.", KITCHEN)  # no subject: one clause
    assert own.unseen_by == () and own.actors == ("Ann",)


@pytest.mark.parametrize(("saw", "seen"), [("did not see it", False), ("saw it", True)])
def test_a_perception_of_it_names_the_event_of_the_thing_it_is(saw: str, seen: bool) -> None:
    [state] = states(f"Ann emptied the basket. Ben {saw}.", KITCHEN)
    assert ("Ben" in state.seen_by) == seen
    assert ("Ben" in state.unseen_by) == (not seen)


@pytest.mark.parametrize(
    "text",
    [
        "Ann, a talented chef, tore the scarf.",
        "Ann, a talented chef in a small village, tore the scarf.",
    ],
)
def test_a_phrase_set_beside_the_doer_names_no_one_new(text: str) -> None:
    """An apposition is the subject said again: the act stays Ann's, never a "talented
    chef" the story would then meet as a new character."""
    [state] = states(text, KITCHEN)
    assert state.actors == ("Ann",)


@pytest.mark.parametrize(
    ("text", "unseen"),
    [
        ("Ann was asleep when a stray cat tipped over the basket.", ["ann"]),
        ("Ann was asleep when her colleague Ahmed tipped over the basket.", ["ann"]),
        ("Ann was looking the other way when a stray cat tipped over the basket.", ["ann"]),
        ("Ann closed her eyes when a stray cat tipped over the basket.", ["ann"]),
        ("Ann did not notice when a stray cat tipped over the basket.", ["ann"]),
        ("Ann was reading when a stray cat tipped over the basket.", []),
    ],
)
def test_a_when_clause_is_an_act_of_its_own(text: str, unseen: list[str]) -> None:
    """The act after "when" is read (it was lost in the clause before), and whoever the
    clause before says was not perceiving does not see it."""
    [state] = [a for a in states(text, KITCHEN) if a.clause and a.clause.subject == "basket"]
    assert state.clause is not None and state.clause.value == "tipped over"
    assert sorted({n.lower() for n in state.unseen_by}) == unseen


def test_a_bare_verb_after_a_doer_nobody_declared_is_its_act_seen() -> None:
    """ "saw her colleague Ahmed empty the basket": the noun phrase ends before the verb
    (read greedily, "Ahmed empty the basket" was one phrase, and nothing was read)."""
    [state] = states("Ben saw her colleague Ahmed empty the basket.", KITCHEN)
    assert state.actors == ("Ahmed",) and state.seen_by == ("Ben",)
    assert state.clause is not None and state.clause.value == "emptied"


def test_an_act_told_again_in_a_perception_names_the_event_it_repeats() -> None:
    """ "A stray cat tipped over the basket, leaving it empty. Ann saw the cat tip over
    the basket.": Ann sees the whole earlier event (the basket empty too), not only its
    retelling; a new verb on the same thing is a new act, which names nothing earlier."""
    text = (
        "A stray cat tipped over the basket, leaving it empty. Ann saw the cat tip over the basket."
    )
    got = states(text, KITCHEN)
    empty = next(a for a in got if a.clause is not None and a.clause.value == "empty")
    assert "Ann" in empty.seen_by
    other = states(
        "Behind Ann's back, a stray cat emptied the basket. Ann saw the cat tip over the basket.",
        KITCHEN,
    )
    emptied = next(a for a in other if a.clause is not None and a.clause.value == "emptied")
    assert "Ann" not in emptied.seen_by
