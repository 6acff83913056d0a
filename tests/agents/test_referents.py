"""Every name a model returns is a known entity of the right kind, or explicitly new.

Through the real ChatOpenAI over HTTP to the test server, on hollow_book after its opening
(Leo in the hallway; Mara in the study; the brass key in the hollow book).
"""

from __future__ import annotations

from typing import Any

import pytest

from fabula.agents.contracts import TurnPlan
from fabula.agents.llm import make_client
from fabula.agents.memory_builder.model import ModelMemoryBuilder, second_readings
from fabula.agents.memory_builder.offline import read_controlled
from fabula.agents.views import author_view
from fabula.errors import ModelOutputError
from fabula.graph.service import Fabula
from fabula.settings import Settings
from fabula.testing.model import STORY, FakeOpenAI, action


def builder(settings: Settings) -> ModelMemoryBuilder:
    # the model reads every prose sentence: the offline reader first is controlled English
    return ModelMemoryBuilder(make_client(settings.model, "memory_builder"), reader=read_controlled)


def feedback(fake: FakeOpenAI, n: int) -> str:
    return str(fake.requests[n]["messages"][-1]["content"])


def reply(fake: FakeOpenAI, *actions: dict[str, Any], new: list[dict[str, str]] | None = None):
    fake.reply_json({"actions": list(actions), "new_entities": new or []})


TEXT = "Mara lifted the brass key from its hiding place."  # free prose: the model reads it
TAKE = action("take", 0, len(TEXT), actors=["Mara"], obj="the Brass Key")


class TestExtractedNames:
    async def test_a_name_resolves_to_the_known_entity(
        self, fab: Fabula, fake_openai: FakeOpenAI, settings: Settings
    ) -> None:
        """Reproduction: "the brass key" became a new entity the_brass_key, which Mara then
        held. Now a name resolves by id, name or alias, case-insensitively, an article
        aside: Mara holds the brass key and nothing new enters the story."""
        reply(fake_openai, TAKE)
        delta = await builder(settings).build(fab.store(STORY), 4, TEXT)
        assert delta.entities == ()
        assert [(s.subject, s.value) for s in delta.states] == [("brass_key", "mara")]

    async def test_an_unknown_name_is_fed_back(
        self, fab: Fabula, fake_openai: FakeOpenAI, settings: Settings
    ) -> None:
        reply(fake_openai, TAKE | {"obj": "golden key"})
        reply(fake_openai, TAKE)
        delta = await builder(settings).build(fab.store(STORY), 4, TEXT)
        assert "actions.0.obj: no known object called 'golden key'" in feedback(fake_openai, 1)
        assert "new_entities" in feedback(fake_openai, 1)
        assert delta.entities == ()

    async def test_a_name_of_the_wrong_kind_is_fed_back(
        self, fab: Fabula, fake_openai: FakeOpenAI, settings: Settings
    ) -> None:
        """Reproduction: a character given as a place moved Leo "into" Mara."""
        text = "Leo went to Mara."
        reply(fake_openai, action("go", 0, len(text), actors=["Leo"], place="Mara"))
        reply(fake_openai, action("go", 0, len(text), actors=["Leo"], place="study"))
        delta = await builder(settings).build(fab.store(STORY), 4, text)
        assert "actions.0.place: 'Mara' is a character, not a place" in feedback(fake_openai, 1)
        assert ("leo", "study") in [(s.subject, s.value) for s in delta.states]

    async def test_an_explicitly_new_entity_is_brought_in(
        self, fab: Fabula, fake_openai: FakeOpenAI, settings: Settings
    ) -> None:
        text = "Mara found a silver coin and took it."
        take = action("take", 0, len(text), actors=["Mara"], obj="silver coin")
        reply(fake_openai, take, new=[{"name": "silver coin", "kind": "object"}])
        delta = await builder(settings).build(fab.store(STORY), 4, text)
        assert [(e.id, e.kind) for e in delta.entities] == [("silver_coin", "object")]

    async def test_retries_are_bounded_and_nothing_is_built(
        self, fab: Fabula, fake_openai: FakeOpenAI, settings: Settings
    ) -> None:
        for _ in range(3):
            reply(fake_openai, TAKE | {"actors": ["Ghost"]})
        with pytest.raises(ModelOutputError, match="ExtractedActions after 3 attempts"):
            await builder(settings).build(fab.store(STORY), 4, TEXT)
        assert "actions.0.actors: no known character called 'Ghost'" in feedback(fake_openai, 2)
        assert await fab.store(STORY).head() == 3


class TestCritic:
    async def test_a_deed_on_an_object_nobody_placed_is_reported(
        self, fab: Fabula, fake_openai: FakeOpenAI, settings: Settings
    ) -> None:
        """The critic used to skip an object it did not know; now taking, putting or
        giving one the story never placed is reported."""
        text = "Mara took the silver coin."
        take = action("take", 0, len(text), actors=["Mara"], obj="silver coin")
        reply(fake_openai, take, new=[{"name": "silver coin", "kind": "object"}])
        store = fab.store(STORY)
        delta = await builder(settings).build(store, 4, text)
        view = await author_view(store)
        findings = fab.roles.critic.critique(view, delta, TurnPlan(scene_goal="x", focal=("mara",)))
        (finding,) = [f for f in findings if f.kind == "referent"]
        assert "silver coin" in finding.message and finding.quote == text


class TestWitnesses:
    async def test_a_witness_the_model_names_who_is_elsewhere_is_a_finding_not_a_belief(
        self, fab: Fabula, fake_openai: FakeOpenAI, settings: Settings
    ) -> None:
        """Reproduction (issue 45, High 4): a reply saying Leo (in the hallway) saw Mara
        take the key in the study gave Leo a belief he could not have. Witnesses are who
        is there: the name is a ``reading`` finding, and Leo learns nothing."""
        reply(fake_openai, TAKE | {"seen_by": ["Leo"]})
        with second_readings() as readings:
            delta = await builder(settings).build(fab.store(STORY), 4, TEXT)
        assert [(s.subject, s.value) for s in delta.states] == [("brass_key", "mara")]
        assert not [b for b in delta.beliefs if b.holder == ("leo",)]
        assert all("leo" not in e.witnesses for e in delta.events)
        (finding,) = readings
        assert finding.kind == "reading" and finding.quote == TEXT
        assert "Leo" in finding.message and "not there" in finding.message

    async def test_a_witness_who_is_there_changes_nothing(
        self, fab: Fabula, fake_openai: FakeOpenAI, settings: Settings
    ) -> None:
        """Naming someone present is no finding: they witness it because they are there."""
        store = fab.store(STORY)
        reply(fake_openai, TAKE)
        plain = await builder(settings).build(store, 4, TEXT)
        reply(fake_openai, TAKE | {"seen_by": ["Mara"]})
        with second_readings() as readings:
            named = await builder(settings).build(store, 4, TEXT)
        assert readings == []
        assert named.beliefs == plain.beliefs

    async def test_a_state_one_did_not_see_is_in_the_world_not_in_their_mind(
        self, fab: Fabula, fake_openai: FakeOpenAI, settings: Settings
    ) -> None:
        """A state the model reads with who did not see it (``unseen_by``, issue 43):
        accepted, true in W, and not in the mind of Leo, who is in the hallway where it is
        told but did not notice; told without it, Leo sees it."""
        text = "Though Leo never noticed, the brass key had gone dull."
        clause = {"subject": "the brass key", "attribute": "condition", "value": "dull"}
        dull = action("state", 0, len(text), clause=clause, seen_by=[], unseen_by=["Leo"])
        store = fab.store(STORY)
        for unseen, leo_sees in ((["Leo"], False), ([], True)):
            reply(fake_openai, dull | {"unseen_by": unseen})
            with second_readings() as readings:
                delta = await builder(settings).build(store, 4, text)
            assert readings == []
            assert [(s.subject, s.attribute, s.value) for s in delta.states] == [
                ("brass_key", "condition", "dull")
            ]
            held = {(b.subject, b.value) for b in delta.beliefs if b.holder == ("leo",)}
            assert (("brass_key", "dull") in held) == leo_sees

    async def test_a_state_seen_by_one_elsewhere_or_unknown_is_a_finding(
        self, fab: Fabula, fake_openai: FakeOpenAI, settings: Settings
    ) -> None:
        """A state told in the hallway that the model says Mara (in the study) saw, and a
        Ghost nobody knows: findings beside the sentence, and Mara believes nothing of it;
        Leo, there, sees it."""
        text = "The brass key had gone dull, and Mara saw it happen."
        clause = {"subject": "brass key", "attribute": "condition", "value": "dull"}
        dull = action("state", 0, len(text), clause=clause, seen_by=["Mara", "Ghost"], unseen_by=[])
        reply(fake_openai, dull)
        with second_readings() as readings:
            delta = await builder(settings).build(fab.store(STORY), 4, text)
        assert [(s.subject, s.value) for s in delta.states] == [("brass_key", "dull")]
        assert not [b for b in delta.beliefs if b.holder == ("mara",) and b.value == "dull"]
        assert [b.subject for b in delta.beliefs if b.holder == ("leo",)] == ["brass_key"]
        messages = sorted(f.message for f in readings)
        assert len(messages) == 2 and all(f.quote == text for f in readings)
        assert "Ghost saw this; no known character" in messages[0]
        assert "Mara saw this; not there (hallway)" in messages[1]

    async def test_a_witness_the_story_never_placed_is_kept_where_the_text_names_them(
        self, fab: Fabula, fake_openai: FakeOpenAI, settings: Settings
    ) -> None:
        """Noor, new to the story, is placed nowhere: presence cannot judge her, so the
        text does. Named in it, she saw the state; Zed, brought in but never named, is a
        finding and learns nothing."""
        text = "Noor, a neighbour, saw that the brass key had gone dull."
        clause = {"subject": "brass key", "attribute": "condition", "value": "dull"}
        dull = action("state", 0, len(text), clause=clause, seen_by=["Noor", "Zed"], unseen_by=[])
        new = [{"name": "Noor", "kind": "character"}, {"name": "Zed", "kind": "character"}]
        reply(fake_openai, dull, new=new)
        with second_readings() as readings:
            delta = await builder(settings).build(fab.store(STORY), 4, text)
        held = {(b.holder, b.subject, b.value) for b in delta.beliefs}
        assert (("noor",), "brass_key", "dull") in held
        assert not [h for h in held if h[0] == ("zed",)]
        (finding,) = readings
        assert "Zed saw this; not named in the text" in finding.message

    async def test_a_models_change_in_any_tense_is_one_value(
        self, fab: Fabula, fake_openai: FakeOpenAI, settings: Settings
    ) -> None:
        """A model's condition is given as the state it leaves, as the reader gives one:
        "has tarnished", "tarnishes" and "is tarnishing" are all ``tarnished``; a condition
        that is no verb form, and contents, stay as told."""
        text = "Left in the damp hallway, the brass key tarnished over the winter."
        store = fab.store(STORY)
        told = {
            "has tarnished": "tarnished",
            "tarnishes": "tarnished",
            "Is tarnishing": "tarnished",
            "dull": "dull",
            "has a crack": "has a crack",
        }
        for value, expected in told.items():
            clause = {"subject": "brass key", "attribute": "condition", "value": value}
            reply(fake_openai, action("state", 0, len(text), clause=clause))
            delta = await builder(settings).build(store, 4, text)
            assert [(s.attribute, s.value) for s in delta.states] == [("condition", expected)]
