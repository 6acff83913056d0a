"""Embeddings for dense retrieval (optional): langchain-openai's ``OpenAIEmbeddings`` on any
OpenAI-compatible endpoint, as memory's :class:`~fabula.memory.index.vectors.Embedder`.

Off unless ``FABULA_EMBEDDING_MODEL`` names a model; the endpoint and key are the model
settings' (``FABULA_MODEL_BASE_URL``, ``FABULA_MODEL_API_KEY``). Texts are sent as they
are (no client-side token counting: tiktoken's encodings may not be on this machine).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence

from langchain_openai import OpenAIEmbeddings
from pydantic import SecretStr

from fabula.errors import ConfigError
from fabula.memory.index.vectors import Embedder
from fabula.settings import Settings

__all__ = ["OpenAIEmbedder", "make_embedder"]


class OpenAIEmbedder:
    """An :class:`Embedder` on an OpenAI-compatible ``/v1/embeddings`` endpoint.

    The last ``REMEMBERED`` requests' vectors are kept: a request is often assembled more
    than once (at several budgets, or again after a revision), and its vector does not
    change.
    """

    REMEMBERED = 64

    def __init__(self, model: OpenAIEmbeddings) -> None:
        self.model = model
        self._queries: OrderedDict[str, list[float]] = OrderedDict()

    async def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        return await self.model.aembed_documents(list(texts))

    async def embed_query(self, text: str) -> list[float]:
        if text in self._queries:
            self._queries.move_to_end(text)
            return self._queries[text]
        vector = await self.model.aembed_query(text)
        self._queries[text] = vector
        if len(self._queries) > self.REMEMBERED:
            self._queries.popitem(last=False)
        return vector


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
    return OpenAIEmbedder(
        OpenAIEmbeddings(
            model=settings.embedding_model,
            openai_api_base=model.base_url,
            openai_api_key=SecretStr(model.api_key or "unused"),
            check_embedding_ctx_length=False,
            max_retries=model.max_retries,
            request_timeout=model.timeout_s,
        )
    )
