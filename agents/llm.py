"""The model back end: one role's chat model, and structured or free-text calls to it.

A :class:`ModelClient` is a chat model as one role uses it: the role's settings, the
structured-output method its server takes, and its token limit. Every call:

* **retries the transport** (429, 408, 409, 5xx, timeouts, lost connections) with
  exponential backoff and jitter, honouring the server's ``Retry-After`` (tenacity; the
  OpenAI client's own retry is off so that the two never stack; each retry logged at
  debug), then raises :class:`ModelUnavailable`; a server found unreachable is asked
  once on the client's next calls, not retried, until it answers;
* **bounds the reply** (:mod:`fabula.agents.transport`): one reply, its retries and their
  waits included, ends within ``timeout_s`` of its request (a retry that would not start
  in time is not made), else :class:`ModelUnavailable`; one that sends more than
  ``max_reply_bytes``, streamed or not, is cut off there and is :class:`ModelOutputError`
  (not retried: the same request would get the same); a 200 whose body is not a chat
  completion is :class:`ModelUnavailable`, not retried either;
* **reads ``finish_reason``**: a reply cut at its token limit is asked for once more with
  the limit doubled, then :class:`ModelTruncated`; a refusal is :class:`ModelRefused`;
* **counts usage** (tokens and retries, by role: :mod:`fabula.agents.usage`).

:meth:`ModelClient.structured` asks for output matching a pydantic type with strict
structured outputs (``response_format`` of type ``json_schema``; the schema made strict by
:func:`~fabula.agents.schemas.strict_schema`). A server that does not support json_schema
is asked again at once with a forced function call (``tool_choice`` ``"required"`` with
the one tool offered: llama.cpp reads ``tool_choice`` only as a word), and this client
(one role on one server) keeps to function calling from then on, which is logged; a server
that rejects the *schema* raises :class:`SchemaRejected` instead (falling back would only
fail again). A server that offers neither is asked with ``json_object`` and the schema in
the prompt.
A reply that is not JSON or does not validate is shown back to the model with the error
and asked for again, up to ``max_attempts`` replies. :meth:`ModelClient.prose` is free text
that may stop at its token limit: the caller keeps what it can (the writer: its complete
sentences).

What real servers do differently is met once per client (one role on one server) and
remembered, each logged as ``model_server_adapted``:

* a chat template without a system role (HTTP 400 or 500 "System role not supported"):
  the system message is sent at the head of the first user message;
* a parameter the server refuses (a 400 naming ``seed``, ``strict``, ``stream_options``):
  it is no longer sent; ``max_tokens`` refused for ``max_completion_tokens`` (or the other
  way round): the other name is sent;
* a model name the server does not know (404): :class:`ModelUnavailable` naming the
  models it serves;
* ``reasoning_content`` beside ``content`` (a reasoning model's thinking): only the
  content is read, and a ``<think>…</think>`` block at its head is dropped;
* an HTTP 500 "output that does not match the expected ... format" (llama.cpp, when a
  structured reply stopped at its token limit mid-JSON): read as that, a truncation;
* a streamed reply without a final usage chunk: its tokens are estimated (about four
  characters a token) and logged as ``model_usage_missing``.

This module is the client's calls: the structured output's method and its fallback, the
replies asked for again, the token limit and the usage counted. How a request reaches the
server, retried and bounded, is :mod:`fabula.agents.llm_transport`; what a server was found
to take, and the chat model made for it, :mod:`fabula.agents.llm_server`.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal, TypeVar

import openai
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage
from pydantic import BaseModel, ValidationError

from fabula.agents.llm_server import UNPARSED, make_chat_model
from fabula.agents.llm_transport import Transport
from fabula.agents.schemas import strict_schema
from fabula.agents.usage import record_call, record_reply, record_truncation
from fabula.errors import (
    ModelOutputError,
    ModelRefused,
    ModelTruncated,
    ModelUnavailable,
    SchemaRejected,
)
from fabula.logs import get_logger
from fabula.settings import ModelSettings

T = TypeVar("T", bound=BaseModel)
Method = Literal["json_schema", "function_calling", "json_object"]

log = get_logger(__name__)

_THINK = re.compile(r"^\s*<think>.*?</think>\s*", re.DOTALL)
_JSON_OBJECT_INSTRUCTION = (
    "Reply with one JSON object only, the {name} that this JSON schema describes "
    '(JSON schema "{name}"):\n{schema}'
)


@dataclass(frozen=True)
class Prose:
    """A free-text reply, and whether it stopped at its token limit (``cut``)."""

    text: str
    cut: bool = False


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
        self.transport = Transport(chat, role=role, settings=settings)
        self.max_attempts = settings.max_attempts
        self.max_tokens = settings.max_tokens
        self.schemas = settings.schemas  # "story": roles send their story-shaped schemas
        self.method: Method = "json_schema"
        self._usage_missing = False

    @property
    def model_name(self) -> str:
        return self.transport.model_name

    @property
    def base_url(self) -> str:
        return self.transport.base_url

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
        return _content(reply)

    async def prose(
        self, messages: Sequence[BaseMessage], *, max_tokens: int | None = None
    ) -> Prose:
        """The model's reply to ``messages`` as free text that may stop at its token limit
        (``cut``): nothing is asked again, the caller keeps what it can. ``max_tokens``
        overrides the role's limit for this call.

        Raises :class:`ModelUnavailable` (after retries) and :class:`ModelRefused`.
        """
        started = time.perf_counter()
        try:
            reply = await self._complete(
                list(messages), {}, schema="text", keep_cut=True, max_tokens=max_tokens
            )
        except ModelUnavailable:
            record_reply(self.role, "text", 1, "unavailable", time.perf_counter() - started)
            raise
        refusal = reply.additional_kwargs.get("refusal")
        if refusal:
            raise self._refused(str(refusal), "text")
        cut = reply.response_metadata.get("finish_reason") == "length"
        text = _content(reply)
        outcome = "cut" if cut else ("valid" if text.strip() else "invalid")
        record_reply(self.role, "text", 1, outcome, time.perf_counter() - started)
        return Prose(text=text, cut=cut)

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
            started = time.perf_counter()
            reply = await self._reply(
                schema, conversation, shape or schema, json_schema, attempt, started
            )
            raw = _raw_output(reply)
            try:
                value = schema.model_validate_json(raw)
            except ValidationError as error:
                self._invalid(schema, attempt, attempts, raw, error, started)
                conversation += [AIMessage(content=raw), HumanMessage(content=_feedback(error))]
            else:
                record_reply(self.role, schema.__name__, attempt, "valid", _since(started))
                return value
        raise AssertionError("unreachable")

    async def _reply(
        self,
        schema: type[BaseModel],
        conversation: list[BaseMessage],
        shape: type[BaseModel],
        json_schema: dict[str, Any] | None,
        attempt: int,
        started: float,
    ) -> AIMessage:
        """Attempt ``attempt``'s reply to ``conversation``; one truncated, refused or
        unavailable is recorded as such and raised."""
        try:
            return await self._ask(schema, conversation, shape, json_schema)
        except ModelTruncated:
            record_reply(self.role, schema.__name__, attempt, "truncated", _since(started))
            raise
        except ModelRefused:
            record_reply(self.role, schema.__name__, attempt, "refused", _since(started))
            raise
        except (ModelUnavailable, SchemaRejected):
            record_reply(self.role, schema.__name__, attempt, "unavailable", _since(started))
            raise

    def _invalid(
        self,
        schema: type[BaseModel],
        attempt: int,
        attempts: int,
        raw: str,
        error: ValidationError,
        started: float,
    ) -> None:
        """Record and log attempt ``attempt``'s reply ``raw``, which failed validation;
        raise :class:`ModelOutputError` when it was the last of ``attempts``."""
        record_reply(self.role, schema.__name__, attempt, "invalid", _since(started))
        log.warning(
            "model_output_invalid",
            role=self.role,
            schema=schema.__name__,
            attempt=attempt,
            max_attempts=attempts,
            errors=error.error_count(),
            first=_first_error(error),
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
                self._on_rejection(error, schema.__name__, "function_calling")
            else:
                return self._checked_refusal(reply, schema.__name__)
        if self.method == "function_calling":
            function = {k: v for k, v in spec.items() if k != "schema"} | {"parameters": parameters}
            # "required" with one tool offered forces that tool, on OpenAI as on servers
            # that read tool_choice only as a word (llama.cpp ignores a named one)
            request: dict[str, Any] = {
                "tools": [{"type": "function", "function": function}],
                "tool_choice": "required",
            }
            try:
                reply = await self._complete(messages, request, schema=schema.__name__)
            except openai.BadRequestError as error:
                self._on_rejection(error, schema.__name__, "json_object")
            else:
                return self._checked_refusal(reply, schema.__name__)
        instruction = _JSON_OBJECT_INSTRUCTION.format(
            name=schema.__name__, schema=json.dumps(parameters, separators=(",", ":"))
        )
        try:
            reply = await self._complete(
                [*messages, SystemMessage(content=instruction)]
                if not messages or not isinstance(messages[0], SystemMessage)
                else [SystemMessage(content=f"{messages[0].text}\n\n{instruction}"), *messages[1:]],
                {"response_format": {"type": "json_object"}},
                schema=schema.__name__,
            )
        except openai.BadRequestError as error:
            raise self.transport.unavailable(error) from error
        return self._checked_refusal(reply, schema.__name__)

    def _on_rejection(self, error: openai.BadRequestError, schema: str, then: Method) -> None:
        """A 400 to a structured request: the schema refused (raise), the method itself not
        supported (switch this client to ``then``), or anything else (raise)."""
        text = f"{error.message} {error.body}".lower()
        if "invalid schema" in text:
            raise SchemaRejected(
                f"the model {self.model_name!r} rejected the schema {schema}: {error.message}",
                role=self.role,
                base_url=self.base_url,
            ) from error
        words = (
            ("response_format", "json_schema")
            if self.method == "json_schema"
            else ("tool", "function")
        )
        if not any(w in text for w in words):
            raise self.transport.unavailable(error) from error
        log.warning(
            "structured_output_fallback",
            role=self.role,
            model=self.model_name,
            base_url=self.base_url,
            method=then,
            reason=error.message,
        )
        self.method = then

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
        self,
        messages: list[BaseMessage],
        request: dict[str, Any],
        *,
        schema: str,
        keep_cut: bool = False,
        max_tokens: int | None = None,
    ) -> AIMessage:
        """One reply, retried on transient transport errors; a reply cut at the token
        limit is asked for once more with the limit doubled (unless ``keep_cut``: then it
        is the reply)."""
        limit = max_tokens or self.max_tokens
        for raised in (False, True):
            try:
                reply = await self.transport.send(messages, _arguments(request, limit))
            except openai.BadRequestError as error:
                if request:
                    raise  # the structured caller tells a schema or method problem apart
                raise self.transport.unavailable(error) from error
            except openai.InternalServerError as error:
                if not UNPARSED.search(str(error.message)):
                    raise self.transport.unavailable(error) from error
                # the server could not read its own reply: cut at the limit (llama.cpp)
                record_truncation(self.role)
                used = None
            except openai.LengthFinishReasonError as error:
                record_truncation(self.role)
                usage = error.completion.usage
                self._count(
                    usage.prompt_tokens if usage else 0, usage.completion_tokens if usage else 0
                )
                used = usage.completion_tokens if usage else None
            except openai.ContentFilterFinishReasonError as error:
                raise self._refused("the content filter stopped the reply", schema) from error
            else:
                self._count_reply(messages, reply)
                if reply.response_metadata.get("finish_reason") == "content_filter":
                    raise self._refused("the content filter stopped the reply", schema)
                if reply.response_metadata.get("finish_reason") != "length":
                    return reply
                record_truncation(self.role)
                if keep_cut:
                    log.warning("model_reply_cut", role=self.role, schema=schema, max_tokens=limit)
                    return reply
                used = reply.usage_metadata["output_tokens"] if reply.usage_metadata else None
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

    def _count_reply(self, messages: list[BaseMessage], reply: AIMessage) -> None:
        """Count the reply's usage as the server reported it; a server that reported none
        (a stream without a usage chunk) is estimated, about four characters a token."""
        meta: dict[str, Any] = dict(reply.usage_metadata or {})
        if meta:
            self._count(meta.get("input_tokens", 0), meta.get("output_tokens", 0))
            return
        if not self._usage_missing:
            log.warning(
                "model_usage_missing",
                role=self.role,
                model=self.model_name,
                base_url=self.base_url,
                estimated=True,
            )
            self._usage_missing = True
        written = _raw_output(reply) if reply.tool_calls else reply.text
        prompt = "".join(m.text for m in messages)
        self._count(len(prompt) // 4 + 1, len(written) // 4 + 1)


def _first_error(error: ValidationError) -> str:
    """The first problem of a reply that did not validate, in one bounded line (for logs)."""
    first = error.errors(include_url=False)[0]
    where = ".".join(str(p) for p in first["loc"])
    return f"{where}: {first['msg']}"[:300]


def _since(started: float) -> float:
    return time.perf_counter() - started


def _content(reply: AIMessage) -> str:
    """The reply's text without a reasoning model's ``<think>…</think>`` block at its head
    (``reasoning_content`` beside the content is never read)."""
    return _THINK.sub("", reply.text, count=1)


def _arguments(request: dict[str, Any], limit: int | None) -> dict[str, Any]:
    """A completion's arguments: ``request``'s (a structured output's method), the token
    ``limit``, and no streaming for structured output."""
    kwargs = dict(request)
    if limit is not None:
        kwargs["max_tokens"] = limit
    if request:  # structured output never streams (its JSON is parsed whole)
        kwargs["stream"] = False
    return kwargs


def _raw_output(reply: AIMessage) -> str:
    """The reply's JSON text: the first tool call's arguments, else the content."""
    if reply.tool_calls:
        return json.dumps(reply.tool_calls[0]["args"])
    if reply.invalid_tool_calls:
        return reply.invalid_tool_calls[0].get("args") or ""
    return _content(reply)


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
