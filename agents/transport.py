"""The HTTP client of the model back end: every reply read under a byte cap and a deadline.

A model server decides how much it sends and how fast; the OpenAI client would read a body
of any size into memory, and its timeout bounds each read, not the reply: a server that
sends a byte every few seconds, or streams forever, holds a turn without end. So the
client that :func:`bounded_http_client` builds reads every reply, streamed or not, through
a guard (an httpx response hook, which keeps httpx's handling of proxies in the
environment) that

* refuses a reply larger than ``max_bytes``, by its ``Content-Length`` before its body is
  read, else as soon as the bytes read pass it (:class:`ReplyTooLarge`);
* refuses a reply still being read when the deadline set for the call (:func:`deadline`)
  has passed (:class:`ReplyTooSlow`): a stream that always has bytes ready never gives the
  event loop a chance to cancel it, so the deadline is checked on every piece read;
* asks for the body uncompressed and refuses one sent compressed anyway (its size once
  inflated is not what was read: :class:`ReplyCompressed`).

These two errors are raised inside the HTTP client's reading (the OpenAI client wraps them
in ``APIConnectionError`` for an unstreamed reply); the model client
(:mod:`fabula.agents.llm`) finds them there and raises Fabula's model errors.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from contextvars import ContextVar

import httpx2 as httpx  # the OpenAI client's own HTTP library (a fork of httpx)
import openai

_deadline: ContextVar[float | None] = ContextVar("fabula_model_deadline", default=None)


class ReplyBound(Exception):
    """A reply that passed one of its bounds (raised while it was being read)."""


class ReplyTooLarge(ReplyBound):
    """A reply larger than the byte cap."""

    def __init__(self, size: int, limit: int) -> None:
        self.size = size
        self.limit = limit
        super().__init__(f"the reply passed {limit:,} bytes ({size:,} read or announced)")


class ReplyTooSlow(ReplyBound):
    """A reply still being read when the call's deadline passed."""

    def __init__(self, read: int) -> None:
        self.read = read
        super().__init__(f"the reply was still coming when its time ran out ({read:,} bytes read)")


class ReplyCompressed(ReplyBound):
    """A reply sent compressed though asked not to be: its size once inflated is unknown."""

    def __init__(self, encoding: str) -> None:
        self.encoding = encoding
        super().__init__(f"the reply came compressed ({encoding}) though asked not to be")


@contextmanager
def deadline(seconds: float) -> Iterator[float]:
    """Within this block, every reply read by a bounded client ends by ``seconds`` from now
    (on :func:`time.monotonic`'s clock; the deadline is given back)."""
    until = time.monotonic() + seconds
    token = _deadline.set(until)
    try:
        yield until
    finally:
        _deadline.reset(token)


def reply_bound(error: BaseException) -> ReplyBound | None:
    """The :class:`ReplyBound` that ``error`` is or was caused by, if any."""
    seen: BaseException | None = error
    for _ in range(4):  # the OpenAI client wraps it once; never follow a cycle
        if seen is None:
            return None
        if isinstance(seen, ReplyBound):
            return seen
        seen = seen.__cause__ or seen.__context__
    return None


class _BoundedStream(httpx.AsyncByteStream):
    """A response body that raises once past its byte cap or the call's deadline."""

    def __init__(self, inner: httpx.AsyncByteStream, limit: int, until: float | None) -> None:
        self.inner = inner
        self.limit = limit
        self.until = until
        self.read = 0

    async def __aiter__(self) -> AsyncIterator[bytes]:
        async for piece in self.inner:
            self.read += len(piece)
            if self.read > self.limit:
                raise ReplyTooLarge(self.read, self.limit)
            if self.until is not None and time.monotonic() > self.until:
                raise ReplyTooSlow(self.read)
            yield piece

    async def aclose(self) -> None:
        await self.inner.aclose()


def bounded_http_client(
    *, base_url: str | None, timeout_s: float, max_bytes: int
) -> httpx.AsyncClient:
    """The OpenAI client's own default HTTP client (its connection limits, redirects),
    reading every reply under ``max_bytes`` and the deadline in force (see the module
    docstring); ``timeout_s`` bounds each connect, write and read."""

    async def uncompressed(request: httpx.Request) -> None:
        request.headers["Accept-Encoding"] = "identity"

    async def bounded(response: httpx.Response) -> None:
        encoding = response.headers.get("Content-Encoding", "identity").strip().lower()
        if encoding not in ("", "identity"):
            raise ReplyCompressed(encoding)
        announced = response.headers.get("Content-Length", "")
        if announced.isdigit() and int(announced) > max_bytes:
            raise ReplyTooLarge(int(announced), max_bytes)
        stream = response.stream
        assert isinstance(stream, httpx.AsyncByteStream)
        response.stream = _BoundedStream(stream, max_bytes, _deadline.get())

    return openai.DefaultAsyncHttpxClient(
        base_url=base_url or "https://api.openai.com/v1",
        timeout=timeout_s,
        event_hooks={"request": [uncompressed], "response": [bounded]},
    )
