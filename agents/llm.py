"""The model back end: a chat model from settings, and structured or free-text calls to it.

:func:`structured_call` asks for output matching a pydantic type with OpenAI's structured
outputs (``response_format`` of type ``json_schema``, strict). A server that rejects that
(an HTTP 400 or 422 naming ``response_format`` or ``json_schema``) is asked again at once
with a forced function call instead, and that model instance goes straight to function
calling from then on. The reply is validated here, not by the client, so that a malformed
one can be shown back to the model with the validation error and asked for again.

Transport errors (timeouts, rate limits, server errors) are not retried here: the chat
model is built with ``max_retries=0`` so that retrying stays with the caller's policy.
"""

from __future__ import annotations

import contextlib
import json
import weakref
from collections.abc import Iterator, Sequence
from typing import Any, Literal, TypeVar, cast

import openai
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langchain_openai import ChatOpenAI
from pydantic import BaseModel, SecretStr, ValidationError

from fabula.memory.errors import ConfigError, ModelOutputError, ModelUnavailable
from fabula.memory.logging import get_logger
from fabula.memory.settings import ModelSettings

__all__ = ["make_chat_model", "structured_call", "text_call"]

T = TypeVar("T", bound=BaseModel)
Method = Literal["json_schema", "function_calling"]

log = get_logger(__name__)

# ids of the model instances whose server rejected json_schema; an entry goes when its
# model is collected (chat models are unhashable, so no WeakKeyDictionary).
_function_calling_only: set[int] = set()


def make_chat_model(settings: ModelSettings) -> ChatOpenAI:
    """A chat model on the OpenAI-compatible server that ``settings`` describe.

    The chat-completions API is always used (most compatible servers offer nothing
    else), and the client never retries. A server at ``base_url`` that needs no key
    gets a placeholder, since the client refuses to start without one.

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
        timeout=settings.timeout_s,
        max_retries=0,
        use_responses_api=False,
    )


async def text_call(model: BaseChatModel, messages: Sequence[BaseMessage]) -> str:
    """The model's reply to ``messages`` as plain text.

    Raises :class:`ModelUnavailable` when the server cannot be reached or answers an error.
    """
    with _transport_errors(model):
        reply = await model.ainvoke(list(messages))
    return reply.text


@contextlib.contextmanager
def _transport_errors(model: BaseChatModel) -> Iterator[None]:
    """Turn the client's connection and HTTP errors into one clear :class:`ModelUnavailable`."""
    try:
        yield
    except openai.APIConnectionError as error:  # includes timeouts
        raise ModelUnavailable(
            f"cannot reach the model {_model_name(model)!r}: {error.message}",
            base_url=str(getattr(model, "openai_api_base", None) or "default"),
        ) from error
    except openai.APIStatusError as error:
        raise ModelUnavailable(
            f"the model {_model_name(model)!r} answered HTTP {error.status_code}: {error.message}",
            base_url=str(getattr(model, "openai_api_base", None) or "default"),
        ) from error


async def structured_call(
    model: BaseChatModel,
    schema: type[T],
    messages: Sequence[BaseMessage],
    *,
    max_attempts: int = 3,
    strict: bool = True,
) -> T:
    """The model's reply to ``messages``, validated into ``schema``.

    A reply that is not JSON or fails validation is answered with the error and asked
    for again, up to ``max_attempts`` replies in all. ``strict`` asks the server to
    enforce the schema (OpenAI's strict mode: every field required, no extra fields).

    Raises :class:`ModelOutputError` after the last malformed reply, with ``raw`` (its
    text) and ``error`` in its context and the pydantic ``ValidationError`` as its
    cause. A server that cannot be reached, times out or answers an HTTP error raises
    :class:`ModelUnavailable` at once (no retry here; the client's own error is its cause).
    """
    if max_attempts < 1:
        raise ValueError(f"max_attempts must be at least 1, not {max_attempts}")
    conversation = list(messages)
    for attempt in range(1, max_attempts + 1):
        with _transport_errors(model):
            reply = await _ask(model, schema, conversation, strict)
        raw = _raw_output(reply)
        try:
            return schema.model_validate_json(raw)
        except ValidationError as error:
            log.warning(
                "model_output_invalid",
                schema=schema.__name__,
                attempt=attempt,
                max_attempts=max_attempts,
                errors=error.error_count(),
            )
            if attempt == max_attempts:
                raise ModelOutputError(
                    f"the model's output did not validate as {schema.__name__} "
                    f"after {max_attempts} attempts",
                    schema=schema.__name__,
                    attempts=max_attempts,
                    raw=raw,
                    error=str(error),
                ) from error
            conversation += [AIMessage(content=raw), HumanMessage(content=_feedback(error))]
    raise AssertionError("unreachable")


async def _ask(
    model: BaseChatModel, schema: type[BaseModel], messages: list[BaseMessage], strict: bool
) -> AIMessage:
    if id(model) not in _function_calling_only:
        try:
            return await _invoke(model, schema, messages, "json_schema", strict)
        except openai.APIStatusError as error:
            if not _rejects_json_schema(error):
                raise
            log.info("json_schema_rejected", model=_model_name(model), status=error.status_code)
            _function_calling_only.add(id(model))
            weakref.finalize(model, _function_calling_only.discard, id(model))
    return await _invoke(model, schema, messages, "function_calling", strict)


async def _invoke(
    model: BaseChatModel,
    schema: type[BaseModel],
    messages: list[BaseMessage],
    method: Method,
    strict: bool,
) -> AIMessage:
    # The schema goes as a dict, never as the pydantic class: given the class, the
    # OpenAI client validates json_schema replies itself and raises without the raw text.
    if strict:
        parameters = dict(openai.pydantic_function_tool(schema)["function"]["parameters"])
    else:
        parameters = schema.model_json_schema()
    description = (schema.__doc__ or "").strip() or None
    spec: dict[str, Any]
    if method == "json_schema":
        spec = {"name": schema.__name__, "schema": parameters, "strict": strict}
    else:
        spec = {
            "type": "function",
            "function": {"name": schema.__name__, "parameters": parameters, "strict": strict},
        }
    target = spec if method == "json_schema" else spec["function"]
    if description:
        target["description"] = description
    runnable = model.with_structured_output(spec, method=method, include_raw=True, strict=strict)
    result = cast(dict[str, Any], await runnable.ainvoke(messages))
    return cast(AIMessage, result["raw"])


def _raw_output(reply: AIMessage) -> str:
    """The reply's JSON text: the first tool call's arguments, else the content."""
    if reply.tool_calls:
        return json.dumps(reply.tool_calls[0]["args"])
    if reply.invalid_tool_calls:
        return reply.invalid_tool_calls[0].get("args") or ""
    refusal = reply.additional_kwargs.get("refusal")
    return reply.text or (f"(refused: {refusal})" if refusal else "")


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


def _rejects_json_schema(error: openai.APIStatusError) -> bool:
    if error.status_code not in (400, 422):
        return False
    text = f"{error.message} {error.body}".lower()
    return "response_format" in text or "json_schema" in text


def _model_name(model: BaseChatModel) -> str:
    return str(getattr(model, "model_name", type(model).__name__))
