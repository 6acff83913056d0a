"""A crowded cast: nested beliefs cost what the cast and its witnesses make, not N·(N−1)³.

Issue 19: every chain over the witnesses of an observed fact was written, to ``belief_depth``
4, so a pack of 20 characters in one room made a 47 MB delta (refused only once built) and
100 took 23 GB. These tests build stories of a crowd in one room with the real tracker and
the real commit, and check that what a turn writes and what the story holds grow about
linearly in the cast, that every nested chain still reads as before (at every turn, on a
fork), that a turn too large is refused in one line before its delta is built, and that
forks and deletion stay cheap.
"""

from __future__ import annotations

import pytest
import redis.asyncio as aredis

from fabula.agents.memory_builder.offline import OfflineMemoryBuilder
from fabula.errors import LimitExceeded
from fabula.limits import Limits
from fabula.memory import keys
from fabula.memory.branching import fork
from fabula.memory.projections import mind_as_of, project_beliefs
from fabula.memory.store import StoryStore
from fabula.worlds.loader import setup_delta
from fabula.worlds.pack import WorldPack

OPENING = (
    "Leo put the brass key in the desk drawer.",
    "Leo went to the hallway.",
    "Mara moved the brass key to the hollow book.",
)


def crowd_pack(guests: int) -> WorldPack:
    """The Hollow Book with ``guests`` more characters in the study."""
    characters = [
        {"name": "Leo", "location": "study"},
        {"name": "Mara", "location": "study"},
        *({"name": f"Guest{i}", "location": "study"} for i in range(guests)),
    ]
    return WorldPack.model_validate(
        {
            "id": "crowd",
            "title": "Crowd",
            "premise": "A crowded study.",
            "places": [{"name": "study"}, {"name": "hallway"}],
            "characters": characters,
            "objects": [
                {"name": "desk drawer", "location": "study", "container": True},
                {"name": "hollow book", "location": "study", "container": True},
                {"name": "brass key", "location": "Leo"},
            ],
        }
    )


async def _story_keys(client: aredis.Redis, story: str) -> int:
    return len([k async for k in client.scan_iter(match=keys.story_pattern(story), count=1000)])


async def _crowd_story(
    client: aredis.Redis, story: str, guests: int, turns: tuple[str, ...] = OPENING
) -> tuple[StoryStore, int]:
    """A story of the crowd with ``turns`` committed; returns it and the records written."""
    store = StoryStore(client, story)
    pack = crowd_pack(guests)
    await store.create(setup_delta(pack), world=pack.id, title=pack.title, rules=pack.rules)
    written = 0
    for turn, text in enumerate(turns, start=1):
        delta = await OfflineMemoryBuilder().build(store, turn, text)
        written += len(delta.beliefs) + len(getattr(delta, "shared", ()))
        await store.commit(delta)
    return store, written


class TestCrowdCost:
    async def test_records_and_keys_grow_linearly_with_the_cast(
        self, aredis_client: aredis.Redis
    ) -> None:
        """4 times the cast writes at most ~4 times the records and holds ~4 times the keys
        (it was ~250 times: every chain of 4 over the witnesses)."""
        _, records_small = await _crowd_story(aredis_client, "small", 4)  # 6 characters
        _, records_large = await _crowd_story(aredis_client, "large", 22)  # 24
        keys_small = await _story_keys(aredis_client, "small")
        keys_large = await _story_keys(aredis_client, "large")
        assert records_large <= 5 * records_small, (records_small, records_large)
        assert keys_large <= 5 * keys_small, (keys_small, keys_large)

    async def test_a_hundred_in_one_room_stay_within_budget(
        self, aredis_client: aredis.Redis
    ) -> None:
        """102 characters in the study: the three opening turns write at most ~2 records
        per character per fact witnessed, and the story holds under 10 keys a character."""
        store, records = await _crowd_story(aredis_client, "hundred", 100)
        assert records <= 3 * 2 * 102 + 50, records
        assert await _story_keys(aredis_client, "hundred") <= 10 * 102
        assert await store.head() == len(OPENING)


class TestCrowdAnswers:
    async def test_nested_chains_read_as_the_rules_say(self, aredis_client: aredis.Redis) -> None:
        """Leo left before Mara moved the key: everyone who stayed believes it is in the book,
        and believes Leo (and anyone's model of Leo) still thinks it is in the drawer."""
        store, _ = await _crowd_story(aredis_client, "answers", 3)
        g0, g1 = "guest0", "guest1"
        expect = {
            ("mara",): "hollow_book",
            ("leo",): "desk_drawer",
            ("mara", "leo"): "desk_drawer",
            ("mara", g0): "hollow_book",
            ("mara", g0, g1): "hollow_book",
            ("mara", g0, "leo"): "desk_drawer",
            ("mara", "leo", g0): "desk_drawer",
            ("leo", "mara"): "desk_drawer",
            (g0, "mara", g1, "mara"): "hollow_book",
            (g0, "mara", g1, "leo"): "desk_drawer",
        }
        for chain, where in expect.items():
            view = await project_beliefs(store, chain)
            assert view.where("brass_key") == where, chain
        # longer than belief_depth (4): nothing is held
        assert (await project_beliefs(store, ("mara", g0, g1, g0, "mara"))).beliefs == {}
        # as of turn 1, before Leo left: every chain has it in the drawer
        for chain in expect:
            view = await project_beliefs(store, chain, as_of=1)
            assert view.where("brass_key") == "desk_drawer", chain
            assert view.beliefs["brass_key|location"].holder == chain
        # as of turn 0: the key was with Leo, seen by everyone in the study (first order only)
        assert (await project_beliefs(store, ("mara",), as_of=0)).where("brass_key") == "leo"
        assert (await project_beliefs(store, ("mara", "leo"), as_of=0)).beliefs == {}

    async def test_a_whole_mind_reads_each_chain_as_its_own_projection(
        self, aredis_client: aredis.Redis
    ) -> None:
        """The minds page reads every chain of a character at once, folding each set of
        holders once: each chain it lists holds exactly what its own projection holds, with
        its own holder, at every turn (the projection also knows when a later turn closed a
        belief; the mind, read up to the turn, does not)."""
        store, _ = await _crowd_story(aredis_client, "whole", 3)
        for turn in range(len(OPENING) + 1):
            for character in ("leo", "mara", "guest1"):
                mind = await mind_as_of(store, character, turn)
                assert len(mind) > 1 or turn == 0, (character, turn)
                for chain, found in mind.items():
                    alone = await project_beliefs(store, chain, as_of=turn)
                    # the mind is read from the log up to the turn: no closing turn after it
                    assert {b.slot: b.model_copy(update={"valid_to": None}) for b in found} == {
                        s: b.model_copy(update={"valid_to": None}) for s, b in alone.beliefs.items()
                    }, (chain, turn)
                    assert all(b.holder == chain for b in found)

    async def test_a_fork_reads_its_parent_up_to_the_fork(
        self, aredis_client: aredis.Redis
    ) -> None:
        """A fork at turn 2 has the key in the drawer in every mind; its own turn moves it."""
        store, _ = await _crowd_story(aredis_client, "forked", 3)
        child = await fork(store, 2, "alt")
        assert (await project_beliefs(child, ("mara", "guest0"))).where("brass_key") == (
            "desk_drawer"
        )
        text = "Guest0 moved the brass key to the hollow book."
        await child.commit(await OfflineMemoryBuilder().build(child, 3, text))
        assert (await project_beliefs(child, ("mara", "guest0"))).where("brass_key") == (
            "hollow_book"
        )
        assert (await project_beliefs(child, ("guest0", "leo"))).where("brass_key") == (
            "desk_drawer"
        )
        # the parent is unchanged
        assert (await project_beliefs(store, ("guest0", "leo"))).where("brass_key") == (
            "desk_drawer"
        )


class TestCrowdLimits:
    async def test_too_large_a_turn_is_refused_before_it_is_built(
        self, aredis_client: aredis.Redis
    ) -> None:
        """A limit the crowd's turn would exceed: one line naming the limit, the turn and the
        action, raised while the tracker builds (the delta is never made), nothing written."""
        store, _ = await _crowd_story(aredis_client, "limited", 40, turns=())
        small = StoryStore(aredis_client, "limited", limits=Limits(delta_bytes=4_000))
        with pytest.raises(LimitExceeded) as raised:
            await OfflineMemoryBuilder().build(small, 1, OPENING[0])
        message = str(raised.value)
        assert "\n" not in message
        assert "FABULA_MAX_DELTA_BYTES" in message and "Leo put the brass key" in message
        assert "nothing was written" in message
        assert await store.head() == 0

    def test_a_pack_too_large_is_refused_while_turn_0_is_built(self) -> None:
        """A pack whose setup would pass the limit: one line naming the world and the limit,
        raised before the rest of turn 0 is made."""
        with pytest.raises(LimitExceeded) as raised:
            setup_delta(crowd_pack(200), limit=20_000)
        message = str(raised.value)
        assert "\n" not in message and "turn 0" in message and "world=crowd" in message
        assert "FABULA_MAX_DELTA_BYTES" in message
        setup_delta(crowd_pack(200))  # without a limit it is built


class TestCrowdForks:
    async def test_forks_and_deletion_stay_cheap(self, aredis_client: aredis.Redis) -> None:
        """12 characters, 3 turns, 5 forks: a fork adds a few keys per character (it copied
        every chain: ~1,300 keys a character), and deleting the story removes them all (but
        its deletion mark, which expires)."""
        store, _ = await _crowd_story(aredis_client, "forks", 10)
        before = await _story_keys(aredis_client, "forks")
        for i in range(5):
            await fork(store, 1 + i % 3, f"f{i}")
        after = await _story_keys(aredis_client, "forks")
        assert after - before <= 5 * 12 * 8, (before, after)
        await store.delete()
        assert await _story_keys(aredis_client, "forks") == 1  # the mark
        assert 0 < await aredis_client.ttl(keys.deleted("forks")) <= keys.DELETED_S


class TestBenchCast:
    async def test_scale_cast_reports_growth_over_the_first_size(self, redis_url: str) -> None:
        """``fabula bench scale --cast``: a row per cast size, growth over the first, and what
        a turn writes grows about as the cast does."""
        from fabula.bench.scale import run_cast

        result = await run_cast(redis_url, [3, 12], turns=2)
        small, large = result["rows"]
        assert small["growth"]["cast"] == 1.0 and large["growth"]["cast"] == 4.0
        assert large["records_per_turn"] <= 5 * small["records_per_turn"]
        assert large["growth"]["payload"] <= 5.0
        assert large["keys"] <= 5 * small["keys"]


class TestBenchScale:
    async def test_scale_row_measures_every_step(self, redis_url: str) -> None:
        """``fabula bench scale``: a row per size, every step timed (commit, index, fold,
        assembly, projections), each read one round trip, and what a projection returns
        the same for the same seeded story."""
        from fabula.bench.scale import run_scale

        (row,) = (await run_scale(redis_url, [6], [3]))["rows"]
        timed = [k for k in row if k.endswith("_ms")]
        assert timed == [
            "commit_ms",
            "beliefs_ms",
            "world_ms",
            "index_ms",
            "consolidate_ms",
            "assemble_ms",
        ]
        assert all(row[k]["p50"] > 0 for k in timed), row
        assert row["round_trips"] == {"commit": 1, "beliefs": 1, "world": 1}
        assert (row["turns"], row["characters"]) == (6, 3)
        assert (row["beliefs_held"], row["world_slots"]) == (10, 210)
        assert row["redis_bytes_per_turn"] > 0
