"""A scripted OpenAI-compatible server, on 127.0.0.1 in a background thread.

It stands in for a model in the tests and in ``fabula bench model``. It serves
``POST /v1/chat/completions`` (plain JSON, or server-sent events when the request asks to
``stream``), ``POST /v1/embeddings`` (each input embedded by ``embed``, a function of the
text; float lists, or base64 as the OpenAI client asks by default; or, with
``embeddings_reply`` set, a hostile answer: ``raw``, ``endless`` or ``drip_s``) and
``GET /v1/models``, with nothing but the standard library. A caller queues
the replies, in order, and reads back every request body it received::

    with FakeOpenAI() as server:
        server.reply_json({"goal": "escape"})
        model = ChatOpenAI(base_url=server.base_url, api_key="test", model="fake")
        ...
        assert server.requests[0]["response_format"]["type"] == "json_schema"

It behaves as real servers do where that matters to a client:

* **errors**: ``reply_error(429, ..., retry_after=1)`` (with a ``Retry-After`` header),
  500 and 503 answers; a reply can be **slow** (``delay_s``), **truncated** (``finish_reason
  "length"``) or a **refusal** (``message.refusal``, as OpenAI's structured outputs send);
* **hostile replies**, as a broken or malicious server sends them: a 200 whose body is not
  JSON (``raw``), a reply that never ends (``endless``: a stream of content chunks, or an
  unstreamed body, that goes on until the client hangs up) and one sent a byte at a time
  (``drip_s``: a slowloris);
* **strict schemas**: a strict ``json_schema`` (or strict tool) whose schema breaks
  OpenAI's strict rules is answered with HTTP 400 "Invalid schema for response_format",
  as OpenAI answers it (``strict_validation``, on by default);
* **no json_schema**: with ``reject_json_schema`` set it answers a ``response_format`` of
  type ``json_schema`` with HTTP 400, as servers with function calling only do (such a
  request consumes no reply);
* **usage**: every completion reports token usage (about four characters a token);
  a stream reports it in a last chunk when asked (``stream_options.include_usage``) unless
  ``stream_usage`` is off, as some servers never send it.

And it can be taught what real servers do differently (each off by default):

* ``no_system_role``: a system message is answered with HTTP 400 "System role not
  supported", as a chat template without a system role makes llama.cpp or vLLM answer;
* ``unsupported``: request parameters (``seed``, ``strict``, ``max_tokens``,
  ``max_completion_tokens``, ...) answered with HTTP 400 "Unsupported parameter", as
  OpenAI answers ``max_tokens`` for its reasoning models and other servers ``seed``;
* ``known_models``: any other model name is answered with HTTP 404 "model_not_found";
* ``reasoning``: every message carries this ``reasoning_content`` beside its content (a
  reasoning model's thinking; streamed in deltas of its own before the content);
* ``reject_tools``: tools are answered with HTTP 400; with ``reject_json_schema`` too,
  only ``json_object`` (or free text) is served.

A request that finds the queue empty is answered by ``fallback`` when one is set (a
function of the request body giving a :class:`Reply`), else with an HTTP 500 naming the
problem. When calls run concurrently (a graph's fanned-out agents), a reply can be routed:
``schema=`` serves it only to a request for that schema (the ``json_schema`` name, or the
name of the tool the request offers), or ``schema=TEXT`` only to a request for free text;
``contains=`` only to a request whose messages contain that text. A request gets the first
queued reply whose conditions it meets; a reply without conditions fits every request.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import itertools
import json
import math
import re
import struct
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler
from typing import Any

from fabula.agents.schemas import strict_problems
from fabula.testing.local_server import LocalServer

__all__ = ["TEXT", "FakeOpenAI", "Reply", "hashed_words", "request_schema"]

TEXT = "(text)"  # the schema of a request for free text (no response format, no tools)
JSON_SCHEMA_REJECTION = "response_format of type 'json_schema' is not supported by this server"


@dataclass(frozen=True)
class Reply:
    """One scripted answer: content, a tool call, a refusal or an HTTP error."""

    content: str | None = None
    tool_name: str | None = None  # None: the first tool the request offered
    tool_arguments: str | None = None  # set for a tool call
    refusal: str | None = None
    finish_reason: str | None = None  # None: "stop", or "tool_calls" for a tool call
    status: int = 200
    error: str = ""
    retry_after: float | None = None  # seconds, sent as a Retry-After header
    delay_s: float = 0.0  # answer this much later
    schema: str | None = None  # only for a request for this schema (TEXT: free text)
    contains: str | None = None  # only for a request whose messages contain this
    raw: bytes | None = None  # a 200 whose body is these bytes as they are
    raw_type: str = "application/json"  # ... and the content type it claims
    endless: bool = False  # a 200 whose body never ends (streamed: content chunks forever)
    drip_s: float = 0.0  # the body sent one byte every this many seconds

    @property
    def is_tool_call(self) -> bool:
        return self.tool_arguments is not None

    def fits(self, body: dict[str, Any]) -> bool:
        """Whether this reply may answer the request ``body``."""
        if self.schema is not None and self.schema != request_schema(body):
            return False
        return self.contains is None or self.contains in message_text(body)


def request_schema(body: dict[str, Any]) -> str:
    """The schema a request asks for: its json_schema's name, else its (first) tool's name,
    else :data:`TEXT`."""
    response_format = body.get("response_format") or {}
    if response_format.get("type") == "json_schema":
        return str(response_format["json_schema"]["name"])
    if response_format.get("type") == "json_object":  # the schema's name is in the prompt
        named = re.search(r'JSON schema "(\w+)"', message_text(body))
        return named.group(1) if named else "(json_object)"
    choice = body.get("tool_choice")
    if isinstance(choice, dict) and choice.get("function"):
        return str(choice["function"]["name"])
    tools = body.get("tools") or []
    return str(tools[0]["function"]["name"]) if tools else TEXT


def message_text(body: dict[str, Any]) -> str:
    """Every message's text content in a request, one after another."""
    parts = []
    for message in body.get("messages", []):
        content = message.get("content")
        if isinstance(content, list):  # content parts
            parts += [str(p.get("text", "")) for p in content if isinstance(p, dict)]
        elif content is not None:
            parts.append(str(content))
    return "\n".join(parts)


def tokens(text: str) -> int:
    """The server's token count: about four characters a token."""
    return len(text) // 4 + 1


EMBEDDING_DIMENSIONS = 64


def hashed_words(text: str) -> list[float]:
    """A deterministic unit vector: each lower-case word adds 1 at a dimension its hash
    picks (texts that share words are near; others are not)."""
    vector = [0.0] * EMBEDDING_DIMENSIONS
    for word in re.findall(r"\w+", text.lower()):
        vector[int(hashlib.sha1(word.encode()).hexdigest(), 16) % EMBEDDING_DIMENSIONS] += 1.0
    norm = math.sqrt(sum(x * x for x in vector)) or 1.0
    return [x / norm for x in vector]


class FakeOpenAI(LocalServer):
    """The server; a context manager that starts and stops it."""

    model = "fake-model"
    thread_name = "fake-openai"
    poll_interval = 0.01  # shutdown() waits up to one interval
    not_started = "the fake OpenAI server is not started"

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.reject_json_schema = False
        self.rejection_message = JSON_SCHEMA_REJECTION
        self.strict_validation = True
        self.stream_usage = True
        self.no_system_role = False
        self.unsupported: set[str] = set()
        self.known_models: set[str] | None = None
        self.reasoning: str | None = None
        self.reject_tools = False
        self.fallback: Callable[[dict[str, Any]], Reply] | None = None
        self.embed: Callable[[str], list[float]] = hashed_words  # /v1/embeddings
        # a hostile answer to every embeddings request (its raw, endless and drip_s are
        # read; None: the embeddings of ``embed``)
        self.embeddings_reply: Reply | None = None
        self.in_flight = 0
        self.max_in_flight = 0
        self._replies: deque[Reply] = deque()
        self._lock = threading.Lock()
        self._ids = itertools.count(1)
        super().__init__()

    # --- scripting -------------------------------------------------------------------------

    def reply_text(
        self,
        text: str,
        *,
        finish_reason: str | None = None,
        delay_s: float = 0.0,
        schema: str | None = None,
        contains: str | None = None,
    ) -> None:
        """Queue an assistant message with ``text`` as its content (routing: see above)."""
        self.queue(
            Reply(
                content=text,
                finish_reason=finish_reason,
                delay_s=delay_s,
                schema=schema,
                contains=contains,
            )
        )

    def reply_json(
        self,
        value: object,
        *,
        finish_reason: str | None = None,
        delay_s: float = 0.0,
        schema: str | None = None,
        contains: str | None = None,
    ) -> None:
        """Queue JSON content, as a json_schema response carries it; a str is sent as is."""
        content = value if isinstance(value, str) else json.dumps(value)
        self.reply_text(
            content, finish_reason=finish_reason, delay_s=delay_s, schema=schema, contains=contains
        )

    def reply_tool_call(
        self,
        arguments: object,
        name: str | None = None,
        *,
        schema: str | None = None,
        contains: str | None = None,
    ) -> None:
        """Queue a call of tool ``name`` (default: the first tool offered) with ``arguments``
        (JSON-encoded unless a str, which is sent as is, malformed or not)."""
        encoded = arguments if isinstance(arguments, str) else json.dumps(arguments)
        self.queue(Reply(tool_name=name, tool_arguments=encoded, schema=schema, contains=contains))

    def reply_refusal(
        self, refusal: str, *, schema: str | None = None, contains: str | None = None
    ) -> None:
        """Queue a refusal, as OpenAI sends one: ``message.refusal`` and no content."""
        self.queue(Reply(refusal=refusal, schema=schema, contains=contains))

    def reply_error(
        self,
        status: int,
        message: str,
        *,
        retry_after: float | None = None,
        schema: str | None = None,
        contains: str | None = None,
    ) -> None:
        """Queue an HTTP error with an OpenAI-style error body (and ``Retry-After``)."""
        self.queue(
            Reply(
                status=status,
                error=message,
                retry_after=retry_after,
                schema=schema,
                contains=contains,
            )
        )

    def queue(self, reply: Reply) -> None:
        """Queue any :class:`Reply`."""
        with self._lock:
            self._replies.append(reply)

    def clear(self) -> None:
        """Drop every queued reply and every recorded request."""
        with self._lock:
            self._replies.clear()
            self.requests.clear()

    @property
    def pending(self) -> int:
        """Replies queued and not yet sent."""
        with self._lock:
            return len(self._replies)

    # --- life cycle ------------------------------------------------------------------------

    @property
    def base_url(self) -> str:
        """The ``/v1`` URL to give a client."""
        host, port = self.address()
        return f"http://{host}:{port}/v1"

    @property
    def serving(self) -> bool:
        """Whether it is started (an endless reply stops once it is not)."""
        return self._server is not None

    def handler(self) -> type[BaseHTTPRequestHandler]:
        return type("Handler", (_Handler,), {"fake": self})

    # --- answering -------------------------------------------------------------------------

    def choose(self, body: dict[str, Any]) -> Reply | tuple[int, dict[str, Any]]:
        """The reply for ``body``, or the status and body of an error it gets instead."""
        with self._lock:
            self.requests.append(body)
            refused = self._refused(body)
            if refused is not None:
                return refused
            rejection = self._rejection(body)
            if rejection is not None:
                return 400, _error(rejection, param="response_format")
            index = next((i for i, r in enumerate(self._replies) if r.fits(body)), None)
            if index is not None:
                reply = self._replies[index]
                del self._replies[index]
                return reply
            fallback = self.fallback
        if fallback is not None:
            return fallback(body)
        problem = "no scripted reply " + ("fits" if self._replies else "left")
        why = f"fake_openai: {problem} (schema {request_schema(body)})"
        return 500, _error(why, kind="server_error")

    def _refused(self, body: dict[str, Any]) -> tuple[int, dict[str, Any]] | None:
        """The error a server with the taught differences answers ``body`` with, if any."""
        model = str(body.get("model", ""))
        if self.known_models is not None and model not in self.known_models:
            message = f"The model `{model}` does not exist or you do not have access to it."
            return 404, _error(message, param="model", code="model_not_found")
        if self.no_system_role and any(
            m.get("role") in ("system", "developer") for m in body.get("messages", [])
        ):
            return 400, _error("System role not supported")
        response_format = body.get("response_format") or {}
        spec = response_format.get("json_schema") or {}
        strict = "strict" in spec or any(
            "strict" in (t.get("function") or {}) for t in body.get("tools") or []
        )
        for name in sorted(self.unsupported):
            if name in body or (name == "strict" and strict):
                message = f"Unsupported parameter: '{name}' is not supported with this model."
                return 400, _error(message, param=name, code="unsupported_parameter")
        if self.reject_tools and body.get("tools"):
            return 400, _error("tools are not supported by this server", param="tools")
        return None

    def _rejection(self, body: dict[str, Any]) -> str | None:
        response_format = body.get("response_format") or {}
        if response_format.get("type") == "json_schema":
            if self.reject_json_schema:
                return self.rejection_message
            spec = response_format["json_schema"]
            if self.strict_validation and spec.get("strict"):
                problems = strict_problems(spec.get("schema") or {})
                if problems:
                    return f"Invalid schema for response_format '{spec['name']}': {problems[0]}"
        for tool in body.get("tools") or []:
            function = tool.get("function", {})
            if self.strict_validation and function.get("strict"):
                problems = strict_problems(function.get("parameters") or {})
                if problems:
                    return f"Invalid schema for function '{function['name']}': {problems[0]}"
        return None

    def embeddings(self, body: dict[str, Any]) -> dict[str, Any]:
        """The answer to an embeddings request: each input through :attr:`embed`."""
        inputs = body.get("input")
        texts = [inputs] if isinstance(inputs, str) else [str(t) for t in inputs or []]
        data = []
        for i, text in enumerate(texts):
            vector = [float(x) for x in self.embed(text)]
            value: Any = vector
            if body.get("encoding_format") == "base64":
                value = base64.b64encode(struct.pack(f"<{len(vector)}f", *vector)).decode()
            data.append({"object": "embedding", "index": i, "embedding": value})
        used = sum(tokens(t) for t in texts)
        return {
            "object": "list",
            "data": data,
            "model": body.get("model", self.model),
            "usage": {"prompt_tokens": used, "total_tokens": used},
        }

    def completion(self, body: dict[str, Any], reply: Reply) -> dict[str, Any] | list[Any]:
        """The completion (or, for a streamed request, its chunks) that ``reply`` gives."""
        number = next(self._ids)
        message: dict[str, Any] = {"role": "assistant", "content": reply.content}
        if self.reasoning is not None:
            message["reasoning_content"] = self.reasoning
        if reply.refusal is not None:
            message["refusal"] = reply.refusal
        if reply.is_tool_call:
            tools = body.get("tools") or [{"function": {"name": "unnamed"}}]
            name = reply.tool_name or tools[0]["function"]["name"]
            message["tool_calls"] = [
                {
                    "id": f"call_{number}",
                    "type": "function",
                    "function": {"name": name, "arguments": reply.tool_arguments},
                }
            ]
        finish = reply.finish_reason or ("tool_calls" if reply.is_tool_call else "stop")
        written = (reply.content or "") + (reply.tool_arguments or "") + (reply.refusal or "")
        usage = {
            "prompt_tokens": tokens(message_text(body)),
            "completion_tokens": tokens(written),
        }
        usage["total_tokens"] = usage["prompt_tokens"] + usage["completion_tokens"]
        completion_id = f"chatcmpl-fake-{number}"
        model = str(body.get("model", self.model))
        if body.get("stream"):
            asked = bool((body.get("stream_options") or {}).get("include_usage"))
            include_usage = asked and self.stream_usage
            return _chunks(completion_id, model, message, finish, usage if include_usage else None)
        return {
            "id": completion_id,
            "object": "chat.completion",
            "created": 0,
            "model": model,
            "choices": [
                {"index": 0, "message": message, "finish_reason": finish, "logprobs": None}
            ],
            "usage": usage,
        }


def _error(
    message: str,
    *,
    kind: str = "invalid_request_error",
    param: str | None = None,
    code: str | None = None,
) -> Any:
    return {"error": {"message": message, "type": kind, "param": param, "code": code}}


def _chunks(
    completion_id: str,
    model: str,
    message: dict[str, Any],
    finish: str,
    usage: dict[str, int] | None,
) -> list[dict[str, Any]]:
    """The completion as stream chunks: role, content or tool call in pieces, finish, usage."""
    deltas: list[dict[str, Any]] = [{"role": "assistant", "content": ""}]
    thinking = message.get("reasoning_content") or ""
    deltas += [{"reasoning_content": thinking[i : i + 8]} for i in range(0, len(thinking), 8)]
    content = message["content"] or ""
    deltas += [{"content": content[i : i + 8]} for i in range(0, len(content), 8)]
    if message.get("refusal"):
        deltas.append({"refusal": message["refusal"]})
    for index, call in enumerate(message.get("tool_calls", [])):
        head = {"index": index, "id": call["id"], "type": "function"}
        deltas.append({"tool_calls": [{**head, "function": {"name": call["function"]["name"]}}]})
        arguments = call["function"]["arguments"]
        deltas += [
            {"tool_calls": [{"index": index, "function": {"arguments": arguments[i : i + 8]}}]}
            for i in range(0, len(arguments), 8)
        ]
    base = {"id": completion_id, "object": "chat.completion.chunk", "created": 0, "model": model}
    chunks = [
        {**base, "choices": [{"index": 0, "delta": delta, "finish_reason": None}]}
        for delta in deltas
    ]
    chunks.append({**base, "choices": [{"index": 0, "delta": {}, "finish_reason": finish}]})
    if usage is not None:
        chunks.append({**base, "choices": [], "usage": usage})
    return chunks


class _Handler(BaseHTTPRequestHandler):
    fake: FakeOpenAI

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: the requests are recorded on the server instead."""

    def do_GET(self) -> None:
        if self.path.rstrip("/") != "/v1/models":
            self._send_json(404, _error(f"no route {self.path}"))
            return
        names = sorted(self.fake.known_models or {self.fake.model})
        models = [{"id": n, "object": "model", "created": 0, "owned_by": "tests"} for n in names]
        self._send_json(200, {"object": "list", "data": models})

    def do_POST(self) -> None:
        route = self.path.rstrip("/")
        if route not in ("/v1/chat/completions", "/v1/embeddings"):
            self._send_json(404, _error(f"no route {self.path}"))
            return
        length = int(self.headers.get("Content-Length") or 0)
        try:
            body = json.loads(self.rfile.read(length) or b"{}")
        except json.JSONDecodeError as exc:
            self._send_json(400, _error(f"request body is not JSON: {exc}"))
            return
        if route == "/v1/embeddings":
            self.fake.requests.append(body)
            # the client may give up (a bound it set): nothing to answer
            with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                self._embeddings(body)
            return
        fake = self.fake
        with fake._lock:
            fake.in_flight += 1
            fake.max_in_flight = max(fake.max_in_flight, fake.in_flight)
        try:
            self._answer(body)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up (a timeout): nothing to answer
        finally:
            with fake._lock:
                fake.in_flight -= 1

    def _embeddings(self, body: dict[str, Any]) -> None:
        hostile = self.fake.embeddings_reply
        if hostile is None:
            self._send_json(200, self.fake.embeddings(body))
        elif hostile.endless:
            self._send_endless(body)
        else:
            data = (
                hostile.raw if hostile.raw is not None else json.dumps(self.fake.embeddings(body))
            )
            raw = data.encode() if isinstance(data, str) else data
            self._send_body(raw, hostile.raw_type, hostile.drip_s)

    def _answer(self, body: dict[str, Any]) -> None:
        chosen = self.fake.choose(body)
        if isinstance(chosen, tuple):
            self._send_json(*chosen)
            return
        if chosen.delay_s:
            time.sleep(chosen.delay_s)
        if chosen.status != 200:
            headers = {}
            if chosen.retry_after is not None:
                headers["Retry-After"] = f"{chosen.retry_after:g}"
            kind = "rate_limit_error" if chosen.status == 429 else "server_error"
            self._send_json(chosen.status, _error(chosen.error, kind=kind), headers)
            return
        if chosen.raw is not None:
            self._send_body(chosen.raw, chosen.raw_type, chosen.drip_s)
            return
        if chosen.endless:
            self._send_endless(body)
            return
        answer = self.fake.completion(body, chosen)
        if isinstance(answer, list):
            self._send_events(answer)
        elif chosen.drip_s:
            self._send_body(json.dumps(answer).encode(), "application/json", chosen.drip_s)
        else:
            self._send_json(200, answer)

    def _send_json(self, status: int, payload: Any, headers: dict[str, str] | None = None) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    def _send_body(self, data: bytes, content_type: str, drip_s: float) -> None:
        """``data`` as a 200 with no length (it ends when the connection closes), at once
        or one byte every ``drip_s`` seconds."""
        self.send_response(200)
        self.send_header("Content-Type", content_type)
        self.end_headers()
        if not drip_s:
            self.wfile.write(data)
            return
        for i in range(len(data)):
            self.wfile.write(data[i : i + 1])
            self.wfile.flush()
            time.sleep(drip_s)

    def _send_endless(self, body: dict[str, Any]) -> None:
        """A 200 that never ends, until the client hangs up or the server stops: content
        chunks for a streamed request, else a JSON body whose string never closes."""
        streamed = bool(body.get("stream"))
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream" if streamed else "application/json")
        self.end_headers()
        base = {"id": "chatcmpl-endless", "object": "chat.completion.chunk", "created": 0}
        delta = {"index": 0, "delta": {"content": "and on "}, "finish_reason": None}
        piece = (
            f"data: {json.dumps({**base, 'choices': [delta]})}\n\n".encode()
            if streamed
            else b"on " * 256
        )
        if not streamed:
            self.wfile.write(b'{"id": "chatcmpl-endless", "choices": [{"message": {"content": "')
        while self.fake.serving:
            self.wfile.write(piece)
            self.wfile.flush()
            time.sleep(0.001)

    def _send_events(self, chunks: list[dict[str, Any]]) -> None:
        # HTTP/1.0 semantics: the stream ends when the connection closes.
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.end_headers()
        for chunk in chunks:
            self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
        self.wfile.write(b"data: [DONE]\n\n")
        self.wfile.flush()
