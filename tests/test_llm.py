"""The model back end against a real HTTP server: agents.llm and agents.prompts.

Every call goes through the real ChatOpenAI and the real OpenAI client over HTTP to
:class:`tests.fake_openai.FakeOpenAI`, which replies as scripted and records each request.
"""

from __future__ import annotations

from pathlib import Path

import openai
import pytest
from langchain_core.messages import HumanMessage, SystemMessage
from langchain_openai import ChatOpenAI
from pydantic import BaseModel, Field, ValidationError
from structlog.testing import capture_logs

from fabula.agents.llm import make_chat_model, structured_call, text_call
from fabula.agents.prompts import load_prompt
from fabula.memory.errors import ConfigError, ModelOutputError, ModelUnavailable
from fabula.memory.settings import ModelSettings
from tests.fake_openai import FakeOpenAI, fake_openai_fixture  # noqa: F401  (fixture fake_openai)

PROMPTS = Path(__file__).parent / "data" / "prompts"
MESSAGES = [SystemMessage(content="You plan scenes."), HumanMessage(content="Plan the next one.")]
GOOD = {"goal": "escape the lighthouse", "beats": ["find the key", "run"], "tension": 3}


class ScenePlan(BaseModel):
    """The plan of one scene."""

    goal: str
    beats: list[str] = Field(min_length=1)
    tension: int = Field(ge=0, le=5)


def settings_for(server: FakeOpenAI, **overrides: object) -> ModelSettings:
    values: dict[str, object] = {
        "base_url": server.base_url,
        "model": "fake-model",
        "api_key": "test-key",
        "temperature": 0.2,
        "timeout_s": 10.0,
    }
    return ModelSettings.model_validate(values | overrides)


@pytest.fixture()
def model(fake_openai: FakeOpenAI) -> ChatOpenAI:
    return make_chat_model(settings_for(fake_openai))


class TestMakeChatModel:
    def test_settings_are_applied_and_retries_left_to_us(self, fake_openai: FakeOpenAI) -> None:
        """Model, URL, temperature and timeout from settings; the client never retries."""
        chat = make_chat_model(settings_for(fake_openai))
        assert chat.model_name == "fake-model"
        assert chat.openai_api_base == fake_openai.base_url
        assert chat.temperature == 0.2
        assert chat.request_timeout == 10.0
        assert chat.max_retries == 0
        assert chat.use_responses_api is False

    def test_offline_settings_have_no_chat_model(self) -> None:
        with pytest.raises(ConfigError, match="offline"):
            make_chat_model(ModelSettings())

    def test_the_openai_api_needs_a_key(self) -> None:
        with pytest.raises(ConfigError) as caught:
            make_chat_model(ModelSettings(model="gpt-4o-mini"))
        assert caught.value.context["field"] == "api_key"

    async def test_a_local_server_needs_no_key(self, fake_openai: FakeOpenAI) -> None:
        """A placeholder key is sent; the call goes through."""
        chat = make_chat_model(settings_for(fake_openai, api_key=None))
        fake_openai.reply_text("ready")
        assert await text_call(chat, MESSAGES) == "ready"


class TestTextCall:
    async def test_returns_the_reply_text(self, model: ChatOpenAI, fake_openai: FakeOpenAI) -> None:
        """The messages are sent as they are, without tools or a response format."""
        fake_openai.reply_text("The door creaked open.")
        assert await text_call(model, MESSAGES) == "The door creaked open."
        (request,) = fake_openai.requests
        assert request["model"] == "fake-model"
        assert request["temperature"] == 0.2
        assert [m["role"] for m in request["messages"]] == ["system", "user"]
        assert "tools" not in request and "response_format" not in request


class TestStructuredCall:
    async def test_json_schema_output(self, model: ChatOpenAI, fake_openai: FakeOpenAI) -> None:
        """Asked for with a strict json_schema response format; validated into the type."""
        fake_openai.reply_json(GOOD)
        plan = await structured_call(model, ScenePlan, MESSAGES)
        assert plan == ScenePlan.model_validate(GOOD)
        (request,) = fake_openai.requests
        response_format = request["response_format"]
        assert response_format["type"] == "json_schema"
        spec = response_format["json_schema"]
        assert spec["name"] == "ScenePlan"
        assert spec["strict"] is True
        assert spec["description"] == "The plan of one scene."
        assert spec["schema"]["additionalProperties"] is False
        assert sorted(spec["schema"]["required"]) == ["beats", "goal", "tension"]
        assert "tools" not in request

    async def test_falls_back_to_function_calling(
        self, model: ChatOpenAI, fake_openai: FakeOpenAI
    ) -> None:
        """A server that rejects json_schema is asked again at once with a forced tool call."""
        fake_openai.reject_json_schema = True
        fake_openai.reply_tool_call(GOOD)
        with capture_logs() as logs:
            plan = await structured_call(model, ScenePlan, MESSAGES)
        assert plan.goal == "escape the lighthouse"
        first, second = fake_openai.requests
        assert first["response_format"]["type"] == "json_schema"
        assert "response_format" not in second
        assert [t["function"]["name"] for t in second["tools"]] == ["ScenePlan"]
        assert second["tools"][0]["function"]["strict"] is True
        assert second["tool_choice"] == {"type": "function", "function": {"name": "ScenePlan"}}
        assert [e["event"] for e in logs] == ["json_schema_rejected"]

    async def test_fallback_is_remembered_per_model(
        self, model: ChatOpenAI, fake_openai: FakeOpenAI
    ) -> None:
        """Later calls on the same model go straight to function calling; another model
        instance still tries json_schema first."""
        fake_openai.reject_json_schema = True
        fake_openai.reply_tool_call(GOOD)
        await structured_call(model, ScenePlan, MESSAGES)
        fake_openai.reply_tool_call(GOOD)
        await structured_call(model, ScenePlan, MESSAGES)
        assert len(fake_openai.requests) == 3
        assert "tools" in fake_openai.requests[2]

        other = make_chat_model(settings_for(fake_openai))
        fake_openai.reply_tool_call(GOOD)
        await structured_call(other, ScenePlan, MESSAGES)
        assert len(fake_openai.requests) == 5
        assert fake_openai.requests[3]["response_format"]["type"] == "json_schema"

    async def test_unparsable_output_is_retried_with_the_error(
        self, model: ChatOpenAI, fake_openai: FakeOpenAI
    ) -> None:
        """The malformed reply and what was wrong with it go back to the model."""
        fake_openai.reply_json('{"goal": "escape", "beats": [')
        fake_openai.reply_json(GOOD)
        plan = await structured_call(model, ScenePlan, MESSAGES)
        assert plan.tension == 3
        first, second = fake_openai.requests
        assert second["messages"][:2] == first["messages"]
        assistant, feedback = second["messages"][2:]
        assert assistant == {"role": "assistant", "content": '{"goal": "escape", "beats": ['}
        assert feedback["role"] == "user"
        assert "Invalid JSON" in feedback["content"]

    async def test_invalid_values_are_retried(
        self, model: ChatOpenAI, fake_openai: FakeOpenAI
    ) -> None:
        """Well-formed JSON that fails validation counts as malformed too."""
        fake_openai.reply_json(GOOD | {"tension": 9, "beats": []})
        fake_openai.reply_json(GOOD)
        assert await structured_call(model, ScenePlan, MESSAGES) == ScenePlan(**GOOD)
        feedback = fake_openai.requests[1]["messages"][-1]["content"]
        assert "- tension: Input should be less than or equal to 5" in feedback
        assert "- beats: List should have at least 1 item" in feedback

    async def test_malformed_tool_arguments_are_retried(
        self, model: ChatOpenAI, fake_openai: FakeOpenAI
    ) -> None:
        """In function-calling mode the arguments are what is validated."""
        fake_openai.reject_json_schema = True
        fake_openai.reply_tool_call('{"goal": "escape", ')
        fake_openai.reply_tool_call(GOOD)
        assert (await structured_call(model, ScenePlan, MESSAGES)).goal == GOOD["goal"]
        assert len(fake_openai.requests) == 3
        assert fake_openai.requests[2]["messages"][2]["content"] == '{"goal": "escape", '

    async def test_gives_up_after_max_attempts(
        self, model: ChatOpenAI, fake_openai: FakeOpenAI
    ) -> None:
        """ModelOutputError carries the last raw text and the validation error; exactly
        max_attempts requests are made and nothing else happens."""
        for n in range(3):
            fake_openai.reply_json(f"not json {n}")
        fake_openai.reply_json(GOOD)  # never asked for
        with pytest.raises(ModelOutputError) as caught:
            await structured_call(model, ScenePlan, MESSAGES, max_attempts=3)
        error = caught.value
        assert error.context["raw"] == "not json 2"
        assert error.context["attempts"] == 3
        assert error.context["schema"] == "ScenePlan"
        assert "Invalid JSON" in error.context["error"]
        assert isinstance(error.__cause__, ValidationError)
        assert len(fake_openai.requests) == 3
        assert fake_openai.pending == 1

    async def test_a_single_attempt_is_not_retried(
        self, model: ChatOpenAI, fake_openai: FakeOpenAI
    ) -> None:
        fake_openai.reply_json("[]")
        with pytest.raises(ModelOutputError):
            await structured_call(model, ScenePlan, MESSAGES, max_attempts=1)
        assert len(fake_openai.requests) == 1

    async def test_max_attempts_below_one_is_refused(self, model: ChatOpenAI) -> None:
        with pytest.raises(ValueError, match="max_attempts"):
            await structured_call(model, ScenePlan, MESSAGES, max_attempts=0)

    async def test_server_errors_propagate_without_retry(
        self, model: ChatOpenAI, fake_openai: FakeOpenAI
    ) -> None:
        """Transport errors are not retried: one ModelUnavailable, the HTTP error its cause."""
        fake_openai.reply_error(500, "the GPU caught fire")
        with pytest.raises(ModelUnavailable, match=r"HTTP 500.*caught fire") as caught:
            await structured_call(model, ScenePlan, MESSAGES)
        assert isinstance(caught.value.__cause__, openai.InternalServerError)
        assert len(fake_openai.requests) == 1

    async def test_other_bad_requests_do_not_fall_back(
        self, model: ChatOpenAI, fake_openai: FakeOpenAI
    ) -> None:
        """Only a rejection naming response_format or json_schema switches method."""
        fake_openai.reply_error(400, "the context is too long for this model")
        with pytest.raises(ModelUnavailable, match="HTTP 400"):
            await structured_call(model, ScenePlan, MESSAGES)
        assert len(fake_openai.requests) == 1

    async def test_streaming_model(self, fake_openai: FakeOpenAI) -> None:
        """A model that streams (as under LangGraph's "messages" stream mode) gets the same
        result through server-sent events, in both methods."""
        chat = make_chat_model(settings_for(fake_openai))
        chat.streaming = True
        fake_openai.reply_json(GOOD)
        assert await structured_call(chat, ScenePlan, MESSAGES) == ScenePlan(**GOOD)
        fake_openai.reject_json_schema = True
        fake_openai.reply_tool_call(GOOD)
        assert await structured_call(chat, ScenePlan, MESSAGES) == ScenePlan(**GOOD)
        assert all(r["stream"] is True for r in fake_openai.requests)


class TestFakeServer:
    async def test_lists_its_model(self, fake_openai: FakeOpenAI) -> None:
        client = openai.AsyncOpenAI(base_url=fake_openai.base_url, api_key="test-key")
        models = await client.models.list()
        assert [m.id for m in models.data] == ["fake-model"]
        await client.close()

    async def test_empty_queue_is_a_server_error(
        self, model: ChatOpenAI, fake_openai: FakeOpenAI
    ) -> None:
        with pytest.raises(ModelUnavailable, match="no scripted reply"):
            await text_call(model, MESSAGES)

    async def test_unreachable_server_is_one_clear_error(self) -> None:
        """A model nobody answers for is a ModelUnavailable naming the address."""
        chat = make_chat_model(
            ModelSettings(base_url="http://127.0.0.1:9/v1", model="nobody", timeout_s=5)
        )
        with pytest.raises(ModelUnavailable, match="cannot reach the model 'nobody'") as caught:
            await text_call(chat, MESSAGES)
        assert caught.value.context["base_url"] == "http://127.0.0.1:9/v1"


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
        with pytest.raises(ConfigError) as caught:
            prompt.render(draft="x")
        assert caught.value.context["missing"] == "plan, story"

    def test_missing_prompt_or_version(self) -> None:
        with pytest.raises(ConfigError, match="no such prompt"):
            load_prompt("critic", "praise", root=PROMPTS)
        with pytest.raises(ConfigError, match="no such prompt version") as caught:
            load_prompt("critic", "review", version=3, root=PROMPTS)
        assert caught.value.context["available"] == "1, 2, 10"

    def test_names_cannot_leave_the_folder(self) -> None:
        with pytest.raises(ConfigError):
            load_prompt("..", "review", root=PROMPTS)
        with pytest.raises(ConfigError):
            load_prompt("critic", "../../secrets", root=PROMPTS)
