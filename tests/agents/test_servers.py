"""What real servers do differently, each met by the model client (agents.llm) and each
taught to the test server (:mod:`fabula.testing.fake_openai`), over real HTTP.

Found against llama.cpp's ``llama-server`` and other OpenAI-compatible servers: chat
templates without a system role, ``reasoning_content`` beside ``content``, a stream without
a final usage chunk, ``max_completion_tokens`` versus ``max_tokens``, a 400 for a parameter
the server does not take (``seed``, ``strict``), a model name it does not know, and a
server that answers ``json_object`` but neither ``json_schema`` nor tools. Also here: prose
cut at its token limit (kept up to its last complete sentence, marked for the critic and
the approver) and the stop sequences setting; and hostile replies: a 200 that is not JSON,
a reply that never ends (streamed or not), one sent a byte at a time, one larger than the
reply cap, each ended in one line within the model's timeout.
"""

from __future__ import annotations

import time

import pytest
from structlog.testing import capture_logs

from fabula.agents.contracts import TurnPlan, WriteRequest
from fabula.agents.llm import ModelClient, make_client
from fabula.agents.llm_server import CompatChat, adapt_payload
from fabula.agents.usage import metering
from fabula.agents.views import author_view
from fabula.agents.writer.model import (
    EMPTY_FEEDBACK,
    UNFINISHED_FEEDBACK,
    CutDraft,
    ModelWriter,
    complete_sentences,
    draft_findings,
)
from fabula.errors import ConfigError, ModelOutputError, ModelTruncated, ModelUnavailable
from fabula.graph.service import Fabula
from fabula.settings import Settings
from fabula.testing.fake_openai import message_text, tokens
from fabula.testing.model import (
    EXTRACTED,
    GOOD,
    LEO,
    MARA,
    MESSAGES,
    PLAN,
    STORY,
    TEXT,
    FakeOpenAI,
    Reply,
    ScenePlan,
    client_for,
    events,
    requests_for,
)

CUT = "Leo went to the study. Mara watched him from the door. She held her bre"


class TestSystemRole:
    async def test_a_template_without_a_system_role_gets_it_in_the_first_user_message(
        self, fake_openai: FakeOpenAI
    ) -> None:
        """A 400 "System role not supported" is met once: the request is sent again with
        the system text at the head of the user message, and so is every later one."""
        fake_openai.no_system_role = True
        model = client_for(fake_openai)
        fake_openai.reply_json(GOOD)
        fake_openai.reply_json(GOOD)
        with capture_logs() as logs:
            assert (await model.structured(ScenePlan, MESSAGES)).goal == GOOD["goal"]
            await model.structured(ScenePlan, MESSAGES)
        first, again, later = fake_openai.requests
        assert [m["role"] for m in first["messages"]] == ["system", "user"]
        assert again["messages"] == [
            {"role": "user", "content": "You plan scenes.\n\nPlan the next one."}
        ]
        assert later["messages"] == again["messages"]
        (adapted,) = events(logs, "model_server_adapted")
        assert "first user message" in str(adapted["change"])

    async def test_a_500_naming_the_system_role_is_not_retried_as_transient(
        self, fake_openai: FakeOpenAI
    ) -> None:
        fake_openai.reply_error(500, "Jinja Exception: System role not supported")
        fake_openai.reply_json(GOOD)
        model = client_for(fake_openai)
        with capture_logs() as logs:
            await model.structured(ScenePlan, MESSAGES)
        assert len(fake_openai.requests) == 2
        assert not events(logs, "model_retry")


class TestReasoning:
    async def test_reasoning_content_beside_the_content_is_not_read(
        self, fake_openai: FakeOpenAI
    ) -> None:
        fake_openai.reasoning = 'I think the plan is {"goal": "wrong"}.'
        fake_openai.reply_json(GOOD)
        assert (await client_for(fake_openai).structured(ScenePlan, MESSAGES)).goal == GOOD["goal"]

    async def test_a_think_block_at_the_head_of_the_content_is_dropped(
        self, fake_openai: FakeOpenAI
    ) -> None:
        fake_openai.reply_text("<think>\nThe key... no.\n</think>\n\nThe wind rose.")
        fake_openai.reply_json("<think>hm</think>" + '{"goal": "g", "beats": ["b"], "tension": 1}')
        model = client_for(fake_openai)
        assert await model.text(MESSAGES) == "The wind rose."
        assert (await model.structured(ScenePlan, MESSAGES)).goal == "g"

    async def test_a_streamed_reply_with_reasoning_deltas_keeps_only_the_prose(
        self, fake_openai: FakeOpenAI
    ) -> None:
        fake_openai.reasoning = "Let me think about the scene first."
        fake_openai.reply_text("The wind rose.")
        model = client_for(fake_openai)
        model.chat.streaming = True  # type: ignore[attr-defined]
        assert await model.text(MESSAGES) == "The wind rose."
        assert fake_openai.requests[0]["stream"] is True


class TestStreamUsage:
    async def test_a_stream_with_its_usage_chunk_counts_the_servers_usage(
        self, fake_openai: FakeOpenAI
    ) -> None:
        fake_openai.reply_text("The wind rose over the rocks.")
        model = client_for(fake_openai)
        model.chat.streaming = True  # type: ignore[attr-defined]
        with metering() as meter:
            await model.text(MESSAGES)
        usage = meter.roles["planner"]
        (request,) = fake_openai.requests
        assert usage.input_tokens == tokens(message_text(request))
        assert usage.output_tokens == tokens("The wind rose over the rocks.")

    async def test_a_stream_without_a_usage_chunk_is_estimated_and_logged(
        self, fake_openai: FakeOpenAI
    ) -> None:
        fake_openai.stream_usage = False
        fake_openai.reply_text("The wind rose over the rocks.")
        fake_openai.reply_text("The lamp turned.")
        model = client_for(fake_openai)
        model.chat.streaming = True  # type: ignore[attr-defined]
        with metering() as meter, capture_logs() as logs:
            await model.text(MESSAGES)
            await model.text(MESSAGES)
        usage = meter.roles["planner"]
        assert usage.calls == 2 and usage.input_tokens > 0 and usage.output_tokens > 0
        assert len(events(logs, "model_usage_missing")) == 1  # once per client


class TestTokenParameter:
    async def test_max_completion_tokens_refused_sends_max_tokens(
        self, fake_openai: FakeOpenAI
    ) -> None:
        fake_openai.unsupported = {"max_completion_tokens"}
        fake_openai.reply_json(GOOD)
        fake_openai.reply_json(GOOD)
        model = client_for(fake_openai, max_tokens=300)
        await model.structured(ScenePlan, MESSAGES)
        await model.structured(ScenePlan, MESSAGES)
        first, *rest = fake_openai.requests
        assert first["max_completion_tokens"] == 300
        assert [r.get("max_tokens") for r in rest] == [300, 300]
        assert not any("max_completion_tokens" in r for r in rest)

    async def test_max_tokens_refused_for_max_completion_tokens_keeps_the_new_name(
        self, fake_openai: FakeOpenAI
    ) -> None:
        """OpenAI's message names both ("'max_tokens' is not supported ... Use
        'max_completion_tokens'"): the refused one is the one it names first."""
        model = client_for(fake_openai, max_tokens=300)
        model.chat.token_parameter = "max_tokens"  # type: ignore[attr-defined]
        fake_openai.unsupported = {"max_tokens"}
        fake_openai.reply_json(GOOD)
        await model.structured(ScenePlan, MESSAGES)
        first, again = fake_openai.requests
        assert first["max_tokens"] == 300 and again["max_completion_tokens"] == 300
        assert "max_tokens" not in again

    def test_the_payload_carries_the_limit_under_the_name_chosen(self) -> None:
        payload = {"messages": [], "max_completion_tokens": 10, "seed": 1}
        assert adapt_payload(
            payload, token_parameter="max_tokens", dropped=frozenset({"seed"})
        ) == {
            "messages": [],
            "max_tokens": 10,
        }


class TestUnsupportedParameters:
    async def test_a_refused_seed_is_no_longer_sent(self, fake_openai: FakeOpenAI) -> None:
        fake_openai.unsupported = {"seed"}
        fake_openai.reply_json(GOOD)
        fake_openai.reply_text("The wind rose.")
        model = client_for(fake_openai, seed=7)
        await model.structured(ScenePlan, MESSAGES)
        assert await model.text(MESSAGES) == "The wind rose."
        assert [r.get("seed") for r in fake_openai.requests] == [7, None, None]

    async def test_a_refused_strict_is_no_longer_sent_in_schemas_or_tools(
        self, fake_openai: FakeOpenAI
    ) -> None:
        fake_openai.unsupported = {"strict"}
        fake_openai.reply_json(GOOD)
        model = client_for(fake_openai)
        await model.structured(ScenePlan, MESSAGES)
        first, again = fake_openai.requests
        assert first["response_format"]["json_schema"]["strict"] is True
        spec = again["response_format"]["json_schema"]
        assert "strict" not in spec and spec["name"] == "ScenePlan"
        assert model.method == "json_schema"

    async def test_another_400_is_one_clear_error(self, fake_openai: FakeOpenAI) -> None:
        fake_openai.reply_error(400, "prompt is too long for the context (4096 tokens)")
        with pytest.raises(ModelUnavailable, match="HTTP 400: prompt is too long"):
            await client_for(fake_openai).text(MESSAGES)
        assert len(fake_openai.requests) == 1


class TestUnknownModel:
    async def test_a_model_the_server_does_not_know_names_what_it_serves(
        self, fake_openai: FakeOpenAI
    ) -> None:
        fake_openai.known_models = {"gemma-3-270m", "qwen"}
        model = client_for(fake_openai)
        with pytest.raises(ModelUnavailable) as raised:
            await model.structured(ScenePlan, MESSAGES)
        message = raised.value.message
        assert "does not know the model 'fake-model'" in message
        assert "it serves: gemma-3-270m, qwen" in message and "\n" not in message
        assert len(fake_openai.requests) == 1  # not retried


class TestJsonObjectOnly:
    async def test_a_server_without_json_schema_or_tools_is_asked_for_a_json_object(
        self, fake_openai: FakeOpenAI
    ) -> None:
        """json_schema refused, then tools: the schema goes into the system message and
        the reply is asked for as a json_object, validated as always; the client keeps
        to json_object from then on."""
        fake_openai.reject_json_schema = True
        fake_openai.reject_tools = True
        fake_openai.reply_json(GOOD, schema="ScenePlan")
        fake_openai.reply_json(GOOD, schema="ScenePlan")
        model = client_for(fake_openai)
        with capture_logs() as logs:
            assert (await model.structured(ScenePlan, MESSAGES)).tension == 3
            await model.structured(ScenePlan, MESSAGES)
        kinds = [
            (r.get("response_format") or {}).get("type") or ("tools" if r.get("tools") else "")
            for r in fake_openai.requests
        ]
        assert kinds == ["json_schema", "tools", "json_object", "json_object"]
        system = fake_openai.requests[2]["messages"][0]
        assert system["role"] == "system" and system["content"].startswith("You plan scenes.")
        assert 'JSON schema "ScenePlan"' in system["content"] and '"tension"' in system["content"]
        assert model.method == "json_object"
        methods = [e["method"] for e in events(logs, "structured_output_fallback")]
        assert methods == ["function_calling", "json_object"]


class TestUnparsedReply:
    async def test_llamas_500_for_output_it_cannot_parse_is_a_truncation(
        self, fake_openai: FakeOpenAI
    ) -> None:
        """llama.cpp answers a json_schema reply cut at its token limit mid-JSON with a 500
        (its chat parser fails) rather than finish_reason "length": it is asked for again
        at once with the limit doubled, not retried as a transient error."""
        unparsed = "The model produced output that does not match the expected peg-native format"
        fake_openai.reply_error(500, unparsed)
        fake_openai.reply_json(GOOD)
        model = client_for(fake_openai, max_tokens=100)
        with metering() as meter, capture_logs() as logs:
            assert (await model.structured(ScenePlan, MESSAGES)).goal == GOOD["goal"]
        assert [r["max_completion_tokens"] for r in fake_openai.requests] == [100, 200]
        assert not events(logs, "model_retry") and meter.truncated == {"planner": 1}

        fake_openai.reply_error(500, unparsed)
        fake_openai.reply_error(500, unparsed)
        with pytest.raises(ModelTruncated, match="token limit"):
            await model.structured(ScenePlan, MESSAGES)


class TestTruncationCounted:
    async def test_every_structured_reply_cut_at_its_limit_is_counted(
        self, fake_openai: FakeOpenAI
    ) -> None:
        fake_openai.reply_json('{"goal": "g", "beats": ["b"', finish_reason="length")
        fake_openai.reply_json('{"goal": "g", "beats": ["b"', finish_reason="length")
        with metering() as meter, pytest.raises(ModelTruncated):
            await client_for(fake_openai, max_tokens=50).structured(ScenePlan, MESSAGES)
        assert meter.truncated == {"planner": 2}


def streamed(model: ModelClient) -> ModelClient:
    """``model`` streaming its replies, as it does when a LangGraph run streams messages."""
    assert isinstance(model.chat, CompatChat)
    model.chat.streaming = True
    return model


class TestHostileReplies:
    """Reproduction (FABULA_MODEL_TIMEOUT=15): a stream that never ended ran on past 100 s
    and 2 MB; an unstreamed body that never ended, or a byte every 2 s, past 180 s; a 200
    whose body was not JSON was a JSONDecodeError traceback. Now each ends within the
    timeout (or at the reply cap, whichever comes first), in one line, not retried."""

    async def test_a_stream_that_never_ends_is_cut_off_at_the_timeout(
        self, fake_openai: FakeOpenAI
    ) -> None:
        fake_openai.queue(Reply(endless=True))
        model = streamed(client_for(fake_openai, "writer", timeout_s=2))
        started = time.monotonic()
        with pytest.raises(ModelUnavailable, match=r"within 2 s \(FABULA_MODEL_TIMEOUT\)") as e:
            await model.prose(MESSAGES)
        assert time.monotonic() - started < 3.5
        assert "\n" not in str(e.value) and e.value.exit_code == 6
        assert len(fake_openai.requests) == 1

    @pytest.mark.parametrize("stream", [False, True], ids=["unstreamed", "streamed"])
    async def test_a_reply_that_never_ends_is_cut_off_at_the_byte_cap(
        self, fake_openai: FakeOpenAI, stream: bool
    ) -> None:
        fake_openai.queue(Reply(endless=True))
        model = client_for(fake_openai, "writer", timeout_s=20, max_reply_bytes=64 * 1024)
        model = streamed(model) if stream else model
        started = time.monotonic()
        with pytest.raises(ModelOutputError, match=r"passed 65,536 bytes") as caught:
            await model.prose(MESSAGES)
        assert time.monotonic() - started < 5
        assert "\n" not in str(caught.value) and caught.value.exit_code == 6
        assert len(fake_openai.requests) == 1  # not retried: it would only come again

    async def test_an_unstreamed_body_that_never_ends_is_cut_off_at_the_timeout(
        self, fake_openai: FakeOpenAI
    ) -> None:
        fake_openai.queue(Reply(endless=True))
        started = time.monotonic()
        with pytest.raises(ModelUnavailable, match=r"within 2 s"):
            await client_for(fake_openai, timeout_s=2).structured(ScenePlan, MESSAGES)
        assert time.monotonic() - started < 3.5
        assert len(fake_openai.requests) == 1

    async def test_a_reply_sent_a_byte_at_a_time_is_cut_off_at_the_timeout(
        self, fake_openai: FakeOpenAI
    ) -> None:
        """A slowloris: each read comes well inside the timeout, the reply never does."""
        fake_openai.queue(Reply(content="x" * 40, drip_s=0.2))
        fake_openai.reply_json(GOOD)  # never asked for: no time is left for a retry
        started = time.monotonic()
        with pytest.raises(ModelUnavailable, match=r"within 2 s"):
            await client_for(fake_openai, timeout_s=2).text(MESSAGES)
        assert time.monotonic() - started < 3.5
        assert fake_openai.pending == 1

    async def test_a_reply_announced_larger_than_the_cap_is_refused_unread(
        self, fake_openai: FakeOpenAI
    ) -> None:
        fake_openai.reply_text("y" * 200_000)
        model = client_for(fake_openai, "writer", max_reply_bytes=64 * 1024)
        with capture_logs() as logs, pytest.raises(ModelOutputError, match="passed 65,536"):
            await model.prose(MESSAGES)
        assert [e["max_bytes"] for e in events(logs, "model_reply_too_large")] == [65536]
        assert len(fake_openai.requests) == 1

    @pytest.mark.parametrize(
        ("reply", "stream"),
        [
            (Reply(raw=b"<html>Bad gateway</html>"), False),
            (Reply(raw=b"<html>Bad gateway</html>", raw_type="text/html"), False),
            (Reply(raw=b"data: {not json\n\n", raw_type="text/event-stream"), True),
        ],
        ids=["claimed-json", "html", "stream"],
    )
    async def test_a_200_whose_body_is_not_json_is_one_line(
        self, fake_openai: FakeOpenAI, reply: Reply, stream: bool
    ) -> None:
        fake_openai.queue(reply)
        model = client_for(fake_openai, "writer")
        model = streamed(model) if stream else model
        with pytest.raises(ModelUnavailable, match="not a chat completion") as caught:
            await model.prose(MESSAGES)
        assert "\n" not in str(caught.value) and caught.value.exit_code == 6
        assert len(fake_openai.requests) == 1

    async def test_a_structured_call_answered_with_html_is_one_line(
        self, fake_openai: FakeOpenAI
    ) -> None:
        fake_openai.queue(Reply(raw=b"<html>Bad gateway</html>"))
        with pytest.raises(ModelUnavailable, match="not a chat completion"):
            await client_for(fake_openai).structured(ScenePlan, MESSAGES)

    async def test_a_quick_failure_is_still_retried_within_the_timeout(
        self, fake_openai: FakeOpenAI
    ) -> None:
        fake_openai.reply_error(503, "warming up")
        fake_openai.reply_text("ready")
        assert await client_for(fake_openai, timeout_s=2).text(MESSAGES) == "ready"


class TestStopSequences:
    def test_stop_is_read_per_role_as_a_json_list_or_one_sequence(self) -> None:
        env = {
            "FABULA_MODEL": "m",
            "FABULA_MODEL_BASE_URL": "http://127.0.0.1:1/v1",
            "FABULA_MODEL_STOP": "THE END",
            "FABULA_MODEL_WRITER_STOP": '["\\n\\n\\n", "Chapter"]',
        }
        settings = Settings.from_env(env)
        assert settings.model_for("planner").stop == ("THE END",)
        assert settings.model_for("writer").stop == ("\n\n\n", "Chapter")
        with pytest.raises(ConfigError, match="FABULA_MODEL_WRITER_"):
            Settings.from_env(env | {"FABULA_MODEL_WRITER_STOP": "[1, 2"})

    async def test_the_stop_sequences_are_sent(self, fake_openai: FakeOpenAI) -> None:
        fake_openai.reply_text("The wind rose.")
        await client_for(fake_openai, stop=("THE END",)).text(MESSAGES)
        assert fake_openai.requests[0]["stop"] == ["THE END"]


class TestCutProse:
    def test_complete_sentences_keep_up_to_the_last_ended_one(self) -> None:
        assert complete_sentences(CUT) == "Leo went to the study. Mara watched him from the door."
        assert complete_sentences('"Wait," said Mara. "The key is') == '"Wait," said Mara.'
        assert complete_sentences("The wind rose and the") == ""

    async def test_a_passage_cut_at_its_limit_is_kept_to_its_last_sentence(
        self, fab: Fabula, fake_openai: FakeOpenAI, settings: Settings
    ) -> None:
        """No second request: the cut reply is the draft, up to its last complete sentence,
        marked with a warning that quotes it."""
        writer = ModelWriter(make_client(settings.model, "writer"))
        view = await author_view(fab.store(STORY))
        request = WriteRequest(plan=TurnPlan.model_validate(PLAN), proposals=())
        fake_openai.reply_text(CUT, finish_reason="length")
        draft = await writer.write(request, view)
        assert isinstance(draft, CutDraft)
        assert draft.text == "Leo went to the study. Mara watched him from the door."
        assert draft.dropped == len("She held her bre")
        (finding,) = draft_findings(draft)
        assert finding.severity == "warning" and "token limit" in finding.message
        assert finding.quote == "Mara watched him from the door."
        assert len(fake_openai.requests) == 1

    async def test_a_reply_cut_before_its_first_sentence_ended_is_asked_again_then_fails(
        self, fab: Fabula, fake_openai: FakeOpenAI, settings: Settings
    ) -> None:
        limited = settings.model.model_copy(update={"max_tokens": 50})
        writer = ModelWriter(make_client(limited, "writer"))
        view = await author_view(fab.store(STORY))
        request = WriteRequest(plan=TurnPlan.model_validate(PLAN), proposals=())
        fake_openai.reply_text("Leo went to the", finish_reason="length")
        fake_openai.reply_text("Leo went to the study and", finish_reason="length")
        with pytest.raises(ModelTruncated, match="before its first sentence ended"):
            await writer.write(request, view)
        assert [r["max_completion_tokens"] for r in fake_openai.requests] == [50, 100]
        # the second request is told why (at temperature 0 the same request would run on
        # the same way), after what the first began
        first, second = (r["messages"] for r in fake_openai.requests)
        assert second[: len(first)] == first
        assert second[len(first)] == {"role": "assistant", "content": "Leo went to the"}
        assert second[-1] == {"role": "user", "content": UNFINISHED_FEEDBACK}

    async def test_a_chat_templates_turn_marker_ends_the_passage(
        self, fab: Fabula, fake_openai: FakeOpenAI, settings: Settings
    ) -> None:
        """Gemma 3 270M on llama.cpp ended a passage with "<|im_end|>" and repeated it to
        the limit: the passage is what came before, not a cut reply asked for again."""
        writer = ModelWriter(make_client(settings.model, "writer"))
        view = await author_view(fab.store(STORY))
        request = WriteRequest(plan=TurnPlan.model_validate(PLAN), proposals=())
        fake_openai.reply_text(
            "Leo went to the study.\n<|im_end|>user\n<|im_end|>user\n<|im_end|>",
            finish_reason="length",
        )
        draft = await writer.write(request, view)
        assert draft.text == "Leo went to the study." and not isinstance(draft, CutDraft)
        assert len(fake_openai.requests) == 1
        fake_openai.reply_text("<|im_start|>assistant\nLeo ran.<|im_end|>\n<|im_end|>")
        assert (await writer.write(request, view)).text == "Leo ran."
        fake_openai.reply_text("<end_of_turn>\n<end_of_turn>", finish_reason="length")
        fake_openai.reply_text("Mara waited.")
        assert (await writer.write(request, view)).text == "Mara waited."
        assert fake_openai.requests[-1]["messages"][-1]["content"] == EMPTY_FEEDBACK

    async def test_a_passage_without_a_word_is_empty(
        self, fab: Fabula, fake_openai: FakeOpenAI, settings: Settings
    ) -> None:
        """Gemma 3 270M, asked again after a cut, wrote "**" and a marker: two characters
        that would have gone to the memory-builder as the turn's text."""
        writer = ModelWriter(make_client(settings.model, "writer"))
        view = await author_view(fab.store(STORY))
        request = WriteRequest(plan=TurnPlan.model_validate(PLAN), proposals=())
        fake_openai.reply_text("**\n<|im_end|>\n<|im_end|>", finish_reason="length")
        fake_openai.reply_text("Mara waited.")
        assert (await writer.write(request, view)).text == "Mara waited."
        assert fake_openai.requests[-1]["messages"][-1]["content"] == EMPTY_FEEDBACK
        fake_openai.reply_text("... 12")
        fake_openai.reply_text("-")
        with pytest.raises(ModelOutputError, match="empty twice"):
            await writer.write(request, view)

    async def test_a_reply_cut_once_then_ended_is_the_draft(
        self, fab: Fabula, fake_openai: FakeOpenAI, settings: Settings
    ) -> None:
        writer = ModelWriter(make_client(settings.model, "writer"))
        view = await author_view(fab.store(STORY))
        request = WriteRequest(plan=TurnPlan.model_validate(PLAN), proposals=())
        fake_openai.reply_text("Leo went to the the the the", finish_reason="length")
        fake_openai.reply_text("Leo went to the study.")
        draft = await writer.write(request, view)
        assert draft.text == "Leo went to the study." and not isinstance(draft, CutDraft)

    async def test_a_cut_passage_is_a_finding_for_the_critic_and_the_approver(
        self, fab: Fabula, fake_openai: FakeOpenAI
    ) -> None:
        """A whole turn whose prose stopped at its limit waits for approval with the kept
        passage and the writer's warning among the critic's findings."""
        fake_openai.reply_json(PLAN, schema="TurnPlan")
        fake_openai.reply_json(LEO, schema="CharacterProposal", contains="You are Leo")
        fake_openai.reply_json(MARA, schema="CharacterProposal", contains="You are Mara")
        fake_openai.reply_text(CUT, schema=TEXT, finish_reason="length")
        fake_openai.reply_json(EXTRACTED, schema="ExtractedActions")
        store = fab.store(STORY)
        assert (await fab.run(store, auto=False)).outcome == "pending"
        pending = await fab.read(store).pending()
        assert pending is not None
        assert pending.request.draft.model_dump() == {
            "text": "Leo went to the study. Mara watched him from the door.",
            "revision": 0,
            "left_out": (),  # the model writer leaves no one out on purpose
        }
        marked = [f for f in pending.request.findings if "token limit" in f.message]
        assert len(marked) == 1 and marked[0].severity == "warning"
        assert len(requests_for(fake_openai, TEXT)) == 1
