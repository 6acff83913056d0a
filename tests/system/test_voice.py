"""A character's voice: its examples live in its own keyspace and reach it, and the writer.

The pack's ``characters[].examples`` (a card's ``mes_example`` dialogues, a BookWorld role's
lines) are written into each character's keyspace when the story is made; the character's
agent, ``fabula recall --as C`` and the writer are given the few nearest the situation,
and no character can read another's.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from fabula.agents.character.model import MEMORIES, render_mind, voice_lines
from fabula.agents.contracts import TurnPlan
from fabula.agents.factory import make_roles
from fabula.agents.shared.brief import brief_for
from fabula.agents.views import author_view
from fabula.agents.writer.context import writer_context
from fabula.errors import AccessDenied
from fabula.graph.service import Fabula
from fabula.memory.tokens import default_counter
from fabula.settings import Settings
from fabula.testing.imports import v1_card, write_json
from fabula.testing.model import (
    STORY,
    FakeOpenAI,
    message_text,
    prompt_of,
    requests_for,
    script_turn,
)
from fabula.worlds.imports import import_paths
from fabula.worlds.loader import load_world
from fabula.worlds.lore import Lore, LoreBook, LoreEntry
from fabula.worlds.pack import WorldPack

EXAMPLES = {
    "Ada": ("ADA-1 The lamp wants oil, Ben.", "ADA-2 I keep the logbook dry.", "ADA-3 Sea."),
    "Ben": ("BEN-1 Storm's coming to the lighthouse.",),
}


def voiced() -> WorldPack:
    pack = load_world("lighthouse")
    data = pack.model_dump()
    for char in data["characters"]:
        char["examples"] = EXAMPLES.get(char["name"], ())
    return WorldPack.model_validate(data)


@pytest.fixture()
async def app(redis_url: str, tmp_path: Path) -> Any:
    async with Fabula(redis_url, Settings(home=tmp_path)) as fab:
        yield fab


async def test_each_character_holds_its_own_examples_only(app: Fabula) -> None:
    store = await app.create_story(voiced(), "voice-own", opening=False)
    for name in ("Ada", "Ben", "Cora"):
        mind = await app.minds.mind(store.story, name.lower())
        held = json.loads(await mind.voice() or '{"examples": []}')["examples"]
        assert held == list(EXAMPLES.get(name, ()))
    cora = await app.minds.mind(store.story, "cora")
    spy = type(cora)(cora.client, store.story, "ada")  # Cora's connection, Ada's key
    with pytest.raises(AccessDenied):
        await spy.voice()


async def test_the_prompt_shows_the_examples_nearest_its_situation(app: Fabula) -> None:
    store = app.store(await app.create_story(voiced(), "voice-prompt", opening=False))
    view = await author_view(store)
    plan = TurnPlan(scene_goal="x", focal=("ada",))
    for name in ("ada", "ben", "cora"):
        mind = await app.minds.mind(store.story, name)
        brief = brief_for(view, name, plan)
        beliefs, entities = await mind.beliefs(), await mind.entities()
        memories = await mind.memories(last=MEMORIES)
        voice = await voice_lines(mind, brief, beliefs, entities, memories)
        prompt = render_mind(brief, beliefs, memories, entities, voice=voice)
        own = {e.split()[0] for e in EXAMPLES.get(view.name(name), ())}
        shown = {w for w in prompt.split() if w[:4] in ("ADA-", "BEN-")}
        assert shown == own, (name, shown)
        assert ("## How you speak" in prompt) == bool(own)


async def test_recall_as_a_character_shows_its_voice(app: Fabula) -> None:
    store = await app.create_story(voiced(), "voice-recall", opening=False)
    found = await app.read(store).recall("the logbook", budget=500, character="Ada")
    assert found.voice[0].text == "ADA-2 I keep the logbook dry."  # the nearest first here
    assert {x.source for x in found.voice} == {"example"}
    assert all("BEN-" not in x.text for x in found.voice)
    ben = await app.read(store).recall("the logbook", budget=500, character="Ben")
    assert [x.text for x in ben.voice] == list(EXAMPLES["Ben"])
    author = await app.read(store).recall("the logbook", budget=500)
    assert author.voice == []


async def test_the_writer_is_given_the_focal_characters_voices(app: Fabula) -> None:
    store = app.store(await app.create_story(voiced(), "voice-writer", opening=False))
    view = await author_view(store)
    plan = TurnPlan(scene_goal="Ada tends the lamp", focal=("ada",), beats=("oil",))
    found = await writer_context(store, view, plan, 800, default_counter())
    section = found.text.partition("How they speak")[2]
    assert "ADA-1 The lamp wants oil, Ben." in section
    assert "BEN-1" not in found.text  # Ben is not focal
    both = TurnPlan(scene_goal="a storm at the lighthouse", focal=("ada", "ben"))
    found = await writer_context(store, view, both, 800, default_counter())
    assert "BEN-1 Storm's coming to the lighthouse." in found.text
    tight = await writer_context(store, view, both, 40, default_counter())
    assert tight.tokens <= 40


async def test_an_imported_cards_dialogues_become_its_voice(app: Fabula, tmp_path: Path) -> None:
    card = write_json(tmp_path / "ada.json", v1_card())
    imported = import_paths([card])
    store = await app.create_story(imported.pack, "voice-card", opening=False)
    name = imported.pack.characters[0].name
    found = await app.read(store).recall("hello", budget=500, character=name)
    texts = [x.text for x in found.voice]
    assert texts and all("<START>" not in t and "{{char}}" not in t for t in texts)
    assert any(f"{name}: Go away." in t for t in texts), texts


HOLLOW = {
    "Leo": ("LEO-EX Drawer's shut, and the key is mine.",),
    "Mara": ("MARA-EX Books keep better secrets than drawers.",),
}


def hollow_voiced() -> WorldPack:
    pack = load_world("hollow_book")
    data = pack.model_dump()
    for char in data["characters"]:
        char["examples"] = HOLLOW.get(char["name"], ())
    books = [
        LoreBook(
            name="world",
            format="lorebook_v3",
            entries=(LoreEntry(keys=("key",), content="WORLD-LORE keys rust."),),
        ),
        LoreBook(
            name="Leo",
            format="character_book",
            owner="Leo",
            entries=(LoreEntry(keys=("key",), content="LEO-LORE the key is old."),),
        ),
    ]
    return WorldPack.model_validate({**data, "lore": Lore(books=tuple(books)).model_dump()})


async def test_in_model_mode_each_voice_reaches_its_agent_and_the_writer(
    redis_url: str, settings: Settings, fake_openai: FakeOpenAI, tmp_path: Path
) -> None:
    """A model turn: Leo's agent is shown Leo's example and no one else's, Mara's hers; the
    writer both, with the world's lore; the planner the world's lore, no character's own."""
    async with Fabula(redis_url, Settings(home=tmp_path)) as offline:
        store = await offline.create_story(hollow_voiced(), STORY, opening=False)
        for text in load_world("hollow_book").opening.turns:
            await offline.commit_scripted(store, text)
    script_turn(fake_openai)
    async with Fabula(redis_url, settings, roles=make_roles(settings)) as fab:
        assert (await fab.run(fab.store(STORY), auto=False)).outcome == "pending"
    characters = requests_for(fake_openai, "CharacterProposal")
    leo = next(prompt_of(r) for r in characters if "You are Leo" in prompt_of(r))
    mara = next(prompt_of(r) for r in characters if "You are Mara" in prompt_of(r))
    assert "LEO-EX" in leo and "MARA-EX" not in leo and "LEO-LORE" in leo
    assert "MARA-EX" in mara and "LEO-EX" not in mara and "LEO-LORE" not in mara
    assert "WORLD-LORE" not in leo + mara
    writers = [prompt_of(r) for r in fake_openai.requests if "## Memory" in prompt_of(r)]
    (writer,) = writers
    assert (
        "LEO-EX" in writer
        and "MARA-EX" in writer
        and "How they speak" in writer
        and "LEO-LORE" not in writer
    )
    (planner,) = [prompt_of(r) for r in requests_for(fake_openai, "TurnPlan")]
    assert "WORLD-LORE keys rust." in planner and "LEO-LORE" not in planner


async def test_a_chat_holds_the_characters_own_lore_and_voice(
    redis_url: str, settings: Settings, fake_openai: FakeOpenAI, tmp_path: Path
) -> None:
    async with Fabula(redis_url, Settings(home=tmp_path)) as offline:
        store = await offline.create_story(hollow_voiced(), "chat-lore", opening=False)
        said = await offline.read(store).chat("leo", "Tell me about the key.")
        assert any(r.kind == "lore" and "LEO-LORE" in r.text for r in said.records)
        assert "LEO-LORE" in said.answer or said.answered_by == "question-answerer"
        mara = await offline.read(store).chat("mara", "Tell me about the key.")
        assert all("LORE" not in r.text for r in mara.records)
    fake_openai.reply_text("Old, like me.")
    async with Fabula(redis_url, settings, roles=make_roles(settings)) as fab:
        said = await fab.read(fab.store("chat-lore")).chat("leo", "Tell me about the key.")
    prompt = message_text(fake_openai.requests[-1])
    assert "LEO-LORE the key is old." in prompt and "LEO-EX" in prompt
    assert "MARA" not in prompt and "WORLD-LORE" not in prompt


async def test_a_recall_or_chat_as_of_a_turn_holds_no_word_said_after_it(
    redis_url: str, settings: Settings, fake_openai: FakeOpenAI, tmp_path: Path
) -> None:
    """Found by a reader of the tutorial: ``fabula recall shed … --as ben --as-of 2`` showed
    Ben's own lines of turns 3 and 8 as his voice. What a character said after the turn it
    is asked at is no part of its mind then: not in its recall, not in its chat's prompt."""
    said = {turn: f'"WORDS-{turn} the lamp is lit," said Ben.' for turn in (1, 2, 3)}
    async with Fabula(redis_url, Settings(home=tmp_path)) as offline:
        store = await offline.create_story(voiced(), "voice-as-of", opening=False)
        for turn in (1, 2, 3):
            await offline.commit_scripted(store, said[turn])
        for as_of in (0, 1, 2, 3):
            found = await offline.read(store).recall(
                "the lamp", budget=500, character="Ben", as_of=as_of
            )
            shown = {t for x in found.voice for t in re.findall(r"WORDS-\d", x.text)}
            assert shown == {f"WORDS-{t}" for t in range(1, as_of + 1)}, (as_of, found.voice)
    fake_openai.reply_text("Lit, as ever.")
    async with Fabula(redis_url, settings, roles=make_roles(settings)) as fab:
        await fab.read(fab.store("voice-as-of")).chat("ben", "Is the lamp lit?", as_of=1)
    prompt = message_text(fake_openai.requests[-1])
    assert "WORDS-1" in prompt and "WORDS-2" not in prompt and "WORDS-3" not in prompt, prompt
