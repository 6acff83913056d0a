"""One recall for every viewer (issue 46, item 3): what ``fabula recall STORY --as C``
shows is what C's prompt holds for the same turn — the same beliefs, the same memories,
the same lore lines, and with no ``--budget`` the same episodes recalled and the same
voice — because both are built by
:func:`fabula.agents.recall.viewer.character_recall` with the same parameters.

The story is the shipped lighthouse world with a lorebook every character knows (one
entry always on, one keyed on "logbook", which Ada's and Ben's goals name), played by the
offline engine on the real Redis server; the prompt is the one a model character is
rendered for the next turn, its request (its situation) given to the command line.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from fabula.agents.character.model import MindPrompt, mind_prompt
from fabula.agents.contracts import TurnPlan
from fabula.agents.prompts import quoted
from fabula.agents.recall.viewer import bullet
from fabula.agents.shared.brief import brief_for
from fabula.agents.views import author_view
from fabula.graph.service import Fabula
from fabula.memory.index.build import index_through
from fabula.settings import Settings
from fabula.testing.cli import Cli
from fabula.worlds.loader import load_world
from fabula.worlds.lore import Lore, LoreBook, LoreEntry, WorldInfoSettings
from fabula.worlds.pack import WorldPack

STORY = "onerecall"
COMMON = {"extensions": {"fabula/visibility": "common"}}
TURNS = 6  # the offline engine's turns (it stops sooner when every goal is done or blocked)
# then turns of comings and goings Ada and Ben both live: more memories than a prompt
# shows, so some are recalled as earlier
ERRANDS = [
    "Ada went to the cove. Ben went to the cove.",
    "Ada went to the cottage. Ben went to the cottage.",
] * 8
EXAMPLES = {  # card examples of its voice, more than a prompt shows
    "Ada": (
        "The logbook stays dry, Ben.",
        "Mind the lamp.",
        "No boats tonight.",
        "Tea is on the stove.",
    ),
    "Ben": ("Just fish, Ada.", "The cove is quiet.", "Who wants that old logbook?", "Fine."),
}


def lighthouse_with_lore() -> WorldPack:
    """The shipped lighthouse world with a common lorebook of two entries, and Ada and Ben
    with examples of their voices."""
    pack = load_world("lighthouse")
    entries = (
        LoreEntry(keys=(), content="TIDE-LORE the tide turns at dusk.", constant=True,
                  name="tide", kept={"uid": 0, **COMMON}),
        LoreEntry(keys=("logbook",), content="LOGBOOK-LORE the logbook lists every boat.",
                  name="logbook", kept={"uid": 1, **COMMON}),
    )  # fmt: skip
    book = LoreBook(name="island", format="sillytavern", entries=entries)
    lore = Lore(books=(book,), world_info=WorldInfoSettings())
    data = {**pack.model_dump(), "lore": lore.model_dump()}
    for char in data["characters"]:
        char["examples"] = EXAMPLES.get(char["name"], ())
    return WorldPack.model_validate(data)


async def create(redis_url: str, home: Path) -> None:
    async with Fabula(redis_url, Settings(home=home)) as fab:
        await fab.create_story(lighthouse_with_lore(), STORY, opening=False)


async def live(redis_url: str, home: Path) -> None:
    async with Fabula(redis_url, Settings(home=home)) as fab:
        for text in ERRANDS:
            await fab.commit_scripted(fab.store(STORY), text)


async def prompt_of(redis_url: str, home: Path, character: str) -> MindPrompt:
    """``character``'s prompt for the next turn, as a model character is given it."""
    async with Fabula(redis_url, Settings(home=home)) as fab:
        store = fab.store(STORY)
        await index_through(store)
        view = await author_view(store)
        plan = TurnPlan(scene_goal="the evening goes on", focal=(character,))
        mind = await fab.minds.mind(STORY, character)
        return await mind_prompt(mind, brief_for(view, character, plan))


def section(prompt: str, title: str) -> list[str]:
    """The lines of the prompt's ``## title`` section (none when it has none)."""
    for part in prompt.split("\n\n## "):
        head, _, body = part.removeprefix("## ").partition("\n")
        if head == title:
            return body.split("\n")
    return []


def test_recall_as_a_character_shows_what_its_prompt_holds(redis_url: str, tmp_path: Path) -> None:
    cli = Cli(redis_url, tmp_path)
    asyncio.run(create(redis_url, tmp_path))
    played = cli("run", STORY, "--auto", "--turns", str(TURNS))
    assert played.exit_code == 0, played.output
    asyncio.run(live(redis_url, tmp_path))
    held: dict[str, list[Any]] = {}
    for character in ("ada", "ben", "cora", "dev"):
        seen = asyncio.run(prompt_of(redis_url, tmp_path, character))
        shown = cli("recall", STORY, seen.recall.request, "--as", character, "--json")
        assert shown.exit_code == 0, shown.output
        found = json.loads(shown.stdout)
        assert found["holder"] == character and found["request"] == seen.recall.request
        # the same beliefs: every one the prompt lists, as it came by it, and no other
        beliefs = [
            (b["subject"], b["attribute"], b["value"], b["polarity"], b["mode"], b["turn"])
            for b in found["beliefs"]
        ]
        mine = sorted(seen.beliefs.beliefs.values(), key=lambda b: (b.subject, b.attribute))
        assert beliefs == [
            (b.subject, b.attribute, b.value, b.polarity, b.mode, b.valid_from) for b in mine
        ]
        assert beliefs and len(section(seen.prompt, "What you believe")) == len(beliefs)
        # the same memories, each a line of the prompt's "What you remember"
        remembered = section(seen.prompt, "What you remember")
        memories = [(m["turn"], m["quote"]) for m in found["memories"]]
        assert {f"- turn {t}: {quoted(q)}" for t, q in memories} == set(remembered)
        # the same lore lines, in the same order: the prompt's "What you know"
        lore = [f"- {x['text']}" for x in found["lore"]]
        assert lore == section(seen.prompt, "What you know")
        # the keyed entry where its situation names the logbook (Ada's, Ben's, Cora's goals)
        keyed = "logbook" in seen.recall.request.lower()
        assert any("LOGBOOK-LORE" in line for line in lore) == keyed, lore
        assert any("TIDE-LORE" in line for line in lore), lore
        # with no --budget, its prompt's very budget: the same episodes recalled (those not
        # among its memories, under their headings) and the same voice
        text = found["text"].split("\n")
        events = {m["event"] for m in found["memories"]}
        recalled: list[str] = []
        heading = None
        for entry in found["lines"]:
            if entry["kind"] == "turn":
                heading = text[entry["line"]]
            elif entry["kind"] == "episode" and entry["id"] not in events:
                recalled += [heading] if heading is not None else []
                recalled.append(f"- {quoted(text[entry['line']].strip().removeprefix('- '))}")
                heading = None
        assert recalled == section(seen.prompt, "What you recall of earlier")
        said = [f"- {quoted(x['text'])}" for x in found["voice"] if x["source"] == "said"]
        assert said == section(seen.prompt, "Things you said")
        voice = "\n".join(bullet(x["text"]) for x in found["voice"] if x["source"] != "said")
        assert (voice.split("\n") if voice else []) == section(seen.prompt, "How you speak")
        held[character] = [beliefs, memories]
    assert any(memories for _, memories in held.values())  # the turns were lived
    assert len({repr(h) for h in held.values()}) == len(held)  # each its own mind
