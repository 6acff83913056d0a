"""The W, B, D and H projections on the Leo/Mara story, as of every turn, on main and on forks."""

from __future__ import annotations

import pytest
import redis.asyncio as aredis

from fabula.errors import Conflict, InvalidInput, NotFound, TurnConflict
from fabula.memory.branching import fork
from fabula.memory.delta import DeltaBuilder
from fabula.memory.projections import (
    all_beliefs_as_of,
    project_beliefs,
    project_developments,
    project_hypotheses,
    project_world,
    recall,
)
from fabula.memory.store import StoryStore
from fabula.testing.stories import (
    DEV,
    STORY,
    TEXTS,
    branch_turn,
    story_through,
    turn1,
)


@pytest.fixture()
async def story(aredis_client: aredis.Redis) -> StoryStore:
    return await story_through(aredis_client, 3)


async def views(store: StoryStore) -> tuple[object, ...]:
    """Every projection of a branch, current and at each committed turn (for equality checks)."""
    out: list[object] = []
    for t in [None, *range(await store.head() + 1)]:
        out.append((await project_world(store, as_of=t)).states)
        for holder in (["leo"], ["mara"], ["mara", "leo"]):
            out.append((await project_beliefs(store, holder, as_of=t)).beliefs)
        out.append(await project_developments(store, as_of=t))
        out.append(await project_hypotheses(store, as_of=t))
    return tuple(out)


class TestWorldAndBeliefs:
    async def test_false_belief_now(self, story: StoryStore) -> None:
        """W has the key in the hollow book; Mara knows it; Leo still believes the drawer."""
        world = await project_world(story)
        assert world.where("brass_key") == "hollow_book"
        assert world.where("leo") == "hallway"
        assert world.located_in("study") == ["desk_drawer", "hollow_book", "mara"]
        assert (await project_beliefs(story, "mara")).where("brass_key") == "hollow_book"
        leo = await project_beliefs(story, "leo")
        assert leo.where("brass_key") == "desk_drawer"
        assert leo.get("brass_key", "location").mode == "participated"  # type: ignore[union-attr]

    async def test_nested_belief(self, story: StoryStore) -> None:
        """B[mara→leo]: Mara thinks Leo believes the key is in the drawer."""
        nested = await project_beliefs(story, ["mara", "leo"])
        assert nested.holder == ("mara", "leo")
        assert nested.where("brass_key") == "desk_drawer"
        assert nested.get("brass_key", "location").mode == "inferred"  # type: ignore[union-attr]
        # the nested chain does not leak into Mara's own view, nor Leo's
        assert (await project_beliefs(story, "mara")).where("brass_key") == "hollow_book"
        assert (await project_beliefs(story, ["leo", "mara"])).beliefs == {}

    @pytest.mark.parametrize(
        ("turn", "world_key", "leo_at", "leo_key", "mara_key", "mara_leo_key"),
        [
            (0, "leo", "study", "leo", "leo", None),
            (1, "desk_drawer", "study", "desk_drawer", "desk_drawer", None),
            (2, "desk_drawer", "hallway", "desk_drawer", "desk_drawer", None),
            (3, "hollow_book", "hallway", "desk_drawer", "hollow_book", "desk_drawer"),
        ],
    )
    async def test_as_of_each_turn(
        self,
        story: StoryStore,
        turn: int,
        world_key: str,
        leo_at: str,
        leo_key: str,
        mara_key: str,
        mara_leo_key: str | None,
    ) -> None:
        """as_of(t) answers where things were, and who believed what, at turn t."""
        world = await project_world(story, as_of=turn)
        assert (world.as_of, world.where("brass_key"), world.where("leo")) == (
            turn,
            world_key,
            leo_at,
        )
        assert (await project_beliefs(story, "leo", as_of=turn)).where("brass_key") == leo_key
        assert (await project_beliefs(story, "mara", as_of=turn)).where("brass_key") == mara_key
        nested = await project_beliefs(story, ["mara", "leo"], as_of=turn)
        assert nested.where("brass_key") == mara_leo_key

    async def test_as_of_holds_nothing_from_later(self, story: StoryStore) -> None:
        """Every record in a view as of t was valid at t: valid_from <= t < valid_to."""
        for t in range(4):
            states = list((await project_world(story, as_of=t)).states.values())
            beliefs = [
                b
                for holder in (["leo"], ["mara"], ["mara", "leo"])
                for b in (await project_beliefs(story, holder, as_of=t)).beliefs.values()
            ]
            for record in [*states, *beliefs]:
                assert record.valid_from <= t, record
                assert record.valid_to is None or record.valid_to > t, record

    async def test_as_of_head_equals_current(self, story: StoryStore) -> None:
        """The view as of the head turn is the current view."""
        assert (await project_world(story, as_of=3)).states == (await project_world(story)).states
        for holder in (["leo"], ["mara"], ["mara", "leo"]):
            now = await project_beliefs(story, holder)
            assert (await project_beliefs(story, holder, as_of=3)).beliefs == now.beliefs

    async def test_unknown_character(self, story: StoryStore) -> None:
        """B for a character the story does not have raises NotFound, now and as of a turn."""
        with pytest.raises(NotFound) as info:
            await project_beliefs(story, "zed")
        assert info.value.context["character"] == "zed"
        with pytest.raises(NotFound):
            await project_beliefs(story, "zed", as_of=1)
        with pytest.raises(NotFound):
            await project_beliefs(story, ["mara", "zed"])
        with pytest.raises(NotFound):
            await project_beliefs(story, "study")  # a place holds no beliefs


class TestDevelopmentsAndHypotheses:
    async def test_development_history_as_of(self, story: StoryStore) -> None:
        """D as of t keeps only the status changes up to t; before it opened it is absent."""
        assert DEV not in await project_developments(story, as_of=0)
        statuses = [(await project_developments(story, as_of=t))[DEV].status for t in range(1, 4)]
        assert statuses == ["opened", "advanced", "resolved"]
        now = (await project_developments(story))[DEV]
        assert [h.turn for h in now.history] == [1, 2, 3]
        assert now.history[1].event == "e2.0"
        setup = await project_developments(story, as_of=0)
        assert sorted(setup) == ["d_leo_keeps_the_brass_key_safe", "d_what_is_in_the_cellar"]

    async def test_hypothesis_as_of(self, story: StoryStore) -> None:
        """H: absent before it was proposed, open before its realisation, realised after."""
        assert await project_hypotheses(story, as_of=1) == {}
        before = (await project_hypotheses(story, as_of=2))["h2.0"]
        assert (before.status, before.realised_turn) == ("open", None)
        after = (await project_hypotheses(story, as_of=3))["h2.0"]
        assert (after.status, after.realised_turn) == ("realised", 3)
        assert await project_hypotheses(story) == {"h2.0": after}
        assert await project_hypotheses(story, development="d_what_is_in_the_cellar") == {}
        # realising a hypothesis writes no fact into W by itself
        assert (await project_world(story, as_of=2)).where("brass_key") == "desk_drawer"


def _open(view: object) -> dict[str, object]:
    """A view's current records without their ``valid_to``."""
    records = getattr(view, "states", None) or getattr(view, "beliefs", {})
    return {k: r.model_copy(update={"valid_to": None}) for k, r in records.items()}


class TestForks:
    async def test_branch_sees_parent_then_its_own_turns(self, story: StoryStore) -> None:
        """A fork at 1 sees the parent through turn 1 and its own turns after it."""
        alt = await fork(story, 1, "alt")
        assert await alt.head() == 1
        assert (await alt.ancestry())[0].branch == "main"
        assert (await project_world(alt)).where("brass_key") == "desk_drawer"
        assert await project_developments(alt) == await project_developments(story, as_of=1)
        await alt.commit(branch_turn(2))
        for t in (0, 1):
            assert (await project_world(alt, as_of=t)).states == (
                await project_world(story, as_of=t)
            ).states
            assert (await project_beliefs(alt, "leo", as_of=t)).beliefs == (
                await project_beliefs(story, "leo", as_of=t)
            ).beliefs
        world = await project_world(alt)
        assert (world.where("brass_key"), world.where("leo")) == ("mara", "study")
        assert (await project_world(alt, as_of=2)).states == world.states
        assert (await project_beliefs(alt, "leo")).where("brass_key") == "mara"
        assert (await project_beliefs(alt, "leo", as_of=1)).where("brass_key") == "desk_drawer"
        assert await project_hypotheses(alt) == {}

    async def test_a_fork_of_a_long_story_is_its_parent_at_the_fork(
        self, aredis_client: aredis.Redis
    ) -> None:
        """Forked anywhere in a story of 60 busy turns (moves, tellings, nested beliefs),
        a branch holds what its parent held at the fork: W, every character's beliefs and
        nested chains, and every first-person memory (the fork writes them in one command
        per key, no longer one per record)."""
        from fabula.bench.scale import _Generator

        gen = _Generator(4)
        long = StoryStore(aredis_client, "long")
        await long.create(gen.setup(), world="synthetic", title="long")
        for turn in range(1, 61):
            await long.commit(gen.turn(turn))
        characters = await long.characters()
        nested = False
        for at in (1, 29, 60):
            child = await fork(long, at, f"at-{at}")
            # what was open at the fork is open on the branch (valid_to: closed later on the
            # parent only), so records are compared without it
            assert _open(await project_world(child)) == _open(await project_world(long, as_of=at))
            for c in characters:
                mine = _open(await project_beliefs(child, c))
                assert mine == _open(await project_beliefs(long, c, as_of=at))
                held = {
                    (b.chain, b.slot, b.value, b.id) for b in await all_beliefs_as_of(child, c, at)
                }
                had = {
                    (b.chain, b.slot, b.value, b.id) for b in await all_beliefs_as_of(long, c, at)
                }
                assert held == had
                nested = nested or any(">" in chain for chain, *_ in had)
                assert await recall(child, c, last=10**6) == await recall(
                    long, c, last=10**6, as_of=at
                )
        assert nested  # nested chains were copied too

    async def test_parent_unchanged_by_branch_commits(self, story: StoryStore) -> None:
        """Committing on a branch changes no key and no view of the parent."""
        alt = await fork(story, 1, "alt")
        before = await views(story)
        raw_before = {k async for k in story.client.scan_iter(match="*:main:*")}
        await alt.commit(branch_turn(2))
        await alt.commit(branch_turn(3, "Mara took the brass key again."))
        assert await views(story) == before
        assert {k async for k in story.client.scan_iter(match="*:main:*")} == raw_before
        assert await story.head() == 3

    async def test_fork_of_a_fork(self, story: StoryStore) -> None:
        """A fork of a branch reads main, then the branch, then its own turns."""
        alt = await fork(story, 1, "alt")
        await alt.commit(branch_turn(2))
        alt2 = await fork(alt, 2, "alt2")
        assert [(a.branch, a.through) for a in await alt2.ancestry()] == [
            ("alt", 2),
            ("main", 1),
        ]
        third = DeltaBuilder(3, "Mara put the brass key in the hollow book.")
        put = third.event("put", third.span(0, 42), actor="mara", witnesses=["mara"])
        third.state("brass_key", "location", "hollow_book", event=put)
        third.belief(
            ["mara"], "brass_key", "location", "hollow_book", mode="participated", event=put
        )
        await alt2.commit(third.build())
        keys_at = [(await project_world(alt2, as_of=t)).where("brass_key") for t in range(4)]
        assert keys_at == ["leo", "desk_drawer", "mara", "hollow_book"]
        leo_at = [
            (await project_beliefs(alt2, "leo", as_of=t)).where("brass_key") for t in range(4)
        ]
        assert leo_at == ["leo", "desk_drawer", "mara", "mara"]
        texts = await alt2.turn_texts()
        assert [t.text for t in texts] == [TEXTS[1], "Mara took the brass key.", third.text]
        events = await alt2.events(["e1.0", "e2.0", "e3.0"])
        assert [e.kind for e in events] == ["put", "take", "put"]
        assert (await project_world(alt)).where("brass_key") == "mara"
        assert (await project_world(story)).where("brass_key") == "hollow_book"

    async def test_turn_texts_read_through_the_parent(self, story: StoryStore) -> None:
        """turn_texts and events on a branch come from the parent up to the fork."""
        alt = await fork(story, 2, "alt")
        await alt.commit(branch_turn(3))
        texts = await alt.turn_texts()
        assert [(t.turn, t.text) for t in texts] == [
            (1, TEXTS[1]),
            (2, TEXTS[2]),
            (3, "Mara took the brass key."),
        ]
        assert [e.actor for e in await alt.events(["e2.0", "e3.0"])] == ["leo", "mara"]
        assert [t.text for t in await story.turn_texts(first=3)] == [TEXTS[3]]

    async def test_inherited_turn_resent_on_branch(self, story: StoryStore) -> None:
        """A turn the branch inherited, re-sent on it, is a duplicate; other content conflicts."""
        alt = await fork(story, 1, "alt")
        assert (await alt.commit(turn1())).status == "duplicate"
        with pytest.raises(TurnConflict):
            await alt.commit(branch_turn(1))

    async def test_branch_refers_to_parent_events(self, story: StoryStore) -> None:
        """A branch's delta may cite an event the parent committed before the fork, not after."""
        alt = await fork(story, 1, "alt")
        text = "Leo remembered the drawer."
        b = DeltaBuilder(2, text)
        b.event("observe", b.span(0, len(text)), actor="leo", causes=["e1.0"])
        assert (await alt.commit(b.build())).status == "committed"
        alt_b = await fork(story, 1, "alt_b")
        late = DeltaBuilder(2, text)
        late.event("observe", late.span(0, len(text)), actor="leo", causes=["e3.0"])
        with pytest.raises(InvalidInput) as info:
            await alt_b.commit(late.build())
        assert info.value.context["field"] == "events[0].causes[0]"

    async def test_fork_refuses_bad_requests(self, story: StoryStore) -> None:
        """Forking twice under one name, at an uncommitted turn, or of no story is refused."""
        await fork(story, 1, "alt")
        with pytest.raises(Conflict):  # the story's state refuses it: a conflict
            await fork(story, 2, "alt")
        with pytest.raises(InvalidInput):
            await fork(story, 4, "later")
        with pytest.raises(NotFound):
            await fork(StoryStore(story.client, "nosuch"), 0, "alt")
        with pytest.raises(NotFound):
            await StoryStore(story.client, STORY, "ghost").require()
