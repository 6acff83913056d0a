"""Dense retrieval (optional): embeddings from an OpenAI-compatible endpoint (the test
server), stored in a Redis 8 vector set, fused with the lexical ranking."""

from __future__ import annotations

import time

import pytest
import redis.asyncio as aredis

from fabula.agents.embeddings import OpenAIEmbedder, make_embedder
from fabula.errors import ModelOutputError, ModelUnavailable
from fabula.memory.index.build import index_through
from fabula.memory.index.search import Source
from fabula.memory.index.vectors import nearest
from fabula.memory.keys import EpisodeKeys
from fabula.memory.recall.context import author_context
from fabula.memory.tokens import ApproximateCounter
from fabula.settings import ModelSettings, Settings
from fabula.testing.fake_openai import Reply
from fabula.testing.model import FakeOpenAI
from fabula.testing.stories import new_story, turn_delta

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
        await store.commit(
            turn_delta(
                2,
                [
                    ("ann", "The ledger needs a new binding.", ("ann",)),
                    ("ann", "Cal left the violin in the hall.", ("ann",)),
                ],
                None,
            )
        )
        await index_through(store, embedder=embedder)
        assert (
            await aredis_client.execute_command("VCARD", EpisodeKeys("dense", "main").vectors)
            == len(setup_events()) + 3
        )
        assert any("input" in r for r in fake_openai.requests)  # it went over HTTP
        counter = ApproximateCounter()
        request = "How does Ann unwind?"
        lexical = await author_context(store, request, budget=30, counter=counter)
        dense = await author_context(store, request, budget=30, counter=counter, embedder=embedder)
        assert "relaxed by the harbour" not in lexical.text
        assert "relaxed by the harbour" in dense.text
        await store.delete()


class TestFailedEmbeddings:
    async def test_episodes_whose_embedding_failed_are_embedded_later(
        self, fake_openai: FakeOpenAI, aredis_client: aredis.Redis
    ) -> None:
        """The endpoint fails while a turn is indexed: its episodes are noted, and the next
        indexing with the embedder (after another commit) embeds them."""
        down = True

        def flaky(text: str) -> list[float]:
            if down:
                raise RuntimeError("the embedding model is down")
            return meaning(text)

        fake_openai.embed = flaky
        settings = Settings(
            model=ModelSettings(
                base_url=fake_openai.base_url, model="fake-model", api_key="k", max_retries=0
            ),
            embedding_model="fake-embed",
        )
        embedder = make_embedder(settings)
        assert embedder is not None
        store = await new_story(aredis_client, "flaky")
        keys = EpisodeKeys("flaky", "main")
        await store.commit(turn_delta(1, [("ann", "I relaxed by the harbour.", ("ann",))], None))
        await index_through(store, embedder=embedder)
        assert await aredis_client.execute_command("VCARD", keys.vectors) in (0, None)
        assert await aredis_client.scard(keys.unembedded) == len(setup_events()) + 1
        down = False
        await store.commit(turn_delta(2, [("ann", "The ledger is open.", ("ann",))], None))
        await index_through(store, embedder=embedder)
        assert await aredis_client.execute_command("VCARD", keys.vectors) == (
            len(setup_events()) + 2
        )
        assert await aredis_client.scard(keys.unembedded) == 0
        await store.delete()


class TestNearest:
    async def test_similarity_is_the_cosine(self, aredis_client: aredis.Redis) -> None:
        """VSIM's (1 + cosine) / 2 is read back as the cosine: the same direction is 1, a
        right angle is left out (it would otherwise weigh half of a perfect match)."""
        key = EpisodeKeys("near", "main").vectors
        for episode_id, vector in (
            ("e1.0", [1.0, 0.0]),
            ("e1.1", [0.6, 0.8]),
            ("e1.2", [0.0, 1.0]),
        ):
            await aredis_client.execute_command("VADD", key, "VALUES", 2, *vector, episode_id)
        found = await nearest(
            aredis_client, [Source(EpisodeKeys("near", "main"))], [1.0, 0.0], count=3
        )
        assert set(found) == {"e1.0", "e1.1"}
        assert abs(found["e1.0"] - 1.0) < 0.01 and abs(found["e1.1"] - 0.6) < 0.01  # int8-quantised
        await aredis_client.delete(key)

    async def test_a_request_is_embedded_once(self, fake_openai: FakeOpenAI) -> None:
        """The same request assembled again (another budget, a revision) is not sent again."""
        fake_openai.embed = meaning
        embedder = make_embedder(settings_for(fake_openai))
        assert embedder is not None
        first = await embedder.embed_query("Where is the ledger?")
        sent = len(fake_openai.requests)
        assert await embedder.embed_query("Where is the ledger?") == first
        assert len(fake_openai.requests) == sent
        await embedder.embed_query("Where is the violin?")
        assert len(fake_openai.requests) == sent + 1


def setup_events() -> list[object]:
    from fabula.testing.stories import setup

    return list(setup().events)


def bounded_settings(server: FakeOpenAI, *, timeout_s: float, max_bytes: int) -> Settings:
    return Settings(
        model=ModelSettings(
            base_url=server.base_url,
            model="fake-model",
            api_key="k",
            timeout_s=timeout_s,
            max_reply_bytes=max_bytes,
        ),
        embedding_model="fake-embed",
    )


class TestHostileEmbeddings:
    """The embeddings client read every reply whole, however long it took or however large
    it was (only each read was bounded): a server that streamed a body forever, or a byte
    at a time, held a turn's indexing and a recall without end. Now an embedding call ends
    within FABULA_MODEL_TIMEOUT and FABULA_MODEL_MAX_REPLY_BYTES, as a chat reply does, in
    one line with the model's exit status."""

    @pytest.mark.parametrize("query", [True, False], ids=["query", "documents"])
    async def test_a_body_that_never_ends_is_cut_off_at_the_byte_cap(
        self, fake_openai: FakeOpenAI, query: bool
    ) -> None:
        fake_openai.embeddings_reply = Reply(endless=True)
        embedder = make_embedder(bounded_settings(fake_openai, timeout_s=20, max_bytes=64 * 1024))
        assert embedder is not None
        started = time.monotonic()
        with pytest.raises(ModelOutputError, match=r"passed 65,536 bytes") as caught:
            if query:
                await embedder.embed_query("Where is the key?")
            else:
                await embedder.embed_documents(["Ann left.", "Ben stayed."])
        assert time.monotonic() - started < 5
        assert "\n" not in str(caught.value) and caught.value.exit_code == 6

    async def test_a_body_that_never_ends_is_cut_off_at_the_timeout(
        self, fake_openai: FakeOpenAI
    ) -> None:
        fake_openai.embeddings_reply = Reply(endless=True)
        embedder = make_embedder(bounded_settings(fake_openai, timeout_s=2, max_bytes=1 << 40))
        assert embedder is not None
        started = time.monotonic()
        with pytest.raises(ModelUnavailable, match=r"within 2 s \(FABULA_MODEL_TIMEOUT\)") as e:
            await embedder.embed_query("Where is the key?")
        assert time.monotonic() - started < 3.5
        assert "\n" not in str(e.value) and e.value.exit_code == 6

    async def test_a_reply_sent_a_byte_at_a_time_is_cut_off_at_the_timeout(
        self, fake_openai: FakeOpenAI
    ) -> None:
        """A slowloris: each byte comes well inside the timeout, the reply never does."""
        fake_openai.embeddings_reply = Reply(drip_s=0.2)
        embedder = make_embedder(bounded_settings(fake_openai, timeout_s=2, max_bytes=1 << 20))
        assert embedder is not None
        started = time.monotonic()
        with pytest.raises(ModelUnavailable, match=r"within 2 s"):
            await embedder.embed_documents(["Ann left."])
        assert time.monotonic() - started < 3.5

    async def test_a_recall_stays_lexical_when_the_embedder_stalls(
        self, fake_openai: FakeOpenAI, aredis_client: aredis.Redis
    ) -> None:
        """What a user meets: the recall answers, lexically, within the timeout."""
        store = await new_story(aredis_client, "dense-stall")
        await store.commit(turn_delta(1, [("ann", "I relaxed by the harbour.", ("ann",))], None))
        await index_through(store)
        fake_openai.embeddings_reply = Reply(endless=True)
        embedder = make_embedder(bounded_settings(fake_openai, timeout_s=1, max_bytes=1 << 40))
        started = time.monotonic()
        found = await author_context(
            store, "the harbour", budget=60, counter=ApproximateCounter(), embedder=embedder
        )
        assert time.monotonic() - started < 3
        assert "relaxed by the harbour" in found.text
