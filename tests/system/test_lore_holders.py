"""A story's World Info as its holders see it (issue 49): the settings shown and set
(``fabula lore settings``), a character's tags in its filters, the studio's Lore page and
``fabula recall --as`` giving what a character's prompt holds, and timed effects across a
rewind. Rules cited from SillyTavern's ``public/scripts/world-info.js`` at release 1.12.6.
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

import pytest

from fabula.agents.character.model import MEMORIES, lore_lines, situation
from fabula.agents.contracts import TurnPlan
from fabula.agents.shared.brief import brief_for
from fabula.agents.views import author_view
from fabula.agents.writer.context import writer_context
from fabula.errors import InvalidInput
from fabula.graph.service import Fabula
from fabula.memory.delta import DeltaBuilder, TurnDelta
from fabula.memory.store import StoryStore
from fabula.memory.tokens import default_counter
from fabula.settings import Settings
from fabula.testing.cli import Cli
from fabula.worlds.loader import load_world
from fabula.worlds.lore import KeptCard, Lore, LoreBook, LoreEntry, WorldInfoSettings
from fabula.worlds.pack import WorldPack
from fabula.worlds.recall import own_lore

_stories = itertools.count()
PLAN = TurnPlan(scene_goal="the evening goes on", focal=("ada",), beats=("Ada speaks",))
COMMON = {"extensions": {"fabula/visibility": "common"}}


@pytest.fixture()
async def app(redis_url: str, tmp_path: Path) -> Any:
    async with Fabula(redis_url, Settings(home=tmp_path)) as fab:
        yield fab


def pack_with(
    entries: list[LoreEntry],
    settings: WorldInfoSettings | None = None,
    cards: tuple[KeptCard, ...] = (),
) -> WorldPack:
    pack = load_world("lighthouse")
    book = LoreBook(name="world", format="sillytavern", entries=tuple(entries))
    lore = Lore(books=(book,), cards=cards, world_info=settings or WorldInfoSettings())
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
    b.event(
        "say",
        b.span(5, len(text)),
        actor="ada",
        participants=("ada",),
        place="cottage",
        witnesses=witnesses,
    )
    return b.build()


async def story(
    app: Fabula, pack: WorldPack, said: list[tuple[str, tuple[str, ...]]]
) -> StoryStore:
    store = app.store(await app.create_story(pack, f"lore-holders{next(_stories)}", opening=False))
    for turn, (words, witnesses) in enumerate(said, 1):
        await store.commit(turn_delta(turn, words, witnesses))
    return store


async def writer_lore(store: StoryStore) -> str:
    view = await author_view(store)
    found = await writer_context(store, view, PLAN, 800, default_counter())
    lore = found.text.split("## Lore", 1)
    return lore[1].split("##", 1)[0] if len(lore) > 1 else ""


async def prompt_lore(app: Fabula, store: StoryStore, character: str) -> tuple[list[str], str]:
    """The lore lines of ``character``'s prompt for the next turn, and its situation (the
    turn at hand its scan is given)."""
    mind = await app.minds.mind(store.story, character, store.branch)
    brief = brief_for(await author_view(store), character, PLAN)
    beliefs, entities = await mind.beliefs(), await mind.entities()
    memories = await mind.memories(last=MEMORIES)
    lines = await lore_lines(mind, brief, beliefs, entities, memories)
    return lines, situation(brief, beliefs, entities, memories)


async def test_a_character_filter_by_tags_reads_the_characters_card(app: Fabula) -> None:
    """world-info.js 3812-3826: an entry filtered to the tag id 103 (named "keeper" by the
    settings.json's tags) is in the prompt of Ada, whose card is tagged "Keeper", not in
    Ben's (no card: no tags); an exclusion of it the other way round. The author's scan
    has no character: both."""
    keepers = st_entry(0, "KEEPER-LORE", characterFilter={"tags": ["103"]}, **COMMON)
    others = st_entry(1, "NOT-KEEPER-LORE", characterFilter={"tags": ["103"], "isExclude": True})
    others = others.model_copy(update={"kept": {**others.kept, **COMMON}})
    card = KeptCard(character="Ada", spec="chara_card_v2", data={"tags": ["Keeper", "ROOT"]})
    settings = WorldInfoSettings(tags={"103": "keeper"})
    store = await story(app, pack_with([keepers, others], settings, (card,)), [("Dusk.", ())])
    author = await writer_lore(store)
    assert "KEEPER-LORE" in author and "NOT-KEEPER-LORE" in author
    ada = " ".join((await prompt_lore(app, store, "ada"))[0])
    ben = " ".join((await prompt_lore(app, store, "ben"))[0])
    assert "KEEPER-LORE" in ada and "NOT-KEEPER-LORE" not in ada
    assert "NOT-KEEPER-LORE" in ben and "KEEPER-LORE" not in ben.replace("NOT-KEEPER-LORE", "")


async def test_the_lore_page_and_recall_as_a_character_give_its_prompts_lore(app: Fabula) -> None:
    """A key said in a turn Ben did not witness activates the entry for the author and for
    Ada (who heard it), never for Ben: on the studio's Lore page (which scanned the story's
    text for every character before), in his prompt, and in ``fabula recall --as ben``. The
    page's entries for each character are :func:`own_lore`'s for that turn, and a recall
    as the character with its prompt's situation as the request lights its prompt's very
    entries."""
    comet = st_entry(0, "COMET-LORE", ("comet",), **COMMON)
    lamp = st_entry(1, "LAMP-LORE", ("lamp",), **COMMON)
    said = [("The lamp is lit.", ("ada", "ben")), ("A comet, low.", ("ada",))]
    store = await story(app, pack_with([comet, lamp]), said)
    page = await app.read(store).lore(2)
    shown: dict[str | None, set[str]] = {}
    for x in page.activated:
        shown.setdefault(x.holder, set()).add(x.name)
    assert shown[None] == {"COMET-LORE", "LAMP-LORE"}
    assert shown["Ada"] == {"COMET-LORE", "LAMP-LORE"}
    assert shown["Ben"] == {"LAMP-LORE"}  # he did not hear of the comet
    for character, name in (("ada", "Ada"), ("ben", "Ben")):
        mind = await app.minds.mind(store.story, character, store.branch)
        own = await own_lore(mind, name, None, as_of=2)
        assert {x.activated.entry.name for x in own.lit} == shown[name]
        lines, at_hand = await prompt_lore(app, store, character)
        found = await app.read(store).recall(at_hand, budget=800, character=character)
        assert [f"- {x.text}" for x in found.lore] == lines, character
    ben_lines, _ = await prompt_lore(app, store, "ben")
    assert not any("COMET-LORE" in line for line in ben_lines)


async def test_a_setting_set_applies_to_every_holders_next_scan(app: Fabula) -> None:
    """``world_info_depth`` 1, then 3 (getDepth, 347-349): the key two turns back is out of
    the writer's scan and Ada's, then in both — the pack and each character's copy of its
    lore are changed together. A bad value changes nothing."""
    harbour = st_entry(0, "HARBOUR-LORE", ("harbour",), **COMMON)
    pack = pack_with([harbour], WorldInfoSettings(depth=1))
    store = await story(app, pack, [("The harbour is quiet.", ("ada",)), ("Tea.", ("ada",))])
    mind = await app.minds.mind(store.story, "ada", store.branch)

    async def adas() -> list[str]:  # her scan with a turn at hand that names nothing
        return [x.activated.entry.name for x in (await own_lore(mind, "Ada", "Night.")).lit]

    assert "HARBOUR-LORE" not in await writer_lore(store)
    assert await adas() == []
    assert (await app.set_world_info(store, [("world_info_depth", "3")])).depth == 3
    assert "HARBOUR-LORE" in await writer_lore(store)
    assert await adas() == ["HARBOUR-LORE"]
    with pytest.raises(InvalidInput, match="recursive: 'maybe' is not true or false"):
        await app.set_world_info(store, [("depth", "1"), ("recursive", "maybe")])
    assert (await app.read(store).world_info()).depth == 3


async def test_a_rewind_gives_the_timed_effects_its_turns_give(app: Fabula) -> None:
    """Timed effects are computed from the branch's turns (world-info.js 386-690 replayed),
    so rewinding to a turn restores them as they were at it: sticky 2, cooldown 3 on
    "comet" said at turn 1; at turn 4 the sticky has ended and its cooldown keeps the
    entry out though its key is said (415-431, 3833-3836); rewound to turn 1, the next
    turn's scan has it sticky again. SillyTavern, cut back to as many messages, keeps that
    cooldown (a sticky's end protects it from 525-529) and leaves the entry out: the
    difference the lore guide keeps on purpose (a rewind is a return to the turn)."""
    comet = st_entry(0, "COMET-LORE", ("comet",), sticky=2, cooldown=3)
    said = [("A comet.", ("ada",)), ("Tea.", ("ada",)), ("Rain.", ("ada",))]
    store = await story(app, pack_with([comet]), said)
    await store.commit(turn_delta(4, "The comet again.", ("ada",)))
    assert "COMET-LORE" not in await writer_lore(store)  # turn 5's scan: cooling down
    await app.rewind(store, 1)
    assert await store.head() == 1
    assert "COMET-LORE" in await writer_lore(store)  # turn 2's scan: sticky, as at first


def test_lore_settings_are_shown_and_set_from_the_cli(redis_url: str, tmp_path: Path) -> None:
    """``fabula lore settings``: every setting with SillyTavern's name; NAME=VALUE by either
    name sets it and the budget follows (25% of a context of 1000, capped at 200:
    world-info.js 3731-3736); a bad name or value is one line and changes nothing."""
    cli = Cli(redis_url, tmp_path)
    assert cli("new", "--world", "lighthouse", "--id", "loreset").exit_code == 0
    shown = cli("lore", "settings", "loreset")
    assert shown.exit_code == 0, shown.output
    assert "world_info_depth" in shown.stdout and "lore budget: 1024 tokens" in shown.stdout
    done = cli("lore", "settings", "loreset", "context=1000", "world_info_budget_cap=200")
    assert "lore budget: 200 tokens (25% of a context of 1000, capped at 200)" in done.stdout
    for bad, said in (
        (["depth=-1"], "depth: '-1' is not a whole number of 0 or more"),
        (["nothing=1"], "'nothing' is no World Info setting"),
        (["depth"], "give a setting as NAME=VALUE"),
        (["depth=4", "recursive=maybe"], "recursive: 'maybe' is not true or false"),
        (["context=0"], "context: '0' is not a whole number of 1 or more"),
    ):
        assert said in cli.fails("lore", "settings", "loreset", *bad)
    now = json.loads(cli("lore", "settings", "loreset", "--json").stdout)
    assert now["world_info"]["depth"] == 2 and now["world_info"]["context"] == 1000
    assert now["lore_budget"] == 200
    assert "nosuchstory" in cli.fails("lore", "settings", "nosuchstory")
