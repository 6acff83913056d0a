"""Limits with honest errors: oversized turns are refused before anything is written, and a
commit whose reply is lost is reported as what actually happened (by the turn's digest)."""

from __future__ import annotations

from pathlib import Path

import pytest
import redis
import redis.asyncio as aredis
from redis.backoff import NoBackoff
from redis.exceptions import ResponseError
from redis.retry import Retry
from structlog.testing import capture_logs

from fabula.agents.contracts import Decision
from fabula.errors import (
    CommitFailed,
    CommitUncertain,
    ConfigError,
    InvalidInput,
    LimitExceeded,
)
from fabula.graph.service import Fabula
from fabula.limits import Limits
from fabula.memory import keys
from fabula.memory.delta import DeltaBuilder, TurnDelta
from fabula.memory.lua import fcall, fcall_ro
from fabula.memory.payload import CommitCall
from fabula.memory.settle import FENCE_S, send_commit
from fabula.memory.store import StoryStore
from fabula.settings import Settings
from fabula.testing.busy import busy_for
from fabula.testing.cli import fabula
from fabula.worlds.loader import load_world, setup_delta

TEXT = "Leo put the brass key in the desk drawer."


def put_turn(turn: int, text: str = TEXT) -> TurnDelta:
    b = DeltaBuilder(turn, text)
    put = b.event("put", b.span(0, len(TEXT)), actor="leo", place="study", witnesses=["leo"])
    b.state("brass_key", "location", "desk_drawer", event=put)
    return b.build()


async def new_story(client: aredis.Redis, limits: Limits | None = None) -> StoryStore:
    store = StoryStore(client, "hb", limits=limits)
    await store.create(setup_delta(load_world("hollow_book")), world="hollow_book", title="T")
    return store


def fcalls(client: redis.Redis) -> int:
    stats = client.info("commandstats")
    return int(stats.get("cmdstat_fcall", {}).get("calls", 0))


class TestRefusedBeforeWriting:
    async def test_turn_text_over_the_limit(self, aredis_client: aredis.Redis) -> None:
        """A delta whose text exceeds the limit is refused; head and turns are unchanged."""
        store = await new_story(aredis_client, Limits(turn_text_bytes=200))
        with pytest.raises(LimitExceeded, match="at most 200 bytes, this one has 242"):
            await store.commit(put_turn(1, TEXT + " " + "x" * 200))
        assert await store.head() == 0

    async def test_delta_over_the_limit_is_never_sent(
        self, aredis_client: aredis.Redis, redis_url: str
    ) -> None:
        """A payload above the limit raises before the commit function is even called."""
        await new_story(aredis_client)
        store = StoryStore(aredis_client, "hb", limits=Limits(delta_bytes=500))
        sync = redis.Redis.from_url(redis_url, decode_responses=True)
        before = fcalls(sync)
        with pytest.raises(LimitExceeded, match="FABULA_MAX_DELTA_BYTES") as info:
            await store.commit(put_turn(1))
        assert info.value.context == {"story": "hb", "branch": "main", "turn": 1}
        assert fcalls(sync) == before
        assert await store.head() == 0
        sync.close()

    async def test_an_edit_over_the_limit_leaves_the_turn_pending(self, redis_url: str) -> None:
        """The service refuses an oversized edit before resuming: the turn still waits."""
        settings = Settings(home=Path("/nonexistent"), max_turn_text=1000)
        async with Fabula(redis_url, settings) as fab:
            store = fab.store(await fab.create_story("hollow_book", "hb", opening=False))
            assert (await fab.run(store, auto=False)).outcome == "pending"
            head = await store.head()
            with pytest.raises(LimitExceeded):
                await fab.decide(store, Decision(action="edit", text="Leo left. " * 200))
            assert await store.head() == head
            assert await fab.read(store).pending() is not None

    def test_settings(self) -> None:
        """The limits are read from the environment and validated there."""
        s = Settings.from_env({"FABULA_MAX_TURN_TEXT": "2048", "FABULA_MAX_DELTA_BYTES": "9"})
        assert s.limits == Limits(turn_text_bytes=2048, delta_bytes=9)
        assert Settings.from_env({}).limits == Limits()
        for bad in ("abc", "0", "-5"):
            with pytest.raises(ConfigError, match="FABULA_MAX_TURN_TEXT"):
                Settings.from_env({"FABULA_MAX_TURN_TEXT": bad})


class TestLostReply:
    async def test_a_commit_that_happened_is_reported_committed(
        self, aredis_client: aredis.Redis, redis_url: str
    ) -> None:
        """Reproduction: the client times out while the server, busy, has the commit queued.
        The turn's digest shows it went in: the commit reports ok, not an error."""
        store = await new_story(aredis_client)
        impatient = aredis.Redis.from_url(
            redis_url, decode_responses=True, socket_timeout=0.1, retry=Retry(NoBackoff(), 0)
        )
        await fcall_ro(impatient, "fabula_version", [], [])  # its library check done beforehand
        with busy_for(redis_url, 1.0), capture_logs() as logs:
            result = await StoryStore(impatient, "hb").commit(put_turn(1))
        await impatient.aclose()
        assert result.status == "committed"
        assert await store.head() == 1
        assert [e["event"] for e in logs if e["log_level"] == "warning"] == ["commit_reply_lost"]

    async def test_a_commit_queued_past_settle_stays_uncommitted(
        self, aredis_client: aredis.Redis
    ) -> None:
        """The race: the commit's reply is lost while the call waits in the server, behind a
        blocked command on its connection; settle reports "not committed", then the call
        runs. It is refused (FABULA_FENCED) and the turn stays absent: the report stays true.
        (A blocked command, not a busy script, holds it back: after a script ends the server
        serves waiting connections in an order the test cannot choose.)"""
        store = await new_story(aredis_client)
        call = await store.prepare_commit(put_turn(1))
        gate = "fab:{hb}:test:gate"
        queue = await aredis_client.connection_pool.get_connection()

        async def lost() -> str:
            fcall = ("FCALL", "fabula_commit", len(call.keys), *call.keys, *call.args)
            await queue.send_packed_command(queue.pack_commands([("BLPOP", gate, 0), fcall]))
            raise redis.TimeoutError("Timeout reading from socket")

        with pytest.raises(CommitFailed, match=r"turn 1 was not committed .*nothing was written"):
            await send_commit(aredis_client, lost, call)
        await aredis_client.lpush(gate, "open")  # the queued call runs now
        assert await queue.read_response() == [gate, "open"]
        with pytest.raises(ResponseError, match="FABULA_FENCED turn 1 was reported not committed"):
            await queue.read_response()
        await aredis_client.connection_pool.release(queue)
        assert await store.head() == 0
        assert await aredis_client.hget(keys.turns("hb", "main"), "1") is None
        # the turn itself is not barred: a new attempt commits it, and clears the fence
        assert (await store.commit(put_turn(1))).status == "committed"
        assert await aredis_client.exists(keys.fence("hb", "main", 1)) == 0

    async def test_a_commit_that_did_not_happen_says_so(self, aredis_client: aredis.Redis) -> None:
        """A lost reply for a call that never ran: the turn is absent, CommitFailed says so,
        and the attempt is fenced for a while (FENCE_S)."""
        store = await new_story(aredis_client)
        call = await store.prepare_commit(put_turn(1))

        async def lost() -> str:
            raise redis.TimeoutError("Timeout reading from socket")

        with pytest.raises(CommitFailed, match=r"turn 1 was not committed .*nothing was written"):
            await send_commit(aredis_client, lost, call)
        assert await store.head() == 0
        fence = keys.fence("hb", "main", 1)
        assert await aredis_client.smembers(fence) == {call.attempt}
        assert 0 < await aredis_client.ttl(fence) <= FENCE_S
        with pytest.raises(ResponseError, match="FABULA_FENCED"):  # the attempt, sent late
            await fcall(aredis_client, "fabula_commit", call.keys, call.args)
        assert await store.head() == 0

    async def test_no_answer_at_all_is_uncertain(self, tmp_path: Path) -> None:
        """A server that never answers again: CommitUncertain, naming how to check."""
        gone = aredis.Redis.from_url(f"unix://{tmp_path}/nothing-here.sock", decode_responses=True)
        turns = keys.turns("hb", "main")
        call = CommitCall(
            keys=[keys.head("hb", "main")],
            args=[],
            digest="d",
            header="",
            records="",
            turn=1,
            attempt="a",
            fence=[turns, keys.fence("hb", "main", 1)],
        )

        async def lost() -> str:
            raise redis.ConnectionError("Connection closed by server")

        with pytest.raises(CommitUncertain, match="is unknown") as uncertain:
            await send_commit(gone, lost, call, wait_s=0.3)
        remedy = uncertain.value.remedy
        assert remedy is not None and remedy.action == "check_committed"
        assert dict(remedy.args)["turn"] == "1"
        await gone.aclose()

    async def test_busy_is_waited_for(self, aredis_client: aredis.Redis) -> None:
        """BUSY means the call did not run: it is sent again, and the result is the commit's."""
        store = await new_story(aredis_client)
        call = await store.prepare_commit(put_turn(1))
        calls = 0

        async def first_busy() -> str:
            nonlocal calls
            calls += 1
            if calls == 1:
                raise ResponseError("BUSY Redis is busy running a script.")
            result = await store.commit(put_turn(1))
            return result.status

        status = await send_commit(aredis_client, first_busy, call)
        assert status == "committed" and calls == 2


class TestCommandLine:
    async def test_an_oversized_or_binary_edit_file_is_one_line(
        self, redis_url: str, tmp_path: Path
    ) -> None:
        """Reproduction: `fabula edit` with a 5 MB file was committed after a 30 s timeout.
        Now: one line, exit 2 (bad input), the turn still pending, nothing written; a binary
        file too."""
        async with Fabula(redis_url, Settings(home=tmp_path)) as fab:
            store = fab.store(await fab.create_story("hollow_book", "big", opening=False))
            assert (await fab.run(store, auto=False)).outcome == "pending"
            head = await store.head()
            big = tmp_path / "big.txt"
            big.write_text("Leo put the brass key in the desk drawer. " * 120_000)  # ~5 MB
            proc = fabula(redis_url, "edit", "big", "--text-file", str(big), check=False)
            assert proc.returncode == LimitExceeded.exit_code
            assert proc.stderr.count("\n") == 1 and "FABULA_MAX_TURN_TEXT" in proc.stderr
            binary = tmp_path / "x.bin"
            binary.write_bytes(bytes(range(256)) * 4)
            proc = fabula(redis_url, "edit", "big", "--text-file", str(binary), check=False)
            assert proc.returncode == InvalidInput.exit_code
            assert proc.stderr.strip().endswith("is not UTF-8 text")
            assert await store.head() == head
            assert await fab.read(store).pending() is not None
