"""What one OpenAI-compatible server was found to take: the chat model as Fabula makes it
(:func:`make_chat_model`), and the request body adapted to its server (:func:`adapt_payload`):
the token limit's parameter name, the parameters it refuses, a chat template without a
system role. :func:`adapted` reads a server's error for what to change; the transport
(:mod:`fabula.agents.llm_transport`) asks again once it has changed it."""

from __future__ import annotations

import re
from typing import Any, Literal

import openai
from langchain_core.language_models import BaseChatModel, LanguageModelInput
from langchain_openai import ChatOpenAI
from pydantic import SecretStr

from fabula.agents.transport import (
    bounded_http_client,
)
from fabula.errors import (
    ConfigError,
)
from fabula.settings import ModelSettings

TokenParameter = Literal["max_tokens", "max_completion_tokens"]

# request parameters a server may refuse and a request does without (the token limit's two
# names are switched, not dropped)
OPTIONAL = ("seed", "strict", "stream_options")
_REFUSED = re.compile(
    r"unsupported|not supported|unrecognized|unrecognised|unknown|not permitted|"
    r"not allowed|extra (inputs|fields)|invalid (request )?(argument|parameter)"
)
NO_SYSTEM = re.compile(
    r"system (role|message|prompt)s? (is |are )?not supported|roles must alternate|"
    r"only user and assistant|system role"
)
# llama.cpp's answer when it cannot parse the model's output as its chat format: a reply cut
# at its token limit mid-JSON comes back so, as an HTTP 500, not as finish_reason "length"
UNPARSED = re.compile(r"does not match the expected [\w-]+ format|failed to parse")


class CompatChat(ChatOpenAI):
    """:class:`ChatOpenAI` with what its server was found to take (see the module
    docstring): the token limit's parameter name, parameters it refuses, and whether the
    system message must go into the first user message. :class:`ModelClient` sets these
    when a server answers a request with an error that names them."""

    token_parameter: TokenParameter = "max_completion_tokens"
    dropped: frozenset[str] = frozenset()
    merge_system: bool = False

    def _get_request_payload(
        self, input_: LanguageModelInput, *, stop: list[str] | None = None, **kwargs: Any
    ) -> dict[str, Any]:
        payload: dict[str, Any] = super()._get_request_payload(input_, stop=stop, **kwargs)
        return adapt_payload(
            payload,
            token_parameter=self.token_parameter,
            dropped=self.dropped,
            merge_system=self.merge_system,
        )


def adapt_payload(
    payload: dict[str, Any],
    *,
    token_parameter: TokenParameter = "max_completion_tokens",
    dropped: frozenset[str] = frozenset(),
    merge_system: bool = False,
) -> dict[str, Any]:
    """A chat-completions request body as a server that takes ``token_parameter``, refuses
    the parameters ``dropped`` and has no system role (``merge_system``) needs it."""
    out = dict(payload)
    limit = out.pop("max_completion_tokens", None)
    limit = out.pop("max_tokens", limit)
    if limit is not None:
        out[token_parameter] = limit
    for name in dropped:
        out.pop(name, None)
    if "strict" in dropped:
        response_format = out.get("response_format")
        if isinstance(response_format, dict) and "json_schema" in response_format:
            spec = {k: v for k, v in response_format["json_schema"].items() if k != "strict"}
            out["response_format"] = {**response_format, "json_schema": spec}
        if out.get("tools"):
            out["tools"] = [
                {**t, "function": {k: v for k, v in t["function"].items() if k != "strict"}}
                if isinstance(t.get("function"), dict)
                else t
                for t in out["tools"]
            ]
    if merge_system and out.get("messages"):
        out["messages"] = _without_system(out["messages"])
    return out


def _without_system(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The messages with every system (or developer) message moved to the head of the
    first user message, as a template without a system role needs."""
    system = [
        str(m.get("content") or "") for m in messages if m.get("role") in ("system", "developer")
    ]
    rest = [dict(m) for m in messages if m.get("role") not in ("system", "developer")]
    if not system:
        return rest
    head = "\n\n".join(system)
    for message in rest:
        if message.get("role") == "user":
            content = message.get("content")
            if isinstance(content, list):
                message["content"] = [{"type": "text", "text": head}, *content]
            else:
                message["content"] = f"{head}\n\n{content or ''}"
            return rest
    return [{"role": "user", "content": head}, *rest]


def make_chat_model(settings: ModelSettings) -> CompatChat:
    """A chat model on the OpenAI-compatible server that ``settings`` describe.

    The chat-completions API is always used (most compatible servers offer nothing
    else); the client itself never retries (:class:`ModelClient` does). A server at
    ``base_url`` that needs no key gets a placeholder, since the client refuses to start
    without one. Streamed replies ask for their usage. ``settings.stop`` are the stop
    sequences sent with every request. Every reply is read under ``max_reply_bytes`` and
    the deadline its call sets (:func:`~fabula.agents.transport.bounded_http_client`).

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
    return CompatChat(
        model=settings.model,
        base_url=settings.base_url,
        api_key=SecretStr(api_key),
        temperature=settings.temperature,
        max_tokens=settings.max_tokens,
        seed=settings.seed,
        stop=list(settings.stop) or None,
        timeout=settings.timeout_s,
        max_retries=0,
        http_async_client=bounded_http_client(
            base_url=settings.base_url,
            timeout_s=settings.timeout_s,
            max_bytes=settings.max_reply_bytes,
        ),
        stream_usage=True,
        use_responses_api=False,
    )


def adapted(chat: BaseChatModel, error: openai.APIStatusError) -> str | None:
    """What ``chat`` now does differently because of ``error`` (a 400 or 500 naming what
    its server refuses), in a few words; None when the error names nothing it can do
    without (or ``chat`` is not a :class:`CompatChat`)."""
    if not isinstance(chat, CompatChat) or error.status_code not in (400, 500):
        return None
    text = f"{getattr(error, 'message', '')} {error.body}".lower()
    if NO_SYSTEM.search(text) and not chat.merge_system:
        chat.merge_system = True
        return "system message sent in the first user message"
    if error.status_code == 400 and "invalid schema" not in text and _REFUSED.search(text):
        name = _refused_parameter(error, text)
        if name == chat.token_parameter:
            other: TokenParameter = (
                "max_tokens" if name == "max_completion_tokens" else "max_completion_tokens"
            )
            chat.token_parameter = other
            return f"token limit sent as {other}"
        if name in OPTIONAL and name not in chat.dropped:
            chat.dropped = chat.dropped | {name}
            return f"{name} no longer sent"
    return None


def _refused_parameter(error: openai.APIStatusError, text: str) -> str | None:
    """The request parameter a 400 says the server refuses: its ``param``, else the first
    known parameter its message names."""
    known = (*OPTIONAL, "max_completion_tokens", "max_tokens")
    param = error.body.get("param") if isinstance(error.body, dict) else None
    if param in known:
        return str(param)
    found = [(m.start(), p) for p in known if (m := re.search(rf"\b{p}\b", text))]
    return min(found)[1] if found else None
