"""Every turn's lore goes through the chat scan (issue 49): the writer's context, the
planner, a character's own context and ``fabula recall`` scan the story's turns as
SillyTavern scans a chat (``public/scripts/world-info.js`` at release 1.12.6), with the
story's World Info settings — scan depth (``world_info_depth``, an entry's ``scanDepth``:
the ``buffer`` of the newest messages, 3797-3799 and ``getDepth``), timed effects (sticky,
cooldown: ``WorldInfoTimedEffects``, 386-690) and character filters (3800-3808) — one
turn after the other, the turn at hand the newest message.
"""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import pytest

from fabula.agents.character.model import MEMORIES, lore_lines
from fabula.agents.contracts import TurnPlan
from fabula.agents.planner.model import planner_lore
from fabula.agents.shared.brief import brief_for
from fabula.agents.views import author_view
from fabula.agents.writer.context import plan_request_text, writer_context
from fabula.graph.service import Fabula
from fabula.memory.delta import DeltaBuilder, TurnDelta
from fabula.memory.store import StoryStore
from fabula.memory.tokens import default_counter
from fabula.settings import Settings
from fabula.worlds.loader import load_world
from fabula.worlds.lore import Lore, LoreBook, LoreEntry, WorldInfoSettings
from fabula.worlds.pack import WorldPack

_stories = itertools.count()
PLAN = TurnPlan(scene_goal="the evening goes on", focal=("ada",), beats=("Ada speaks",))


@pytest.fixture()
async def app(redis_url: str, tmp_path: Path) -> Any:
    async with Fabula(redis_url, Settings(home=tmp_path)) as fab:
        yield fab


def with_lore(entries: list[LoreEntry], settings: WorldInfoSettings | None = None) -> WorldPack:
    pack = load_world("lighthouse")
    book = LoreBook(name="world", format="sillytavern", entries=tuple(entries))
    lore = Lore(books=(book,), world_info=settings or WorldInfoSettings())
    return WorldPack.model_validate({**pack.model_dump(), "lore": lore.model_dump()})


def st_entry(uid: int, token: str, keys: tuple[str, ...] = (), **kept: Any) -> LoreEntry:
    return LoreEntry(
        keys=keys,
        content=f"{token} is so.",
        constant=not keys,
        name=token,
        kept={"uid": uid, **kept},
    )


def turn_delta(turn: int, words: str, witnesses: tuple[str, ...] = ("ada", "ben")) -> TurnDelta:
    """Turn ``turn``: Ada says ``words`` in the cottage, heard by ``witnesses``."""
    text = f"ada: {words}"
    b = DeltaBuilder(turn, text)
    span = b.span(5, len(text))
    b.event("say", span, actor="ada", participants=("ada",), place="cottage", witnesses=witnesses)
    return b.build()


async def story(app: Fabula, pack: WorldPack, said: list[str]) -> StoryStore:
    store = app.store(await app.create_story(pack, f"lore-turns{next(_stories)}", opening=False))
    for turn, words in enumerate(said, 1):
        await store.commit(turn_delta(turn, words))
    return store


async def writer_lore(store: StoryStore) -> str:
    view = await author_view(store)
    found = await writer_context(store, view, PLAN, 800, default_counter())
    lore = found.text.split("## Lore", 1)
    return lore[1].split("##", 1)[0] if len(lore) > 1 else ""


async def test_a_sticky_entry_stays_in_the_writers_context_then_cools_down(app: Fabula) -> None:
    """Activated by turn 1's text (the chat of one message), sticky 3 keeps it active while
    the chat has fewer than 1 + 3 messages whatever its keys (504-511, 547-553); then its
    cooldown of 3 starts (415-431) and keeps it out while the chat has fewer than 4 + 3
    messages, even where its key is said again (584-588)."""
    comet = st_entry(0, "COMET-LORE", ("comet",), sticky=3, cooldown=3)
    plain = st_entry(1, "LAMP-LORE", ("lamp",))
    said = ["A comet crosses the sky.", "The tea is cold.", "Rain on the glass."]
    store = await story(app, with_lore([comet, plain]), said[:1])
    assert "COMET-LORE" in await writer_lore(store)  # the turn at hand: the chat's 2nd message
    await store.commit(turn_delta(2, said[1]))
    # the 3rd message: its key two turns back, out of the depth of 2; sticky keeps it
    assert "COMET-LORE" in await writer_lore(store)
    await store.commit(turn_delta(3, said[2]))
    assert "COMET-LORE" not in await writer_lore(store)  # the 4th: the sticky ended
    await store.commit(turn_delta(4, "The comet again!"))
    assert "COMET-LORE" not in await writer_lore(store)  # the 5th: cooling down, key or not
    for turn in (5, 6):
        await store.commit(turn_delta(turn, "A comet, a comet."))
    assert "COMET-LORE" in await writer_lore(store)  # the 7th: cooled down, its key said


async def test_a_scan_depth_of_one_ignores_a_key_said_two_turns_ago(app: Fabula) -> None:
    """``world_info_depth`` 1: the scan sees the turn at hand only; an entry's own
    ``scanDepth`` (3) reaches back further (``getDepth``, the buffer's 3797-3799)."""
    shallow = st_entry(0, "SHALLOW-LORE", ("harbour",))
    deep = st_entry(1, "DEEP-LORE", ("harbour",), scanDepth=3)
    pack = with_lore([shallow, deep], WorldInfoSettings(depth=1))
    store = await story(app, pack, ["The harbour is quiet.", "The tea is cold."])
    lore = await writer_lore(store)
    assert "DEEP-LORE" in lore and "SHALLOW-LORE" not in lore
    view = await author_view(store)
    said = [t.text for t in await store.turn_texts(1, 2)]
    planned = " ".join(planner_lore(view, "go on", said=said))  # the planner's, the same scan
    assert "DEEP-LORE" in planned and "SHALLOW-LORE" not in planned


async def test_a_character_filter_keeps_an_entry_from_that_character_only(app: Fabula) -> None:
    """An entry whose ``characterFilter`` excludes Ben (3800-3808): known to everyone, it is
    in the writer's context (the author's: no filter) and Ada's, never in Ben's prompt."""
    common = {"extensions": {"fabula/visibility": "common"}}
    not_ben = st_entry(
        0, "NOT-BEN-LORE", characterFilter={"names": ["Ben"], "isExclude": True}, **common
    )
    everyone = st_entry(1, "EVERYONE-LORE", **common)
    store = await story(app, with_lore([not_ben, everyone]), ["Night falls."])
    assert "NOT-BEN-LORE" in await writer_lore(store)
    view = await author_view(store)
    for character, shown in (("ada", True), ("ben", False)):
        mind = await app.minds.mind(store.story, character)
        brief = brief_for(view, character, PLAN)
        beliefs, entities = await mind.beliefs(), await mind.entities()
        memories = await mind.memories(last=MEMORIES)
        lore = " ".join(await lore_lines(mind, brief, beliefs, entities, memories))
        assert "EVERYONE-LORE" in lore
        assert ("NOT-BEN-LORE" in lore) is shown, (character, lore)
        found = await app.read(store).recall("what is so", budget=500, character=character)
        assert ("NOT-BEN-LORE" in " ".join(x.text for x in found.lore)) is shown


async def test_recall_shows_the_lore_of_the_writers_context(app: Fabula) -> None:
    """``fabula recall`` with the writer's request, by the same turn, lights the very
    entries the writer's context shows, timed effects included."""
    comet = st_entry(0, "COMET-LORE", ("comet",), sticky=3)
    lamp = st_entry(1, "LAMP-LORE", ("lamp",))
    rose = st_entry(2, "ROSE-LORE", ("rose",))
    said = ["The lamp is lit.", "A comet crosses the sky.", "The tea is cold."]
    store = await story(app, with_lore([comet, lamp, rose]), said)
    view = await author_view(store)
    request = plan_request_text(view, PLAN)
    lore = await writer_lore(store)
    found = await app.read(store).recall(request, budget=800, as_of=3)
    assert {x.name for x in found.lore} == {"COMET-LORE"}  # the lamp three turns back: out
    assert [f"- {x.text}" for x in found.lore] == [x for x in lore.strip().split("\n") if x]
