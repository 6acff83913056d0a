"""A scripted OpenAI-compatible server for tests, on 127.0.0.1 in a background thread.

It serves ``POST /v1/chat/completions`` (plain JSON, or server-sent events when the request
asks to ``stream``) and ``GET /v1/models``, with nothing but the standard library. A test
queues the replies, in order, and reads back every request body it received. Importing
``fake_openai_fixture`` (or naming this module in ``pytest_plugins``) provides the
``fake_openai`` fixture::

    def test_plan(fake_openai: FakeOpenAI) -> None:
        fake_openai.reply_json({"goal": "escape"})
        model = ChatOpenAI(base_url=fake_openai.base_url, api_key="test", model="fake")
        ...
        assert fake_openai.requests[0]["response_format"]["type"] == "json_schema"

``reject_json_schema`` makes it answer a ``response_format`` of type ``json_schema`` with
an HTTP 400, as servers without structured outputs do; such a request consumes no reply.
A request that finds the queue empty is answered with an HTTP 500 naming the problem.

When a test's calls run concurrently (a graph's fanned-out agents), a reply can be routed:
``schema=`` serves it only to a request for that schema (the ``json_schema`` name, or the
name of the tool the request offers), or ``schema=TEXT`` only to a request for free text;
``contains=`` only to a request whose messages contain that text. A request gets the first
queued reply whose conditions it meets; a reply without conditions fits every request::

    fake_openai.reply_json({"actions": []}, schema="ExtractedActions")
    fake_openai.reply_text("Leo went out.", schema=TEXT)
"""

from __future__ import annotations

import itertools
import json
import threading
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

__all__ = ["TEXT", "FakeOpenAI", "Reply", "fake_openai_fixture", "request_schema"]

TEXT = "(text)"  # the schema of a request for free text (no response format, no tools)
JSON_SCHEMA_REJECTION = "response_format of type 'json_schema' is not supported by this server"


@dataclass(frozen=True)
class Reply:
    """One scripted answer: content, a tool call, or an HTTP error."""

    content: str | None = None
    tool_name: str | None = None  # None: the first tool the request offered
    tool_arguments: str | None = None  # set for a tool call
    status: int = 200
    error: str = ""
    schema: str | None = None  # only for a request for this schema (TEXT: free text)
    contains: str | None = None  # only for a request whose messages contain this

    @property
    def is_tool_call(self) -> bool:
        return self.tool_arguments is not None

    def fits(self, body: dict[str, Any]) -> bool:
        """Whether this reply may answer the request ``body``."""
        if self.schema is not None and self.schema != request_schema(body):
            return False
        return self.contains is None or self.contains in _message_text(body)


def request_schema(body: dict[str, Any]) -> str:
    """The schema a request asks for: its json_schema's name, else its (first) tool's name,
    else :data:`TEXT`."""
    response_format = body.get("response_format") or {}
    if response_format.get("type") == "json_schema":
        return str(response_format["json_schema"]["name"])
    choice = body.get("tool_choice")
    if isinstance(choice, dict) and choice.get("function"):
        return str(choice["function"]["name"])
    tools = body.get("tools") or []
    return str(tools[0]["function"]["name"]) if tools else TEXT


def _message_text(body: dict[str, Any]) -> str:
    parts = []
    for message in body.get("messages", []):
        content = message.get("content")
        if isinstance(content, list):  # content parts
            parts += [str(p.get("text", "")) for p in content if isinstance(p, dict)]
        elif content is not None:
            parts.append(str(content))
    return "\n".join(parts)


class FakeOpenAI:
    """The server; a context manager that starts and stops it."""

    model = "fake-model"

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.reject_json_schema = False
        self.rejection_message = JSON_SCHEMA_REJECTION
        self._replies: deque[Reply] = deque()
        self._lock = threading.Lock()
        self._ids = itertools.count(1)
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # --- scripting -------------------------------------------------------------------------

    def reply_text(
        self, text: str, *, schema: str | None = None, contains: str | None = None
    ) -> None:
        """Queue an assistant message with ``text`` as its content (routing: see above)."""
        self._queue(Reply(content=text, schema=schema, contains=contains))

    def reply_json(
        self, value: object, *, schema: str | None = None, contains: str | None = None
    ) -> None:
        """Queue JSON content, as a json_schema response carries it; a str is sent as is."""
        content = value if isinstance(value, str) else json.dumps(value)
        self._queue(Reply(content=content, schema=schema, contains=contains))

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
        self._queue(Reply(tool_name=name, tool_arguments=encoded, schema=schema, contains=contains))

    def reply_error(
        self, status: int, message: str, *, schema: str | None = None, contains: str | None = None
    ) -> None:
        """Queue an HTTP error with an OpenAI-style error body."""
        self._queue(Reply(status=status, error=message, schema=schema, contains=contains))

    @property
    def pending(self) -> int:
        """Replies queued and not yet sent."""
        with self._lock:
            return len(self._replies)

    def _queue(self, reply: Reply) -> None:
        with self._lock:
            self._replies.append(reply)

    # --- life cycle ------------------------------------------------------------------------

    @property
    def base_url(self) -> str:
        """The ``/v1`` URL to give a client."""
        if self._server is None:
            raise RuntimeError("the fake OpenAI server is not started")
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}/v1"

    def start(self) -> None:
        handler = type("Handler", (_Handler,), {"fake": self})
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever,
            kwargs={"poll_interval": 0.01},  # shutdown() waits up to one interval
            name="fake-openai",
            daemon=True,
        )
        self._thread.start()

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._server = self._thread = None

    def __enter__(self) -> FakeOpenAI:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # --- answering -------------------------------------------------------------------------

    def _answer(self, body: dict[str, Any]) -> tuple[int, dict[str, Any] | list[dict[str, Any]]]:
        """The status and either a completion or, for a streamed request, its chunks."""
        with self._lock:
            self.requests.append(body)
            response_format = body.get("response_format") or {}
            if self.reject_json_schema and response_format.get("type") == "json_schema":
                return 400, _error(self.rejection_message, param="response_format")
            index = next((i for i, r in enumerate(self._replies) if r.fits(body)), None)
            if index is None:
                problem = "no scripted reply " + ("fits" if self._replies else "left")
                why = f"fake_openai: {problem} (schema {request_schema(body)})"
                return 500, _error(why, kind="server_error")
            reply = self._replies[index]
            del self._replies[index]
            number = next(self._ids)
        if reply.status != 200:
            return reply.status, _error(reply.error)
        message: dict[str, Any] = {"role": "assistant", "content": reply.content}
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
        finish = "tool_calls" if reply.is_tool_call else "stop"
        completion_id = f"chatcmpl-fake-{number}"
        if body.get("stream"):
            include_usage = bool((body.get("stream_options") or {}).get("include_usage"))
            return 200, _chunks(completion_id, self.model, message, finish, include_usage)
        return 200, {
            "id": completion_id,
            "object": "chat.completion",
            "created": 0,
            "model": body.get("model", self.model),
            "choices": [
                {"index": 0, "message": message, "finish_reason": finish, "logprobs": None}
            ],
            "usage": _USAGE,
        }


_USAGE = {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}


def _error(message: str, *, kind: str = "invalid_request_error", param: str | None = None) -> Any:
    return {"error": {"message": message, "type": kind, "param": param, "code": None}}


def _chunks(
    completion_id: str, model: str, message: dict[str, Any], finish: str, include_usage: bool
) -> list[dict[str, Any]]:
    """The completion as stream chunks: role, content or tool call in pieces, finish, usage."""
    deltas: list[dict[str, Any]] = [{"role": "assistant", "content": ""}]
    content = message["content"] or ""
    deltas += [{"content": content[i : i + 8]} for i in range(0, len(content), 8)]
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
    if include_usage:
        chunks.append({**base, "choices": [], "usage": _USAGE})
    return chunks


class _Handler(BaseHTTPRequestHandler):
    fake: FakeOpenAI

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: the requests are recorded on the server instead."""

    def do_GET(self) -> None:
        if self.path.rstrip("/") != "/v1/models":
            self._send_json(404, _error(f"no route {self.path}"))
            return
        model = {"id": self.fake.model, "object": "model", "created": 0, "owned_by": "tests"}
        self._send_json(200, {"object": "list", "data": [model]})

    def do_POST(self) -> None:
        if self.path.rstrip("/") != "/v1/chat/completions":
            self._send_json(404, _error(f"no route {self.path}"))
            return
        length = int(self.headers.get("Content-Length") or 0)
        try:
            body = json.loads(self.rfile.read(length) or b"{}")
        except json.JSONDecodeError as exc:
            self._send_json(400, _error(f"request body is not JSON: {exc}"))
            return
        status, answer = self.fake._answer(body)
        if isinstance(answer, list):
            self._send_events(answer)
        else:
            self._send_json(status, answer)

    def _send_json(self, status: int, payload: Any) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

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


@pytest.fixture(name="fake_openai")
def fake_openai_fixture() -> Iterator[FakeOpenAI]:
    """A started :class:`FakeOpenAI`, stopped after the test."""
    with FakeOpenAI() as server:
        yield server
