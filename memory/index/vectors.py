"""Dense retrieval, optional: episode embeddings in a Redis 8 vector set, searched by meaning.

With an :class:`Embedder` configured (see ``fabula.agents.embeddings``: any OpenAI-compatible
endpoint), :func:`~fabula.memory.index.build.index_through` also embeds each new episode's
text and adds it to its branch's vector set (``VADD``; key
:attr:`~fabula.memory.keys.EpisodeKeys.vectors`), and a search embeds the request and asks
for its nearest episodes (``VSIM``), whose similarities ranking fuses with the lexical
scores (:mod:`fabula.memory.recall.rank`). Off by default: without an embedder nothing
here runs. Only a branch's index has vectors (a character's read-only user is not granted
the vector-set commands), so a character's recall stays lexical.

An embedding that cannot be had (the endpoint down) is logged and its episodes are noted
(:attr:`~fabula.memory.keys.EpisodeKeys.unembedded`): the lexical index is already written,
recall works without the vectors it lacks, and :func:`embed_missing` (run by the next
indexing with an embedder) embeds them again.
"""

from __future__ import annotations

import json
import struct
from collections.abc import Sequence
from typing import Protocol

import redis.asyncio as aredis
from redis.exceptions import RedisError

from fabula.logs import get_logger
from fabula.memory.index.search import Source, visible
from fabula.memory.keys import EpisodeKeys

RETRY_BATCH = 256  # episodes embedded again per indexing, at most

log = get_logger(__name__)


def fp32(vector: Sequence[float]) -> bytes:
    """A vector as ``VADD`` and ``VSIM`` take it in one argument: little-endian 32-bit
    floats (a 1,536-dimension vector is 6 KB, not 1,536 decimal arguments)."""
    return struct.pack(f"<{len(vector)}f", *vector)


class Embedder(Protocol):
    """Turns texts into vectors (one model, one dimension)."""

    async def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        """One vector per text, in order."""
        ...

    async def embed_query(self, text: str) -> list[float]:
        """The vector of a request."""
        ...


async def add_vectors(
    client: aredis.Redis, keys: EpisodeKeys, embedder: Embedder, episodes: Sequence[tuple[str, str]]
) -> int:
    """Embed ``episodes`` (id, text) and add them to the index's vector set; how many were
    added (0 when the embedder failed: logged, and the episodes noted as missing)."""
    if not episodes:
        return 0
    ids = [episode_id for episode_id, _ in episodes]
    try:
        vectors = await embedder.embed_documents([text for _, text in episodes])
    except Exception as exc:  # any transport or model error: the vectors stay missing
        log.warning("embedding failed", episodes=len(episodes), error=str(exc))
        await client.sadd(keys.unembedded, *ids)
        return 0
    async with client.pipeline(transaction=False) as pipe:
        for episode_id, vector in zip(ids, vectors, strict=True):
            pipe.execute_command("VADD", keys.vectors, "FP32", fp32(vector), episode_id)
        pipe.srem(keys.unembedded, *ids)
        await pipe.execute()
    return len(episodes)


async def embed_missing(client: aredis.Redis, keys: EpisodeKeys, embedder: Embedder) -> int:
    """Embed again (up to ``RETRY_BATCH``) the episodes whose embedding failed; how many
    were added."""
    ids = await client.srandmember(keys.unembedded, RETRY_BATCH)
    if not ids:
        return 0
    texts = await client.hmget(keys.episodes, ids)
    episodes = [(i, json.loads(raw)["text"]) for i, raw in zip(ids, texts, strict=True) if raw]
    gone = [i for i, raw in zip(ids, texts, strict=True) if not raw]
    if gone:
        await client.srem(keys.unembedded, *gone)
    return await add_vectors(client, keys, embedder, episodes)


async def nearest(
    client: aredis.Redis,
    where: Sequence[Source],
    vector: Sequence[float],
    *,
    count: int,
    as_of: int | None = None,
) -> dict[str, float]:
    """The ``count`` episodes nearest ``vector`` in each source's vector set, with their
    cosine similarity (1 is the same direction; those at 0 or below are left out);
    sources without vectors give nothing.

    ``VSIM`` scores a match ``(1 + cosine) / 2``: read as it is, an unrelated episode
    (cosine 0) would still score half of an identical one, and scaled to the best match
    the whole neighbourhood would weigh almost alike.
    """
    async with client.pipeline(transaction=False) as pipe:
        for src in where:
            pipe.execute_command(
                "VSIM", src.keys.vectors, "FP32", fp32(vector), "COUNT", count, "WITHSCORES"
            )
        try:
            replies = await pipe.execute(raise_on_error=False)
        except RedisError:
            return {}
    out: dict[str, float] = {}
    for src, reply in zip(where, replies, strict=True):
        if isinstance(reply, dict):
            for episode_id, similarity in reply.items():
                cosine = 2 * float(similarity) - 1
                if cosine > 0 and visible(episode_id, src, as_of):
                    out[episode_id] = max(out.get(episode_id, 0.0), cosine)
    return out
