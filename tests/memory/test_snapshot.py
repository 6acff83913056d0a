"""The author's snapshot: every view of a branch, of one moment, in one function call."""

from __future__ import annotations

import pytest
import redis.asyncio as aredis

from fabula.memory.branching import fork
from fabula.memory.projections import (
    project_beliefs,
    project_developments,
    project_hypotheses,
    project_world,
)
from fabula.memory.snapshot import read_snapshot
from fabula.memory.store import StoryStore
from fabula.testing.stories import branch_turn, story_through
from fabula.worlds.pack import WorldPack


@pytest.fixture()
async def story(aredis_client: aredis.Redis) -> StoryStore:
    return await story_through(aredis_client, 3)


class TestSnapshot:
    async def test_it_equals_the_separate_projections(self, story: StoryStore) -> None:
        """W, every character's B, D and H are what the projections read, with the text of
        the recent turns."""
        snap = await read_snapshot(story, recent_turns=2)
        assert snap.turn == await story.head() == 3
        assert snap.entities == await story.entities()
        assert snap.world.states == (await project_world(story)).states
        assert set(snap.beliefs) == set(await story.characters())
        for character, view in snap.beliefs.items():
            assert view.beliefs == (await project_beliefs(story, character)).beliefs
        assert snap.developments == await project_developments(story)
        assert snap.hypotheses == await project_hypotheses(story)
        assert snap.recent == await story.turn_texts(2, 3)
        assert snap.branch.name == "main" and snap.branch.parent is None
        assert snap.pack_as(WorldPack) is None  # created without a pack

    async def test_a_branch_reads_its_inherited_turns_from_its_parent(
        self, story: StoryStore
    ) -> None:
        """Recent turns up to the fork come from the parent, later ones from the branch;
        the branch's entry says what it pursues."""
        alt = await fork(story, 1, "alt", pursue="h2.0")
        await alt.commit(branch_turn(2))
        snap = await read_snapshot(alt, recent_turns=5)
        assert [(t.turn, t.text) for t in snap.recent] == [
            (t.turn, t.text) for t in await alt.turn_texts(1)
        ]
        assert snap.recent[0].text == (await story.turn_texts(1, 1))[0].text
        assert snap.recent[1].text == "Mara took the brass key."
        assert (snap.branch.parent, snap.branch.fork_turn, snap.branch.pursue) == (
            "main",
            1,
            "h2.0",
        )
        assert snap.world.states == (await project_world(alt)).states
