"""Model mode: every role on a chat model, through the real graph, Redis and HTTP client.

The chat model is the real ChatOpenAI talking HTTP to
:class:`fabula.testing.fake_openai.FakeOpenAI`.
Replies are routed by the schema a request asks for (``TurnPlan``, ``CharacterProposal``,
free text, ``ExtractedActions``) and, for the fanned-out character agents, by the name in
their prompt, so the order the graph happens to make its calls in does not matter.

Every story starts as the hollow_book world after its scripted opening (committed by the
offline engine): Leo put the key in the desk drawer and went to the hallway; Mara, alone,
moved it to the hollow book. Leo still believes it is in the drawer.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, get_args

import pytest
import redis.asyncio as aredis

from fabula.agents.character.model import ModelCharacter
from fabula.agents.character.offline import OfflineCharacter
from fabula.agents.contracts import (
    CharacterBrief,
    Decision,
    Finding,
    PlanRequest,
    TurnPlan,
    WriteRequest,
)
from fabula.agents.factory import make_roles
from fabula.agents.llm import make_client
from fabula.agents.memory_builder.model import ModelMemoryBuilder, second_readings
from fabula.agents.memory_builder.offline import read_controlled
from fabula.agents.memory_builder.schema import ExtractedActions
from fabula.agents.planner.model import ModelPlanner
from fabula.agents.reading.extract import extract
from fabula.agents.schemas import expanded, strict_schema
from fabula.agents.views import author_view
from fabula.agents.writer.model import EMPTY_FEEDBACK, ModelWriter
from fabula.errors import InvalidInput, ModelOutputError
from fabula.graph.nodes.drafting import REVISION_KEPT
from fabula.graph.service import Fabula
from fabula.memory.actions import REQUIRED_FIELDS, ActionKind
from fabula.memory.projections import project_beliefs, project_world
from fabula.settings import Settings
from fabula.testing.model import (
    EXTRACTED,
    GO,
    LEO,
    MARA,
    PASSAGE,
    PLAN,
    STORY,
    TEXT,
    FakeOpenAI,
    Reply,
    go_action,
    prompt_of,
    request_schema,
    requests_for,
    script_turn,
)
from fabula.worlds.loader import load_world


def model_builder(settings: Settings) -> ModelMemoryBuilder:
    """The model memory-builder reading every prose sentence (the offline reader first is
    controlled English alone), so what these tests see is the model's reading."""
    return ModelMemoryBuilder(make_client(settings.model, "memory_builder"), reader=read_controlled)


def schemas(fake: FakeOpenAI) -> list[str]:
    return [request_schema(r) for r in fake.requests]


async def story_keys(url: str) -> dict[bytes, object]:
    """Every key of the story with its content (checkpoints are elsewhere).

    Content, not DUMP bytes: a read may take a step of a hash table's incremental rehash,
    which reorders its serialisation without changing it.
    """
    client = aredis.Redis.from_url(url)
    try:
        out: dict[bytes, object] = {}
        async for key in client.scan_iter(match=f"fab:{{{STORY}}}:*"):
            kind = await client.type(key)
            if kind == b"hash":
                out[key] = await client.hgetall(key)
            elif kind == b"zset":
                out[key] = await client.zrange(key, 0, -1, withscores=True)
            elif kind == b"set":
                out[key] = await client.smembers(key)
            else:
                out[key] = await client.dump(key)
        return out
    finally:
        await client.aclose()


class TestFactory:
    def test_offline_settings_give_the_offline_engine(self, tmp_path: Path) -> None:
        roles = make_roles(Settings(home=tmp_path))
        assert isinstance(roles.character, OfflineCharacter)

    def test_model_settings_give_each_role_its_own_client(self, settings: Settings) -> None:
        """Every role but the symbolic critic on the model, each with its own client (its
        own method and usage); attempts per structured call follow max_attempts; the
        memory-builder reads at temperature 0."""
        model_settings = settings.model.model_copy(update={"max_attempts": 5})
        roles = make_roles(settings.model_copy(update={"model": model_settings}))
        assert isinstance(roles.planner, ModelPlanner)
        assert isinstance(roles.character, ModelCharacter)
        assert isinstance(roles.writer, ModelWriter)
        assert isinstance(roles.memory_builder, ModelMemoryBuilder)
        clients = [
            roles.planner.client,
            roles.character.client,
            roles.writer.client,
            roles.memory_builder.model_reader.client,
        ]
        assert [c.role for c in clients] == ["planner", "character", "writer", "memory_builder"]
        assert len({id(c) for c in clients}) == 4
        assert (
            roles.planner.client.max_attempts
            == roles.memory_builder.model_reader.client.max_attempts
            == 5
        )
        assert roles.memory_builder.model_reader.client.chat.temperature == 0.0  # type: ignore[attr-defined]
        assert roles.writer.client.chat.temperature == 0.7  # type: ignore[attr-defined]

    def test_a_role_without_a_model_runs_offline(self, settings: Settings) -> None:
        only_writer = Settings(home=settings.home, roles={"writer": settings.model})
        roles = make_roles(only_writer)
        assert isinstance(roles.writer, ModelWriter)
        assert isinstance(roles.character, OfflineCharacter)


class TestWholeTurn:
    async def test_every_role_on_the_model_then_approved_and_committed(
        self, fab: Fabula, fake_openai: FakeOpenAI, redis_url: str
    ) -> None:
        """Plan, two characters, writer and memory-builder all answer over HTTP; the approver
        sees the draft and the delta preview; the approved text is committed as written,
        with W and B changed by the extracted action and the unread sentence as narration.
        The commit reuses the preview's extraction: one memory-builder call per text."""
        script_turn(fake_openai)
        store = fab.store(STORY)
        assert (await fab.run(store, auto=False)).outcome == "pending"

        pending = await fab.read(store).pending()
        assert pending is not None and pending.turn == 4
        assert pending.request.draft.text == PASSAGE
        assert pending.request.plan is not None
        assert pending.request.plan.focal == ("leo", "mara")
        preview = pending.request.preview
        assert "Leo.location = study" in preview.world
        assert "Mara: Leo.location = study [observed]" in preview.beliefs
        assert f"enter: {GO}" in preview.events
        assert "narration: Mara hummed by the window." in preview.events
        unparsed = [f for f in pending.request.findings if f.kind == "unparsed"]
        assert [f.quote for f in unparsed] == ["Mara hummed by the window."]
        assert await store.head() == 3

        assert (await fab.decide(store, Decision(action="approve"))).outcome == "committed"
        assert await store.head() == 4
        (turn,) = await store.turn_texts(4, 4)
        assert turn.text == PASSAGE
        world = await project_world(store)
        assert world.where("leo") == "study"
        assert (await project_beliefs(store, ("mara",))).where("leo") == "study"
        leo = await project_beliefs(store, ("leo",))
        assert leo.where("leo") == "study"
        assert leo.where("brass_key") == "desk_drawer"  # still false: he has not looked
        events = await store.events(list(turn.events))
        assert [e.kind for e in events][-1] == "narration"

        assert sorted(schemas(fake_openai)) == sorted(
            ["TurnPlan", "CharacterProposal", "CharacterProposal", TEXT, "ExtractedActions"]
        )
        assert schemas(fake_openai)[0] == "TurnPlan"
        assert fake_openai.pending == 0
        (writer,) = requests_for(fake_openai, TEXT)
        prompt = prompt_of(writer)
        assert "## Memory" in prompt and "B[Leo]" in prompt  # the budgeted context
        assert "go target=study (the key is in the desk drawer)" in prompt  # Leo's proposal
        (leo_prompt,) = [
            p
            for r in requests_for(fake_openai, "CharacterProposal")
            if "You are Leo" in (p := prompt_of(r))
        ]
        assert "desk drawer (participated, turn 1)" in leo_prompt
        assert "Mara moved the brass key" not in leo_prompt
        (extraction,) = requests_for(fake_openai, "ExtractedActions")
        request = prompt_of(extraction)  # v2: the scene and the previous turn, for pronouns
        previous = load_world("hollow_book").opening.turns[-1]
        assert f"## Previous turn\n{previous}" in request
        assert "## Scene\nlatest entry: hallway\nLeo is in hallway\nMara is in study" in request


class TestMalformedOutput:
    async def test_a_bad_extraction_is_retried_then_refused_and_nothing_is_committed(
        self, fab: Fabula, fake_openai: FakeOpenAI, redis_url: str
    ) -> None:
        """Invalid JSON, a span outside the text, an action without its actor: three
        attempts, each told what was wrong, then ModelOutputError; the story is untouched."""
        before = await story_keys(redis_url)
        script_turn(fake_openai, extraction=False)
        fake_openai.reply_json('{"actions": [', schema="ExtractedActions")
        fake_openai.reply_json(
            {"actions": [go_action(0, len(PASSAGE) + 5)]}, schema="ExtractedActions"
        )
        fake_openai.reply_json(
            {"actions": [go_action() | {"actors": []}]}, schema="ExtractedActions"
        )
        fake_openai.reply_json(EXTRACTED, schema="ExtractedActions")  # never asked for
        store = fab.store(STORY)
        with pytest.raises(ModelOutputError) as caught:
            await fab.run(store, auto=False)
        assert caught.value.context["schema"] == "ExtractedActions"
        assert caught.value.context["attempts"] == 3
        assert caught.value.context["turn"] == 4
        extractions = requests_for(fake_openai, "ExtractedActions")
        assert len(extractions) == 3
        assert "Invalid JSON" in extractions[1]["messages"][-1]["content"]
        assert "is not inside the text" in extractions[2]["messages"][-1]["content"]
        assert fake_openai.pending == 1

        assert await story_keys(redis_url) == before
        assert await store.head() == 3
        assert await store.turn_texts(4, 4) == []
        assert await fab.read(store).pending() is None

        script_turn(fake_openai)  # the turn can be written again: as its next attempt
        assert (await fab.run(store, auto=False)).outcome == "pending"
        pending = await fab.read(store).pending()
        assert pending is not None and pending.request.draft.text == PASSAGE
        first, again = (prompt_of(r) for r in requests_for(fake_openai, "TurnPlan"))
        assert "1 earlier plan(s)" not in first and "1 earlier plan(s)" in again

    async def test_a_turn_that_failed_while_planning_is_run_again_as_its_next_attempt(
        self, fab: Fabula, fake_openai: FakeOpenAI
    ) -> None:
        """At temperature 0 the same attempt would fail the same way again."""
        for _ in range(3):
            fake_openai.reply_json(PLAN | {"focal": ["ben"]}, schema="TurnPlan")
        store = fab.store(STORY)
        with pytest.raises(ModelOutputError):
            await fab.run(store, auto=False)
        script_turn(fake_openai)
        assert (await fab.run(store, auto=False)).outcome == "pending"
        plans = [prompt_of(r) for r in requests_for(fake_openai, "TurnPlan")]
        assert len(plans) == 4
        assert "1 earlier plan(s)" not in plans[0] and "1 earlier plan(s)" in plans[3]

    async def test_an_edit_that_cannot_be_read_is_not_committed(
        self, fab: Fabula, fake_openai: FakeOpenAI, redis_url: str
    ) -> None:
        """The approver's edited text goes to the memory-builder; when it never validates,
        decide raises and nothing of turn 4 reaches the story's keys."""
        script_turn(fake_openai)
        store = fab.store(STORY)
        assert (await fab.run(store, auto=False)).outcome == "pending"
        before = await story_keys(redis_url)
        for _ in range(3):
            fake_openai.reply_json({"actions": [go_action(40, 90)]}, schema="ExtractedActions")
        with pytest.raises(InvalidInput, match="ModelOutputError"):
            # prose the offline reader leaves to the model (it names nothing the story has)
            text = "Something cold closed around his fingers at last."
            await fab.decide(store, Decision(action="edit", text=text))
        assert await story_keys(redis_url) == before
        assert await store.head() == 3

    async def test_a_plan_naming_an_unknown_character_is_retried(
        self, fab: Fabula, fake_openai: FakeOpenAI, settings: Settings
    ) -> None:
        """The validation error names the unknown character and the known ones; a plan that
        never names real characters is ModelOutputError after the bound."""
        two = settings.model.model_copy(update={"max_attempts": 2})
        planner = ModelPlanner(make_client(two, "planner"))
        view = await author_view(fab.store(STORY))
        fake_openai.reply_json(PLAN | {"focal": ["ben"]})
        fake_openai.reply_json(PLAN)
        plan = await planner.plan(PlanRequest(view, "Leo returns"))
        assert plan.focal == ("leo", "mara")
        feedback = fake_openai.requests[1]["messages"][-1]["content"]
        assert "no such character: ben (known: leo, mara)" in feedback
        assert "## Direction\nLeo returns" in prompt_of(fake_openai.requests[0])

        fake_openai.reply_json(PLAN | {"focal": ["ben"]})
        fake_openai.reply_json(PLAN | {"place": "cellar"})
        with pytest.raises(ModelOutputError) as caught:
            await planner.plan(PlanRequest(view))
        assert "no such place: cellar" in caught.value.context["error"]

    async def test_an_empty_passage_is_asked_for_again_once(
        self, fab: Fabula, fake_openai: FakeOpenAI, settings: Settings
    ) -> None:
        """An empty reply is asked for once more, saying why; a second one is an error."""
        writer = ModelWriter(make_client(settings.model, "writer"))
        view = await author_view(fab.store(STORY))
        request = WriteRequest(plan=TurnPlan.model_validate(PLAN), proposals=())
        fake_openai.reply_text("  \n ")
        fake_openai.reply_text(PASSAGE)
        draft = await writer.write(request, view)
        assert draft.text == PASSAGE
        again = fake_openai.requests[-1]["messages"]
        assert again[:-1] == fake_openai.requests[-2]["messages"]
        assert again[-1] == {"role": "user", "content": EMPTY_FEEDBACK}

        fake_openai.reply_text("  \n ")
        fake_openai.reply_text("")
        with pytest.raises(ModelOutputError, match="empty twice"):
            await writer.write(request, view)
        assert len(fake_openai.requests) == 4


class TestWriter:
    async def test_a_revision_gets_the_notes_and_the_critics_findings(
        self, fab: Fabula, fake_openai: FakeOpenAI, settings: Settings
    ) -> None:
        """The draft is the reply as written (a code fence around it dropped); the request
        carries the memory context as given, the notes and the findings with their quotes."""
        writer = ModelWriter(make_client(settings.model, "writer"))
        view = await author_view(fab.store(STORY))
        finding = Finding(kind="contradiction", message="the key is not there", quote="Leo took")
        request = WriteRequest(
            plan=TurnPlan.model_validate(PLAN),
            proposals=(),
            context="## W: the world\n- the location of Leo is hallway",
            notes=("make it tense",),
            findings=(finding,),
            revision=1,
        )
        fake_openai.reply_text(f"```\n{PASSAGE}\n```")
        draft = await writer.write(request, view)
        assert (draft.text, draft.revision) == (PASSAGE, 1)
        prompt = prompt_of(fake_openai.requests[0])
        assert "## Memory\n## W: the world\n- the location of Leo is hallway" in prompt
        assert "## Notes\n- make it tense" in prompt
        assert '- error (contradiction): the key is not there — "Leo took"' in prompt
        assert "focal: Leo, Mara" in prompt


async def used_memory(url: str) -> int:
    """Redis's ``used_memory``, in bytes."""
    client = aredis.Redis.from_url(url)
    try:
        info = await client.info("memory")
        return int(info["used_memory"])
    finally:
        await client.aclose()


class TestRefusedDraft:
    async def test_a_passage_longer_than_a_turn_is_refused_and_no_checkpoint_keeps_it(
        self, fab: Fabula, fake_openai: FakeOpenAI, redis_url: str
    ) -> None:
        """Reproduction: a writer's reply past the turn text limit (under the reply cap) was
        checkpointed with the writer's step, then refused by the critic as bad *input* (exit
        2): Redis kept it until the story was deleted. Now the writer's step refuses it, a
        model error (exit 6), and the turn's checkpoint grows by nothing like it."""
        passage = "Leo walked back into the study. " * 40_000  # 1.3 MB, one line
        fake_openai.reply_json(PLAN, schema="TurnPlan")
        fake_openai.reply_json(LEO, schema="CharacterProposal", contains="You are Leo")
        fake_openai.reply_json(MARA, schema="CharacterProposal", contains="You are Mara")
        fake_openai.reply_text(passage, schema=TEXT)
        store = fab.store(STORY)
        before_keys = await story_keys(redis_url)
        before = await used_memory(redis_url)
        with pytest.raises(ModelOutputError) as caught:
            await fab.run(store, auto=False)
        grown = await used_memory(redis_url) - before
        assert "65,536 a turn" in str(caught.value) and "\n" not in str(caught.value)
        assert caught.value.exit_code == 6
        assert grown < 512 * 1024, f"Redis grew {grown:,} bytes"
        assert await story_keys(redis_url) == before_keys

        script_turn(fake_openai)  # the turn can be written again: as its next attempt
        assert (await fab.run(store, auto=False)).outcome == "pending"


class TestCommandLine:
    @pytest.mark.parametrize(
        "hostile",
        [
            Reply(raw=b"<html>502 Bad Gateway</html>", schema="TurnPlan"),
            Reply(endless=True, schema="TurnPlan"),
            Reply(content="x" * 200, drip_s=0.1, schema="TurnPlan"),
        ],
        ids=["not-json", "endless", "slowloris"],
    )
    async def test_a_hostile_reply_ends_run_in_one_line_with_the_models_status(
        self, fab: Fabula, fake_openai: FakeOpenAI, redis_url: str, hostile: Reply
    ) -> None:
        """Reproduction: `fabula run` against a planner whose 200 was not JSON died with a
        JSONDecodeError traceback (exit 1); one whose reply never ended, or came a byte at
        a time, ran for minutes. Now: one line, exit 6, within the model's timeout."""
        fake_openai.queue(hostile)
        env = {
            **os.environ,
            "FABULA_REDIS_URL": redis_url,
            "FABULA_MODEL": "fake-model",
            "FABULA_MODEL_BASE_URL": fake_openai.base_url,
            "FABULA_MODEL_API_KEY": "test-key",
            "FABULA_MODEL_TIMEOUT": "2",
            "FABULA_CONSOLIDATE": "off",
        }
        started = time.monotonic()
        proc = subprocess.run(
            [sys.executable, "-m", "fabula", "run", STORY],
            capture_output=True,
            text=True,
            env=env,
            timeout=120,
        )
        assert proc.returncode == 6, proc.stderr
        # the one error line (the warnings logged before it are JSON lines)
        errors = [line for line in proc.stderr.splitlines() if line.startswith("error: ")]
        assert len(errors) == 1 and "Traceback" not in proc.stderr, proc.stderr
        assert len(fake_openai.requests) == 1
        # the process's own start (imports, Redis) is most of what is above the timeout
        assert time.monotonic() - started < 2 + 25


class TestEveryDraftRefused:
    async def test_a_turn_given_up_is_said_not_counted(
        self, fab: Fabula, fake_openai: FakeOpenAI, redis_url: str
    ) -> None:
        """Issue 45: with a critic that refuses every draft, `run --turns 2 --auto` said "1
        turn(s) written" and exited 0, the part given for the turn dropped without a word.
        Now the turn given up is one error line naming the unused part, exit 4 (a
        conflict), and nothing of it is written."""

        def answer(body: dict[str, Any]) -> Reply:
            schema = request_schema(body)
            if schema == "TurnPlan":
                return Reply(content=json.dumps(PLAN))
            if schema == "CharacterProposal":
                return Reply(content=json.dumps(LEO if "You are Leo" in str(body) else MARA))
            # Leo is in the hallway, the key in the study: the critic refuses every draft
            return Reply(content="Leo took the brass key.")

        fake_openai.fallback = answer
        store = fab.store(STORY)
        env = {
            **os.environ,
            "FABULA_REDIS_URL": redis_url,
            "FABULA_MODEL": "fake-model",
            "FABULA_MODEL_BASE_URL": fake_openai.base_url,
            "FABULA_MODEL_API_KEY": "test-key",
            "FABULA_CONSOLIDATE": "off",
        }
        args = ["run", STORY, "--turns", "2", "--auto", "--play", "leo", "--as", "Leo: I wait."]
        proc = subprocess.run(
            [sys.executable, "-m", "fabula", *args],
            capture_output=True,
            text=True,
            env=env,
            timeout=300,
        )
        errors = [line for line in proc.stderr.splitlines() if line.startswith("error: ")]
        assert proc.returncode == 4, (proc.stdout, proc.stderr[-2000:])
        assert len(errors) == 1 and "Traceback" not in proc.stderr
        assert "turn 4 of t1 was given up" in errors[0]
        assert "the part given for leo was not used" in errors[0]
        assert "0 turns written" in proc.stdout
        assert await store.head() == 3


class TestRevisionCut:
    async def test_a_revision_cut_before_its_first_sentence_keeps_the_draft_it_revised(
        self, fab: Fabula, fake_openai: FakeOpenAI
    ) -> None:
        """Reproduction: Gemma 3 270M's revisions ran to their token limit with no sentence
        ended, twice, and the whole turn failed with ModelTruncated. Now the draft the
        revision was for is kept, with the critic's findings on it and a warning saying
        why, and goes to the approver; nothing is committed before that."""
        first = "Leo took the brass key."  # Leo is in the hallway; the key is in the study
        fake_openai.reply_json(PLAN, schema="TurnPlan")
        fake_openai.reply_json(LEO, schema="CharacterProposal", contains="You are Leo")
        fake_openai.reply_json(MARA, schema="CharacterProposal", contains="You are Mara")
        fake_openai.reply_text(first, schema=TEXT)
        fake_openai.reply_text("Leo went to the", schema=TEXT, finish_reason="length")
        fake_openai.reply_text("Leo went to the study and", schema=TEXT, finish_reason="length")
        store = fab.store(STORY)
        assert (await fab.run(store, auto=False)).outcome == "pending"
        pending = await fab.read(store).pending()
        assert pending is not None
        assert pending.request.draft.text == first
        findings = pending.request.findings
        assert [f for f in findings if f.severity == "error"]  # why it was revised
        assert findings[-1] == REVISION_KEPT
        assert len(requests_for(fake_openai, TEXT)) == 3
        assert fake_openai.pending == 0
        assert await store.head() == 3

        fake_openai.reply_json(PLAN, schema="TurnPlan")  # a rejection plans again
        fake_openai.reply_json(LEO, schema="CharacterProposal", contains="You are Leo")
        fake_openai.reply_json(MARA, schema="CharacterProposal", contains="You are Mara")
        fake_openai.reply_text(PASSAGE, schema=TEXT)
        fake_openai.reply_json(EXTRACTED, schema="ExtractedActions")
        assert (await fab.decide(store, Decision(action="reject", note="no"))).outcome == "pending"
        again = await fab.read(store).pending()
        assert again is not None and again.request.draft.text == PASSAGE
        assert REVISION_KEPT not in again.request.findings


class TestExtractionSchema:
    def test_every_kind_of_action_has_its_fields_checked(self) -> None:
        """A kind added to the tracker must say what it needs before a model may emit it."""
        assert set(REQUIRED_FIELDS) == set(get_args(ActionKind))


class TestControlledSentences:
    TEXT = (
        "Leo went to the study. Mara hummed by the window. Mara took the brass key. "
        "Then Mara slipped quietly out into the hallway."
    )

    async def test_the_offline_reading_is_kept_and_the_model_reads_the_rest(
        self, fab: Fabula, fake_openai: FakeOpenAI, settings: Settings
    ) -> None:
        """Reproduction: the model returned no actions for plain controlled English, and
        memory lost the turn's events. Now the controlled sentences' actions are exactly the
        offline reader's; the model is shown only the other sentences, its schema's spans
        lie among them, and its reading of a controlled sentence is dropped."""
        text = self.TEXT
        slipped = text.index("Then")
        wrong = go_action(0, 22) | {"place": "hallway"}  # a second reading of sentence 1
        went = go_action(slipped, len(text)) | {"actors": ["Mara"], "place": "hallway"}
        fake_openai.reply_json({"actions": [wrong, went], "new_entities": []})
        builder = ModelMemoryBuilder(
            make_client(settings.model, "memory_builder"), reader=read_controlled
        )
        store = fab.store(STORY)
        actions = await builder.model_reader.read(text, await store.entities())
        offline = [a for a in extract(text) if a.kind != "narration"]
        assert [a.kind for a in offline] == ["go", "take"]
        assert [a for a in actions if a.kind != "narration" and a.start < slipped] == offline
        assert [(a.kind, tuple(a.actors), a.place) for a in actions if a.start >= slipped] == [
            ("go", ("Mara",), "hallway")
        ]
        assert [a.kind for a in actions] == ["go", "narration", "take", "go"]
        (request,) = fake_openai.requests
        sentences = prompt_of(request).partition("## Sentences to read")[2]
        assert "[23:49] Mara hummed by the window." in sentences
        assert "Leo went" not in sentences
        schema = expanded(request["response_format"]["json_schema"]["schema"])
        (go,) = [
            m
            for m in schema["properties"]["actions"]["items"]["anyOf"]
            if m["properties"]["kind"]["const"] == "go"
        ]
        assert go["properties"]["start"] == {"type": "integer", "minimum": 23, "maximum": len(text)}
        assert "study" not in go["properties"]["actors"]["items"]["enum"]  # a place: no actor

        fake_openai.reply_json({"actions": [wrong, went], "new_entities": []})
        delta = await builder.build(store, 4, text)
        assert {(s.subject, s.value) for s in delta.states if s.attribute == "location"} >= {
            ("leo", "study"),
            ("brass_key", "mara"),
            ("mara", "hallway"),
        }

    async def test_a_differing_second_reading_is_a_finding_for_the_critic(
        self, fab: Fabula, fake_openai: FakeOpenAI
    ) -> None:
        """The model's reading of a sentence the rules parsed, where it differs, reaches the
        critic's findings (a warning the approver sees), not only a log line; the turn keeps
        the rules' reading."""
        text = "Leo went to the study. Mara hummed by the window."
        other = go_action(0, 22) | {"place": "hallway"}  # not what the rules read
        fake_openai.reply_json(PLAN, schema="TurnPlan")
        fake_openai.reply_json(LEO, schema="CharacterProposal", contains="You are Leo")
        fake_openai.reply_json(MARA, schema="CharacterProposal", contains="You are Mara")
        fake_openai.reply_text(text, schema=TEXT)
        fake_openai.reply_json({"actions": [other], "new_entities": []}, schema="ExtractedActions")
        store = fab.store(STORY)
        assert (await fab.run(store, auto=False)).outcome == "pending"
        pending = await fab.read(store).pending()
        assert pending is not None
        (finding,) = [f for f in pending.request.findings if f.kind == "reading"]
        assert finding.severity == "warning"
        assert finding.quote == "Leo went to the study."
        assert "place hallway" in finding.message and "place study" in finding.message
        assert "Leo.location = study" in pending.request.preview.world
        assert "Leo.location = hallway" not in pending.request.preview.world

    async def test_the_same_second_reading_is_no_finding(
        self, fab: Fabula, fake_openai: FakeOpenAI, settings: Settings
    ) -> None:
        text = "Leo went to the study. Mara hummed by the window."
        builder = ModelMemoryBuilder(
            make_client(settings.model, "memory_builder"), reader=read_controlled
        )
        entities = await fab.store(STORY).entities()
        for reading, found in ((go_action(0, 22), 0), (go_action(0, 22) | {"place": "hallway"}, 1)):
            fake_openai.reply_json({"actions": [reading], "new_entities": []})
            with second_readings() as readings:
                actions = await builder.model_reader.read(text, entities)
            assert len(readings) == found
            assert [(a.kind, a.place) for a in actions] == [("go", "study"), ("narration", None)]

    async def test_an_empty_span_is_read_as_its_sentence(
        self, fab: Fabula, fake_openai: FakeOpenAI, settings: Settings
    ) -> None:
        """Gemma 3 270M on llama.cpp wrote start = end (a grammar cannot forbid it), and
        every reply was refused: such a span is the sentence that holds it."""
        text = "Mara hummed by the window. Leo walked back into the study."
        walked = text.index("Leo")
        empty = go_action(walked + 4, walked + 4)
        fake_openai.reply_json({"actions": [empty], "new_entities": []})
        builder = ModelMemoryBuilder(
            make_client(settings.model, "memory_builder"), reader=read_controlled
        )
        actions = await builder.model_reader.read(text, await fab.store(STORY).entities())
        assert [(a.kind, a.start, a.end) for a in actions] == [
            ("narration", 0, walked - 1),
            ("go", walked, len(text)),
        ]
        assert len(fake_openai.requests) == 1

    async def test_only_the_characters_a_sentence_names_are_its_actors(
        self, fab: Fabula, fake_openai: FakeOpenAI, settings: Settings
    ) -> None:
        """Reproduction: Gemma 3 270M named every character of the scene in every action
        ("Cora, Dev, Ada, Ben ask Cora, Dev, Ada, Ben"), and the critic refused the draft
        for what it never said. A name its sentence does not hold is left out (a pronoun
        stands for one, "they" for all); an action left with no actor is narration; each
        is a warning for the approver."""
        text = (
            "Then Mara slipped quietly out into the hallway. Mara hummed by the window. "
            "She wandered back into the study. They both waited there in silence."
        )
        first, rain, she, they = (text.index(w) for w in ("Then", "Mara hummed", "She", "They"))
        both = ["Mara", "Leo"]
        replies = [
            go_action(first, rain - 1) | {"actors": both, "place": "hallway"},
            go_action(rain, she - 1),  # Leo, in a sentence about the rain
            go_action(she, they - 1) | {"actors": both},
            go_action(they, len(text)) | {"actors": both},
        ]
        fake_openai.reply_json({"actions": replies, "new_entities": []})
        builder = ModelMemoryBuilder(
            make_client(settings.model, "memory_builder"), reader=read_controlled
        )
        with second_readings() as readings:
            actions = await builder.model_reader.read(text, await fab.store(STORY).entities())
        assert [(a.kind, a.actors) for a in actions] == [
            ("go", ("Mara",)),
            ("narration", ()),
            ("go", ("Mara",)),
            ("go", ("Mara", "Leo")),
        ]
        assert [(f.quote[:4], f.message.rsplit(": ", 1)[-1]) for f in readings] == [
            ("Then", "left out"),
            ("Mara", "read as narration"),
            ("She ", "left out"),
        ]
        assert all("does not name Leo" in f.message for f in readings)

    async def test_controlled_english_alone_asks_the_model_nothing(
        self, fab: Fabula, fake_openai: FakeOpenAI, settings: Settings
    ) -> None:
        fake_openai.reply_json({"actions": [], "new_entities": []})  # what the model said
        builder = ModelMemoryBuilder(
            make_client(settings.model, "memory_builder"), reader=read_controlled
        )
        text = "Leo went to the study. Mara took the brass key."
        actions = await builder.model_reader.read(text, await fab.store(STORY).entities())
        assert actions == extract(text)
        assert fake_openai.requests == [] and fake_openai.pending == 1

    async def test_a_controlled_sentence_naming_no_entity_goes_to_the_model(
        self, fab: Fabula, fake_openai: FakeOpenAI, settings: Settings
    ) -> None:
        """The offline reader reads "took the brass key out of the hollow book" as taking
        an object of that name, which the story does not have: the model reads it."""
        text = "Mara took the brass key out of the hollow book."
        take = go_action(0, len(text)) | {
            "kind": "take",
            "actors": ["Mara"],
            "place": None,
            "obj": "brass key",
        }
        fake_openai.reply_json({"actions": [take], "new_entities": []})
        builder = ModelMemoryBuilder(
            make_client(settings.model, "memory_builder"), reader=read_controlled
        )
        actions = await builder.model_reader.read(text, await fab.store(STORY).entities())
        assert [(a.kind, a.obj) for a in actions] == [("take", "brass key")]

    async def test_generic_schemas_are_a_setting(
        self, fab: Fabula, fake_openai: FakeOpenAI, settings: Settings
    ) -> None:
        """FABULA_MODEL_SCHEMAS=generic: the generic strict schema goes on the wire (the
        benchmark's baseline); the reading is the same."""
        generic = settings.model.model_copy(update={"schemas": "generic"})
        builder = ModelMemoryBuilder(make_client(generic, "memory_builder"), reader=read_controlled)
        fake_openai.reply_json(EXTRACTED)
        actions = await builder.model_reader.read(PASSAGE, await fab.store(STORY).entities())
        assert [a.kind for a in actions] == ["go", "narration"]
        sent = fake_openai.requests[0]["response_format"]["json_schema"]["schema"]
        assert sent == strict_schema(ExtractedActions)


class TestFunctionCallingFallback:
    async def test_the_memory_builder_falls_back_to_a_forced_tool_call(
        self, fab: Fabula, fake_openai: FakeOpenAI, settings: Settings
    ) -> None:
        """Against a server without json_schema the extraction comes as tool arguments,
        validated (and retried) the same way; the delta is the tracker's."""
        fake_openai.reject_json_schema = True
        builder = ModelMemoryBuilder(
            make_client(settings.model, "memory_builder"), reader=read_controlled
        )
        fake_openai.reply_tool_call({"actions": [go_action(0, 99)]})
        fake_openai.reply_tool_call(EXTRACTED)
        delta = await builder.build(fab.store(STORY), 4, PASSAGE)
        rejected, bad, good = fake_openai.requests
        assert rejected["response_format"]["type"] == "json_schema"
        assert [t["function"]["name"] for t in good["tools"]] == ["ExtractedActions"]
        assert "response_format" not in bad and "response_format" not in good
        assert "is not inside the text" in good["messages"][-1]["content"]
        assert [e.kind for e in delta.events] == ["exit", "enter", "narration"]
        assert [e.span.quote for e in delta.events] == [GO, GO, "Mara hummed by the window."]
        assert any(s.subject == "leo" and s.value == "study" for s in delta.states)


class TestCharacterPrivacy:
    async def test_the_prompt_holds_only_the_characters_own_mind(
        self, fab: Fabula, fake_openai: FakeOpenAI, settings: Settings
    ) -> None:
        """Leo's prompt has his false belief (the key in the desk drawer), his memories
        and his brief; not the key's true place, nor what Mara did alone, nor her secret."""
        character = ModelCharacter(make_client(settings.model, "character"))
        view = await author_view(fab.store(STORY))
        pack = view.pack
        assert pack is not None
        brief = CharacterBrief(
            character="leo",
            name="Leo",
            goals=("get the brass key",),
            secrets=("the brass key opens the cellar",),
        )
        fake_openai.reply_json(LEO)
        proposal = await character.propose(await fab.minds.mind(STORY, "leo"), brief)
        assert proposal.character == "leo"
        assert proposal.actions[0].target == "study"

        prompt = prompt_of(fake_openai.requests[0])
        assert "- the location of brass key is desk drawer (participated, turn 1)" in prompt
        assert '- turn 1: "Leo put the brass key in the desk drawer."' in prompt
        assert prompt.count("Leo went to the hallway.") == 1  # exit and entry: one sentence
        key_lines = [line for line in prompt.splitlines() if "brass key" in line]
        assert not [line for line in key_lines if "hollow book" in line or "hollow_book" in line]
        assert "Mara moved the brass key" not in prompt
        assert "Mara hid the brass key" not in prompt  # Mara's secret
        assert pack.premise not in prompt
        assert view.world.where("brass_key") == "hollow_book"  # the truth it must not see


class TestConcurrency:
    @pytest.mark.parametrize("limit", [1, 2])
    async def test_the_character_fan_out_respects_the_limit(
        self, fab: Fabula, fake_openai: FakeOpenAI, settings: Settings, redis_url: str, limit: int
    ) -> None:
        """FABULA_MODEL_CONCURRENCY bounds the character agents' calls in flight at once
        (both characters answer slowly — 2 s each, so that on a loaded machine the second
        request still starts before the first answers — so unbounded they would overlap)."""
        fake_openai.reply_json(PLAN, schema="TurnPlan")
        fake_openai.reply_json(LEO, schema="CharacterProposal", contains="You are Leo", delay_s=2.0)
        fake_openai.reply_json(
            MARA, schema="CharacterProposal", contains="You are Mara", delay_s=2.0
        )
        fake_openai.reply_text(PASSAGE, schema=TEXT)
        fake_openai.reply_json(EXTRACTED, schema="ExtractedActions")
        bounded = settings.model_copy(update={"model_concurrency": limit})
        async with Fabula(redis_url, bounded, roles=make_roles(bounded)) as app:
            assert (await app.run(app.store(STORY), auto=False)).outcome == "pending"
        assert fake_openai.max_in_flight == limit


class TestUsage:
    async def test_each_turn_keeps_its_usage_by_role(
        self, fab: Fabula, fake_openai: FakeOpenAI
    ) -> None:
        """Every role's tokens (from the server's own counts), calls and retries are summed
        over the turn's nodes, stored with the committed turn and shown with their cost."""
        from fabula.graph.cli.show import ShowWhat, view_data
        from fabula.settings import Price

        fake_openai.queue(Reply(status=503, error="busy", schema=TEXT))  # the writer retries
        script_turn(fake_openai)
        store = fab.store(STORY)
        assert (await fab.run(store, auto=True)).outcome == "committed"
        usage = (await store.turn_usage())[4]
        calls = {role: u["calls"] for role, u in usage.items()}
        assert calls == {"planner": 1, "character": 2, "writer": 1, "memory_builder": 1}
        assert usage["writer"]["retries"] == 1
        assert all(
            int(u["input_tokens"]) > 0 and int(u["output_tokens"]) > 0 for u in usage.values()
        )
        sent = sum(int(u["input_tokens"]) for u in usage.values())

        priced = fab.settings.model_copy(
            update={"prices": {"fake-model": Price(input=1.0, output=2.0)}}
        )
        object.__setattr__(fab, "settings", priced)
        shown = await view_data(fab.read(store), ShowWhat.usage, None, None)
        (turn,) = shown["turns"]
        assert turn["turn"] == 4 and turn["input_tokens"] == sent
        expected = (sent * 1.0 + turn["output_tokens"] * 2.0) / 1e6
        assert turn["cost_usd"] == pytest.approx(expected)
        assert shown["total"]["roles"]["character"]["calls"] == 2


class TestStreaming:
    async def test_the_writers_prose_streams_through_langgraph(
        self, fab: Fabula, fake_openai: FakeOpenAI
    ) -> None:
        """With a listener, the turn runs with LangGraph's "messages" stream: the writer's
        model call streams (server-sent events) and its prose arrives in pieces, in order;
        structured calls never stream."""
        from fabula.graph.service import TurnEvent

        pieces: list[str] = []

        async def listen(event: TurnEvent) -> None:
            if event.kind == "prose":
                pieces.append(event.text)

        script_turn(fake_openai)
        store = fab.store(STORY)
        assert (await fab.run(store, auto=False, listener=listen)).outcome == "pending"
        assert "".join(pieces) == PASSAGE and len(pieces) > 1
        (writer,) = requests_for(fake_openai, TEXT)
        assert writer["stream"] is True
        structured = [r for r in fake_openai.requests if request_schema(r) != TEXT]
        assert not any(r.get("stream") for r in structured)


class TestPromptsV2:
    async def test_a_character_sees_who_told_it_and_what_it_thinks_others_believe(
        self, fab: Fabula, fake_openai: FakeOpenAI, settings: Settings
    ) -> None:
        store = fab.store(STORY)
        await fab.commit_scripted(
            store, "Mara privately told Leo that the brass key is in the hollow book."
        )
        character = ModelCharacter(make_client(settings.model, "character"))
        assert character.prompt.version == 3
        fake_openai.reply_json(LEO)
        brief = CharacterBrief(character="leo", name="Leo")
        await character.propose(await fab.minds.mind(STORY, "leo"), brief)
        prompt = prompt_of(fake_openai.requests[0])
        assert "is hollow book (told_private by Mara, turn 4)" in prompt
        assert (
            "## What you think the others believe\n"
            "- Mara: the location of brass key is hollow book" in prompt
        )

    async def test_the_writer_sees_the_story_its_style_and_the_voices(
        self, fab: Fabula, fake_openai: FakeOpenAI, settings: Settings
    ) -> None:
        """v2 adds the premise, the pack's style line and the focal voices, and states the
        plan once; v1 is kept, for replaying recorded runs."""
        view = await author_view(fab.store(STORY))
        assert view.pack is not None and view.pack.style
        plan = TurnPlan.model_validate(PLAN | {"focal": ["leo", "mara"]})
        request = WriteRequest(plan=plan, proposals=())
        for version in (None, 1):
            fake_openai.reply_text(PASSAGE)
            writer = ModelWriter(make_client(settings.model, "writer"), prompt_version=version)
            await writer.write(request, view)
        v2, v1 = (prompt_of(r) for r in fake_openai.requests)
        assert f"## Story\n{view.pack.premise}\nstyle: {view.pack.style}" in v2
        assert "## Voices\n- Leo: brisk and guarded\n- Mara: warm and teasing" in v2
        assert v2.count("Leo comes back for the brass key") == 1
        assert "## Plan\nscene goal:" in v1 and "## Voices" not in v1
