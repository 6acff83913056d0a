"""The turn graph on LangGraph's Agent Server: `langgraph dev` serves langgraph.json, and the
SDK drives one turn through the approval interrupt into Fabula's memory in Redis."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import redis
from langgraph_sdk import get_client

from fabula.agents.contracts import Decision
from fabula.errors import FabulaError, InvalidInput, NotFound, StoryAtRest, TurnConflict
from fabula.graph.agent_auth import PLAY_ASSISTANT
from fabula.graph.agent_play import PLAY_GRAPH
from fabula.graph.agent_server import visible
from fabula.graph.service import Fabula
from fabula.memory.server import EmbeddedRedis, resolve_url
from fabula.settings import Settings
from fabula.testing.agent_server import LANGGRAPH, PLAY_KEYS, TOKENS, refused, serving

CONFIG = Path(__file__).resolve().parents[2] / "langgraph.json"

pytestmark = pytest.mark.skipif(
    not LANGGRAPH.exists(), reason="langgraph-cli is not installed (pip install -e '.[dev]')"
)


@pytest.fixture()
def agent_server(redis_url: str, tmp_path: Path) -> Iterator[str]:
    """`langgraph dev --no-browser` on a free local port, its memory on the test Redis."""
    yield from serving({"FABULA_REDIS_URL": redis_url}, tmp_path, CONFIG)


@pytest.fixture()
def embedded_agent_server(tmp_path: Path) -> Iterator[str]:
    """`langgraph dev --no-browser` as the docs run it (docs/guides/library.md): no
    FABULA_REDIS_URL, its memory on the embedded server of FABULA_HOME (stopped after)."""
    try:
        yield from serving({}, tmp_path, CONFIG)
    finally:
        EmbeddedRedis(tmp_path / "redis").stop()


async def test_a_turn_through_the_agent_server(
    agent_server: str, redis_url: str, tmp_path: Path
) -> None:
    """Create a thread, run to the approval interrupt, read its payload, resume it with
    Command(resume=approve): the turn is in Fabula's memory, and the server's checkpoints
    are its own (none in Redis)."""
    async with Fabula(redis_url, Settings(home=tmp_path)) as fab:
        await fab.create_story("hollow_book", "tale")
        client = get_client(url=agent_server)
        thread = await client.threads.create()
        await client.runs.wait(thread["thread_id"], "fabula", input={"story": "tale"})
        state = await client.threads.get_state(thread["thread_id"])
        (task,) = state["tasks"]
        assert task["name"] == "approve"
        payload = task["interrupts"][0]["value"]
        assert (payload["story"], payload["branch"], payload["turn"]) == ("tale", "main", 4)
        draft = payload["draft"]["text"]
        assert draft and "findings" in payload
        store = fab.store("tale")
        assert await store.head() == 3  # nothing is committed before the decision

        final = await client.runs.wait(
            thread["thread_id"], "fabula", command={"resume": {"action": "approve"}}
        )
        assert isinstance(final, dict) and final["outcome"] == "committed"
        assert await store.head() == 4
        (turn,) = await store.turn_texts(4, 4)
        assert turn.text == draft
    client_sync = redis.Redis.from_url(redis_url)
    try:  # the server's own checkpoints are not in Redis: only the pending turn it shared
        keys = {k.decode() for k in client_sync.scan_iter(match="fab:ckpt:*")}
        shared = {k for k in keys if "{tale%2Fmain%2F4}" in k}
        assert shared and keys - shared == {"fab:ckpt:threads"}, sorted(keys)[:5]
    finally:
        client_sync.close()


async def test_a_turn_waiting_on_the_server_is_decided_from_the_cli(
    agent_server: str, redis_url: str, tmp_path: Path
) -> None:
    """One set of pending turns: the turn the server waits on is Fabula's pending turn
    too, with the same draft; approved there (as `fabula approve` does), it is committed
    once, and the server's own approval afterwards finds it committed (duplicate)."""
    async with Fabula(redis_url, Settings(home=tmp_path)) as fab:
        await fab.create_story("hollow_book", "tale")
        store = fab.store("tale")
        client = get_client(url=agent_server)
        tid = (await client.threads.create())["thread_id"]
        await client.runs.wait(tid, "fabula", input={"story": "tale"})
        value = (await client.threads.get_state(tid))["tasks"][0]["interrupts"][0]["value"]
        pending = await fab.read(store).pending()
        assert pending is not None and pending.turn == 4
        assert pending.request.draft.text == value["draft"]["text"]
        assert pending.request.delta is not None
        assert pending.request.delta.model_dump(mode="json") == value["delta"]

        await fab.decide(store, Decision(action="approve"))
        assert await store.head() == 4 and await fab.read(store).pending() is None
        approve = {"decisions": [{"type": "approve"}]}
        final = await client.runs.wait(tid, "fabula", command={"resume": approve})
        assert isinstance(final, dict) and final["outcome"] == "duplicate"
        assert await store.head() == 4
        (turn,) = await store.turn_texts(4, 4)
        assert turn.text == value["draft"]["text"]


async def test_langchains_hitl_shape_through_the_agent_server(
    embedded_agent_server: str, tmp_path: Path
) -> None:
    """The docs' command (no FABULA_REDIS_URL: the embedded server) serves the graph;
    the interrupt carries LangChain's HITLRequest (one commit_turn action whose text is
    the draft; approve / edit / reject allowed), and a HITLResponse resumes it: a reject's
    message is the planner's note, an edit's text is what is committed."""
    settings = Settings(home=tmp_path)
    async with Fabula(resolve_url(None, tmp_path), settings) as fab:
        await fab.create_story("hollow_book", "tale")
        client = get_client(url=embedded_agent_server)
        thread = await client.threads.create()
        tid = thread["thread_id"]
        await client.runs.wait(tid, "fabula", input={"story": "tale"})
        value = (await client.threads.get_state(tid))["tasks"][0]["interrupts"][0]["value"]
        (request,) = value["action_requests"]
        (review,) = value["review_configs"]
        assert request["name"] == review["action_name"] == "commit_turn"
        assert request["args"]["text"] == value["draft"]["text"]
        assert (request["args"]["story"], request["args"]["turn"]) == ("tale", 4)
        assert review["allowed_decisions"] == ["approve", "edit", "reject"]

        reject = {"decisions": [{"type": "reject", "message": "slower, please"}]}
        await client.runs.wait(tid, "fabula", command={"resume": reject})
        state = await client.threads.get_state(tid)
        values: Any = state["values"]
        assert "slower, please" in values["notes"]
        (again,) = state["tasks"][0]["interrupts"][0]["value"]["action_requests"]
        store = fab.store("tale")
        assert await store.head() == 3  # a rejection commits nothing

        # an edit over the turn's size limit is refused, and its text is not kept
        huge = {"name": "commit_turn", "args": {"text": "Mara waited. " * 80_000}}
        resume = {"decisions": [{"type": "edit", "edited_action": huge}]}
        await client.runs.wait(tid, "fabula", command={"resume": resume})
        state = await client.threads.get_state(tid)
        values = state["values"]
        assert "LimitExceeded" in values["edit_error"]
        assert values["edit"] is None and values["decision"]["text"] is None
        assert len(json.dumps(values)) < 200_000
        assert await store.head() == 3

        text = again["args"]["text"] + " Nobody spoke."
        edited = {"name": "commit_turn", "args": {**again["args"], "text": text}}
        edit = {"type": "edit", "edited_action": edited}
        final = await client.runs.wait(tid, "fabula", command={"resume": {"decisions": [edit]}})
        assert isinstance(final, dict) and final["outcome"] == "committed"
        assert await store.head() == 4
        (turn,) = await store.turn_texts(4, 4)
        assert turn.text == text


async def test_a_thread_is_a_session_a_bad_decision_waits_and_errors_keep_their_words(
    agent_server: str, redis_url: str, tmp_path: Path
) -> None:
    """A malformed decision is refused with its one-line InvalidInput (422) and leaves the
    thread on the same interrupt with the same draft; the next valid decision commits. A
    second run on the same thread writes the next turn. A missing story is a 404 with the
    NotFound's words, not "An internal error occurred"."""
    async with Fabula(redis_url, Settings(home=tmp_path)) as fab:
        await fab.create_story("hollow_book", "tale")
        store = fab.store("tale")
        client = get_client(url=agent_server)
        tid = (await client.threads.create())["thread_id"]
        await client.runs.wait(tid, "fabula", input={"story": "tale"})
        (before,) = (await client.threads.get_state(tid))["tasks"][0]["interrupts"]

        for bad, words in [
            ({"decisions": [{"type": "frob"}]}, "decisions[0].type: must be approve"),
            ({"decisions": []}, "exactly one decision (got 0)"),
            ({"decisions": [{"type": "edit", "edited_action": {"name": "commit_turn"}}]}, "args"),
            ({before["id"]: {"decisions": [{"type": "frob"}]}}, "decisions[0].type"),
        ]:
            with pytest.raises(httpx.HTTPStatusError) as caught:
                await client.runs.wait(tid, "fabula", command={"resume": bad})
            assert caught.value.response.status_code == 422  # refused before any run is made
            detail = caught.value.response.json()["detail"]
            assert detail.startswith("InvalidInput: ") and words in detail and "\n" not in detail
            (after,) = (await client.threads.get_state(tid))["tasks"][0]["interrupts"]
            assert after["id"] == before["id"]
            assert after["value"]["draft"] == before["value"]["draft"]
        # an answer of no decision's shape passes the handler; the graph's response_schema
        # refuses it before keeping it: the run ends with the InvalidInput's words
        with pytest.raises(Exception, match=r"^InvalidInput: resume: a HITLResponse") as caught:
            await client.runs.wait(tid, "fabula", command={"resume": "approve"})
        assert "internal error" not in str(caught.value)
        (after,) = (await client.threads.get_state(tid))["tasks"][0]["interrupts"]
        assert (after["id"], after["value"]["draft"]) == (before["id"], before["value"]["draft"])
        assert await store.head() == 3

        approve = {"decisions": [{"type": "approve"}]}
        keyed = {before["id"]: approve}  # as Agent Inbox sends it: keyed by the interrupt
        final = await client.runs.wait(tid, "fabula", command={"resume": keyed})
        assert isinstance(final, dict) and final["outcome"] == "committed"
        (turn,) = await store.turn_texts(4, 4)
        assert turn.text == before["value"]["draft"]["text"]

        # the same thread, a second run: the branch's next turn
        await client.runs.wait(tid, "fabula", input={"story": "tale"})
        state = await client.threads.get_state(tid)
        values: Any = state["values"]
        assert (values["turn"], values["branch"]) == (5, "main")
        assert values.get("outcome") is None and values.get("notes") == []
        (task,) = state["tasks"]
        assert task["interrupts"][0]["value"]["turn"] == 5
        final = await client.runs.wait(tid, "fabula", command={"resume": approve})
        assert isinstance(final, dict) and final["outcome"] == "committed"
        assert await store.head() == 5

        other = (await client.threads.create())["thread_id"]
        with pytest.raises(httpx.HTTPStatusError) as caught:
            await client.runs.wait(other, "fabula", input={"story": "nope"})
        assert caught.value.response.status_code == 404
        assert caught.value.response.json() == {
            "detail": "NotFound: story 'nope' does not exist (story=nope)"
        }


async def test_the_endpoints_langgraph_studio_calls(
    agent_server: str, redis_url: str, tmp_path: Path
) -> None:
    """Assistants, graph, schemas, threads, a streamed run to the interrupt, state,
    history, runs: each answers, as LangGraph Studio calls them on opening a graph."""
    async with Fabula(redis_url, Settings(home=tmp_path)) as fab:
        await fab.create_story("hollow_book", "tale")
    client = get_client(url=agent_server)
    (assistant,) = await client.assistants.search(graph_id="fabula")
    aid = assistant["assistant_id"]
    assert (await client.assistants.get(aid))["graph_id"] == "fabula"
    graph = await client.assistants.get_graph(aid)
    assert {"plan", "approve", "commit"} <= {n["id"] for n in graph["nodes"]}
    schemas = await client.assistants.get_schemas(aid)
    state_schema: Any = schemas["state_schema"]
    context_schema: Any = schemas["context_schema"]
    assert {"story", "branch", "turn", "draft"} <= set(state_schema["properties"])
    assert "auto" in context_schema["properties"]

    thread = await client.threads.create(metadata={"story": "tale"})
    tid = thread["thread_id"]
    assert tid in {t["thread_id"] for t in await client.threads.search(metadata={"story": "tale"})}
    modes: set[str] = set()
    async for part in client.runs.stream(
        tid, aid, input={"story": "tale"}, stream_mode=["values", "updates", "debug"]
    ):
        modes.add(part.event)
    assert {"metadata", "values", "updates"} <= modes
    assert (await client.threads.get(tid))["status"] == "interrupted"
    state = await client.threads.get_state(tid)
    assert state["next"] == ["approve"]
    history = await client.threads.get_history(tid, limit=50)
    assert len(history) > 3 and history[0]["checkpoint"] == state["checkpoint"]
    (run,) = await client.runs.list(tid)
    assert (await client.runs.get(tid, run["run_id"]))["status"] == "success"


@pytest.fixture()
def guarded_agent_server(redis_url: str, tmp_path: Path) -> Iterator[str]:
    """The Agent Server with FABULA_AGENT_TOKENS: every request needs a token of TOKENS."""
    tokens = tmp_path / "tokens.json"
    tokens.write_text(json.dumps(TOKENS))
    yield from serving(
        {"FABULA_REDIS_URL": redis_url, "FABULA_AGENT_TOKENS": str(tokens)}, tmp_path, CONFIG
    )


async def test_who_may_see_what_with_tokens(
    guarded_agent_server: str, redis_url: str, tmp_path: Path
) -> None:
    """No token: 401. A player's or a reader's token sees the graphs and its own threads,
    never an author's (not found, nor listed), and runs the play graph only (403 on the
    turn graph). An author sees and runs only their own threads (another author's is not
    found, nor listed) and only the stories granted (403)."""
    async with Fabula(redis_url, Settings(home=tmp_path)) as fab:
        await fab.create_story("hollow_book", "tale")

    def as_(token: str | None) -> Any:
        headers = {"Authorization": f"Bearer {token}"} if token else None
        return get_client(url=guarded_agent_server, headers=headers)

    ana, cy = as_("ana-0123456789abcdef"), as_("cy-0123456789abcdef")
    with pytest.raises(httpx.HTTPStatusError) as caught:
        await as_(None).threads.search()
    assert caught.value.response.status_code == 401

    tid = (await ana.threads.create())["thread_id"]
    await ana.runs.wait(tid, "fabula", input={"story": "tale"})
    assert (await ana.threads.get_state(tid))["next"] == ["approve"]
    for token in ("bo-0123456789abcdef", "di-0123456789abcdef"):
        other = as_(token)
        assert await other.assistants.search(graph_id="fabula")
        with pytest.raises(httpx.HTTPStatusError) as caught:
            await other.threads.get_state(tid)
        assert caught.value.response.status_code == 404
        assert tid not in {t["thread_id"] for t in await other.threads.search()}
        own = (await other.threads.create())["thread_id"]
        with pytest.raises(httpx.HTTPStatusError) as caught:
            await other.runs.wait(own, "fabula", input={"story": "tale"})
        assert caught.value.response.status_code == 403
    with pytest.raises(httpx.HTTPStatusError) as caught:
        await cy.threads.get_state(tid)
    assert caught.value.response.status_code == 404
    assert tid not in {t["thread_id"] for t in await cy.threads.search()}
    assert tid in {t["thread_id"] for t in await ana.threads.search()}

    mine = (await ana.threads.create())["thread_id"]
    with pytest.raises(httpx.HTTPStatusError) as caught:
        await ana.runs.wait(mine, "fabula", input={"story": "elsewhere"})
    assert caught.value.response.status_code == 403


async def test_a_players_view_holds_the_public_story_and_its_own_mind(
    guarded_agent_server: str, redis_url: str, tmp_path: Path
) -> None:
    """The Hollow Book at turn 3, Leo played: Leo believes the brass key is in the desk
    drawer, Mara (who moved it) that it is in the hollow book. Bo, Leo's player, runs the
    play graph on a thread of his own: its state, its stream and its history hold the public
    story and Leo's mind (his false belief as he holds it), and nothing else: no other
    mind, no brief or secret, no plan, no draft of the author's waiting turn. Bo cannot ask
    for Mara's mind, run the turn graph, or find the author's thread or another player's;
    Mara's player (Mara is not played) and a player of a story not granted are refused; a
    reader's view is the public story alone; the author may look as any character."""
    async with Fabula(redis_url, Settings(home=tmp_path)) as fab:
        store = await fab.create_story("hollow_book", "tale")

        def as_(token: str) -> Any:
            headers = {"Authorization": f"Bearer {token}-0123456789abcdef"}
            return get_client(url=guarded_agent_server, headers=headers)

        ana, bo, di, fa = as_("ana"), as_("bo"), as_("di"), as_("fa")
        (play,) = await bo.assistants.search(graph_id=PLAY_GRAPH)
        assert play["assistant_id"] == PLAY_ASSISTANT  # the one a player may run
        # the author's turn waits on its approval: its state holds every mind and the draft
        secret_tid = (await ana.threads.create())["thread_id"]
        await ana.runs.wait(secret_tid, "fabula", input={"story": "tale"})
        waiting = await ana.threads.get_state(secret_tid)
        draft = waiting["tasks"][0]["interrupts"][0]["value"]["draft"]["text"]
        assert {"briefs", "plan", "context"} <= set(waiting["values"])  # W, B[every focal]
        await fab.set_played(store, ["leo"])

        tid = (await bo.threads.create())["thread_id"]
        seen: list[Any] = []
        async for part in bo.runs.stream(
            tid,
            "fabula_play",
            input={"story": "tale"},
            stream_mode=["values", "updates", "debug", "messages", "custom", "events"],
        ):
            assert part.event != "error", part.data
            seen.append(part.data)
        state = await bo.threads.get_state(tid)
        values: Any = state["values"]
        history = await bo.threads.get_history(tid)
        (thread,) = await bo.threads.search()
        assert thread["thread_id"] == tid and thread["metadata"]["character"] == "leo"

        assert values["character"] == "leo" and values["head"] == 3
        assert [t["turn"] for t in values["text"]] == [1, 2, 3]  # the public story
        assert set(values) <= PLAY_KEYS and values.get("written") is None
        key = {b["value"] for b in values["beliefs"] if b["subject"] == "brass_key"}
        assert "desk_drawer" in key and "hollow_book" not in key  # his false belief, only
        assert any("brass key opens the cellar" in b["sentence"] for b in values["beliefs"])
        everything = json.dumps([seen, state, history]).lower()
        for hidden in (
            "Mara hid the brass key in the hollow book",  # Mara's secret
            "learn Leo's secret",  # Mara's goal
            "the brass key is in the hollow book",  # W (and Mara's belief)
            '"briefs"',
            '"plan"',
            '"context"',
            '"draft"',
            draft,  # the author's waiting turn
        ):
            assert hidden.lower() not in everything, hidden

        # another character's mind, the turn graph, the author's thread: refused / not found
        with refused(403):
            await bo.runs.wait(tid, "fabula_play", input={"story": "tale", "character": "Mara"})
        with refused(403):
            await bo.runs.wait(tid, "fabula", input={"story": "tale"})
        with refused(404):
            await bo.threads.get_state(secret_tid)
        with refused(404):
            await bo.threads.get_history(secret_tid)
        with refused(404):
            await bo.runs.wait(secret_tid, "fabula_play", input={"story": "tale"})
        assert [t["thread_id"] for t in await bo.threads.search()] == [tid]
        # another player of Leo: Bo's thread is not his
        with refused(404):
            await fa.threads.get_state(tid)
        assert tid not in {t["thread_id"] for t in await fa.threads.search()}
        # Mara is not played; Gu's grant is for another story
        for token in ("ed", "gu"):
            other = as_(token)
            own = (await other.threads.create())["thread_id"]
            with refused(403):
                await other.runs.wait(own, "fabula_play", input={"story": "tale"})

        # a reader: the public story, no mind
        rtid = (await di.threads.create())["thread_id"]
        read: Any = await di.runs.wait(rtid, "fabula_play", input={"story": "tale"})
        assert len(read["text"]) == 3 and read["beliefs"] == [] and read["character"] is None
        with refused(403):
            await di.runs.wait(rtid, "fabula_play", input={"story": "tale", "character": "leo"})

        # the author may look as any character: Mara knows where the key is
        atid = (await ana.threads.create())["thread_id"]
        hers: Any = await ana.runs.wait(
            atid, "fabula_play", input={"story": "tale", "character": "mara"}
        )
        assert "hollow_book" in {b["value"] for b in hers["beliefs"] if b["subject"] == "brass_key"}
        assert "Mara hid the brass key in the hollow book" in json.dumps(hers)


@pytest.mark.parametrize(
    "error",
    [
        NotFound("story 'nope' does not exist", story="nope"),
        TurnConflict("another process is writing this story: it committed turn 4 first"),
        StoryAtRest("no character has anything to do", story="tale"),
        InvalidInput("decisions: a turn takes exactly one decision (got 0)", story="tale"),
    ],
)
def test_the_server_passes_a_fabula_errors_words(error: FabulaError) -> None:
    """langgraph-api's own serialiser keeps the class name and the one-line message of the
    error a node raises (it says "An internal error occurred" for the raw Fabula error)."""
    from langgraph_api.serde import default

    assert default(error)["message"] == "An internal error occurred"
    shown = visible(error)
    assert isinstance(shown, type(error)) and shown.http_status == error.http_status
    assert default(shown) == {"error": type(error).__name__, "message": str(error)}
    assert visible(shown) is shown
