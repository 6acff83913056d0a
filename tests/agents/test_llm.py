"""The model back end against a real HTTP server: agents.llm, agents.schemas, settings, prompts.

Every call goes through the real ChatOpenAI and the real OpenAI client over HTTP to
:class:`fabula.testing.fake_openai.FakeOpenAI`, which replies as scripted and records each request.
Transport tests script the failures real servers show (429 with Retry-After, 500/503, slow
replies, truncation, refusals, schema rejections) and check what the client does; waits
are checked through the logged retry plan, never by timing.
"""

from __future__ import annotations

import time
from pathlib import Path

import openai
import pytest
from pydantic import BaseModel, ValidationError
from structlog.testing import capture_logs

from fabula import errors
from fabula import settings as settings_module
from fabula.agents.llm import ModelClient, make_client
from fabula.agents.llm_server import make_chat_model
from fabula.agents.prompts import load_prompt
from fabula.agents.schemas import strict_schema
from fabula.agents.usage import metering
from fabula.settings import ModelSettings, Price, Settings
from fabula.testing.model import (
    GOOD,
    MESSAGES,
    FakeOpenAI,
    Reply,
    ScenePlan,
    client_for,
    events,
    settings_for,
)

PROMPTS = Path(__file__).parent / "data" / "prompts"


class Tags(BaseModel):
    """A mapping: strict mode has no form for it."""

    tags: dict[str, str]


@pytest.fixture()
def model(fake_openai: FakeOpenAI) -> ModelClient:
    return client_for(fake_openai)


class TestMakeChatModel:
    def test_settings_are_applied_and_retries_left_to_us(self, fake_openai: FakeOpenAI) -> None:
        """Model, URL, temperature, token limit, seed and timeout from settings; the client
        itself never retries (ModelClient does, once)."""
        chat = make_chat_model(settings_for(fake_openai, max_tokens=300, seed=7))
        assert chat.model_name == "fake-model"
        assert chat.openai_api_base == fake_openai.base_url
        assert chat.temperature == 0.2
        assert chat.max_tokens == 300 and chat.seed == 7
        assert chat.request_timeout == 10.0
        assert chat.max_retries == 0
        assert chat.use_responses_api is False

    async def test_token_limit_and_seed_are_sent(self, fake_openai: FakeOpenAI) -> None:
        model = client_for(fake_openai, max_tokens=300, seed=7)
        fake_openai.reply_text("ready")
        assert await model.text(MESSAGES) == "ready"
        (request,) = fake_openai.requests
        assert request["max_completion_tokens"] == 300
        assert request["seed"] == 7

    def test_offline_settings_have_no_chat_model(self) -> None:
        with pytest.raises(errors.ConfigError, match="offline"):
            make_chat_model(ModelSettings())

    def test_the_openai_api_needs_a_key(self) -> None:
        with pytest.raises(errors.ConfigError) as caught:
            make_chat_model(ModelSettings(model="gpt-4o-mini"))
        assert caught.value.context["field"] == "api_key"

    async def test_a_local_server_needs_no_key(self, fake_openai: FakeOpenAI) -> None:
        """A placeholder key is sent; the call goes through."""
        model = client_for(fake_openai, api_key=None)
        fake_openai.reply_text("ready")
        assert await model.text(MESSAGES) == "ready"


class TestSettingsFromEnvironment:
    def test_each_role_falls_back_to_the_defaults(self) -> None:
        """FABULA_MODEL_WRITER names the writer's model; everything it does not set comes
        from FABULA_MODEL_*; the memory-builder reads at temperature 0."""
        settings = Settings.from_env(
            {
                "FABULA_MODEL": "small",
                "FABULA_MODEL_BASE_URL": "http://127.0.0.1:1/v1",
                "FABULA_MODEL_TEMPERATURE": "0.9",
                "FABULA_MODEL_MAX_TOKENS": "400",
                "FABULA_MODEL_WRITER": "big",
                "FABULA_MODEL_WRITER_MAX_TOKENS": "900",
                "FABULA_MODEL_WRITER_TIMEOUT": "120",
                "FABULA_MODEL_PLANNER_SEED": "3",
                "FABULA_MODEL_CONCURRENCY": "2",
                "FABULA_MODEL_PRICES": '{"big": {"input": 2.5, "output": 10}}',
            }
        )
        writer = settings.model_for("writer")
        assert (writer.model, writer.max_tokens, writer.timeout_s) == ("big", 900, 120.0)
        assert (writer.base_url, writer.temperature) == ("http://127.0.0.1:1/v1", 0.9)
        planner = settings.model_for("planner")
        assert (planner.model, planner.seed, planner.max_tokens) == ("small", 3, 400)
        character = settings.model_for("character")
        assert (character.model, character.temperature) == ("small", 0.9)
        assert settings.model_for("memory_builder").temperature == 0.0
        assert settings.model_concurrency == 2
        assert settings.prices == {"big": Price(input=2.5, output=10)}

    def test_the_memory_builders_former_variables_are_read_and_deprecated(
        self, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """FABULA_MODEL_EXTRACTOR_* still set the memory-builder (its own variables win),
        each logged as deprecated once a process."""
        monkeypatch.setattr(settings_module, "_warned", set())
        env = {
            "FABULA_MODEL_EXTRACTOR": "old",
            "FABULA_MODEL_EXTRACTOR_TEMPERATURE": "0.3",
            "FABULA_MODEL_MEMORY_BUILDER_TEMPERATURE": "0.1",
        }
        with capture_logs() as logs:
            first = Settings.from_env(env).model_for("memory_builder")
            Settings.from_env(env)
        assert (first.model, first.temperature) == ("old", 0.1)
        deprecated = [e for e in logs if e["event"] == "deprecated_variable"]
        assert sorted(e["variable"] for e in deprecated) == [
            "FABULA_MODEL_EXTRACTOR",
            "FABULA_MODEL_EXTRACTOR_TEMPERATURE",
        ]
        assert deprecated[0]["use"].startswith("FABULA_MODEL_MEMORY_BUILDER")
        new = Settings.from_env({"FABULA_MODEL_MEMORY_BUILDER": "new"})
        assert new.model_for("memory_builder").model == "new"
        assert new.model_for("memory_builder").temperature == 0.0

    def test_a_role_alone_on_a_model(self) -> None:
        settings = Settings.from_env({"FABULA_MODEL_WRITER": "big"})
        assert not settings.offline
        assert settings.model_for("writer").model == "big"
        assert settings.model_for("planner").offline

    def test_the_schema_style_is_a_setting_per_role(self) -> None:
        """Story-shaped schemas by default; FABULA_MODEL_SCHEMAS=generic for every role (the
        benchmark's baseline), FABULA_MODEL_<ROLE>_SCHEMAS for one; each client keeps its own."""
        assert Settings.from_env({"FABULA_MODEL": "small"}).model_for("planner").schemas == "story"
        settings = Settings.from_env(
            {
                "FABULA_MODEL": "small",
                "FABULA_MODEL_BASE_URL": "http://127.0.0.1:1/v1",
                "FABULA_MODEL_SCHEMAS": "generic",
                "FABULA_MODEL_CHARACTER_SCHEMAS": "story",
            }
        )
        assert settings.model_for("planner").schemas == "generic"
        assert settings.model_for("memory_builder").schemas == "generic"
        assert settings.model_for("character").schemas == "story"
        assert make_client(settings.model_for("character"), "character").schemas == "story"
        assert make_client(settings.model_for("planner"), "planner").schemas == "generic"

    @pytest.mark.parametrize(
        ("name", "value"),
        [
            ("FABULA_MODEL_SCHEMAS", "tight"),
            ("FABULA_MODEL_MAX_TOKENS", "lots"),
            ("FABULA_MODEL_WRITER_TEMPERATURE", "9"),
            ("FABULA_MODEL_CONCURRENCY", "0"),
            ("FABULA_MODEL_PRICES", "{not json"),
        ],
    )
    def test_a_bad_value_is_one_clear_error(self, name: str, value: str) -> None:
        with pytest.raises(errors.ConfigError) as caught:
            Settings.from_env({"FABULA_MODEL": "small", name: value})
        assert "\n" not in str(caught.value)


class TestTextCall:
    async def test_returns_the_reply_text(
        self, model: ModelClient, fake_openai: FakeOpenAI
    ) -> None:
        """The messages are sent as they are, without tools or a response format."""
        fake_openai.reply_text("The door creaked open.")
        assert await model.text(MESSAGES) == "The door creaked open."
        (request,) = fake_openai.requests
        assert request["model"] == "fake-model"
        assert request["temperature"] == 0.2
        assert [m["role"] for m in request["messages"]] == ["system", "user"]
        assert "tools" not in request and "response_format" not in request

    async def test_a_truncated_reply_is_asked_again_with_a_higher_limit(
        self, fake_openai: FakeOpenAI
    ) -> None:
        """Reproduction: "...Leo took the br" with finish_reason "length" was accepted.
        Now it is asked for again with max_tokens doubled, and the whole reply is used."""
        model = client_for(fake_openai, role="writer", max_tokens=50)
        fake_openai.reply_text("Leo went to the study. Leo took the br", finish_reason="length")
        fake_openai.reply_text("Leo went to the study. Leo took the brass key.")
        with capture_logs() as logs:
            text = await model.text(MESSAGES)
        assert text == "Leo went to the study. Leo took the brass key."
        first, second = fake_openai.requests
        assert (first["max_completion_tokens"], second["max_completion_tokens"]) == (50, 100)
        assert events(logs, "model_reply_truncated")[0]["role"] == "writer"

    async def test_truncated_twice_is_a_clear_error(self, fake_openai: FakeOpenAI) -> None:
        model = client_for(fake_openai, role="writer", max_tokens=50)
        for _ in range(2):
            fake_openai.reply_text("Leo took the br", finish_reason="length")
        with pytest.raises(errors.ModelTruncated, match="token limit") as caught:
            await model.text(MESSAGES)
        assert caught.value.context["role"] == "writer"
        assert len(fake_openai.requests) == 2

    async def test_a_streamed_truncated_reply_is_caught_too(self, fake_openai: FakeOpenAI) -> None:
        model = client_for(fake_openai, role="writer", max_tokens=50)
        model.chat.streaming = True  # type: ignore[attr-defined]
        fake_openai.reply_text("Leo took the br", finish_reason="length")
        fake_openai.reply_text("Leo took the brass key.")
        assert await model.text(MESSAGES) == "Leo took the brass key."
        assert all(r["stream"] is True for r in fake_openai.requests)


class TestStructuredCall:
    async def test_json_schema_output(self, model: ModelClient, fake_openai: FakeOpenAI) -> None:
        """Asked for with a strict json_schema response format, validated into the type.
        The schema is strict: closed, every property required, no default anywhere."""
        fake_openai.reply_json(GOOD | {"mood": "calm"})
        plan = await model.structured(ScenePlan, MESSAGES)
        assert plan == ScenePlan.model_validate(GOOD | {"mood": "calm"})
        (request,) = fake_openai.requests
        response_format = request["response_format"]
        assert response_format["type"] == "json_schema"
        spec = response_format["json_schema"]
        assert spec["name"] == "ScenePlan"
        assert spec["strict"] is True
        assert spec["description"] == "The plan of one scene."
        assert spec["schema"]["additionalProperties"] is False
        assert sorted(spec["schema"]["required"]) == ["beats", "goal", "mood", "tension"]
        assert "default" not in str(spec["schema"])
        assert "tools" not in request

    async def test_a_prebuilt_schema_is_sent_as_it_is(
        self, model: ModelClient, fake_openai: FakeOpenAI
    ) -> None:
        """A role's own JSON schema (story-shaped) goes on the wire unchanged, by either
        method; the reply is still validated into the type."""
        tight = strict_schema(ScenePlan)
        tight["properties"]["goal"] = {"type": "string", "enum": ["escape the lighthouse"]}
        fake_openai.reply_json(GOOD | {"mood": "calm"})
        plan = await model.structured(ScenePlan, MESSAGES, json_schema=tight)
        assert plan.goal == "escape the lighthouse"
        assert fake_openai.requests[0]["response_format"]["json_schema"]["schema"] == tight
        fake_openai.reject_json_schema = True
        fake_openai.reply_tool_call(GOOD | {"mood": "calm"})
        await model.structured(ScenePlan, MESSAGES, json_schema=tight)
        assert fake_openai.requests[-1]["tools"][0]["function"]["parameters"] == tight

    async def test_falls_back_to_function_calling_and_says_so(
        self, model: ModelClient, fake_openai: FakeOpenAI
    ) -> None:
        """A server without json_schema is asked again at once with a forced tool call;
        the switch is logged with the role and the server."""
        fake_openai.reject_json_schema = True
        fake_openai.reply_tool_call(GOOD)
        with capture_logs() as logs:
            plan = await model.structured(ScenePlan, MESSAGES)
        assert plan.goal == "escape the lighthouse"
        first, second = fake_openai.requests
        assert first["response_format"]["type"] == "json_schema"
        assert "response_format" not in second
        assert [t["function"]["name"] for t in second["tools"]] == ["ScenePlan"]
        assert second["tools"][0]["function"]["strict"] is True
        assert second["tool_choice"] == "required"  # the one tool offered: forced
        assert [t["function"]["name"] for t in second["tools"]] == ["ScenePlan"]
        (fallback,) = events(logs, "structured_output_fallback")
        assert (fallback["role"], fallback["base_url"]) == ("planner", fake_openai.base_url)

    async def test_fallback_is_per_role_and_server(
        self, model: ModelClient, fake_openai: FakeOpenAI
    ) -> None:
        """Later calls of the same role go straight to function calling; another role on the
        same server still tries json_schema first."""
        fake_openai.reject_json_schema = True
        fake_openai.reply_tool_call(GOOD)
        await model.structured(ScenePlan, MESSAGES)
        fake_openai.reply_tool_call(GOOD)
        await model.structured(ScenePlan, MESSAGES)
        assert len(fake_openai.requests) == 3
        assert "tools" in fake_openai.requests[2]

        other = client_for(fake_openai, role="memory_builder")
        fake_openai.reply_tool_call(GOOD)
        await other.structured(ScenePlan, MESSAGES)
        assert len(fake_openai.requests) == 5
        assert fake_openai.requests[3]["response_format"]["type"] == "json_schema"

    async def test_a_rejected_schema_does_not_switch_method(
        self, model: ModelClient, fake_openai: FakeOpenAI
    ) -> None:
        """Reproduction: a schema rejection switched the model to function calling for good,
        where the same schema failed again. Now it is SchemaRejected, after one request,
        and the method is unchanged."""
        fake_openai.reply_json({"tags": {}})  # never asked for
        with pytest.raises(
            errors.SchemaRejected, match="Invalid schema for response_format 'Tags'"
        ):
            await model.structured(Tags, MESSAGES)
        assert len(fake_openai.requests) == 1
        assert model.method == "json_schema"

    async def test_a_refusal_is_its_own_error(
        self, model: ModelClient, fake_openai: FakeOpenAI
    ) -> None:
        """Reproduction: a refusal was answered with "Invalid JSON" three times. Now it is
        ModelRefused at once, carrying what the model said."""
        fake_openai.reply_refusal("I can't help with that.")
        with pytest.raises(errors.ModelRefused) as caught:
            await model.structured(ScenePlan, MESSAGES)
        assert caught.value.context["refusal"] == "I can't help with that."
        assert len(fake_openai.requests) == 1

    async def test_a_truncated_json_reply_is_asked_again_with_a_higher_limit(
        self, fake_openai: FakeOpenAI
    ) -> None:
        model = client_for(fake_openai, max_tokens=20)
        fake_openai.reply_json('{"goal": "escape the li', finish_reason="length")
        fake_openai.reply_json(GOOD)
        assert (await model.structured(ScenePlan, MESSAGES)).goal == GOOD["goal"]
        assert [r["max_completion_tokens"] for r in fake_openai.requests] == [20, 40]

    async def test_unparsable_output_is_retried_with_the_error(
        self, model: ModelClient, fake_openai: FakeOpenAI
    ) -> None:
        """The malformed reply and what was wrong with it go back to the model."""
        fake_openai.reply_json('{"goal": "escape", "beats": [')
        fake_openai.reply_json(GOOD)
        plan = await model.structured(ScenePlan, MESSAGES)
        assert plan.tension == 3
        first, second = fake_openai.requests
        assert second["messages"][:2] == first["messages"]
        assistant, feedback = second["messages"][2:]
        assert assistant == {"role": "assistant", "content": '{"goal": "escape", "beats": ['}
        assert feedback["role"] == "user"
        assert "Invalid JSON" in feedback["content"]

    async def test_invalid_values_are_retried(
        self, model: ModelClient, fake_openai: FakeOpenAI
    ) -> None:
        """Well-formed JSON that fails validation counts as malformed too."""
        fake_openai.reply_json(GOOD | {"tension": 9, "beats": []})
        fake_openai.reply_json(GOOD)
        assert await model.structured(ScenePlan, MESSAGES) == ScenePlan(**GOOD)
        feedback = fake_openai.requests[1]["messages"][-1]["content"]
        assert "- tension: Input should be less than or equal to 5" in feedback
        assert "- beats: List should have at least 1 item" in feedback

    async def test_malformed_tool_arguments_are_retried(
        self, model: ModelClient, fake_openai: FakeOpenAI
    ) -> None:
        """In function-calling mode the arguments are what is validated."""
        fake_openai.reject_json_schema = True
        fake_openai.reply_tool_call('{"goal": "escape", ')
        fake_openai.reply_tool_call(GOOD)
        assert (await model.structured(ScenePlan, MESSAGES)).goal == GOOD["goal"]
        assert len(fake_openai.requests) == 3
        assert fake_openai.requests[2]["messages"][2]["content"] == '{"goal": "escape", '

    async def test_gives_up_after_max_attempts(
        self, model: ModelClient, fake_openai: FakeOpenAI
    ) -> None:
        """ModelOutputError carries the last raw text and the validation error; exactly
        max_attempts requests are made and nothing else happens."""
        for n in range(3):
            fake_openai.reply_json(f"not json {n}")
        fake_openai.reply_json(GOOD)  # never asked for
        with pytest.raises(errors.ModelOutputError) as caught:
            await model.structured(ScenePlan, MESSAGES, max_attempts=3)
        error = caught.value
        assert error.context["raw"] == "not json 2"
        assert error.context["attempts"] == 3
        assert error.context["schema"] == "ScenePlan"
        assert "Invalid JSON" in error.context["error"]
        assert isinstance(error.__cause__, ValidationError)
        assert len(fake_openai.requests) == 3
        assert fake_openai.pending == 1

    async def test_a_single_attempt_is_not_retried(
        self, model: ModelClient, fake_openai: FakeOpenAI
    ) -> None:
        fake_openai.reply_json("[]")
        with pytest.raises(errors.ModelOutputError):
            await model.structured(ScenePlan, MESSAGES, max_attempts=1)
        assert len(fake_openai.requests) == 1

    async def test_max_attempts_below_one_is_refused(self, model: ModelClient) -> None:
        with pytest.raises(ValueError, match="max_attempts"):
            await model.structured(ScenePlan, MESSAGES, max_attempts=0)

    async def test_other_bad_requests_do_not_fall_back(
        self, model: ModelClient, fake_openai: FakeOpenAI
    ) -> None:
        """Only a rejection naming response_format or json_schema switches method; a 400 is
        never retried."""
        fake_openai.reply_error(400, "the context is too long for this model")
        with pytest.raises(errors.ModelUnavailable, match="HTTP 400"):
            await model.structured(ScenePlan, MESSAGES)
        assert len(fake_openai.requests) == 1
        assert model.method == "json_schema"

    async def test_streaming_model(self, fake_openai: FakeOpenAI) -> None:
        """A model set to stream still gets structured output whole (never streamed), in
        both methods."""
        model = client_for(fake_openai)
        model.chat.streaming = True  # type: ignore[attr-defined]
        fake_openai.reply_json(GOOD)
        assert await model.structured(ScenePlan, MESSAGES) == ScenePlan(**GOOD)
        fake_openai.reject_json_schema = True
        fake_openai.reply_tool_call(GOOD)
        assert await model.structured(ScenePlan, MESSAGES) == ScenePlan(**GOOD)
        assert not any(r.get("stream") for r in fake_openai.requests)


class TestTransport:
    async def test_429_is_retried_after_the_servers_retry_after(
        self, fake_openai: FakeOpenAI
    ) -> None:
        """Reproduction: no retry at all (max_retries=0). Now a 429 is retried, waiting what
        Retry-After says (capped by retry_max_s) rather than the backoff."""
        model = client_for(fake_openai, retry_max_s=0.3)
        fake_openai.reply_error(429, "slow down", retry_after=0.25)
        fake_openai.reply_error(429, "slow down", retry_after=60)
        fake_openai.reply_json(GOOD)
        with capture_logs() as logs:
            assert await model.structured(ScenePlan, MESSAGES) == ScenePlan(**GOOD)
        retries = events(logs, "model_retry")
        assert [r["error"] for r in retries] == ["HTTP 429", "HTTP 429"]
        assert [r["wait_s"] for r in retries] == [0.25, 0.3]
        assert len(fake_openai.requests) == 3

    @pytest.mark.parametrize("status", [500, 502, 503])
    async def test_server_errors_are_retried_with_backoff(
        self, model: ModelClient, fake_openai: FakeOpenAI, status: int
    ) -> None:
        fake_openai.reply_error(status, "overloaded")
        fake_openai.reply_text("ready")
        with metering() as meter, capture_logs() as logs:
            assert await model.text(MESSAGES) == "ready"
        (retry,) = events(logs, "model_retry")
        assert 0 <= float(str(retry["wait_s"])) <= 0.05
        assert meter.roles["planner"].retries == 1
        assert meter.roles["planner"].calls == 1

    async def test_a_slow_reply_ends_at_the_timeout_its_retries_included(
        self, fake_openai: FakeOpenAI
    ) -> None:
        """Reproduction: the timeout bounded each read, and a reply that took it was asked
        for again, max_retries times. Now the timeout is the reply's whole time, retries
        included: a reply that takes it all is ModelUnavailable, not asked for again."""
        model = client_for(fake_openai, timeout_s=0.3)
        fake_openai.queue(Reply(content="too late", delay_s=1.5))
        fake_openai.reply_text("in time")
        started = time.monotonic()
        with capture_logs() as logs, pytest.raises(errors.ModelUnavailable, match=r"within 0\.3 s"):
            await model.text(MESSAGES)
        assert time.monotonic() - started < 1.2
        assert events(logs, "model_retry") == [] and fake_openai.pending == 1

    async def test_a_retry_that_would_start_after_the_timeout_is_not_made(
        self, fake_openai: FakeOpenAI
    ) -> None:
        """A server asking to be called again in 60 s, with 2 s left: the error at once."""
        model = client_for(fake_openai, timeout_s=2, retry_max_s=30)
        fake_openai.reply_error(429, "slow down", retry_after=60)
        fake_openai.reply_text("later")
        started = time.monotonic()
        with pytest.raises(errors.ModelUnavailable, match="HTTP 429"):
            await model.text(MESSAGES)
        assert time.monotonic() - started < 1.5
        assert fake_openai.pending == 1

    async def test_retries_are_bounded_then_one_clear_error(self, fake_openai: FakeOpenAI) -> None:
        """max_retries retries, then ModelUnavailable naming the status, the HTTP error
        its cause."""
        model = client_for(fake_openai, max_retries=2)
        for _ in range(4):
            fake_openai.reply_error(503, "the GPU caught fire")
        with pytest.raises(errors.ModelUnavailable, match=r"HTTP 503.*caught fire") as caught:
            await model.structured(ScenePlan, MESSAGES)
        assert isinstance(caught.value.__cause__, openai.InternalServerError)
        assert caught.value.context["retries"] == 2
        assert len(fake_openai.requests) == 3

    async def test_an_unreachable_server_is_retried_then_one_clear_error(self) -> None:
        """A model nobody answers for is a ModelUnavailable naming the address."""
        settings = ModelSettings(
            base_url="http://127.0.0.1:9/v1",
            model="nobody",
            timeout_s=5,
            max_retries=1,
            retry_initial_s=0.01,
        )
        model = make_client(settings, "writer")
        with capture_logs() as logs, pytest.raises(errors.ModelUnavailable) as caught:
            await model.text(MESSAGES)
        assert "cannot reach the model 'nobody'" in str(caught.value)
        assert caught.value.context["base_url"] == "http://127.0.0.1:9/v1"
        (retry,) = events(logs, "model_retry")
        assert retry["error"] == "connection error"
        assert retry["log_level"] == "debug"  # the error is the one line a user sees

    async def test_an_unreachable_server_is_not_retried_again_by_the_same_client(self) -> None:
        """Reproduction: `fabula new` on a dead URL spent ~15 s, each summary's call going
        through every retry. Now a client that found its server unreachable asks once on
        its next call (no retry), and fails as clearly."""
        settings = ModelSettings(
            base_url="http://127.0.0.1:9/v1",
            model="nobody",
            timeout_s=5,
            max_retries=3,
            retry_initial_s=0.01,
        )
        model = make_client(settings, "summariser")
        with capture_logs() as logs, pytest.raises(errors.ModelUnavailable):
            await model.text(MESSAGES)
        assert len(events(logs, "model_retry")) == 3
        with capture_logs() as logs, pytest.raises(errors.ModelUnavailable, match="cannot reach"):
            await model.text(MESSAGES)
        assert events(logs, "model_retry") == []

    async def test_a_server_that_answers_again_is_retried_again(
        self, fake_openai: FakeOpenAI
    ) -> None:
        """Once the server answers, the client retries its transient errors as before."""
        model = client_for(fake_openai)
        model.transport.unreachable = True  # as after a call that could not reach it
        fake_openai.reply_text("back")
        assert await model.text(MESSAGES) == "back"
        fake_openai.reply_error(503, "busy")
        fake_openai.reply_text("ready")
        assert await model.text(MESSAGES) == "ready"


class TestHostileBodies:
    async def test_a_body_nested_past_the_parser_is_the_models_error(
        self, model: ModelClient, fake_openai: FakeOpenAI
    ) -> None:
        """Issue 45: a server's body of 5,000 nested brackets raised RecursionError (exit
        1, a traceback); it is the model's failure, in one line, for structured and text
        calls alike."""
        deep = ('{"id": "x", "x": ' + "[" * 5000 + "]" * 5000 + "}").encode()
        for _ in range(2):
            fake_openai.queue(Reply(raw=deep))
        with pytest.raises(errors.ModelUnavailable, match="not a chat completion") as caught:
            await model.structured(ScenePlan, MESSAGES, max_attempts=1)
        assert caught.value.exit_code == 6 and "\n" not in str(caught.value)
        with pytest.raises(errors.ModelUnavailable, match="not a chat completion"):
            await model.text(MESSAGES)


class TestUsage:
    async def test_usage_is_counted_by_role(self, fake_openai: FakeOpenAI) -> None:
        """Each reply's usage, from the server's own count, lands in every open meter under
        the role that asked; a meter opened inside another counts only its own calls."""
        planner, writer = client_for(fake_openai), client_for(fake_openai, role="writer")
        fake_openai.reply_json(GOOD)
        fake_openai.reply_text("Leo went out.")
        with metering() as outer:
            await planner.structured(ScenePlan, MESSAGES)
            with metering() as inner:
                await writer.text(MESSAGES)
        assert set(outer.roles) == {"planner", "writer"} and set(inner.roles) == {"writer"}
        prompt, written = fake_openai.requests[1], "Leo went out."
        usage = inner.as_dict()["writer"]
        assert usage["model"] == "fake-model" and usage["calls"] == 1
        assert usage["output_tokens"] == len(written) // 4 + 1
        sent = "\n".join(m["content"] for m in prompt["messages"])
        assert usage["input_tokens"] == len(sent) // 4 + 1


class TestFakeServer:
    async def test_lists_its_model(self, fake_openai: FakeOpenAI) -> None:
        client = openai.AsyncOpenAI(base_url=fake_openai.base_url, api_key="test-key")
        models = await client.models.list()
        assert [m.id for m in models.data] == ["fake-model"]
        await client.close()

    async def test_empty_queue_is_a_server_error(self, fake_openai: FakeOpenAI) -> None:
        model = client_for(fake_openai, max_retries=0)
        with pytest.raises(errors.ModelUnavailable, match="no scripted reply"):
            await model.text(MESSAGES)


class TestPrompts:
    def test_highest_version_wins(self) -> None:
        """Versions compare as numbers: v10 is after v2."""
        prompt = load_prompt("critic", "review", root=PROMPTS)
        assert prompt.version == 10
        assert (
            prompt.render(draft="It was dark.")
            == "You are the critic (v10). Draft:\nIt was dark.\n"
        )

    def test_a_given_version(self) -> None:
        """Placeholders are filled; other braces, as in a JSON example, stay as written."""
        prompt = load_prompt("critic", "review", version=2, root=PROMPTS)
        assert prompt.placeholders == {"story", "plan", "draft"}
        text = prompt.render(story="Harbour", plan="escape", draft="It was dark.", extra=1)
        assert text.startswith("You are the critic of Harbour.")
        assert '{"verdict": "revise", "notes": ["..."]}' in text

    def test_missing_values_are_named(self) -> None:
        prompt = load_prompt("critic", "review", version=2, root=PROMPTS)
        with pytest.raises(errors.ConfigError) as caught:
            prompt.render(draft="x")
        assert caught.value.context["missing"] == "plan, story"

    def test_missing_prompt_or_version(self) -> None:
        with pytest.raises(errors.ConfigError, match="no such prompt"):
            load_prompt("critic", "praise", root=PROMPTS)
        with pytest.raises(errors.ConfigError, match="no such prompt version") as caught:
            load_prompt("critic", "review", version=3, root=PROMPTS)
        assert caught.value.context["available"] == "1, 2, 10"

    def test_names_cannot_leave_the_folder(self) -> None:
        with pytest.raises(errors.ConfigError):
            load_prompt("..", "review", root=PROMPTS)
        with pytest.raises(errors.ConfigError):
            load_prompt("critic", "../../secrets", root=PROMPTS)
