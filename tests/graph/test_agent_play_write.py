"""A person playing a character writes its part through LangGraph's Agent Server: the play
graph (``fabula_play``) asks for it with LangChain's HITLRequest, or takes it with the run,
and commits it as the studio does; the turn then waits for the author in Fabula's own
pending turns. Driven with `langgraph dev` (langgraph-api's in-memory runtime) and the
real `langgraph_sdk` client, as tests/graph/test_agent_server.py drives the turn graph."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from langgraph_sdk import get_client

from fabula.agents.contracts import Decision
from fabula.graph.service import Fabula
from fabula.settings import Settings
from fabula.testing.agent_server import LANGGRAPH, PLAY_KEYS, TOKENS, refused, serving

CONFIG = Path(__file__).resolve().parents[2] / "langgraph.json"

pytestmark = pytest.mark.skipif(
    not LANGGRAPH.exists(), reason="langgraph-cli is not installed (pip install -e '.[dev]')"
)

PART = "Leo searched the desk drawer. Mara gave Leo the brass key."
"""Leo's part, whose second sentence speaks for Mara: it is left out, as a finding."""

HIDDEN = (
    "Mara hid the brass key in the hollow book",  # Mara's secret
    "learn Leo's secret",  # Mara's goal
    "the brass key is in the hollow book",  # W (and Mara's belief)
    '"briefs"',
    '"plan"',
    '"context"',
    '"draft"',
    '"delta"',
    '"preview"',
    '"proposals"',
)
"""What a player's thread (its state, stream and history) never carries."""


@pytest.fixture()
def guarded_agent_server(redis_url: str, tmp_path: Path) -> Iterator[str]:
    """The Agent Server with FABULA_AGENT_TOKENS (TOKENS): every request needs a token."""
    tokens = tmp_path / "tokens.json"
    tokens.write_text(json.dumps(TOKENS))
    given = {"FABULA_REDIS_URL": redis_url, "FABULA_AGENT_TOKENS": str(tokens)}
    yield from serving(given, tmp_path, CONFIG)


def client_of(url: str, who: str) -> Any:
    """The SDK client of TOKENS' ``who`` (ana, bo, di, ...)."""
    return get_client(url=url, headers={"Authorization": f"Bearer {who}-0123456789abcdef"})


async def test_a_player_writes_its_part_and_the_author_decides_it(
    guarded_agent_server: str, redis_url: str, tmp_path: Path
) -> None:
    """The Hollow Book at turn 3, Leo played. Bo, Leo's player, runs the play graph with
    ``write``: it stops at an interrupt asking for Leo's part (LangChain's HITLRequest,
    action write_part, with Leo's own view: his false belief as he holds it). A malformed
    answer is refused (422) and an edit naming Mara is refused with AccessDenied's words,
    each leaving the same interrupt waiting; his edit then writes the part as the studio
    would: only Leo's own act is in the draft, the sentence that speaks for Mara is left
    out (said in ``written``), and the turn waits for the author, listed once by `fabula
    pending`, approved from the CLI's service. Nothing on Bo's thread (state, stream,
    history) carries another mind, the world, a brief, the plan or the draft."""
    async with Fabula(redis_url, Settings(home=tmp_path)) as fab:
        store = fab.store(await fab.create_story("hollow_book", "tale"))
        await fab.set_played(store, ["leo"])
        bo = client_of(guarded_agent_server, "bo")
        tid = (await bo.threads.create())["thread_id"]
        seen: list[Any] = []
        modes = ["values", "updates", "debug", "messages", "custom", "events"]
        async for chunk in bo.runs.stream(
            tid, "fabula_play", input={"story": "tale", "write": True}, stream_mode=modes
        ):
            assert chunk.event != "error", chunk.data
            seen.append(chunk.data)
        state = await bo.threads.get_state(tid)
        (task,) = state["tasks"]
        (asked,) = task["interrupts"]
        value = asked["value"]
        (action,) = value["action_requests"]
        (review,) = value["review_configs"]
        assert action["name"] == review["action_name"] == "write_part"
        assert action["args"]["character"] == "leo" and action["args"]["turn"] == 4
        assert review["allowed_decisions"] == ["edit", "reject"]  # no turn shows Leo's idea
        assert value["view"]["character"] == "leo"
        assert "the brass key is in the desk drawer" in value["view"]["beliefs"]
        assert "the brass key is in the desk drawer" in action["description"]

        # refused without losing the request: malformed (before any run), another's part
        with refused(422, "InvalidInput: decisions[0].type: must be approve, edit or reject"):
            await bo.runs.wait(tid, "fabula_play", command={"resume": {"decisions": [{}]}})
        maras = {"name": "write_part", "args": {"character": "mara", "text": "Mara left."}}
        with pytest.raises(Exception, match=r"^AccessDenied: a player of 'leo' writes") as caught:
            await bo.runs.wait(
                tid,
                "fabula_play",
                command={"resume": {"decisions": [{"type": "edit", "edited_action": maras}]}},
            )
        assert "\n" not in str(caught.value) and "internal error" not in str(caught.value)
        (still,) = (await bo.threads.get_state(tid))["tasks"][0]["interrupts"]
        assert still["id"] == asked["id"]
        assert await fab.read(store).pending() is None and await store.head() == 3

        edit = {"name": "write_part", "args": {**action["args"], "text": PART}}
        resume = {asked["id"]: {"decisions": [{"type": "edit", "edited_action": edit}]}}
        async for chunk in bo.runs.stream(
            tid, "fabula_play", command={"resume": resume}, stream_mode=modes
        ):
            assert chunk.event != "error", chunk.data
            seen.append(chunk.data)
        state = await bo.threads.get_state(tid)
        values: Any = state["values"]
        assert not state["tasks"] and set(values) <= PLAY_KEYS
        written = values["written"]
        assert (written["turn"], written["character"], written["outcome"]) == (4, "leo", "pending")
        (left,) = written["left_out"]
        assert left.startswith("Mara gave Leo the brass key.") and "speaks for Mara" in left

        # Fabula's pending turn, once: only Leo's own act is in the draft
        listed = [p for p in await fab.all_pending() if p.story == "tale"]
        assert [p.turn for p in listed] == [4]
        pending = await fab.read(store).pending()
        assert pending is not None and pending.turn == 4
        draft = pending.request.draft.text
        assert "Leo searched the desk drawer" in draft and "Mara gave" not in draft

        everything = json.dumps([seen, state, await bo.threads.get_history(tid)]).lower()
        for hidden in HIDDEN:
            assert hidden.lower() not in everything, hidden

        done = await fab.decide(store, Decision(action="approve"))
        assert done.outcome == "committed" and await store.head() == 4
        (turn,) = await store.turn_texts(4, 4)
        assert turn.text == draft and await fab.all_pending() == []
        # the same thread reads on, and writes nothing again
        view: Any = await bo.runs.wait(tid, "fabula_play", input={"story": "tale"})
        assert view["head"] == 4 and view["writing"] is None
        read = fab.read(store)
        assert await read.pending() is None and await read.waiting_parts() == []


async def test_a_part_with_the_run_and_who_may_write_which(
    guarded_agent_server: str, redis_url: str, tmp_path: Path
) -> None:
    """A player's part given with the run is written at once; a second while the draft
    waits is a Conflict in its words. A part for another character (Bo naming Mara), by a
    player of a character not played (Ed, Mara's), or by a reader (Di), with the run, asked
    for or resumed, is refused before the run is made (403, AccessDenied's words), and
    writes nothing."""
    async with Fabula(redis_url, Settings(home=tmp_path)) as fab:
        store = fab.store(await fab.create_story("hollow_book", "tale"))
        await fab.set_played(store, ["leo"])
        url = guarded_agent_server
        bo, di, ed = client_of(url, "bo"), client_of(url, "di"), client_of(url, "ed")
        tid = (await bo.threads.create())["thread_id"]
        (play,) = await bo.assistants.search(graph_id="fabula_play")
        schemas: Any = await bo.assistants.get_schemas(play["assistant_id"])
        assert {"part", "write"} <= set(schemas["input_schema"]["properties"])
        assert {"written", "writing"} <= set(schemas["state_schema"]["properties"])

        refusals: list[tuple[Any, dict[str, Any], str]] = [
            (bo, {"input": {"story": "tale", "character": "Mara", "part": "Mara left."}},
             "AccessDenied: player: a player of 'leo' writes that character's part only"),
            (ed, {"input": {"story": "tale", "part": "Mara left."}},
             "AccessDenied: player: 'mara' is not played in story 'tale'"),
            (di, {"input": {"story": "tale", "part": "Leo left."}},
             "AccessDenied: reader: writes no part"),
            (di, {"input": {"story": "tale", "write": True}},
             "AccessDenied: reader: writes no part"),
            (di, {"command": {"resume": {"words": "Leo left."}}},
             "AccessDenied: reader: writes no part"),
            (bo, {"command": {"resume": {"words": "Leo left."}, "update": {"character": "mara"}}},
             "AccessDenied: player: a command resumes its own interrupt"),
        ]  # fmt: skip
        for who, run, detail in refusals:
            own = tid if who is bo else (await who.threads.create())["thread_id"]
            with refused(403, detail):
                await who.runs.wait(own, "fabula_play", **run)
        assert await fab.read(store).pending() is None and await store.head() == 3

        given: Any = await bo.runs.wait(
            tid, "fabula_play", input={"story": "tale", "part": "Leo went to the study."}
        )
        assert given["written"]["outcome"] == "pending" and given["written"]["left_out"] == []
        assert given["writing"] is None and set(given) <= PLAY_KEYS
        pending = await fab.read(store).pending()
        assert pending is not None and "Leo went to the study" in pending.request.draft.text
        with pytest.raises(Exception, match=r"^Conflict: turn 4 waits for the author's decision"):
            await bo.runs.wait(tid, "fabula_play", input={"story": "tale", "part": "Leo waited."})
        again = await fab.read(store).pending()
        assert again is not None and again.id == pending.id
        with pytest.raises(httpx.HTTPStatusError):  # the author's thread stays the author's
            await bo.runs.wait(tid, "fabula", input={"story": "tale"})


async def test_a_turn_that_asks_shows_the_characters_idea_approve_takes_it(
    guarded_agent_server: str, redis_url: str, tmp_path: Path
) -> None:
    """A turn run by the author stops for Leo's part (``fabula run``): Bo's request then
    shows Leo's own idea (the args' text) and allows approve. A reject writes nothing and
    the turn keeps waiting for the part; an approve takes the idea, as an empty answer does
    in `fabula write`, and the draft waits for the author."""
    async with Fabula(redis_url, Settings(home=tmp_path)) as fab:
        store = fab.store(await fab.create_story("hollow_book", "tale"))
        await fab.set_played(store, ["leo"])
        assert (await fab.run(store, auto=False)).outcome == "part"
        (waiting,) = await fab.read(store).waiting_parts()
        assert waiting.view.suggestion
        bo = client_of(guarded_agent_server, "bo")
        tid = (await bo.threads.create())["thread_id"]

        async def ask() -> Any:
            await bo.runs.wait(tid, "fabula_play", input={"story": "tale", "write": True})
            (asked,) = (await bo.threads.get_state(tid))["tasks"][0]["interrupts"]
            return asked

        asked = await ask()
        (action,) = asked["value"]["action_requests"]
        assert action["args"]["text"] == waiting.view.suggestion
        assert asked["value"]["review_configs"][0]["allowed_decisions"] == [
            "approve", "edit", "reject"
        ]  # fmt: skip
        reject = {"decisions": [{"type": "reject"}]}
        values: Any = await bo.runs.wait(tid, "fabula_play", command={"resume": reject})
        assert values["writing"] is None and values.get("written") is None
        assert not (await bo.threads.get_state(tid))["tasks"]
        assert [r.character for r in await fab.read(store).waiting_parts()] == ["leo"]
        assert await fab.read(store).pending() is None

        asked = await ask()
        approve = {asked["id"]: {"decisions": [{"type": "approve"}]}}
        values = await bo.runs.wait(tid, "fabula_play", command={"resume": approve})
        written = values["written"]
        assert (written["outcome"], written["part"], written["turn"]) == ("pending", "", 4)
        assert await fab.read(store).waiting_parts() == []
        pending = await fab.read(store).pending()
        assert pending is not None and pending.turn == 4 and await store.head() == 3


async def test_two_players_each_write_their_own_part(
    guarded_agent_server: str, redis_url: str, tmp_path: Path
) -> None:
    """Leo and Mara both played: Bo's part of Leo leaves the turn waiting for Mara's
    (``part``), a second part of Leo is a Conflict, and Ed's part of Mara, on his own
    thread, completes the turn: one draft with both, pending once."""
    async with Fabula(redis_url, Settings(home=tmp_path)) as fab:
        store = fab.store(await fab.create_story("hollow_book", "tale"))
        await fab.set_played(store, ["leo", "mara"])
        bo, ed = client_of(guarded_agent_server, "bo"), client_of(guarded_agent_server, "ed")
        btid = (await bo.threads.create())["thread_id"]
        leo: Any = await bo.runs.wait(
            btid, "fabula_play", input={"story": "tale", "part": "Leo searched the desk drawer."}
        )
        assert leo["written"]["outcome"] == "part" and await fab.read(store).pending() is None
        assert [r.character for r in await fab.read(store).waiting_parts()] == ["mara"]
        with pytest.raises(Exception, match=r"^Conflict: turn 4 has the part of 'leo' already"):
            await bo.runs.wait(btid, "fabula_play", input={"story": "tale", "part": "Leo sat."})

        etid = (await ed.threads.create())["thread_id"]
        mara: Any = await ed.runs.wait(
            etid, "fabula_play", input={"story": "tale", "part": "Mara read the hollow book."}
        )
        assert mara["written"]["outcome"] == "pending" and mara["character"] == "mara"
        (listed,) = [p for p in await fab.all_pending() if p.story == "tale"]
        assert listed.turn == 4
        draft = listed.draft
        assert "Leo searched the desk drawer" in draft and "Mara read the hollow book" in draft
        key = {b["value"] for b in mara["beliefs"] if b["subject"] == "brass_key"}
        assert "hollow_book" in key  # Ed's view is Mara's mind: she knows where she put it
