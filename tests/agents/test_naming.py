"""A character reads, of the entities it knows of, only those its turn may name: every one
that is not a character, and the characters its beliefs, brief and memories name. In a
town it knows of the whole cast; what it proposes is what it proposed knowing them all."""

from __future__ import annotations

from typing import Any

import pytest

from fabula.agents.character.offline import OfflineCharacter
from fabula.agents.contracts import CharacterBrief
from fabula.agents.views import author_view
from fabula.bench.town import town_world
from fabula.graph.service import Fabula
from fabula.graph.tick_plan import news_facts, tick_goals
from fabula.graph.ticks import run_tick
from fabula.memory.acl import CharacterMind
from fabula.settings import Settings


async def test_naming_keeps_what_a_turn_may_name_in_the_order_read(redis_url: str) -> None:
    """Every place, the ids asked for and each character one of whose id's words is among
    the words; no other character; in the order of the full read."""
    async with Fabula(redis_url, Settings()) as fab:
        store = fab.store(await fab.create_story(town_world(12, 3), "naming", opening=False))
        mind = await fab.minds.mind(store.story, "agent5", store.branch)
        full = await mind.entities()
        cut = await mind.entities(naming=({"agent5", "agent7"}, {"agent9", "yard"}))
        characters = {i for i, e in cut.items() if e.kind == "character"}
        assert characters == {"agent5", "agent7", "agent9"}
        assert {i for i, e in full.items() if e.kind != "character"} <= set(cut)
        assert list(cut) == [i for i in full if i in cut]
        await fab.delete_story(store.story)


async def test_a_town_character_proposes_as_it_did_knowing_the_whole_cast(
    redis_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """After a few ticks of a generated town, every character's proposal for the next
    tick (its tick's goals: news to tell, its routine's hour; and a goal to meet someone
    it may hold no belief of) is the one it makes from every entity it knows of."""
    async with Fabula(redis_url, Settings()) as fab:
        store = fab.store(await fab.create_story(town_world(30, 4), "naming2", opening=False))
        ctx = fab.context(auto=True)
        for _ in range(4):
            await run_tick(ctx, store)
        view = await author_view(store)
        news = news_facts(view)
        briefs = []
        for c in view.cast():
            cast = [o for o in view.cast() if view.place_of(o) == view.place_of(c)]
            # and one naming someone it may hold no belief of: read by its name
            far = f"meet {view.name(view.cast()[-1])}"
            goals = (far, *tick_goals(view, c, 5, cast, news))
            briefs.append(CharacterBrief(character=c, name=view.name(c), goals=goals))
        character = OfflineCharacter()

        async def proposals() -> list[dict[str, Any]]:
            out = []
            for brief in briefs:
                mind = await fab.minds.mind(store.story, brief.character, store.branch)
                out.append((await character.propose(mind, brief)).model_dump())
            return out

        cut = await proposals()
        everything = CharacterMind.entities

        async def all_known(self: CharacterMind, **kwargs: Any) -> Any:
            return await everything(self, as_of=kwargs.get("as_of"))

        monkeypatch.setattr(CharacterMind, "entities", all_known)
        assert cut == await proposals()
        assert any(p["actions"] for p in cut)
        await fab.delete_story(store.story)
