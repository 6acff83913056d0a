"""``fabula bench web``: the studio under load, every turn approved over HTTP.

``fabula serve`` runs in its own process (offline roles) on a free local port. Stories of
a world that never comes to rest (the baseline's: three characters handing tokens round a
ring) are created before the clock starts, so that every one of their turns runs, and
shared among concurrent clients (each its own HTTP connection pool); for every turn a
client runs the turn until it waits for approval, loads the story's page and its pending
page, and approves it (naming the draft it read). Then every story's
text is read back: a missing turn is *lost*, a turn beyond the expected or an approval
answered ``duplicate`` is *doubled*; any answer of 4xx/5xx or failed request is an *error*.
Then each story's next turns (``CHOICES`` of them) are written as three alternative drafts
(``POST .../alternatives``), their drafts page is loaded and one of them is chosen
(``POST .../approve`` with its ``choice``): the p95 of *choosing among 3 drafts* is that
approval's, against the same choice through the service in process.
The minds page is loaded at turn 200 of a long story (a synthetic world of five characters,
written autonomously before the clock starts).

The baseline in the same run is the service itself, in process, with no HTTP and no
templates: the same reads a page makes, the same decision, the same minds — so the figures
show what the studio adds on top of the work.

Then, for each concurrency level (``--concurrency 150,400``), that many clients at once
each open the long story's event stream (until its ``hello``) and load its minds
(``/api/stories/<long>/minds``), all streams staying open until every read is answered:
any refusal (a 503 "Too many connections", a stream cut short) is an error, and the p95 of
each is reported.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import secrets
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import httpx

from fabula.agents.contracts import Decision
from fabula.bench.common import appendfsync, private_redis_url
from fabula.bench.loop import synthetic_world
from fabula.bench.report import percentiles, print_table, write_json
from fabula.errors import FabulaError
from fabula.graph.service import Fabula, reading
from fabula.settings import FsyncPolicy, Settings

TARGETS = {"pages_ms_p95": 100.0, "approve_ms_p95": 150.0}
DRAFTS = 3  # drafts a choice is made among
CHOICES = 2  # turns per story written as DRAFTS alternatives, one chosen
LONG_TURN = 200
CONCURRENCY = (150, 400)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@contextlib.contextmanager
def _studio(redis_url: str) -> Iterator[str]:
    """``fabula serve`` in its own process; yields its URL once it answers."""
    port = _free_port()
    env = {k: v for k, v in os.environ.items() if k != "FABULA_WEB_TOKEN"}
    env.update({"FABULA_REDIS_URL": redis_url, "FABULA_MODEL": ""})
    with tempfile.TemporaryFile() as log:
        proc = subprocess.Popen(
            [sys.executable, "-m", "fabula", "serve", "--port", str(port)],
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        url = f"http://127.0.0.1:{port}"
        try:
            _wait_for(url, proc, log)
            yield url
        finally:
            proc.terminate()
            try:
                proc.wait(20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(10)


def _wait_for(url: str, proc: subprocess.Popen[bytes], log: IO[bytes]) -> None:
    deadline = time.monotonic() + 120
    while True:
        try:
            if httpx.get(f"{url}/api/worlds", timeout=2).status_code == 200:
                return
        except httpx.TransportError:
            pass
        if proc.poll() is not None or time.monotonic() > deadline:
            log.seek(0)
            raise FabulaError(f"the studio did not start: {log.read()[-500:]!r}")
        time.sleep(0.2)


class _Tally:
    """Latencies and counts of one run."""

    def __init__(self) -> None:
        self.pages: list[float] = []
        self.approve: list[float] = []
        self.run: list[float] = []
        self.minds: list[float] = []
        self.drafts: list[float] = []  # writing DRAFTS alternatives (to approval)
        self.choose: list[float] = []  # approving one of them (choice)
        self.errors = 0
        self.duplicates = 0
        # approvals committed but not confirmed on disk (WAITAOF), and the reasons given
        self.unsynced = 0
        self.unsynced_reasons: list[str] = []
        self.messages: list[str] = []

    def error(self, what: str) -> None:
        self.errors += 1
        if len(self.messages) < 5:
            self.messages.append(what)

    def decided(self, out: dict[str, Any]) -> None:
        """Count a decision's outcome: a duplicate, or a commit not confirmed on disk."""
        if out.get("outcome") == "duplicate":
            self.duplicates += 1
        if out.get("durable") is False:
            self.unsynced += 1
            reason = str(out.get("unsynced"))
            if reason not in self.unsynced_reasons and len(self.unsynced_reasons) < 5:
                self.unsynced_reasons.append(reason)


async def _timed(
    client: httpx.AsyncClient, tally: _Tally, into: list[float], method: str, path: str, **kw: Any
) -> httpx.Response | None:
    started = time.perf_counter()
    try:
        response = await client.request(method, path, **kw)
    except httpx.HTTPError as exc:
        tally.error(f"{method} {path}: {exc!r}")
        return None
    into.append((time.perf_counter() - started) * 1000)
    if response.status_code >= 400:
        tally.error(f"{method} {path}: {response.status_code} {response.text[:200]}")
        return None
    return response


async def _one_turn(client: httpx.AsyncClient, tally: _Tally, story: str) -> None:
    ran = await _timed(
        client, tally, tally.run, "POST", f"/api/stories/{story}/run", json={"turns": 1}
    )
    if ran is None or ran.json().get("pending") is None:
        tally.error(f"{story}: the run did not stop at approval")
        return
    await _timed(client, tally, tally.pages, "GET", f"/stories/{story}")
    page = await _timed(client, tally, tally.pages, "GET", f"/stories/{story}/pending")
    if page is None:
        return
    pending = await client.get(f"/api/stories/{story}/pending")
    body = {"pending_id": pending.json().get("id")} if pending.status_code == 200 else {}
    decided = await _timed(
        client, tally, tally.approve, "POST", f"/api/stories/{story}/approve", json=body
    )
    if decided is not None:
        tally.decided(decided.json())


async def _one_choice(client: httpx.AsyncClient, tally: _Tally, story: str, k: int) -> None:
    """Write the next turn as DRAFTS alternatives, load their page, choose the ``k``-th
    (the last when fewer differ)."""
    made = await _timed(
        client,
        tally,
        tally.drafts,
        "POST",
        f"/api/stories/{story}/alternatives",
        json={"count": DRAFTS},
    )
    if made is None:
        return
    found = made.json()
    drafts = found.get("drafts") or []
    if not drafts:
        tally.error(f"{story}: no drafts were written")
        return
    await _timed(client, tally, tally.pages, "GET", f"/stories/{story}/drafts")
    body = {"choice": drafts[min(k, len(drafts) - 1)]["id"], "pending_id": found["pending_id"]}
    decided = await _timed(
        client, tally, tally.choose, "POST", f"/api/stories/{story}/approve", json=body
    )
    if decided is not None:
        tally.decided(decided.json())


async def _chooser(url: str, tally: _Tally, stories: list[str]) -> None:
    async with httpx.AsyncClient(base_url=url, timeout=120) as client:
        for k in range(CHOICES):
            for story in stories:
                await _one_choice(client, tally, story, k + 1)


async def _client(url: str, tally: _Tally, stories: list[str], turns: int) -> None:
    async with httpx.AsyncClient(base_url=url, timeout=120) as client:
        for _ in range(turns):  # the client's stories advance together, turn by turn
            for story in stories:
                await _one_turn(client, tally, story)


async def _burst(base: str, story: str, level: int) -> dict[str, Any]:
    """``level`` clients at once: each opens the story's event stream (until ``hello``)
    and loads its minds, every stream held open until all reads are answered."""
    tally = _Tally()
    hello: list[float] = []
    reads_done = asyncio.Event()
    limits = httpx.Limits(max_connections=2 * level + 8, max_keepalive_connections=0)

    async def stream(client: httpx.AsyncClient) -> None:
        started = time.perf_counter()
        try:
            async with client.stream("GET", f"/api/stories/{story}/events") as answer:
                if answer.status_code != 200:
                    tally.error(f"events: {answer.status_code} {(await answer.aread())[:200]!r}")
                    return
                async for line in answer.aiter_lines():
                    if line.startswith("event:"):
                        hello.append((time.perf_counter() - started) * 1000)
                        await reads_done.wait()
                        return
                tally.error("events: the stream ended before its hello")
        except httpx.HTTPError as exc:
            tally.error(f"events: {exc!r}")

    async def read(client: httpx.AsyncClient) -> None:
        await _timed(client, tally, tally.minds, "GET", f"/api/stories/{story}/minds")

    async with httpx.AsyncClient(base_url=base, timeout=120, limits=limits) as client:
        streams = [asyncio.create_task(stream(client)) for _ in range(level)]
        await asyncio.gather(*[read(client) for _ in range(level)])
        reads_done.set()
        await asyncio.gather(*streams)
    return {
        "clients": level,
        "errors": tally.errors,
        "minds_ms": percentiles(tally.minds),
        "stream_hello_ms": percentiles(hello),
        "error_samples": tally.messages,
    }


async def _long_story(fab: Fabula, story: str, turns: int) -> None:
    store = fab.store(await fab.create_story(synthetic_world(5), story, opening=False))
    attempts = 0
    while await store.head() < turns and attempts < 3 * turns:
        attempts += 1
        await fab.run(store, auto=True)
    if await store.head() < turns:
        raise FabulaError(f"the long story stopped at turn {await store.head()}")


async def _baseline(
    fab: Fabula, tag: str, stories: int, turns: int, long: str, long_turn: int
) -> dict[str, Any]:
    """The same work through the service in process: page reads, decisions, minds."""
    pages: list[float] = []
    approve: list[float] = []
    choose: list[float] = []
    minds: list[float] = []
    unsynced = 0
    for i in range(stories):
        store = fab.store(await fab.create_story(synthetic_world(3), f"bench-web-{tag}-base-{i}"))
        for _ in range(turns):
            await fab.run(store, auto=False)
            started = time.perf_counter()
            await reading.text(store)
            await fab.pending_details(store)
            pages.append((time.perf_counter() - started) * 1000)
            pending = await fab.read(store).pending()
            started = time.perf_counter()
            out = await fab.decide(
                store, Decision(action="approve"), expect=pending.id if pending else None
            )
            unsynced += out.durable is False
            approve.append((time.perf_counter() - started) * 1000)
        for k in range(CHOICES):
            made = await fab.alternatives(store, DRAFTS)
            started = time.perf_counter()
            await fab.drafts(store, made.turn)
            pages.append((time.perf_counter() - started) * 1000)
            choice = made.drafts[min(k + 1, len(made.drafts) - 1)].id
            started = time.perf_counter()
            out = await fab.decide(
                store, Decision(action="approve", choice=choice), expect=made.pending_id
            )
            unsynced += out.durable is False
            choose.append((time.perf_counter() - started) * 1000)
    for _ in range(20):
        started = time.perf_counter()
        await reading.minds(fab.store(long), long_turn)
        minds.append((time.perf_counter() - started) * 1000)
    return {
        "stories": stories,
        "turns": turns,
        "pages_ms": percentiles(pages),
        "approve_ms": percentiles(approve),
        "choose_ms": percentiles(choose),
        "minds_ms": percentiles(minds),
        "unsynced": unsynced,
    }


async def run_web(
    stories: int,
    turns: int,
    *,
    clients: int = 4,
    redis_url: str | None = None,
    json_out: str | None = None,
    quiet: bool = False,
    long_turn: int = LONG_TURN,
    fsync: FsyncPolicy = "always",
    concurrency: tuple[int, ...] = CONCURRENCY,
) -> dict[str, Any]:
    """Run the benchmark (see the module docstring) and return its JSON.

    ``long_turn`` is the turn of the long story the minds page is loaded at; ``fsync`` is
    the private server's policy (when ``redis_url`` is None); ``concurrency`` the levels of
    clients at once (streams and minds reads).
    """
    tag = secrets.token_hex(3)
    with private_redis_url(redis_url, fsync) as url:
        async with Fabula(url, Settings(home=Path(tempfile.gettempdir()))) as fab:
            long = f"bench-web-{tag}-long"
            await _long_story(fab, long, long_turn)
            with _studio(url) as base:
                # stories of a world that never comes to rest, as the baseline's: a world
                # that does (hollow_book) stops running before ten turns, and each turn
                # after that was an error, not a measure
                ids = []
                for i in range(stories):
                    made = await fab.create_story(synthetic_world(3), f"bench-web-{tag}-{i}")
                    ids.append(made.story)
                measured = await _through_studio(
                    base, ids, long, turns, clients, long_turn, concurrency
                )
            fsync_policy = await appendfsync(fab.admin)
            baseline = await _baseline(
                fab, tag, min(clients, stories), min(turns, 5), long, long_turn
            )
            for s in [*ids, long]:
                await fab.delete_story(s)
            for i in range(min(clients, stories)):
                await fab.delete_story(f"bench-web-{tag}-base-{i}")
    result = _result(measured, stories, turns, clients, long_turn, fsync_policy, baseline)
    if not quiet:
        _print(result)
    write_json(json_out, result)
    return result


@dataclass
class _Measured:
    """What the studio's run measured: its tally, the clock of the turns, the turns lost
    and doubled, and each concurrency level's burst."""

    tally: _Tally
    seconds: float
    lost: int
    doubled: int
    bursts: list[dict[str, Any]]


async def _through_studio(
    base: str,
    ids: list[str],
    long: str,
    turns: int,
    clients: int,
    long_turn: int,
    concurrency: tuple[int, ...],
) -> _Measured:
    """The studio at ``base`` under load: ``turns`` turns of every story in ``ids``
    approved by ``clients`` clients (timed), then the chosen drafts, the long story's
    minds page, the bursts, and every story's text read back."""
    tally = _Tally()
    async with httpx.AsyncClient(base_url=base, timeout=120) as client:
        openings = {s: (await client.get(f"/api/stories/{s}")).json()["head"] for s in ids}
    started = time.perf_counter()
    await asyncio.gather(*[_client(base, tally, ids[c::clients], turns) for c in range(clients)])
    seconds = time.perf_counter() - started
    await asyncio.gather(*[_chooser(base, tally, ids[c::clients]) for c in range(clients)])
    async with httpx.AsyncClient(base_url=base, timeout=120) as client:
        for _ in range(20):
            await _timed(
                client,
                tally,
                tally.minds,
                "GET",
                f"/stories/{long}/minds",
                params={"as_of": long_turn},
            )
        bursts = [await _burst(base, long, level) for level in concurrency]
        lost = doubled = 0
        for s in ids:
            text = (await client.get(f"/api/stories/{s}/text")).json()
            numbers = [t["turn"] for t in text["turns"]]
            expected = openings[s] + turns + CHOICES
            if numbers != list(range(1, len(numbers) + 1)):
                tally.error(f"{s}: turn numbers {numbers} have gaps")
            lost += max(0, expected - text["head"])
            doubled += max(0, text["head"] - expected)
    return _Measured(tally, seconds, lost, doubled, bursts)


def _result(
    measured: _Measured,
    stories: int,
    turns: int,
    clients: int,
    long_turn: int,
    fsync_policy: str,
    baseline: dict[str, Any],
) -> dict[str, Any]:
    """The benchmark's JSON: the studio's figures against the targets, and the baseline."""
    tally, seconds = measured.tally, measured.seconds
    return {
        "benchmark": "web",
        "stories": stories,
        "turns": turns,
        "clients": clients,
        "minds_at_turn": long_turn,
        "errors": tally.errors,
        "lost": measured.lost,
        "doubled": measured.doubled + tally.duplicates,
        "pages_ms": percentiles(tally.pages),
        "approve_ms": percentiles(tally.approve),
        "minds_ms": percentiles(tally.minds),
        "run_ms": percentiles(tally.run),
        "drafts": DRAFTS,
        "drafts_ms": percentiles(tally.drafts),
        "choose_ms": percentiles(tally.choose),
        "seconds": round(seconds, 2),
        "approvals_per_second": round(len(tally.approve) / seconds, 2) if seconds else 0.0,
        "targets": TARGETS,
        "met": {
            "pages_ms_p95": percentiles(tally.pages)["p95"] <= TARGETS["pages_ms_p95"],
            "approve_ms_p95": percentiles(tally.approve)["p95"] <= TARGETS["approve_ms_p95"],
            # choosing a draft is an approval: the approvals' target
            "choose_ms_p95": percentiles(tally.choose)["p95"] <= TARGETS["approve_ms_p95"],
        },
        "error_samples": tally.messages,
        # clients at once: each holds the long story's event stream and loads its minds
        "concurrency": measured.bursts,
        # approvals committed but not confirmed on disk (WAITAOF failed or timed out)
        "unsynced": tally.unsynced,
        "unsynced_reasons": tally.unsynced_reasons,
        # a human approval waits for the append-only file's fsync (WAITAOF): with
        # "everysec" that is up to a second, whatever the studio does
        "appendfsync": fsync_policy,
        "baselines": {"service_in_process": baseline},
    }


def _print(result: dict[str, Any]) -> None:
    base = result["baselines"]["service_in_process"]

    def pair(p: dict[str, float]) -> str:
        return f"{p['p50']}/{p['p95']}"

    print_table(
        f"fabula bench web: {result['stories']} stories × {result['turns']} turns, "
        f"{result['clients']} clients; errors {result['errors']}, lost {result['lost']}, "
        f"doubled {result['doubled']}; appendfsync {result['appendfsync']}; approvals not "
        f"confirmed on disk {result['unsynced']} (in process {base['unsynced']})"
        + (f": {result['unsynced_reasons'][0]}" if result["unsynced_reasons"] else ""),
        ["measure", "studio over HTTP p50/p95 ms", "service in process p50/p95 ms", "target"],
        [
            ["page loads", pair(result["pages_ms"]), pair(base["pages_ms"]), "p95 ≤ 100"],
            ["approvals", pair(result["approve_ms"]), pair(base["approve_ms"]), "p95 ≤ 150"],
            [
                f"choosing among {result['drafts']} drafts",
                pair(result["choose_ms"]),
                pair(base["choose_ms"]),
                "p95 ≤ 150",
            ],
            [f"writing {result['drafts']} drafts", pair(result["drafts_ms"]), "-", "-"],
            [
                f"minds at turn {result['minds_at_turn']}",
                pair(result["minds_ms"]),
                pair(base["minds_ms"]),
                "-",
            ],
            ["run to approval", pair(result["run_ms"]), "-", "-"],
            *(
                [
                    f"{b['clients']} clients at once: minds (errors {b['errors']})",
                    pair(b["minds_ms"]),
                    "-",
                    "0 errors",
                ]
                for b in result["concurrency"]
            ),
            *(
                [
                    f"{b['clients']} clients at once: stream to hello",
                    pair(b["stream_hello_ms"]),
                    "-",
                    "-",
                ]
                for b in result["concurrency"]
            ),
        ],
    )


def run(
    stories: int,
    turns: int,
    clients: int,
    redis_url: str | None,
    json_out: str | None,
    fsync: FsyncPolicy = "always",
    concurrency: tuple[int, ...] = CONCURRENCY,
) -> dict[str, Any]:
    """The command line's entry: ``fabula bench web``."""
    return asyncio.run(
        run_web(
            stories,
            turns,
            clients=clients,
            redis_url=redis_url,
            json_out=json_out,
            fsync=fsync,
            concurrency=concurrency,
        )
    )
