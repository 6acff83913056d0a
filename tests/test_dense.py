"""Dense retrieval (optional): embeddings from an OpenAI-compatible endpoint (the test
server), stored in a Redis 8 vector set, fused with the lexical ranking."""

from __future__ import annotations

import redis.asyncio as aredis

from fabula.agents.embeddings import OpenAIEmbedder, make_embedder
from fabula.memory.index.build import index_through
from fabula.memory.keys import EpisodeKeys
from fabula.memory.retrieval.context import author_context
from fabula.memory.settings import ModelSettings, Settings
from fabula.memory.tokens import ApproximateCounter
from tests.fake_openai import FakeOpenAI
from tests.test_narrative import new_story, turn_delta

SAME_MEANING = {"relaxed": "calm", "unwind": "calm", "unwinds": "calm"}


VOCABULARY: dict[str, int] = {}


def meaning(text: str) -> list[float]:
    """A toy embedding in which words of one meaning are one word (a dimension per word,
    so no two words collide)."""
    vector = [0.0] * 256
    for word in text.lower().split():
        word = SAME_MEANING.get(word.strip("?.,!:"), word.strip("?.,!:"))
        vector[VOCABULARY.setdefault(word, len(VOCABULARY) % 256)] += 1.0
    norm = sum(x * x for x in vector) ** 0.5 or 1.0
    return [x / norm for x in vector]


def settings_for(server: FakeOpenAI, model: str | None = "fake-embed") -> Settings:
    return Settings(
        model=ModelSettings(base_url=server.base_url, model="fake-model", api_key="k"),
        embedding_model=model,
    )


class TestDenseRetrieval:
    async def test_off_by_default(self, fake_openai: FakeOpenAI) -> None:
        """No embedding model, no embedder."""
        assert make_embedder(settings_for(fake_openai, None)) is None

    async def test_a_paraphrase_is_found_by_meaning(
        self, fake_openai: FakeOpenAI, aredis_client: aredis.Redis
    ) -> None:
        """Episodes are embedded as they are indexed (one vector each, in the branch's
        vector set); a request that shares no word with an episode finds it by meaning,
        which lexical retrieval alone does not."""
        fake_openai.embed = meaning
        embedder = make_embedder(settings_for(fake_openai))
        assert isinstance(embedder, OpenAIEmbedder)
        store = await new_story(aredis_client, "dense")
        await store.commit(turn_delta(1, [("ann", "I relaxed by the harbour.", ("ann",))], None))
        await store.commit(turn_delta(2, [
            ("ann", "The ledger needs a new binding.", ("ann",)),
            ("ann", "Cal left the violin in the hall.", ("ann",)),
        ], None))  # fmt: skip
        await index_through(store, embedder=embedder)
        assert (
            await aredis_client.execute_command("VCARD", EpisodeKeys("dense", "main").vectors)
            == len(setup_events()) + 3
        )
        assert any("input" in r for r in fake_openai.requests)  # it went over HTTP
        counter = ApproximateCounter()
        request = "How does Ann unwind?"
        lexical = await author_context(store, request, budget=30, counter=counter)
        dense = await author_context(store, request, budget=30, counter=counter,
                                     embedder=embedder)  # fmt: skip
        assert "relaxed by the harbour" not in lexical.text
        assert "relaxed by the harbour" in dense.text
        await store.delete()


def setup_events() -> list[object]:
    from tests.test_narrative import setup

    return list(setup().events)
