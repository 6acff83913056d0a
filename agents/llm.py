"""The model back end: one role's chat model, and structured or free-text calls to it.

A :class:`ModelClient` is a chat model as one role uses it: the role's settings, the
structured-output method its server takes, and its token limit. Every call:

* **retries the transport** (429, 408, 409, 5xx, timeouts, lost connections) with
  exponential backoff and jitter, honouring the server's ``Retry-After`` (tenacity; the
  OpenAI client's own retry is off so that the two never stack), then raises
  :class:`ModelUnavailable`;
* **reads ``finish_reason``**: a reply cut at its token limit is asked for once more with
  the limit doubled, then :class:`ModelTruncated`; a refusal is :class:`ModelRefused`;
* **counts usage** (tokens and retries, by role: :mod:`fabula.agents.usage`).

:meth:`ModelClient.structured` asks for output matching a pydantic type with strict
structured outputs (``response_format`` of type ``json_schema``; the schema made strict by
:func:`~fabula.agents.schemas.strict_schema`). A server that does not support json_schema
is asked again at once with a forced function call, and this client (one role on one
server) keeps to function calling from then on, which is logged; a server that rejects
the *schema* raises :class:`SchemaRejected` instead (falling back would only fail again).
A reply that is not JSON or does not validate is shown back to the model with the error
and asked for again, up to ``max_attempts`` replies.
"""

from __future__ import annotations

import email.utils
import json
import time
from collections.abc import Sequence
from typing import Any, Literal, TypeVar

import openai
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langchain_openai import ChatOpenAI
from pydantic import BaseModel, SecretStr, ValidationError
from tenacity import (
    AsyncRetrying,
    RetryCallState,
    retry_if_exception,
    stop_after_attempt,
    wait_exponential_jitter,
)

from fabula.agents.schemas import strict_schema
from fabula.agents.usage import record_call, record_retry
from fabula.memory.errors import (
    ConfigError,
    ModelOutputError,
    ModelRefused,
    ModelTruncated,
    ModelUnavailable,
    SchemaRejected,
)
from fabula.memory.logs import get_logger
from fabula.memory.settings import ModelSettings

__all__ = ["Method", "ModelClient", "make_chat_model", "make_client"]

T = TypeVar("T", bound=BaseModel)
Method = Literal["json_schema", "function_calling"]

log = get_logger(__name__)

_TRANSIENT_STATUS = frozenset({408, 409, 429})


def make_chat_model(settings: ModelSettings) -> ChatOpenAI:
    """A chat model on the OpenAI-compatible server that ``settings`` describe.

    The chat-completions API is always used (most compatible servers offer nothing
    else); the client itself never retries (:class:`ModelClient` does). A server at
    ``base_url`` that needs no key gets a placeholder, since the client refuses to start
    without one. Streamed replies ask for their usage.

    Raises :class:`ConfigError` when no model is set (that is the offline engine), or
    when the OpenAI API itself is meant (no ``base_url``) and there is no API key.
    """
    if not settings.model:
        raise ConfigError("no model is configured: roles run on the offline engine", field="model")
    api_key = settings.api_key
    if api_key is None:
        if settings.base_url is None:
            raise ConfigError("the OpenAI API needs an API key", field="api_key")
        api_key = "unused"
    return ChatOpenAI(
        model=settings.model,
        base_url=settings.base_url,
        api_key=SecretStr(api_key),
        temperature=settings.temperature,
        max_tokens=settings.max_tokens,
        seed=settings.seed,
        timeout=settings.timeout_s,
        max_retries=0,
        stream_usage=True,
        use_responses_api=False,
    )


def make_client(settings: ModelSettings, role: str) -> ModelClient:
    """A :class:`ModelClient` for ``role`` on a chat model built from ``settings``."""
    return ModelClient(make_chat_model(settings), role=role, settings=settings)


class ModelClient:
    """One role's chat model, with its transport policy (see the module docstring)."""

    def __init__(
        self,
        chat: BaseChatModel,
        *,
        role: str,
        settings: ModelSettings | None = None,
    ) -> None:
        settings = settings or ModelSettings()
        self.chat = chat
        self.role = role
        self.max_attempts = settings.max_attempts
        self.max_retries = settings.max_retries
        self.max_tokens = settings.max_tokens
        self.retry_initial_s = settings.retry_initial_s
        self.retry_max_s = settings.retry_max_s
        self.schemas = settings.schemas  # "story": roles send their story-shaped schemas
        self.method: Method = "json_schema"

    @property
    def model_name(self) -> str:
        return str(getattr(self.chat, "model_name", type(self.chat).__name__))

    @property
    def base_url(self) -> str:
        return str(getattr(self.chat, "openai_api_base", None) or "default")

    # -- calls ----------------------------------------------------------------------
    async def text(self, messages: Sequence[BaseMessage]) -> str:
        """The model's reply to ``messages`` as plain text (streamed when the caller's
        LangGraph run streams messages).

        Raises :class:`ModelUnavailable` (after retries), :class:`ModelTruncated` and
        :class:`ModelRefused`.
        """
        reply = await self._complete(list(messages), {}, schema="text")
        refusal = reply.additional_kwargs.get("refusal")
        if refusal:
            raise self._refused(str(refusal), "text")
        return reply.text

    async def structured(
        self,
        schema: type[T],
        messages: Sequence[BaseMessage],
        *,
        max_attempts: int | None = None,
        shape: type[BaseModel] | None = None,
        json_schema: dict[str, Any] | None = None,
    ) -> T:
        """The model's reply to ``messages``, validated into ``schema``.

        ``shape`` is the type whose JSON schema is sent (default: ``schema``): a checked
        type built per call (its validators know the call's text or entities) passes its
        plain base, so the strict schema is made once. ``json_schema``, when given, is sent
        as it is instead (a role's story-shaped schema, already strict: see
        :mod:`fabula.agents.schemas`); the reply is still validated into ``schema``.

        A reply that is not JSON or fails validation is answered with the error and asked
        for again, up to ``max_attempts`` (default: the role's setting) replies in all.

        Raises :class:`ModelOutputError` after the last malformed reply, with ``raw`` (its
        text) and ``error`` in its context and the pydantic ``ValidationError`` as its
        cause; :class:`ModelRefused` at once on a refusal; :class:`ModelTruncated`,
        :class:`ModelUnavailable` and :class:`SchemaRejected` as the module docstring says.
        """
        attempts = self.max_attempts if max_attempts is None else max_attempts
        if attempts < 1:
            raise ValueError(f"max_attempts must be at least 1, not {attempts}")
        conversation = list(messages)
        for attempt in range(1, attempts + 1):
            reply = await self._ask(schema, conversation, shape or schema, json_schema)
            raw = _raw_output(reply)
            try:
                return schema.model_validate_json(raw)
            except ValidationError as error:
                log.warning(
                    "model_output_invalid",
                    role=self.role,
                    schema=schema.__name__,
                    attempt=attempt,
                    max_attempts=attempts,
                    errors=error.error_count(),
                )
                if attempt == attempts:
                    raise ModelOutputError(
                        f"the model's output did not validate as {schema.__name__} "
                        f"after {attempts} attempts",
                        role=self.role,
                        schema=schema.__name__,
                        attempts=attempts,
                        raw=raw,
                        error=str(error),
                    ) from error
                conversation += [AIMessage(content=raw), HumanMessage(content=_feedback(error))]
        raise AssertionError("unreachable")

    # -- structured output: method and fallback ---------------------------------------
    async def _ask(
        self,
        schema: type[BaseModel],
        messages: list[BaseMessage],
        shape: type[BaseModel],
        json_schema: dict[str, Any] | None = None,
    ) -> AIMessage:
        parameters = strict_schema(shape) if json_schema is None else json_schema
        description = (shape.__doc__ or schema.__doc__ or "").strip()
        spec: dict[str, Any] = {"name": schema.__name__, "strict": True, "schema": parameters}
        if description:
            spec["description"] = description
        if self.method == "json_schema":
            json_request: dict[str, Any] = {
                "response_format": {"type": "json_schema", "json_schema": spec}
            }
            try:
                reply = await self._complete(messages, json_request, schema=schema.__name__)
            except openai.BadRequestError as error:
                self._on_rejection(error, schema.__name__)
            else:
                return self._checked_refusal(reply, schema.__name__)
        function = {k: v for k, v in spec.items() if k != "schema"} | {"parameters": parameters}
        request: dict[str, Any] = {
            "tools": [{"type": "function", "function": function}],
            "tool_choice": {"type": "function", "function": {"name": schema.__name__}},
        }
        try:
            reply = await self._complete(messages, request, schema=schema.__name__)
        except openai.BadRequestError as error:
            raise self._unavailable(error) from error
        return self._checked_refusal(reply, schema.__name__)

    def _on_rejection(self, error: openai.BadRequestError, schema: str) -> None:
        """A 400 to a json_schema request: the schema refused (raise), json_schema itself
        not supported (switch this client to function calling), or anything else (raise)."""
        text = f"{error.message} {error.body}".lower()
        if "invalid schema" in text:
            raise SchemaRejected(
                f"the model {self.model_name!r} rejected the schema {schema}: {error.message}",
                role=self.role,
                base_url=self.base_url,
            ) from error
        if "response_format" not in text and "json_schema" not in text:
            raise self._unavailable(error) from error
        log.warning(
            "structured_output_fallback",
            role=self.role,
            model=self.model_name,
            base_url=self.base_url,
            method="function_calling",
            reason=error.message,
        )
        self.method = "function_calling"

    def _checked_refusal(self, reply: AIMessage, schema: str) -> AIMessage:
        refusal = reply.additional_kwargs.get("refusal")
        if refusal and not reply.tool_calls and not reply.text:
            raise self._refused(str(refusal), schema)
        return reply

    def _refused(self, refusal: str, schema: str) -> ModelRefused:
        log.warning("model_refused", role=self.role, schema=schema)
        return ModelRefused(
            f"the model refused to answer: {refusal}", role=self.role, refusal=refusal
        )

    # -- one completion: transport retries, token limit, usage --------------------------
    async def _complete(
        self, messages: list[BaseMessage], request: dict[str, Any], *, schema: str
    ) -> AIMessage:
        """One reply, retried on transient transport errors; a reply cut at the token
        limit is asked for once more with the limit doubled."""
        limit = self.max_tokens
        for raised in (False, True):
            kwargs = dict(request)
            if limit is not None:
                kwargs["max_tokens"] = limit
            if request:  # structured output never streams (its JSON is parsed whole)
                kwargs["stream"] = False
            try:
                reply = await self._transport(messages, kwargs)
            except openai.LengthFinishReasonError as error:
                usage = error.completion.usage
                self._count(usage.prompt_tokens if usage else 0,
                            usage.completion_tokens if usage else 0)  # fmt: skip
                used = usage.completion_tokens if usage else None
            except openai.ContentFilterFinishReasonError as error:
                raise self._refused("the content filter stopped the reply", schema) from error
            else:
                meta: dict[str, Any] = dict(reply.usage_metadata or {})
                self._count(meta.get("input_tokens", 0), meta.get("output_tokens", 0))
                if reply.response_metadata.get("finish_reason") == "content_filter":
                    raise self._refused("the content filter stopped the reply", schema)
                if reply.response_metadata.get("finish_reason") != "length":
                    return reply
                used = meta.get("output_tokens") or None
            if raised:
                break
            limit = 2 * (limit or used or 1024)
            log.warning("model_reply_truncated", role=self.role, schema=schema, max_tokens=limit)
        raise ModelTruncated(
            f"the {self.role}'s reply stopped at its token limit ({limit} tokens) twice; "
            "raise its max_tokens",
            role=self.role,
            schema=schema,
            max_tokens=limit,
        )

    def _count(self, input_tokens: int, output_tokens: int) -> None:
        record_call(self.role, self.model_name, input_tokens, output_tokens)

    async def _transport(self, messages: list[BaseMessage], kwargs: dict[str, Any]) -> AIMessage:
        retrying = AsyncRetrying(
            stop=stop_after_attempt(self.max_retries + 1),
            wait=self._wait,
            retry=retry_if_exception(_transient),
            before_sleep=self._before_sleep,
            reraise=True,
        )
        try:
            async for attempt in retrying:
                with attempt:
                    reply = await self.chat.ainvoke(messages, **kwargs)
                    assert isinstance(reply, AIMessage)
                    return reply
        except openai.APIConnectionError as error:  # includes timeouts
            raise self._unavailable(error, f"cannot reach the model {self.model_name!r}") from error
        except openai.APIStatusError as error:
            if error.status_code == 400:
                raise  # the caller tells a schema problem from anything else
            raise self._unavailable(error) from error
        except Exception as error:
            if type(error).__module__.startswith("vcr."):  # a replay with no such request
                raise ModelUnavailable(
                    f"the model cassette holds no reply to this {self.role} request "
                    "(the run differs from the recorded one)",
                    role=self.role,
                ) from error
            raise
        raise AssertionError("unreachable")

    def _wait(self, state: RetryCallState) -> float:
        error = state.outcome.exception() if state.outcome else None
        after = _retry_after(error)
        if after is not None:
            return min(after, max(self.retry_max_s, 0.0))
        backoff = wait_exponential_jitter(
            multiplier=self.retry_initial_s, max=self.retry_max_s, jitter=self.retry_initial_s
        )
        return float(backoff(state))

    def _before_sleep(self, state: RetryCallState) -> None:
        error = state.outcome.exception() if state.outcome else None
        record_retry(self.role)
        log.warning(
            "model_retry",
            role=self.role,
            model=self.model_name,
            attempt=state.attempt_number,
            max_retries=self.max_retries,
            wait_s=round(state.upcoming_sleep, 3),
            error=_describe(error),
        )

    def _unavailable(
        self, error: openai.OpenAIError, message: str | None = None
    ) -> ModelUnavailable:
        if message is None:
            status = getattr(error, "status_code", None)
            detail = getattr(error, "message", str(error))
            message = f"the model {self.model_name!r} answered HTTP {status}: {detail}"
        else:
            message = f"{message}: {getattr(error, 'message', error)}"
        return ModelUnavailable(
            message, role=self.role, base_url=self.base_url, retries=self.max_retries
        )


def _transient(error: BaseException) -> bool:
    if isinstance(error, openai.APIConnectionError):
        return True
    if isinstance(error, openai.APIStatusError):
        return error.status_code in _TRANSIENT_STATUS or error.status_code >= 500
    return False


def _retry_after(error: BaseException | None) -> float | None:
    """Seconds the server asked to wait (``retry-after-ms`` or ``retry-after``), if any."""
    response = getattr(error, "response", None)
    headers = getattr(response, "headers", None)
    if headers is None:
        return None
    if headers.get("retry-after-ms"):
        try:
            return max(0.0, float(headers["retry-after-ms"]) / 1000)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:  # an HTTP date
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def _describe(error: BaseException | None) -> str:
    if isinstance(error, openai.APIStatusError):
        return f"HTTP {error.status_code}"
    if isinstance(error, openai.APITimeoutError):
        return "timeout"
    if isinstance(error, openai.APIConnectionError):
        return "connection error"
    return type(error).__name__ if error is not None else ""


def _raw_output(reply: AIMessage) -> str:
    """The reply's JSON text: the first tool call's arguments, else the content."""
    if reply.tool_calls:
        return json.dumps(reply.tool_calls[0]["args"])
    if reply.invalid_tool_calls:
        return reply.invalid_tool_calls[0].get("args") or ""
    return reply.text


def _feedback(error: ValidationError) -> str:
    problems = "\n".join(
        f"- {'.'.join(str(p) for p in e['loc']) or '(whole reply)'}: {e['msg']}"
        for e in error.errors(include_url=False)
    )
    return (
        "That reply could not be used:\n"
        f"{problems}\n"
        "Reply again with only a JSON value that matches the schema."
    )
