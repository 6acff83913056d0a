"""A recording relay in front of any OpenAI-compatible server, on 127.0.0.1.

``fabula bench model --base-url URL`` and the tests marked ``real_engine`` point every role
at a :class:`Relay` instead of the server itself, so that they can read what a user's
server was sent and what it answered, whatever the server is::

    with Relay("http://127.0.0.1:8080/v1") as relay:
        settings = ModelSettings(base_url=relay.base_url, model="gemma", ...)
        ...
        relay.exchanges[0].request["response_format"]["type"]   # "json_schema"
        relay.exchanges[0].usage                                 # the server's usage

Every request is forwarded as it came (streamed replies chunk by chunk, as they arrive, so
a client still sees prose in pieces) and kept as an :class:`Exchange`: the request body,
the status, the reply (or its stream chunks), the server's ``usage`` and the seconds it
took. With ``reject_json_schema`` set it answers a ``response_format`` of type
``json_schema`` itself with HTTP 400, as a server that offers only function calling does,
so the client's fallback can be driven against a real engine. Standard library only.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any
from urllib.parse import urlsplit

from fabula.testing.fake_openai import JSON_SCHEMA_REJECTION, request_schema
from fabula.testing.local_server import LocalServer


@dataclass
class Exchange:
    """One request the relay forwarded and what came back."""

    request: dict[str, Any]
    status: int = 0
    reply: dict[str, Any] | None = None  # a whole completion (not streamed)
    chunks: list[dict[str, Any]] = field(default_factory=list)  # a streamed one
    seconds: float = 0.0
    rejected: bool = False  # answered by the relay itself (reject_json_schema)

    @property
    def schema(self) -> str:
        """The schema the request asked for (:func:`~fabula.testing.fake_openai.request_schema`)."""
        return request_schema(self.request)

    @property
    def usage(self) -> dict[str, int] | None:
        """The server's ``usage`` (a stream's: its last chunk that carries one)."""
        if self.reply is not None:
            usage = self.reply.get("usage")
            return dict(usage) if isinstance(usage, dict) else None
        for chunk in reversed(self.chunks):
            if isinstance(chunk.get("usage"), dict):
                return dict(chunk["usage"])
        return None

    @property
    def message(self) -> dict[str, Any]:
        """The reply's message (a stream's, put together from its deltas)."""
        if self.reply is not None:
            choices = self.reply.get("choices") or [{}]
            return dict(choices[0].get("message") or {})
        content = "".join(
            str((c.get("choices") or [{}])[0].get("delta", {}).get("content") or "")
            for c in self.chunks
            if c.get("choices")
        )
        return {"role": "assistant", "content": content}

    @property
    def finish_reason(self) -> str | None:
        if self.reply is not None:
            reason = (self.reply.get("choices") or [{}])[0].get("finish_reason")
            return str(reason) if reason is not None else None
        for chunk in reversed(self.chunks):
            for choice in chunk.get("choices") or []:
                if choice.get("finish_reason"):
                    return str(choice["finish_reason"])
        return None

    @property
    def content_pieces(self) -> int:
        """How many stream chunks carried some of the content (0 when not streamed)."""
        return sum(
            1
            for c in self.chunks
            for choice in c.get("choices") or []
            if (choice.get("delta") or {}).get("content")
        )


class Relay(LocalServer):
    """The relay; a context manager that starts and stops it (see the module docstring)."""

    thread_name = "fabula-relay"
    not_started = "the relay is not started"

    def __init__(self, upstream: str, *, timeout_s: float = 600.0) -> None:
        parts = urlsplit(upstream.rstrip("/"))
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"not an http(s) URL: {upstream!r}")
        self.upstream = upstream.rstrip("/")
        self._scheme = parts.scheme
        self._host = parts.hostname
        self._port = parts.port or (443 if parts.scheme == "https" else 80)
        self._prefix = parts.path  # e.g. /v1
        self.timeout_s = timeout_s
        self.reject_json_schema = False
        self.exchanges: list[Exchange] = []
        self._lock = threading.Lock()
        super().__init__()

    @property
    def base_url(self) -> str:
        """The ``/v1`` URL to give a client."""
        host, port = self.address()
        return f"http://{host}:{port}{self._prefix}"

    def connection(self) -> http.client.HTTPConnection:
        """A new connection to the upstream server."""
        if self._scheme == "https":
            return http.client.HTTPSConnection(self._host, self._port, timeout=self.timeout_s)
        return http.client.HTTPConnection(self._host, self._port, timeout=self.timeout_s)

    def upstream_path(self, path: str) -> str:
        """The upstream path for a request to the relay's ``path`` (both under the prefix)."""
        return path if path.startswith(self._prefix) else self._prefix + path

    def record(self, exchange: Exchange) -> None:
        with self._lock:
            self.exchanges.append(exchange)

    def clear(self) -> None:
        """Forget every exchange."""
        with self._lock:
            self.exchanges.clear()

    def handler(self) -> type[BaseHTTPRequestHandler]:
        return type("Handler", (_Handler,), {"relay": self})


class _Handler(BaseHTTPRequestHandler):
    relay: Relay
    protocol_version = "HTTP/1.0"  # a stream ends when the connection closes

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: the exchanges are recorded instead."""

    def do_GET(self) -> None:
        connection = self.relay.connection()
        try:
            connection.request("GET", self.relay.upstream_path(self.path))
            response = connection.getresponse()
            self._send(response.status, response.read(), response.getheader("Content-Type"))
        except OSError as error:
            self._send(502, _error(f"relay: the server cannot be reached: {error}"))
        finally:
            connection.close()

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b"{}"
        try:
            body = json.loads(raw)
        except json.JSONDecodeError:
            body = {}
        exchange = Exchange(request=body)
        started = time.perf_counter()
        response_format = body.get("response_format") or {}
        if self.relay.reject_json_schema and response_format.get("type") == "json_schema":
            exchange.status, exchange.rejected = 400, True
            self.relay.record(exchange)
            error = {
                "message": JSON_SCHEMA_REJECTION,
                "type": "invalid_request_error",
                "param": "response_format",
                "code": None,
            }
            self._send(400, json.dumps({"error": error}).encode())
            return
        recorded = False

        def finish() -> None:
            # recorded once: for a stream, before its end reaches the client, so that a
            # client that has its reply also finds the exchange
            nonlocal recorded
            if not recorded:
                recorded = True
                exchange.seconds = time.perf_counter() - started
                self.relay.record(exchange)

        connection = self.relay.connection()
        try:
            headers = {"Content-Type": "application/json"}
            if self.headers.get("Authorization"):
                headers["Authorization"] = str(self.headers["Authorization"])
            connection.request("POST", self.relay.upstream_path(self.path), raw, headers)
            response = connection.getresponse()
            exchange.status = response.status
            kind = response.getheader("Content-Type") or ""
            if response.status == 200 and "text/event-stream" in kind:
                self._relay_stream(response, exchange, finish)
            else:
                data = response.read()
                try:
                    exchange.reply = json.loads(data)
                except json.JSONDecodeError:
                    exchange.reply = {"raw": data.decode(errors="replace")}
                self._send(response.status, data, kind or None)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up
        except OSError as error:
            exchange.status = 502
            self._send(502, _error(f"relay: the server cannot be reached: {error}"))
        finally:
            connection.close()
            finish()

    def _relay_stream(
        self, response: http.client.HTTPResponse, exchange: Exchange, finish: Callable[[], None]
    ) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.end_headers()
        while True:
            line = response.readline()
            if not line:
                break
            text = line.decode(errors="replace").strip()
            if text.startswith("data:") and text[5:].strip() == "[DONE]":
                finish()
            self.wfile.write(line)
            if line.strip() == b"":
                self.wfile.flush()
            if text.startswith("data:") and text[5:].strip() not in ("", "[DONE]"):
                with contextlib.suppress(json.JSONDecodeError):
                    exchange.chunks.append(json.loads(text[5:].strip()))
        self.wfile.flush()

    def _send(self, status: int, data: bytes, kind: str | None = "application/json") -> None:
        self.send_response(status)
        self.send_header("Content-Type", kind or "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


def _error(message: str) -> bytes:
    body = {"error": {"message": message, "type": "server_error", "param": None, "code": None}}
    return json.dumps(body).encode()
