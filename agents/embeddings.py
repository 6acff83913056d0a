"""Embeddings for dense retrieval (optional): langchain-openai's ``OpenAIEmbeddings`` on any
OpenAI-compatible endpoint, as memory's :class:`~fabula.memory.index.vectors.Embedder`.

Off unless ``FABULA_EMBEDDING_MODEL`` names a model; the endpoint and key are the model
settings' (``FABULA_MODEL_BASE_URL``, ``FABULA_MODEL_API_KEY``). Texts are sent as they
are (no client-side token counting: tiktoken's encodings may not be on this machine).

Every reply is bounded as a chat model's is (:mod:`fabula.agents.transport`): read under
``FABULA_MODEL_MAX_REPLY_BYTES``, and each call, its retries included, ends within
``FABULA_MODEL_TIMEOUT`` — a server that streams a body forever, or a byte at a time, cannot
hold a turn's indexing or a recall. A reply out of bounds is :class:`ModelUnavailable` (too
slow, unreadable) or :class:`ModelOutputError` (too large), in one line.
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, TypeVar

from fabula.errors import ConfigError, ModelOutputError, ModelUnavailable
from fabula.logs import get_logger

if TYPE_CHECKING:
    # langchain-openai and the OpenAI client take seconds to import: loaded only when an
    # embedder is made (a story without FABULA_EMBEDDING_MODEL never loads them)
    from langchain_openai import OpenAIEmbeddings

    from fabula.memory.index.vectors import Embedder
    from fabula.settings import Settings

log = get_logger(__name__)
T = TypeVar("T")

BATCH = 128
"""Texts embedded per request: 128 vectors of 3,072 floats in base64 are ~2 MB, well under
the reply cap (the client's own default, 1,000, could pass it)."""


class OpenAIEmbedder:
    """An :class:`Embedder` on an OpenAI-compatible ``/v1/embeddings`` endpoint, each call
    within ``timeout_s`` (see the module docstring).

    The last ``REMEMBERED`` requests' vectors are kept: a request is often assembled more
    than once (at several budgets, or again after a revision), and its vector does not
    change.
    """

    REMEMBERED = 64

    def __init__(
        self, model: OpenAIEmbeddings, *, timeout_s: float = 60.0, base_url: str | None = None
    ) -> None:
        self.model = model
        self.timeout_s = timeout_s
        self.base_url = base_url
        self._queries: OrderedDict[str, list[float]] = OrderedDict()

    async def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        return await self._bounded(lambda: self.model.aembed_documents(list(texts)))

    async def embed_query(self, text: str) -> list[float]:
        if text in self._queries:
            self._queries.move_to_end(text)
            return self._queries[text]
        vector = await self._bounded(lambda: self.model.aembed_query(text))
        self._queries[text] = vector
        if len(self._queries) > self.REMEMBERED:
            self._queries.popitem(last=False)
        return vector

    async def _bounded(self, call: Callable[[], Awaitable[T]]) -> T:
        """``call``'s result, its every reply read under the deadline and the byte cap."""
        from fabula.agents.transport import ReplyTooLarge, ReplyTooSlow, deadline, reply_bound

        try:
            with deadline(self.timeout_s):
                async with asyncio.timeout(self.timeout_s):
                    return await call()
        except TimeoutError as error:
            raise self._too_slow(None) from error
        except Exception as error:
            bound = reply_bound(error)
            if isinstance(bound, ReplyTooSlow):
                raise self._too_slow(bound.read) from error
            if isinstance(bound, ReplyTooLarge):
                log.warning("model_reply_too_large", role="embedder", max_bytes=bound.limit)
                raise ModelOutputError(
                    f"the embedder's reply passed {bound.limit:,} bytes and was cut off "
                    "(FABULA_MODEL_MAX_REPLY_BYTES)",
                    role="embedder",
                    base_url=self.base_url,
                ) from error
            if bound is not None:
                raise ModelUnavailable(
                    f"the embedding server at {self.base_url} answered with a body it could "
                    f"not be read from: {bound}",
                    role="embedder",
                    base_url=self.base_url,
                ) from error
            raise

    def _too_slow(self, read: int | None) -> ModelUnavailable:
        log.warning("model_reply_timeout", role="embedder", timeout_s=self.timeout_s, read=read)
        return ModelUnavailable(
            f"the embedding model {self.model.model!r} did not finish its reply within "
            f"{self.timeout_s:g} s (FABULA_MODEL_TIMEOUT)",
            role="embedder",
            base_url=self.base_url,
        )


def make_embedder(settings: Settings) -> Embedder | None:
    """The configured embedder, or None (dense retrieval off).

    Raises :class:`ConfigError` when the OpenAI API itself is meant (no base URL) and there
    is no API key.
    """
    if not settings.embedding_model:
        return None
    model = settings.model
    if model.api_key is None and model.base_url is None:
        raise ConfigError("embeddings on the OpenAI API need an API key", field="api_key")
    from langchain_openai import OpenAIEmbeddings
    from pydantic import SecretStr

    from fabula.agents.transport import bounded_http_client

    return OpenAIEmbedder(
        OpenAIEmbeddings(
            model=settings.embedding_model,
            openai_api_base=model.base_url,
            openai_api_key=SecretStr(model.api_key or "unused"),
            check_embedding_ctx_length=False,
            chunk_size=BATCH,
            max_retries=model.max_retries,
            request_timeout=model.timeout_s,
            http_async_client=bounded_http_client(
                base_url=model.base_url,
                timeout_s=model.timeout_s,
                max_bytes=model.max_reply_bytes,
            ),
        ),
        timeout_s=model.timeout_s,
        base_url=model.base_url,
    )
