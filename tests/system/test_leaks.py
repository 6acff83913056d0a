"""Nothing reaches a character that it did not witness or was not told — in model mode.

Reproductions of the two leaks found against the test server, through the real ChatOpenAI
over HTTP, the real graph and Redis:

* a first-person memory quoted the span the model gave for an event, and the model may give
  a whole sentence or passage, which can tell what the character never saw;
* the planner's omniscient ``scene_goal`` was copied into every character's brief;

and the schema a character is sent (part of its prompt) is its own.

The story is hollow_book after its opening: Leo is in the hallway, believing the brass key
is in the desk drawer; Mara, in the study, moved it to the hollow book.
"""

from __future__ import annotations

from typing import Any

from fabula.agents.character.model import CharacterProposal, ModelCharacter
from fabula.agents.contracts import INTENT_FIELDS, CharacterBrief
from fabula.agents.llm import make_client
from fabula.agents.memory_builder.model import ModelMemoryBuilder
from fabula.agents.memory_builder.offline import read_controlled
from fabula.agents.schemas import expanded, named, strict_schema
from fabula.graph.service import Fabula
from fabula.settings import Settings
from fabula.testing import model as scripted
from fabula.testing.model import FakeOpenAI, action, prompt_of, requests_for


async def commit_model_turn(
    fab: Fabula, fake: FakeOpenAI, settings: Settings, text: str, actions: list[dict[str, Any]]
) -> None:
    fake.reply_json({"actions": actions}, schema="ExtractedActions")
    # the model reads every prose sentence: the offline reader first is controlled English
    builder = ModelMemoryBuilder(
        make_client(settings.model, "memory_builder"), reader=read_controlled
    )
    store = fab.store(scripted.STORY)
    turn = await store.head() + 1
    await store.commit(await builder.build(store, turn, text))


async def leo_prompt(fab: Fabula, fake: FakeOpenAI, settings: Settings) -> str:
    """Leo's character prompt, as his agent sends it."""
    character = ModelCharacter(make_client(settings.model, "character"))
    fake.reply_json(scripted.LEO, schema="CharacterProposal")
    brief = CharacterBrief(character="leo", name="Leo", goals=("get the brass key",))
    await character.propose(await fab.minds.mind(scripted.STORY, "leo"), brief)
    return prompt_of(requests_for(fake, "CharacterProposal")[-1])


class TestMemoriesQuoteOnlyWhatWasWitnessed:
    async def test_a_sentence_mixing_seen_and_unseen_events(
        self, fab: Fabula, fake_openai: FakeOpenAI, settings: Settings
    ) -> None:
        """Reproduction: the model spans Leo's waiting over the whole sentence; Leo's memory
        quoted "Mara took the brass key", which happened where he was not."""
        text = "Mara took the brass key, and Leo waited in the hallway."
        take = action("take", 0, 23, actors=["Mara"], obj="brass key")
        wait = action("stay", 0, len(text), actors=["Leo"], place="hallway")
        await commit_model_turn(fab, fake_openai, settings, text, [take, wait])
        memories = await (await fab.minds.mind(scripted.STORY, "leo")).memories()
        recalled = [m.quote for m in memories if m.turn == 4]
        assert recalled and not any("Mara" in q or "key" in q for q in recalled)
        prompt = await leo_prompt(fab, fake_openai, settings)
        assert "took the brass key" not in prompt
        mara = [m.quote for m in await (await fab.minds.mind(scripted.STORY, "mara")).memories()]
        assert any("Mara took the brass key" in q for q in mara)  # she did it: she remembers

    async def test_an_action_spanning_the_whole_passage(
        self, fab: Fabula, fake_openai: FakeOpenAI, settings: Settings
    ) -> None:
        """Reproduction: an action whose span covers the passage gave its witness the whole
        passage, the sentence he did not witness included. A span over several sentences
        does not say which tells its event (one may be a deed the reading missed): the
        witness is told the event itself."""
        text = "Leo waited in the hallway. Mara took the brass key out of the hollow book."
        wait = action("stay", 0, len(text), actors=["Leo"], place="hallway")
        take = action("take", 27, len(text), actors=["Mara"], obj="brass key")
        await commit_model_turn(fab, fake_openai, settings, text, [wait, take])
        memories = await (await fab.minds.mind(scripted.STORY, "leo")).memories()
        recalled = [m.quote for m in memories if m.turn == 4]
        assert recalled == ["Leo stayed in the hallway."]
        prompt = await leo_prompt(fab, fake_openai, settings)
        assert "Mara took" not in prompt and "out of the hollow book" not in prompt

    async def test_unextracted_text_inside_a_span_is_not_quoted(
        self, fab: Fabula, fake_openai: FakeOpenAI, settings: Settings
    ) -> None:
        """The model left Mara's deed out and spanned Leo's waiting over the sentence: the
        clause about Mara names things Leo's event does not, so it is not quoted."""
        text = "Leo waited in the hallway, and Mara slipped the brass key into her pocket."
        wait = action("stay", 0, len(text), actors=["Leo"], place="hallway")
        await commit_model_turn(fab, fake_openai, settings, text, [wait])
        memories = await (await fab.minds.mind(scripted.STORY, "leo")).memories()
        recalled = [m.quote for m in memories if m.turn == 4]
        assert recalled == ["Leo waited in the hallway"]

    async def test_each_witness_remembers_what_it_witnessed(
        self, fab: Fabula, fake_openai: FakeOpenAI, settings: Settings
    ) -> None:
        """Per-witness memories: Leo saw both ends of his journey and keeps the sentence;
        Mara, in the study, saw him arrive only, and keeps that (not where he came from)."""
        text = "Leo went to the study."
        go = action("go", 0, len(text), actors=["Leo"], place="study")
        await commit_model_turn(fab, fake_openai, settings, text, [go])
        leo, mara = [
            [
                m.quote
                for m in await (await fab.minds.mind(scripted.STORY, c)).memories()
                if m.turn == 4
            ]
            for c in ("leo", "mara")
        ]
        assert text in leo
        assert mara == ["Leo entered the study."]


class TestSchemas:
    async def test_the_schema_a_character_is_sent_is_its_own(
        self, fab: Fabula, fake_openai: FakeOpenAI, settings: Settings
    ) -> None:
        """The schema is part of the prompt: Leo's is built from his own mind, so every id in
        it is one he knows of (his prompt lists them), every attribute one he believes
        something about, and he is never his own listener. It is no generic schema: a go
        takes only places, a take only objects."""
        await leo_prompt(fab, fake_openai, settings)
        (request,) = requests_for(fake_openai, "CharacterProposal")
        schema = request["response_format"]["json_schema"]["schema"]
        prompt = prompt_of(request)
        known = prompt.partition("## Things you know of\n")[2].partition("\n\n")[0]
        shown = {entry[2:].partition(":")[0] for entry in known.splitlines()}
        leo = await fab.minds.mind(scripted.STORY, "leo")
        believed = {b.attribute for b in (await leo.beliefs()).beliefs.values()}
        assert named(schema) <= shown | believed | {"location", *INTENT_FIELDS}
        union = expanded(schema)["properties"]["actions"]["items"]["anyOf"]
        members = {m["properties"]["kind"]["const"]: m["properties"] for m in union}
        entities = await leo.entities()
        assert set(members["go"]["target"]["enum"]) == {
            i for i, e in entities.items() if e.kind == "place"
        }
        assert set(members["take"]["object"]["enum"]) == {
            i for i, e in entities.items() if e.kind == "object"
        }
        assert "leo" not in members["give"]["listener"]["enum"]
        assert schema != strict_schema(CharacterProposal)


class TestBriefs:
    async def test_the_planners_goal_never_reaches_a_character(
        self, fab: Fabula, fake_openai: FakeOpenAI
    ) -> None:
        """Reproduction: the scene goal "Leo searches the drawer, unaware the key is in the
        hollow book" was copied into Leo's brief. Now each brief is the character's own:
        where it believes it is, who it believes is there, what it wants."""
        goal = "Leo searches the drawer, unaware the key is in the hollow book"
        fake_openai.reply_json(scripted.PLAN | {"scene_goal": goal}, schema="TurnPlan")
        fake_openai.reply_json(scripted.LEO, schema="CharacterProposal", contains="You are Leo")
        fake_openai.reply_json(scripted.MARA, schema="CharacterProposal", contains="You are Mara")
        fake_openai.reply_text(scripted.PASSAGE, schema=scripted.TEXT)
        fake_openai.reply_json(scripted.EXTRACTED, schema="ExtractedActions")
        assert (await fab.run(fab.store(scripted.STORY), auto=False)).outcome == "pending"
        prompts = [prompt_of(r) for r in requests_for(fake_openai, "CharacterProposal")]
        assert len(prompts) == 2
        for prompt in prompts:
            assert "unaware" not in prompt and "Leo searches the drawer" not in prompt
            assert "Leo returns" not in prompt  # nor the plan's beats
        (leo,) = [p for p in prompts if "You are Leo" in p]
        assert "## Where you are\nhallway" in leo
        (mara,) = [p for p in prompts if "You are Mara" in p]
        assert "## Where you are\nstudy" in mara
