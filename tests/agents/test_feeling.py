"""A character's liking or disliking, read by the phases (:mod:`fabula.agents.reading.
phases.feeling`) from sentences of our own; then through the real builder and store."""

from __future__ import annotations

import redis.asyncio as aredis

from fabula.agents.memory_builder import OfflineMemoryBuilder
from fabula.agents.reading.phases import read_story
from fabula.agents.reading.phases.feeling import in_mind, sign_of_noun, verb_sign
from fabula.agents.reading.phases.tokens import sentences
from fabula.agents.reading.prose import read_prose
from fabula.graph.commit import CommitPath, commit_text
from fabula.memory.delta import DeltaBuilder
from fabula.memory.projections import project_beliefs, project_world
from fabula.memory.records import Entity, EntityKind
from fabula.memory.store import StoryStore


def _cast(*specs: tuple[EntityKind, str]) -> dict[str, Entity]:
    out = {}
    for kind, name in specs:
        sid = name.lower().replace(" ", "_")
        out[sid] = Entity(id=sid, kind=kind, name=name)
    return out


CAST = _cast(
    ("character", "Mira Holt"),
    ("character", "Tobias"),
    ("character", "Ana"),
    ("character", "Bo"),
    ("object", "scarf"),
    ("object", "lamp"),
    ("object", "strawberry"),
    ("object", "pineapple"),
    ("object", "crate"),
)


def feels(text: str, cast: dict[str, Entity] = CAST) -> list[tuple[str, str, str | None]]:
    return [(a.actors[0], a.obj or "", a.verb) for a in read_story(text, cast) if a.kind == "feel"]


class TestWords:
    def test_verbs_and_nouns_of_feeling_are_wordnets(self) -> None:
        assert verb_sign("adored") == (True, True)
        assert verb_sign("disliked") == (False, False)
        assert verb_sign("moved") is None
        assert sign_of_noun("fondness") is True
        assert sign_of_noun("hatred") is False
        assert sign_of_noun("softness") is None

    def test_a_view_is_told_by_in_and_an_owner(self) -> None:
        assert in_mind(sentences("In her mind, Bo loved it.")[0].tokens)
        assert not in_mind(sentences("In the garden, Bo loved it.")[0].tokens)


class TestVerbs:
    def test_a_feeling_and_its_strength(self) -> None:
        assert feels("Mira adored scarves, while Tobias despised them.") == [
            ("mira_holt", "scarf", "loves"),
            ("tobias", "scarf", "hates"),
        ]
        assert feels("Bo liked the lamp.") == [("bo", "lamp", "likes")]

    def test_a_negation_turns_it_over(self) -> None:
        assert feels("Bo did not like the lamp.") == [("bo", "lamp", "dislikes")]

    def test_an_adverb_of_time_before_the_verb(self) -> None:
        assert feels("Ana had always detested pineapple.") == [("ana", "pineapple", "hates")]

    def test_a_plural_and_a_general_word_name_the_thing(self) -> None:
        assert feels("Ana despised strawberries.") == [("ana", "strawberry", "hates")]
        fruit = _cast(("character", "Bo"), ("object", "pineapple"), ("object", "lamp"))
        assert feels("Bo loved the tropical fruit.", fruit) == [("bo", "pineapple", "loves")]
        # of two fruits, "the fruit" names neither
        assert feels("Bo loved the tropical fruit.") == []

    def test_it_is_the_thing_last_named(self) -> None:
        text = "Tobias noticed the lamp. He adored it."
        assert feels(text) == [("tobias", "lamp", "loves")]
        text = "Ana and Bo argued about the scarf. Ana loathed it."
        assert feels(text) == [("ana", "scarf", "hates")]


class TestNouns:
    def test_a_fondness_and_a_dislike_and_their_owner(self) -> None:
        assert feels("Tobias had a deep fondness for the scarf.") == [("tobias", "scarf", "likes")]
        assert feels("Mira Holt's dislike of the scarf was well known.") == [
            ("mira_holt", "scarf", "dislikes")
        ]
        assert feels("It was plain - Bo's love for the lamp had grown.") == [
            ("bo", "lamp", "likes")
        ]

    def test_a_possessive_pronoun_with_a_rival_is_not_read(self) -> None:
        """ "Her dislike", where another character was as salient, may be either's: no
        feeling is read rather than one given to the wrong character."""
        text = "Ana waved at Bo. Despite her dislike for the lamp, she kept it."
        assert feels(text) == []

    def test_the_owner_of_a_subject_is_the_next_pronoun(self) -> None:
        text = "Bo sat down. Ana's patience ran out, fueled by her dislike for the lamp."
        assert feels(text) == [("ana", "lamp", "dislikes")]

    def test_the_same_feeling_is_the_one_said_before(self) -> None:
        """ "Shared the same hatred", "the same sentiment": the feeling before, its thing
        and its sign (a "sentiment" is neither liking nor disliking by itself)."""
        text = "Ana despised the lamp. Bo shared the same sentiment."
        assert feels(text) == [("ana", "lamp", "hates"), ("bo", "lamp", "hates")]
        text = "Ana adored scarves. Bo, her neighbor, shared the same fondness."
        assert feels(text) == [("ana", "scarf", "loves"), ("bo", "scarf", "loves")]
        assert feels("Bo shared the same hatred.") == []  # no feeling before
        text = "Ana despised the lamp. Bo did not share the same hatred."
        assert feels(text) == [("ana", "lamp", "hates")]

    def test_a_feeling_known_or_seen_is_a_fact(self) -> None:
        """ "Knew how much Bo hated it" tells Bo's feeling as a fact ("know" is factive);
        "believed that Bo hated it" is the believer's view, and a denied knowing or a
        view ("In her mind") tells nothing."""
        assert feels("Ana knew how much Bo hated the lamp.") == [("bo", "lamp", "hates")]
        assert feels("Ana saw that Bo loved the scarf.") == [("bo", "scarf", "loves")]
        assert feels("Ana believed that Bo hated the lamp.") == []
        assert feels("Ana did not know that Bo hated the lamp.") == []
        assert feels("In her mind, Ana knew Bo loved the scarf.") == []

    def test_a_possessive_apposition_keeps_the_subject(self) -> None:
        """ "Bo, her neighbor, hated it too": Bo's feeling, not the neighbor's."""
        text = "Ana hated the lamp. Bo, her neighbor, hated it too."
        assert feels(text) == [("ana", "lamp", "hates"), ("bo", "lamp", "hates")]


class TestGroups:
    def test_characters_joined_by_and_share_it(self) -> None:
        assert feels("Ana and Bo shared a common hatred for lamps.") == [
            ("ana", "lamp", "dislikes"),
            ("bo", "lamp", "dislikes"),
        ]

    def test_they_both_after_a_group(self) -> None:
        text = "Ana and Bo had something in common - they both despised pineapple."
        assert feels(text) == [("ana", "pineapple", "hates"), ("bo", "pineapple", "hates")]
        text = "Ana and Bo were friends. Their love for the scarf was famous."
        assert feels(text) == [("ana", "scarf", "likes"), ("bo", "scarf", "likes")]


class TestNoFeeling:
    def test_a_feeling_another_is_believed_to_have(self) -> None:
        assert feels("Believing that Ana despised the lamp, Bo smiled.") == []
        assert feels("Bo assumed Ana loved the lamp.") == []
        assert feels("Assuming that Tobias had a fondness for the scarf, Mira smiled.") == []
        assert feels("In her mind, Bo shared her love for the lamp.") == []

    def test_a_hoped_or_denied_feeling(self) -> None:
        assert feels("Bo hoped that Ana would love the lamp.") == []
        assert feels("Ana, despite not sharing the same fondness for pineapple, smiled.") == []

    def test_a_property_of_the_thing_or_a_care(self) -> None:
        assert feels("Mira took care of the scarf.") == []
        assert feels("Tobias noticed the softness of the scarf.") == []

    def test_the_prose_reader_reads_no_feeling(self) -> None:
        """The feeling is the phases' alone: the prose reader reads places."""
        assert [a for a in read_prose("Bo adored the lamp.", CAST) if a.kind == "feel"] == []


async def test_a_feeling_reaches_its_holders_mind(aredis_client: aredis.Redis) -> None:
    """Through the commit: the holder holds its feeling, and the world does too."""
    store = StoryStore(aredis_client, "feeling")
    setup = DeltaBuilder(0, "")
    for kind, name in (("character", "Ana"), ("character", "Bo"), ("object", "lamp")):
        setup.entity(kind, name)
    await store.create(setup.build(), world="test", title="test")
    path = CommitPath(memory_builder=OfflineMemoryBuilder(read_story))
    await commit_text(path, store, 1, "Ana and Bo shared a deep dislike for the lamp.")
    for who in ("ana", "bo"):
        mine = (await project_beliefs(store, who)).get(who, "feeling about lamp")
        assert mine is not None and mine.value == "dislikes"
    assert (await project_world(store)).value("ana", "feeling about lamp") == "dislikes"
