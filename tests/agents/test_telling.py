"""What one character tells another, read by the phases (:mod:`fabula.agents.reading.
phases.telling`) from sentences of our own; then who comes to believe it, in Redis."""

from __future__ import annotations

import redis.asyncio as aredis

from fabula.agents.memory_builder import OfflineMemoryBuilder
from fabula.agents.reading.phases import read_story
from fabula.graph.commit import CommitPath, commit_text
from fabula.memory.delta import DeltaBuilder
from fabula.memory.projections import project_beliefs, project_world
from fabula.memory.records import Entity
from fabula.memory.store import StoryStore

CAST: dict[str, Entity] = {
    sid: Entity(id=sid, kind=kind, name=name)
    for sid, kind, name in (
        ("ann", "character", "Ann"),
        ("bo", "character", "Bo"),
        ("cal", "character", "Cal"),
        ("jar", "object", "jar"),
    )
}


def told(text: str) -> list[tuple[str, tuple[str, ...], str, str, str]]:
    return [
        (a.kind, a.listeners, a.clause.subject, a.clause.attribute, a.clause.value)
        for a in read_story(text, CAST)
        if a.kind in ("tell", "inform") and a.clause is not None
    ]


class TestReading:
    def test_a_state_told_to_a_listener(self) -> None:
        expected = [("inform", ("Bo",), "jar", "condition", "empty")]
        assert told("Ann told Bo that the jar was empty.") == expected
        assert told("Ann told Bo the jar was empty.") == expected
        assert told("Ann shouted to Bo that the jar was empty.") == expected

    def test_a_whisper_is_private(self) -> None:
        assert told("Ann whispered to Bo that the jar was cracked.") == [
            ("tell", ("Bo",), "jar", "condition", "cracked")
        ]
        assert told("Ann quietly told Bo that the jar was cracked.")[0][0] == "tell"

    def test_a_whisper_to_no_one_named_is_told_to_no_one(self) -> None:
        """ "Ann whispered that …": whoever heard it, the text does not say. (This
        sentence once made the reader raise: a private telling with no listener.)"""
        assert told("Ann whispered that the jar was empty.") == []
        assert told("Ann quietly said that the jar was empty.") == []

    def test_said_with_no_listener_is_told_to_those_present(self) -> None:
        assert told("Ann announced that the jar was empty.") == [
            ("inform", (), "jar", "condition", "empty")
        ]

    def test_a_clause_of_cues_is_what_is_told_not_the_speakers_state(self) -> None:
        """ "Cal was asleep" is what Ann says, not a cue that Ann perceived nothing."""
        assert told("Ann told Bo that Cal was asleep.") == [
            ("inform", ("Bo",), "Cal", "condition", "asleep")
        ]

    def test_nothing_is_told_by_a_denial_a_modal_a_question_or_a_belief(self) -> None:
        assert told("Ann did not tell Bo that the jar was empty.") == []
        assert told("Ann would tell Bo that the jar was empty.") == []
        assert told("Ann asked Bo whether the jar was empty.") == []
        assert told("Ann told Bo to leave.") == []
        assert told("Ann thought Bo had told Cal that the jar was empty.") == []


async def _story(client: aredis.Redis, text: str) -> StoryStore:
    store = StoryStore(client, "telling")
    setup = DeltaBuilder(0, "")
    for kind, name in (
        ("character", "Ann"),
        ("character", "Bo"),
        ("character", "Cal"),
        ("object", "jar"),
        ("place", "kitchen"),
        ("place", "garden"),
    ):
        setup.entity(kind, name)
    await store.create(setup.build(), world="test", title="test")
    path = CommitPath(memory_builder=OfflineMemoryBuilder(read_story))
    await commit_text(path, store, 1, text)
    return store


_PLACES = "Ann entered the kitchen. Bo entered the kitchen. Cal entered the garden. "


async def test_a_telling_reaches_those_who_hear_it(aredis_client: aredis.Redis) -> None:
    """Bo, in the kitchen, is told and believes it; Cal, in the garden, hears nothing;
    the world holds nothing of what was only said."""
    store = await _story(aredis_client, _PLACES + "Ann told Bo that the jar was empty.")
    belief = (await project_beliefs(store, "bo")).get("jar", "condition")
    assert belief is not None and belief.value == "empty"
    assert (await project_beliefs(store, "cal")).get("jar", "condition") is None
    assert (await project_world(store)).value("jar", "condition") is None


async def test_a_whisper_is_heard_by_its_listener_alone(aredis_client: aredis.Redis) -> None:
    text = "Ann, Bo and Cal entered the kitchen. Ann whispered to Bo that the jar was cracked."
    store = await _story(aredis_client, text)
    belief = (await project_beliefs(store, "bo")).get("jar", "condition")
    assert belief is not None and belief.value == "cracked"
    assert (await project_beliefs(store, "cal")).get("jar", "condition") is None


async def test_a_false_telling_is_a_false_belief_in_the_minds(aredis_client: aredis.Redis) -> None:
    """Told a state that is not so, the listener holds it as told, and the Minds grid
    shows the belief false beside the world's."""
    from fabula.graph.service.reading import minds

    text = (
        "Ann entered the kitchen. The jar was full. Bo entered the kitchen. "
        "Ann told Bo that the jar was empty."
    )
    store = await _story(aredis_client, text)
    assert (await project_world(store)).value("jar", "condition") == "full"
    belief = (await project_beliefs(store, "bo")).get("jar", "condition")
    assert belief is not None and belief.value == "empty" and belief.mode == "told_public"
    grid = await minds(store)
    [row] = [r for r in grid.grid if (r.subject, r.attribute) == ("jar", "condition")]
    [cell] = [c for c in row.cells if c.character == "bo"]
    assert cell.status == "false" and cell.value == "empty"
