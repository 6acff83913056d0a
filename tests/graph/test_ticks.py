"""Ticks on the shipped town, offline, through real LangGraph and the real store in Redis:
every place plays its scene, the tick commits all or none and exactly once, no scene is
perceived from another place, and the news's spread is read from the minds."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest

from fabula.agents.reading.extract import extract
from fabula.agents.views import author_view
from fabula.errors import InvalidDelta, SceneFailed, TurnConflict
from fabula.graph.commit import CommitPath, commit_text, read_text
from fabula.graph.scene_jobs import _view_at
from fabula.graph.service import Fabula
from fabula.graph.tick_plan import news_facts, tick_goals
from fabula.graph.ticks import commit_scenes, play_tick, run_tick
from fabula.memory import keys
from fabula.memory.ingest import read_prior
from fabula.memory.records import State, event_turn
from fabula.memory.spread import audit_ticks, own_beliefs, says, spread
from fabula.memory.store import StoryStore
from fabula.memory.ticks import confine, tick_records
from fabula.settings import Settings
from fabula.worlds.loader import load_world
from fabula.worlds.pack import CharacterSpec, PlaceSpec, WorldPack

NEWS = "harvest party"


async def _town(fab: Fabula, story: str = "town") -> StoryStore:
    return fab.store(await fab.create_story(load_world("town"), story, opening=False))


async def _footprint(store: StoryStore) -> tuple[int, int, int, int]:
    """The head, and how many turns, events and ticks the branch holds."""
    client = store.client
    return (
        await store.head(),
        await client.hlen(keys.turns(store.story, store.branch)),
        await client.hlen(keys.events(store.story, store.branch)),
        await client.hlen(keys.ticks(store.story, store.branch)),
    )


class TestTickCommit:
    async def test_every_place_with_characters_plays_and_commits_once(
        self, offline_fab: Fabula
    ) -> None:
        """A tick plays one scene per place where characters are, each character in
        exactly one; its scenes are consecutive turns committed with the tick's record;
        sending the same tick again is a duplicate that writes nothing."""
        store = await _town(offline_fab)
        ctx = offline_fab.context(auto=True)
        before = await store.head()
        plan, deltas = await play_tick(ctx, store)
        cast = [c for s in plan.scenes for c in s.cast]
        assert sorted(cast) == await store.characters()  # each in one scene, once
        assert len(plan.scenes) == 10  # the town's ten places all have people
        done = await commit_scenes(ctx, store, plan, deltas)
        assert done.status == "committed"
        after = await _footprint(store)
        assert after[0] == before + len(deltas)
        [record] = await tick_records(store)
        assert (record.first, record.last) == (before + 1, before + len(deltas))
        played = [s.turn for s in record.scenes if s.turn is not None]
        assert played == list(range(record.first, record.last + 1))

        again = await commit_scenes(ctx, store, plan, deltas)  # a re-run of the same tick
        assert again.status == "duplicate"
        assert await _footprint(store) == after

    async def test_a_refused_scene_commits_none_of_the_tick(self, offline_fab: Fabula) -> None:
        """When the server refuses one scene's delta (here the last one's, naming an entity
        the story lacks), the scenes before it are not written either, and the error
        names the scene."""
        store = await _town(offline_fab)
        ctx = offline_fab.context(auto=True)
        plan, deltas = await play_tick(ctx, store)
        assert len(deltas) >= 2
        last = deltas[-1]
        bad = State(
            id=f"s{last.turn}.{len(last.states)}",
            subject="nobody_in_town",
            attribute="mood",
            value="glad",
            valid_from=last.turn,
        )
        deltas[-1] = last.model_copy(update={"states": (*last.states, bad)})
        before = await _footprint(store)
        with pytest.raises(InvalidDelta, match=r"nobody_in_town.*scene"):
            await commit_scenes(ctx, store, plan, deltas)
        assert await _footprint(store) == before

    async def test_a_turn_written_meanwhile_refuses_the_whole_tick(
        self, offline_fab: Fabula
    ) -> None:
        """Another writer's turn committed while the scenes played: the tick is refused
        whole (its turns would not follow), and only the other writer's turn is there."""
        store = await _town(offline_fab)
        ctx = offline_fab.context(auto=True)
        plan, deltas = await play_tick(ctx, store)
        head = await store.head()
        await commit_text(CommitPath(), store, head + 1, "Mara went to the square.")
        before = await _footprint(store)
        with pytest.raises(TurnConflict):
            await commit_scenes(ctx, store, plan, deltas)
        assert await _footprint(store) == before

    async def test_a_failing_scene_fails_the_tick_with_its_place(
        self, offline_fab: Fabula, tmp_path: Path
    ) -> None:
        """A scene whose passage is longer than a turn may be fails the tick: one line
        naming the place, and nothing of the tick is committed."""
        store = await _town(offline_fab)
        small = Settings(home=tmp_path, max_turn_text=60)
        ctx = dataclasses.replace(offline_fab.context(auto=True), settings=small)
        before = await _footprint(store)
        with pytest.raises(SceneFailed) as failed:
            await run_tick(ctx, store)
        assert "the scene at " in failed.value.message
        assert failed.value.context["place"] in failed.value.message
        assert await _footprint(store) == before


class TestIsolation:
    async def test_no_scene_is_perceived_from_another_place(self, offline_fab: Fabula) -> None:
        """Over several ticks, every witness of a scene's events and every holder of a
        belief it gave was in that scene's cast (the leak property), no turn belongs to two
        scenes and none is missing; the characters did move between places meanwhile."""
        store = await _town(offline_fab)
        ctx = offline_fab.context(auto=True)
        ticks = [await run_tick(ctx, store) for _ in range(5)]
        audit = await audit_ticks(store)
        assert audit.scenes == sum(len(t.deltas) for t in ticks) > 10
        assert audit.leaks == ()
        assert audit.duplicates == () and audit.lost == ()
        places = [
            {c: s.place for s in t.plan.scenes for c in s.cast} for t in (ticks[0], ticks[-1])
        ]
        assert places[0] != places[1]  # moves take effect at the next tick


class TestSpread:
    async def test_the_news_spreads_through_tellings_read_from_minds(
        self, offline_fab: Fabula
    ) -> None:
        """Only Mara knows the news before the first tick; the share of the town holding it
        never falls and grows; every holder but Mara got it in a scene it was in, from
        being told."""
        store = await _town(offline_fab)
        ctx = offline_fab.context(auto=True)
        ticks = [await run_tick(ctx, store) for _ in range(6)]
        curve = await spread(store, NEWS)
        assert [p.tick for p in curve] == list(range(7))
        assert curve[0].knowers == ("mara",)
        shares = [p.share for p in curve]
        assert shares == sorted(shares) and shares[-1] > shares[0]
        casts = {s.turn: s.cast for t in ticks for s in t.plan.scenes if s.turn is not None}
        for who in set(curve[-1].knowers) - {"mara"}:
            got = [b for b in await own_beliefs(store, who) if says(b, NEWS)]
            first = min(got, key=lambda b: b.valid_from)
            assert first.mode.startswith("told") and first.speaker is not None
            assert who in casts[event_turn(first.event)]


class TestRoutinesAndNews:
    async def test_the_tick_adds_news_first_and_the_routine_hour_last(
        self, offline_fab: Fabula
    ) -> None:
        """Mara holds the news and the others at the mill do not: in tick 1 her first goal
        is to spread it; her last is her routine's hour (tick 3 is hour 2: the market);
        Bea, with no goals of her own, has only her hour."""
        store = await _town(offline_fab)
        view = await author_view(store)
        news = news_facts(view)
        assert news == [("mara", "secret")]
        mill = [c for c in view.characters() if view.place_of(c) == "mill"]
        first = tick_goals(view, "mara", 1, mill, news)
        assert first[0] == "spread my secret" and first[-1] == "keep to the mill"
        assert tick_goals(view, "mara", 3, mill, news)[-1] == "keep to the market"
        assert tick_goals(view, "bea", 3, ["bea"], news) == ["keep to the square"]
        # nobody at the mill lacks it once all hold it: no goal to spread it
        assert tick_goals(view, "tom", 1, mill, news)[0] == "tell Nell Mara's secret"

    async def test_the_town_keeps_its_day_and_the_news_goes_round_once_per_listener(
        self, offline_fab: Fabula
    ) -> None:
        """Two days (twelve ticks) of the shipped town: no tick comes to rest, every one
        plays scenes; nearly everyone with no goals of its own moves with its routine; Mara tells
        everyone at the mill in the first tick; no teller tells one listener twice; and no
        scene is perceived from another place."""
        store = await _town(offline_fab)
        ctx = offline_fab.context(auto=True)
        ticks = [await run_tick(ctx, store) for _ in range(12)]
        assert all(len(t.deltas) >= 2 for t in ticks)
        pack = load_world("town")
        idle = [c.name.lower() for c in pack.characters if not c.goals]
        seen: dict[str, set[str]] = {c: set() for c in idle}
        for t in ticks:
            for s in t.plan.scenes:
                for c in s.cast:
                    if c in seen:
                        seen[c].add(s.place)
        # a scene asks at most three of its cast: one may miss an hour's errand, not most
        stayed = [c for c, places in seen.items() if len(places) < 2]
        assert len(stayed) <= len(idle) // 4, stayed
        curve = await spread(store, NEWS)
        assert set(curve[1].knowers) >= {"mara", "tom", "ivy", "greta"}
        assert curve[-1].share > 0.4
        told = [
            m.groups()
            for t in ticks
            for d in t.deltas
            for m in re.finditer(r"(\w+) privately told (\w+) that Mara's secret", d.text)
        ]
        assert told and len(told) == len(set(told))
        audit = await audit_ticks(store)
        assert audit.leaks == () and audit.duplicates == () and audit.lost == ()


class TestTownPack:
    def test_the_town_reads_whole(self) -> None:
        """The shipped town: 25 people in 10 places, every goal one the offline engine
        pursues, one piece of news held by one character at the start."""
        pack = load_world("town")
        assert (len(pack.characters), len(pack.places)) == (25, 10)
        assert pack.goal_warnings == []
        holders = [c.name for c in pack.characters if c.secrets or c.news]
        assert holders == ["Mara"]


class TestSceneReadsItsScene:
    async def test_a_scene_reads_its_cast_minds_and_commits_the_same(
        self, offline_fab: Fabula
    ) -> None:
        """A scene's text read through its scene's store (the prior minds of its cast only)
        gives, confined to the cast, the very delta the whole story's minds give: the tick's
        cost follows the scene, and what each character gets does not change."""
        store = await _town(offline_fab)
        ctx = offline_fab.context(auto=True)
        await run_tick(ctx, store)  # minds that differ from the pack's start
        plan, deltas = await play_tick(ctx, store)
        everyone = await store.characters()
        path = CommitPath.of(ctx)
        by_turn = {s.turn: s for s in plan.scenes if s.turn is not None}
        for delta in deltas:
            cast = by_turn[delta.turn].cast
            scoped = store.for_scene(cast)
            actions = extract(delta.text)
            prior = await read_prior(scoped, actions)
            assert {chain[0] for chain in prior.beliefs} <= set(cast)
            assert len((await read_prior(store, actions)).beliefs) == len(everyone)
            whole, _ = await read_text(path, store, delta.turn, delta.text)
            alone, _ = await read_text(path, scoped, delta.turn, delta.text)
            assert confine(alone, cast) == confine(whole, cast) == delta


class TestWorkerView:
    async def test_a_worker_reads_a_tick_once_and_refuses_a_moved_branch(
        self, offline_fab: Fabula
    ) -> None:
        """A worker keeps the view of the tick it plays (the same object for the tick's
        next scene), and refuses a scene once the branch moved past the tick's start, even
        with that view kept."""
        store = await _town(offline_fab)
        head = await store.head()
        first = await _view_at(store, offline_fab.url, 1, head)
        assert first.turn == head
        assert await _view_at(store, offline_fab.url, 1, head) is first
        await run_tick(offline_fab.context(auto=True), store)
        with pytest.raises(TurnConflict):
            await _view_at(store, offline_fab.url, 1, head)


class TestRoutineMoves:
    async def test_everyone_whose_hour_is_elsewhere_goes_though_three_speak(
        self, offline_fab: Fabula
    ) -> None:
        """Five people in the square whose routine's first hour is the mill: a scene has
        at most three speakers, and the other two still go, at the scene's end; after
        tick 1 all five are at the mill, and the square's scene says each move once."""
        names = ["Ann", "Bo", "Cy", "Di", "Ed"]
        pack = WorldPack(
            id="errands",
            title="Errands",
            premise="Five neighbours with one errand.",
            places=(PlaceSpec(name="square"), PlaceSpec(name="mill")),
            characters=tuple(
                CharacterSpec(name=n, location="square", routine=("mill", "square")) for n in names
            ),
        )
        store = offline_fab.store(await offline_fab.create_story(pack, "errands", opening=False))
        result = await run_tick(offline_fab.context(auto=True), store)
        (square,) = [s for s in result.plan.scenes if s.place == "square"]
        assert len(square.focal) == 3 and set(square.movers) == {
            "ann",
            "bo",
            "cy",
            "di",
            "ed",
        } - set(square.focal)
        assert all(place == "mill" for place in square.movers.values())
        view = await author_view(store)
        assert {c: view.place_of(c) for c in view.characters()} == {
            n.lower(): "mill" for n in names
        }
        (text,) = [d.text for d in result.deltas]
        assert all(text.count(f"{n} went to the mill.") == 1 for n in names), text
        audit = await audit_ticks(store)
        assert audit.leaks == () and audit.duplicates == () and audit.lost == ()
