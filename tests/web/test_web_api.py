"""The studio's JSON API over real HTTP (uvicorn in a thread, httpx), on the test Redis.

The same service as the command line answers: a turn run, approved, edited or rejected
over HTTP is the same turn the CLI sees, and the API's shapes are the CLI's ``--json``.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from click.testing import Result
from typer.testing import CliRunner

from fabula.cli import app as cli_app
from fabula.errors import ConfigError
from fabula.graph.service import Fabula
from fabula.graph.web import WebConfig, create_app
from fabula.settings import Settings
from fabula.testing.web import studio

TOKEN = "a-long-enough-studio-token"
BAD_PACK = (
    'id = "bad"\ntitle = "Bad"\npremise = "x"\n'
    '[[places]]\nname = "hall"\n'
    '[[characters]]\nname = "Ann"\nlocation = "attic"\n'
)
GOOD_PACK = (
    'id = "tiny"\ntitle = "Tiny"\npremise = "Ann waits in the hall."\n'
    '[[places]]\nname = "hall"\n'
    '[[characters]]\nname = "Ann"\nlocation = "hall"\n'
    '[[objects]]\nname = "cup"\nlocation = "hall"\n'
)


@pytest.fixture()
def base(redis_url: str, tmp_path: Path) -> Iterator[str]:
    with studio(redis_url, tmp_path) as url:
        yield url


@pytest.fixture()
async def client(base: str) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(base_url=base, timeout=60) as c:
        yield c


async def new_story(client: httpx.AsyncClient, story: str = "tale") -> dict[str, Any]:
    r = await client.post("/api/stories", json={"world": "hollow_book", "id": story})
    assert r.status_code == 201, r.text
    created: dict[str, Any] = r.json()
    return created


async def run_to_pending(client: httpx.AsyncClient, story: str = "tale") -> dict[str, Any]:
    r = await client.post(f"/api/stories/{story}/run", json={"turns": 3})
    assert r.status_code == 200, r.text
    assert r.json()["pending"] is not None
    pending = await client.get(f"/api/stories/{story}/pending")
    assert pending.status_code == 200
    found: dict[str, Any] = pending.json()
    return found


async def turns(client: httpx.AsyncClient, story: str = "tale") -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = (await client.get(f"/api/stories/{story}/text")).json()["turns"]
    return found


def invoke(env: dict[str, str], *args: str) -> Result:
    """The command line in this process (a separate one only adds seconds of imports)."""
    return CliRunner().invoke(cli_app, list(args), env={"COLUMNS": "200", **env})


async def cli(redis_url: str, *args: str) -> Any:
    """The CLI's output for ``args`` (parsed when it is JSON), run in a worker thread."""
    result = await asyncio.to_thread(invoke, {"FABULA_REDIS_URL": redis_url}, *args)
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


class TestStories:
    async def test_create_list_delete(self, client: httpx.AsyncClient) -> None:
        """A story from a shipped world has its opening; it is listed, then deleted."""
        created = await new_story(client)
        assert created == {
            "id": "tale",
            "title": "The Hollow Book",
            "world": "hollow_book",
            "head": 3,
            "branches": 1,
            "created_at": created["created_at"],
            "pending": [],
        }
        assert [s["id"] for s in (await client.get("/api/stories")).json()] == ["tale"]
        again = await client.post("/api/stories", json={"world": "hollow_book", "id": "tale"})
        assert again.status_code == 409 and "already exists" in again.json()["error"]
        assert (await client.post("/api/stories/tale/delete", json={})).json() == {
            "deleted": "tale"
        }
        assert (await client.get("/api/stories")).json() == []
        assert (await client.get("/api/stories/tale")).status_code == 404

    async def test_worlds_and_unknown_world(self, client: httpx.AsyncClient) -> None:
        """The shipped worlds are listed; another name is a 404 that lists them, and a path
        is never read from a request."""
        ids = [w["id"] for w in (await client.get("/api/worlds")).json()]
        assert ids == ["hollow_book", "lighthouse", "town"]
        for world in ("nosuch", "/etc/passwd", "../worlds/hollow_book"):
            r = await client.post("/api/stories", json={"world": world})
            assert r.status_code == 404 and "built-in: hollow_book, lighthouse" in r.json()["error"]

    async def test_upload_is_validated_like_the_cli(
        self, client: httpx.AsyncClient, base: str
    ) -> None:
        """An uploaded pack is validated with the CLI's message (the field named); a bad one
        creates nothing; a good one becomes a story."""
        csrf = await csrf_token(client)
        headers = {"X-CSRF-Token": csrf}
        bad = await client.post(
            "/api/stories/upload", files={"pack": ("bad.toml", BAD_PACK)}, headers=headers
        )
        assert bad.status_code == 422
        assert bad.json()["error"].startswith("bad.toml: characters[0].location")
        assert (await client.get("/api/stories")).json() == []
        good = await client.post(
            "/api/stories/upload",
            files={"pack": ("world.toml", GOOD_PACK)},
            data={"id": "mine"},
            headers=headers,
        )
        assert good.status_code == 201, good.text
        assert good.json()["id"] == "mine" and good.json()["world"] == "tiny"

    async def test_hostile_imports_are_refused_whole(
        self, client: httpx.AsyncClient, redis_url: str
    ) -> None:
        """Three 20 KB CHARX of 20 MB of zeros each peaked the studio at 2.1 GB, grew Redis
        by 537 MB, answered 503 and left a story hidden from the list; `[` x 200,000 and a
        card nested 600 deep were 500s (the latter a hidden story too); a 300-character
        file name was a 500. Now: 422s of one line, nothing written; the name is cut."""
        import io
        import zipfile

        from fabula.memory.connection import connect
        from fabula.testing import imports as fx

        def bomb(name: str) -> bytes:
            buf = io.BytesIO()
            with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
                z.writestr("card.json", json.dumps(fx.v3_card(name)))
                z.writestr("assets/pad.bin", b"\0" * 20_000_000)
            return buf.getvalue()

        headers = {"X-CSRF-Token": await csrf_token(client)}
        deep_card = fx.v2_card()
        inner = deep_card["data"]["extensions"]
        for _ in range(600):
            inner["d"] = {}
            inner = inner["d"]
        cases = [
            ([(f"b{i}.charx", bomb(f"B{i}")) for i in range(3)], "unpacks to more than 100"),
            ([("deep.json", b"[" * 200_000)], "nests 200000 levels deep"),
            ([("ext.json", json.dumps(deep_card).encode())], "levels deep"),
        ]
        for files, needle in cases:
            r = await client.post(
                "/api/stories/import",
                files=[("files", f) for f in files],
                data={"id": "hostile"},
                headers=headers,
            )
            assert r.status_code == 422, r.text
            assert needle in r.json()["error"] and "\n" not in r.json()["error"]
        assert (await client.get("/api/stories")).json() == []
        assert list(connect(redis_url).scan_iter(match="*{hostile}*")) == []
        long = "a" * 300 + ".json"
        r = await client.post(
            "/api/stories/import",
            files=[("files", (long, json.dumps(fx.v1_card())))],
            data={"id": "named"},
            headers=headers,
        )
        assert r.status_code == 201, r.text


async def csrf_token(client: httpx.AsyncClient) -> str:
    """The studio's CSRF cookie, set on the first page a client loads."""
    await client.get("/")
    token = client.cookies.get("fabula_csrf")
    assert token
    return token


class TestTurns:
    async def test_run_pending_approve_reject_edit(self, client: httpx.AsyncClient) -> None:
        """Run stops at approval; the pending turn shows its draft by sentence and what it
        would change; approve commits exactly it; reject commits nothing and a new draft
        waits; edit commits the given text."""
        await new_story(client)
        pending = await run_to_pending(client)
        assert pending["turn"] == 4 and pending["draft"]
        assert " ".join(s["text"] for s in pending["sentences"]) == pending["draft"]
        changes = pending["changes"]
        assert changes["events"] and (changes["world"] or changes["beliefs"])
        assert {c["kind"] for c in changes["world"] + changes["beliefs"]} <= {
            "added",
            "changed",
            "closed",
        }

        r = await client.post("/api/stories/tale/approve", json={"pending_id": pending["id"]})
        assert r.status_code == 200, r.text
        assert r.json() == {
            "story": "tale",
            "branch": "main",
            "turn": 4,
            "action": "approve",
            "outcome": "committed",
            "head": 4,
            "durable": True,  # the server confirmed it is on disk (WAITAOF)
            "unsynced": None,
            "moved_to": None,  # no rewind took it off the branch meanwhile
        }
        assert (await turns(client))[-1] == {"turn": 4, "text": pending["draft"]}
        none = await client.post("/api/stories/tale/approve", json={})
        assert none.status_code == 404 and "no turn awaiting approval" in none.json()["error"]

        first = await run_to_pending(client)
        r = await client.post("/api/stories/tale/reject", json={"note": "slower, please"})
        assert r.json()["outcome"] == "pending" and r.json()["head"] == 4
        second = (await client.get("/api/stories/tale/pending")).json()
        assert second["turn"] == 5 and second["id"] != first["id"]

        r = await client.post("/api/stories/tale/edit", json={"text": "Mara went to the hallway."})
        assert r.json()["outcome"] == "pending"  # read, shown for approval again
        edited = (await client.get("/api/stories/tale/pending")).json()
        assert edited["draft"] == "Mara went to the hallway." and edited["turn"] == 5
        mara = [c for c in edited["changes"]["world"] if c["subject"] == "Mara"]
        assert mara and mara[0]["after"] == "hallway"
        r = await client.post("/api/stories/tale/approve", json={"pending_id": edited["id"]})
        assert r.json()["outcome"] == "committed"
        assert (await turns(client))[-1] == {"turn": 5, "text": "Mara went to the hallway."}
        world = (await client.get("/api/stories/tale/world")).json()
        where = {(f["subject"], f["attribute"]): f["value"] for f in world["facts"]}
        assert where[("mara", "location")] == "hallway"

    async def test_an_edit_the_critic_refuses(self, client: httpx.AsyncClient) -> None:
        """An edit with errors is refused with the critic's findings (422, nothing written);
        the page shows them above the person's own text; `force` commits it at once."""
        await new_story(client)
        await run_to_pending(client)
        bad = "Bob entered the study."
        r = await client.post("/api/stories/tale/edit", json={"text": bad})
        assert r.status_code == 422 and "Bob is not a character" in r.json()["error"]
        assert len(await turns(client)) == 3
        csrf = await csrf_token(client)
        page = await client.post(
            "/stories/tale/edit", data={"text": bad, "csrf_token": csrf, "branch": "main"}
        )
        assert page.status_code == 422
        assert "Bob is not a character" in page.text and f">{bad}</textarea>" in page.text
        r = await client.post("/api/stories/tale/edit", json={"text": bad, "force": True})
        assert r.status_code == 200 and r.json()["outcome"] == "committed"
        assert (await turns(client))[-1]["text"] == bad

    async def test_two_approvers_commit_once(self, client: httpx.AsyncClient) -> None:
        """Two people deciding the same pending draft at once: exactly one decision is
        applied; the other is told the turn was already decided (409)."""
        await new_story(client)
        pending = await run_to_pending(client)
        approve = client.post("/api/stories/tale/approve", json={"pending_id": pending["id"]})
        reject = client.post(
            "/api/stories/tale/reject", json={"pending_id": pending["id"], "note": "no"}
        )
        results = await asyncio.gather(approve, reject)
        codes = sorted(r.status_code for r in results)
        assert codes == [200, 409], [r.text for r in results]
        loser = next(r for r in results if r.status_code == 409)
        assert "changed nothing" in loser.json()["error"]
        texts = await turns(client)
        committed = next(r for r in results if r.status_code == 200).json()
        if committed["action"] == "approve":
            assert len(texts) == 4 and texts[-1]["text"] == pending["draft"]
        else:
            assert len(texts) == 3

    async def test_two_approvals_of_one_draft(self, client: httpx.AsyncClient) -> None:
        """The same approval sent twice at once commits the turn once."""
        await new_story(client)
        pending = await run_to_pending(client)
        body = {"pending_id": pending["id"]}
        results = await asyncio.gather(
            *[client.post("/api/stories/tale/approve", json=body) for _ in range(2)]
        )
        assert sorted(r.status_code for r in results) == [200, 409]
        assert len(await turns(client)) == 4

    async def test_background_run_and_events(self, client: httpx.AsyncClient, base: str) -> None:
        """A run started without waiting reports its progress on the branch's event
        stream, then the turn waiting for approval."""
        await new_story(client)
        seen: list[tuple[str, dict[str, Any]]] = []

        async def listen() -> None:
            async with client.stream("GET", "/api/stories/tale/events") as stream:
                event = ""
                async for line in stream.aiter_lines():
                    if line.startswith("event:"):
                        event = line.split(":", 1)[1].strip()
                    elif line.startswith("data:"):
                        seen.append((event, json.loads(line.split(":", 1)[1])))
                        if event == "done":
                            return

        listener = asyncio.create_task(listen())
        await asyncio.sleep(0.3)
        r = await client.post("/api/stories/tale/run", json={"turns": 2, "wait": False})
        assert r.status_code == 200 and r.json()["state"] == "running"
        await asyncio.wait_for(listener, 30)
        kinds = [k for k, _ in seen]
        assert kinds[0] == "hello"
        assert "progress" in kinds and "draft" in kinds and "pending" in kinds
        steps = {d["step"] for k, d in seen if k == "progress"}
        assert {"plan", "write", "critique"} <= steps
        assert seen[-1][1]["state"] == "pending"
        status = (await client.get("/api/stories/tale/run")).json()
        assert status["state"] == "pending"

    async def test_a_stream_opened_after_a_run_hears_how_it_ended(
        self, client: httpx.AsyncClient
    ) -> None:
        """A run that ended before the page's stream connected published its last progress
        to nobody, and the page showed it running for good; ``hello`` carries the run's
        status (null on a branch this studio never ran)."""
        await new_story(client)

        async def hello() -> dict[str, Any]:
            async with client.stream("GET", "/api/stories/tale/events") as stream:
                async for line in stream.aiter_lines():
                    if line.startswith("data:"):
                        got: dict[str, Any] = json.loads(line.split(":", 1)[1])
                        return got
            raise AssertionError("the stream ended without a hello")

        assert (await asyncio.wait_for(hello(), 15))["run"] is None
        r = await client.post("/api/stories/tale/run", json={"turns": 2, "wait": False})
        assert r.status_code == 200, r.text
        for _ in range(300):  # the run ends with nobody listening
            if (await client.get("/api/stories/tale/run")).json()["state"] != "running":
                break
            await asyncio.sleep(0.1)
        run = (await asyncio.wait_for(hello(), 15))["run"]
        assert run["state"] == "pending" and run["turns"] == 2 and run["done"] == 0

    async def test_another_process_commit_reaches_the_stream(
        self, client: httpx.AsyncClient, redis_url: str, tmp_path: Path
    ) -> None:
        """A turn committed elsewhere (another application on the same Redis) is announced
        on the event stream of the branch."""
        await new_story(client)
        events: list[str] = []

        async def listen() -> None:
            async with client.stream("GET", "/api/stories/tale/events") as stream:
                async for line in stream.aiter_lines():
                    if line.startswith("event:"):
                        events.append(line.split(":", 1)[1].strip())
                        if events[-1] == "turn":
                            return

        listener = asyncio.create_task(listen())
        await asyncio.sleep(0.3)
        async with Fabula(redis_url, Settings(home=tmp_path)) as other:
            assert (await other.run(other.store("tale"), auto=True)).outcome == "committed"
        await asyncio.wait_for(listener, 15)
        assert events[0] == "hello" and events[-1] == "turn"


class TestUnderLoad:
    async def test_live_streams_are_bounded(self, redis_url: str, tmp_path: Path) -> None:
        """The studio serves at most ``max_streams`` live event streams: one more is refused
        with a 503 and one line (nothing half-started); once a stream closes, a new one is
        let in."""

        async def hello(client: httpx.AsyncClient, opened: asyncio.Event) -> None:
            async with client.stream("GET", "/api/stories/tale/events") as stream:
                assert stream.status_code == 200
                async for line in stream.aiter_lines():
                    if line.startswith("event:"):
                        opened.set()
                        await asyncio.sleep(60)

        with studio(redis_url, tmp_path, max_streams=2) as url:
            async with httpx.AsyncClient(base_url=url, timeout=30) as client:
                await new_story(client)
                flags = [asyncio.Event(), asyncio.Event()]
                held = [asyncio.create_task(hello(client, f)) for f in flags]
                for flag in flags:
                    await asyncio.wait_for(flag.wait(), 20)
                extra = await client.get("/api/stories/tale/events")
                assert extra.status_code == 503
                assert "at most 2 live event streams" in extra.json()["error"]
                assert "\n" not in extra.json()["error"]
                held[0].cancel()
                await asyncio.gather(held[0], return_exceptions=True)
                again = asyncio.Event()
                for _ in range(100):  # the closed stream is let go of at once, or nearly
                    probe = asyncio.create_task(hello(client, again))
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(again.wait(), 1)
                    if again.is_set():
                        break
                    probe.cancel()
                    await asyncio.gather(probe, return_exceptions=True)
                assert again.is_set()
                for task in (*held, probe):
                    task.cancel()
                await asyncio.gather(*held, probe, return_exceptions=True)

    async def test_parallel_reads_wait_for_a_connection(
        self, redis_url: str, tmp_path: Path
    ) -> None:
        """More parallel requests than the studio's Redis pool holds wait for a connection
        instead of failing (redis-py's pool raised 'Too many connections'): 150 minds reads
        at once all answer 200. (``fabula bench web --concurrency`` measures 150 and 400.)"""
        with studio(redis_url, tmp_path) as url:
            limits = httpx.Limits(max_connections=200)
            async with httpx.AsyncClient(base_url=url, timeout=120, limits=limits) as client:
                await new_story(client)
                answers = await asyncio.gather(
                    *[client.get("/api/stories/tale/minds") for _ in range(150)]
                )
        assert sorted({r.status_code for r in answers}) == [200]


class TestSameShapesAsTheCli:
    async def test_json_agrees(self, client: httpx.AsyncClient, redis_url: str) -> None:
        """`fabula show ... --json`, `pending --json` and `export --format json` print what
        the API answers."""
        await new_story(client)
        await run_to_pending(client)
        pairs = [
            (("show", "tale", "world", "--as-of", "2", "--json"), "world?as_of=2"),
            (("show", "tale", "beliefs", "leo", "--json"), "beliefs/leo"),
            (("show", "tale", "beliefs", "mara>leo", "--json"), "beliefs/mara>leo"),
            (("show", "tale", "story", "--json"), "text"),
            (("show", "tale", "branches", "--json"), "branches"),
            (("show", "tale", "developments", "--json"), "developments"),
            (("show", "tale", "hypotheses", "--as-of", "3", "--json"), "hypotheses?as_of=3"),
            (("export", "tale", "--format", "json"), "export?format=json"),
            (("show", "tale", "usage", "--json"), "usage"),
        ]
        for args, path in pairs:
            api = (await client.get(f"/api/stories/tale/{path}")).json()
            assert await cli(redis_url, *args) == api, args
        assert (
            await cli(redis_url, "pending", "--json") == (await client.get("/api/pending")).json()
        )

    async def test_openapi_names_the_shared_models(self, client: httpx.AsyncClient) -> None:
        schema = (await client.get("/openapi.json")).json()
        names = set(schema["components"]["schemas"])
        assert {"StoryText", "WorldOut", "BeliefsOut", "PendingTurn", "MindsOut"} <= names
        assert "/api/stories/{story}/approve" in schema["paths"]


class TestPlot:
    async def test_the_plot_page_and_its_json(
        self, client: httpx.AsyncClient, redis_url: str
    ) -> None:
        """After a few turns the hierarchy has scenes and plotlines: the API gives them in
        story order (the CLI's `show plot --json` is the same), and the Plot page shows the
        plot's summary, each plotline with its scenes, and every scene, its text escaped."""
        await new_story(client)
        r = await client.post("/api/stories/tale/run", json={"turns": 6, "auto": True})
        assert r.status_code == 200, r.text
        for _ in range(400):  # the hierarchy is folded off the turn's path
            found = (await client.get("/api/stories/tale/plot")).json()
            if found["plot"] and found["scenes"][-1]["last_turn"] == found["head"]:
                break
            await asyncio.sleep(0.05)
        assert found["plot"]["children"] == sorted(line["id"] for line in found["plotlines"])
        firsts = [s["first_turn"] for s in found["scenes"]]
        assert firsts == sorted(firsts) and firsts[0] == 1
        assert found == await cli(redis_url, "show", "tale", "plot", "--json")
        html = (await client.get("/stories/tale/plot")).text
        assert 'aria-current="page">Plot</a>' in html and 'data-testid="plotlines"' in html
        for node in [*found["plotlines"], *found["scenes"]]:
            assert f'id="{node["id"]}"' in html
        assert "/stories/tale?branch=main#turn-1" in html
        missing = await client.get("/api/stories/nosuch/plot")
        assert missing.status_code == 404


class TestMindsForkExport:
    async def test_minds_grid_evidence_fork(self, client: httpx.AsyncClient) -> None:
        """At turn 3 Leo believes the key is in the drawer while W has it in the hollow book;
        his cell links to the event he learned it from, whose span quotes the passage; a fork
        at turn 3 is a branch whose text stops there."""
        await new_story(client)
        minds = (await client.get("/api/stories/tale/minds?as_of=3")).json()
        row = next(
            r for r in minds["grid"] if (r["subject"], r["attribute"]) == ("brass_key", "location")
        )
        assert row["world"] == "hollow_book"
        cells = {c["character"]: c for c in row["cells"]}
        assert cells["leo"]["status"] == "false" and cells["leo"]["value"] == "desk_drawer"
        assert cells["mara"]["status"] == "true"
        ev = (
            await client.get(
                f"/api/stories/tale/evidence/{cells['leo']['event']}",
                params={
                    "holder": "leo",
                    "subject": "brass_key",
                    "attribute": "location",
                    "as_of": 3,
                },
            )
        ).json()
        assert ev["text"][ev["start"] : ev["end"]] == "Leo put the brass key in the desk drawer."
        assert ev["belief"]["mode"] == "participated"
        # the belief said in names, and the names of whom and what it involves: the page
        # reads nothing but this answer
        assert ev["sentence"] == "The brass key is in the desk drawer."
        assert ev["names"]["leo"] == "Leo" and ev["names"]["desk_drawer"] == "desk drawer"

        hyps = [h for h in minds["hypotheses"] if h["status"] == "open"]
        assert hyps
        r = await client.post(
            "/api/stories/tale/fork", json={"at": 2, "name": "what-if", "realise": hyps[0]["id"]}
        )
        assert r.status_code == 201, r.text
        assert r.json() == {
            "story": "tale",
            "branch": "what-if",
            "parent": "main",
            "fork_turn": 2,
            "pursue": hyps[0]["id"],
            "head": 2,
        }
        text = (await client.get("/api/stories/tale/text?branch=what-if")).json()
        assert [t["turn"] for t in text["turns"]] == [1, 2]
        md = await client.get("/api/stories/tale/export?format=md")
        assert md.headers["content-type"].startswith("text/markdown")
        assert md.text.startswith("# The Hollow Book\n\nLeo put the brass key")

    async def test_export_as_of(self, client: httpx.AsyncClient) -> None:
        """`export?as_of=0` gave the whole story; now the story as of that turn: 0, none."""
        await new_story(client)
        md = await client.get("/api/stories/tale/export?format=md&as_of=0")
        assert md.status_code == 200 and md.text == "# The Hollow Book\n\n"
        data = (await client.get("/api/stories/tale/export?as_of=2")).json()
        assert [t["turn"] for t in data["turns"]] == [1, 2] and data["as_of"] == 2

    async def test_export_as_a_name_that_casefolds(self, client: httpx.AsyncClient) -> None:
        """`export?as=ſam` (which casefolds to Sam) was a 500: the name as asked broke the
        Content-Disposition header (Latin-1). Now the file is named by the character's id,
        in ASCII, for md and epub alike."""
        csrf = await csrf_token(client)
        made = await client.post(
            "/api/stories/upload",
            files={"pack": ("world.toml", GOOD_PACK.replace("Ann", "Sam"))},
            data={"id": "sam"},
            headers={"X-CSRF-Token": csrf},
        )
        assert made.status_code == 201, made.text
        for fmt in ("md", "epub"):
            r = await client.get(f"/api/stories/sam/export?as=ſam&format={fmt}")
            assert r.status_code == 200, r.text
            disposition = r.headers["content-disposition"]
            assert disposition == f'attachment; filename="sam-main-as-sam.{fmt}"'


class TestRecall:
    async def test_the_writer_and_a_character_recall(
        self, client: httpx.AsyncClient, redis_url: str
    ) -> None:
        """Asked where the brass key is, memory answers within the budget with the records
        behind every line (events that exist, on the lines they name); as Leo, it gives
        only events Leo witnessed; as of turn 2, nothing later. The CLI prints the same."""
        await new_story(client)
        r = await client.post("/api/stories/tale/run", json={"turns": 4, "auto": True})
        assert r.status_code == 200, r.text
        ask = {"q": "Where is the brass key?", "budget": 300}
        found = (await client.get("/api/stories/tale/recall", params=ask)).json()
        assert found["holder"] is None and 0 < found["tokens"] <= 300
        unnamed = (
            await client.get("/api/stories/tale/recall", params={**ask, "character": ""})
        ).json()
        assert unnamed == found  # an empty character is the writer, as on the page
        assert "brass key" in found["text"]
        assert "brass_key" in found["plan"]["entities"] and found["plan"]["first_date"] is None
        rendered = found["text"].split("\n")
        for line in found["lines"]:
            assert rendered[line["line"]] and not rendered[line["line"]].startswith("## ")
            if line["kind"] == "episode":
                ev = await client.get(f"/api/stories/tale/evidence/{line['id']}")
                assert ev.status_code == 200, line
        assert (
            await cli(redis_url, "recall", "tale", ask["q"], "--budget", "300", "--json") == found
        )

        leo = (
            await client.get("/api/stories/tale/recall", params={**ask, "character": "Leo"})
        ).json()
        assert leo["holder"] == "leo" and leo["tokens"] <= 300
        episodes = [line["id"] for line in leo["lines"] if line["kind"] == "episode"]
        assert episodes
        for event in episodes:
            ev = (await client.get(f"/api/stories/tale/evidence/{event}")).json()
            assert "leo" in ev["event"]["witnesses"], ev["event"]

        early = (await client.get("/api/stories/tale/recall", params={**ask, "as_of": 2})).json()
        turns_seen = [
            int(line["id"][1:].split(".")[0])
            for line in early["lines"]
            if line["kind"] == "episode"
        ]
        assert turns_seen and max(turns_seen) <= 2

        html = (
            await client.get("/stories/tale/recall", params={"q": ask["q"], "character": "leo"})
        ).text
        assert 'aria-current="page">Recall</a>' in html and 'data-testid="recalled-lines"' in html
        assert f"/stories/tale/evidence/{episodes[0]}?branch=main" in html
        assert 'data-testid="read-as"' in html and "entities" in html
        # the form as a browser sends it: empty fields are "now" and the default budget
        sent = {"q": ask["q"], "character": "", "budget": "", "as_of": ""}
        form = await client.get("/stories/tale/recall", params=sent)
        assert form.status_code == 200 and 'data-testid="recalled-lines"' in form.text
        bad = await client.get("/stories/tale/recall", params={**sent, "as_of": "x"})
        assert bad.status_code == 422 and "as of turn: a whole number" in bad.text
        blank = (await client.get("/stories/tale/recall")).text
        assert 'data-testid="recall-form"' in blank and "recalled-lines" not in blank


class TestErrors:
    @pytest.mark.parametrize(
        ("method", "path", "body", "status", "needle"),
        [
            ("GET", "/api/stories/nosuch/world", None, 404, "story 'nosuch' does not exist"),
            ("GET", "/api/stories/Bad%20Id/world", None, 422, "is not a valid id"),
            ("GET", "/api/stories/tale/world?as_of=99", None, 422, "not a turn of branch"),
            ("GET", "/api/stories/tale/world?as_of=x", None, 422, "as_of:"),
            ("GET", "/api/stories/tale/beliefs/zed", None, 404, "no character 'zed'"),
            ("GET", "/api/stories/tale/text?branch=nope", None, 404, "no branch 'nope'"),
            ("GET", "/api/stories/tale/pending", None, 404, "no turn awaiting approval"),
            ("GET", "/api/stories/tale/evidence/e99.0", None, 404, "no event 'e99.0'"),
            ("POST", "/api/stories/tale/run", {"turns": 0}, 422, "turns:"),
            ("POST", "/api/stories/tale/edit", {"text": ""}, 422, "text:"),
            ("POST", "/api/stories/tale/fork", {"at": 50}, 422, "cannot fork at turn 50"),
            ("POST", "/api/stories/tale/fork", {"at": 1, "realise": "h9"}, 422, "hypothesis"),
            ("POST", "/api/stories/tale/approve", {"pending_id": "4.x"}, 409, "already decided"),
            # strict types: no bool for a number, no string for a bool
            ("POST", "/api/stories/tale/run", {"turns": True}, 422, "turns:"),
            ("POST", "/api/stories/tale/run", {"auto": "yes"}, 422, "auto:"),
            # a field the body does not have was dropped in silence (`turn` for `turns`)
            ("POST", "/api/stories/tale/run", {"turn": 2}, 422, "turn: Extra inputs"),
            ("POST", "/api/stories/tale/fork", {"at": 1, "colour": "red"}, 422, "colour:"),
            # the CLI's limits (graph/service/pending.py)
            (
                "POST",
                "/api/stories/tale/approve",
                {"pending_id": "4." + "x" * 200},
                422,
                "pending_id:",
            ),
            ("POST", "/api/stories/tale/reject", {"note": "n" * 2001}, 422, "note:"),
            ("GET", "/api/nothing-here", None, 404, "no such page"),
            ("GET", "/api/stories/tale/recall?q=%20", None, 422, "recall needs a request"),
            ("GET", "/api/stories/tale/recall?q=key&character=zed", None, 404, "no character"),
            ("GET", "/api/stories/tale/recall?q=key&budget=0", None, 422, "budget:"),
            ("GET", "/api/stories/tale/recall?q=key&as_of=99", None, 422, "not a turn of"),
            ("GET", "/api/stories/nosuch/recall?q=key", None, 404, "does not exist"),
            # an export's as_of was ignored without `as` (any number accepted)
            (
                "GET",
                "/api/stories/tale/export?format=md&as_of=99999999999999999999",
                None,
                422,
                "not a turn of",
            ),
            ("GET", "/api/stories/tale/export?format=json&as_of=4", None, 422, "not a turn of"),
        ],
    )
    async def test_clear_message_no_trace(
        self,
        client: httpx.AsyncClient,
        method: str,
        path: str,
        body: dict[str, Any] | None,
        status: int,
        needle: str,
    ) -> None:
        """Bad input is a 404, 409 or 422 with one clear line, and changes nothing."""
        await new_story(client)
        r = await client.request(method, path, json=body)
        assert r.status_code == status, r.text
        message = r.json()["error"]
        assert needle in message and "\n" not in message and "Traceback" not in message
        assert len(await turns(client)) == 3


class TestSafety:
    async def test_cross_site_posts_are_refused(self, client: httpx.AsyncClient) -> None:
        """A POST a foreign page could send (a form, or another Origin) is refused."""
        await new_story(client)
        form = await client.post("/api/stories/tale/delete", data={"x": "1"})
        assert form.status_code == 403
        foreign = await client.post(
            "/api/stories/tale/delete", json={}, headers={"Origin": "https://evil.example"}
        )
        assert foreign.status_code == 403
        fetch = await client.post(
            "/api/stories/tale/delete", json={}, headers={"Sec-Fetch-Site": "cross-site"}
        )
        assert fetch.status_code == 403
        page_form = await client.post("/stories/tale/delete", data={"csrf_token": "guess"})
        assert page_form.status_code == 403
        assert [s["id"] for s in (await client.get("/api/stories")).json()] == ["tale"]
        token = await csrf_token(client)
        ok = await client.post("/stories/tale/delete", data={"csrf_token": token})
        assert ok.status_code == 303

    async def test_a_body_over_the_bound_is_not_read(self, client: httpx.AsyncClient) -> None:
        """A 100 MB edit was read whole (the studio grew by 300 MB) before its 422: a body
        over the studio's bound is refused by its length (413, one line), unread, and
        nothing is written."""
        await new_story(client)
        r = await client.post(
            "/api/stories/tale/edit",
            content=b'{"text": "' + b"x" * (4 * 1024 * 1024) + b'"}',
            headers={"content-type": "application/json"},
        )
        assert r.status_code == 413 and "over the studio's bound" in r.json()["error"]
        assert "\n" not in r.json()["error"]
        assert len(await turns(client)) == 3

    async def test_foreign_host_is_refused(self, client: httpx.AsyncClient) -> None:
        """On localhost, a request naming another host (DNS rebinding) is refused."""
        r = await client.get("/api/stories", headers={"Host": "evil.example"})
        assert r.status_code == 400
        # a loopback name followed by more than a port names another host
        for host in (
            "127.0.0.1:18801.evil",
            "localhost:80@evil.example",
            "localhost:",
            "localhost:99999",
            "[::1]x",
            "[::1]:80:80",
            "127.0.0.1:8000 evil",
        ):
            r = await client.get("/api/stories", headers={"Host": host})
            assert r.status_code == 400, host
        for host in ("localhost", "127.0.0.1:8000", "[::1]:8000", "LOCALHOST:1"):
            r = await client.get("/api/stories", headers={"Host": host})
            assert r.status_code == 200, host

    async def test_security_headers(self, client: httpx.AsyncClient) -> None:
        r = await client.get("/")
        assert "script-src 'self'" in r.headers["content-security-policy"]
        assert r.headers["x-frame-options"] == "DENY"

    def test_non_local_bind_needs_a_token(self, tmp_path: Path) -> None:
        """0.0.0.0 without FABULA_WEB_TOKEN is refused, in the app and on the command line."""
        with pytest.raises(ConfigError, match="FABULA_WEB_TOKEN"):
            create_app(WebConfig(settings=Settings(home=tmp_path), host="0.0.0.0"))
        create_app(WebConfig(settings=Settings(home=tmp_path), host="0.0.0.0", token=TOKEN))
        with pytest.raises(ConfigError, match="at least 16"):  # a guessable token
            create_app(WebConfig(settings=Settings(home=tmp_path), host="0.0.0.0", token="s3cret"))
        env = {"FABULA_HOME": str(tmp_path), "FABULA_REDIS_URL": "redis://127.0.0.1:1"}
        result = invoke({**env, "FABULA_WEB_TOKEN": ""}, "serve", "--host", "0.0.0.0")
        assert result.exit_code == ConfigError.exit_code
        assert result.stderr.startswith("error: refusing to listen on 0.0.0.0")
        assert len(result.stderr.strip().splitlines()) == 1

    async def test_token_is_required_when_set(self, redis_url: str, tmp_path: Path) -> None:
        """With a token every request needs it (bearer or the login cookie)."""
        with studio(redis_url, tmp_path, token=TOKEN) as url:
            async with httpx.AsyncClient(base_url=url) as c:
                assert (await c.get("/api/stories")).status_code == 401
                assert (await c.get("/")).headers["location"] == "/login"
                bearer = {"Authorization": f"Bearer {TOKEN}"}
                assert (await c.get("/api/stories", headers=bearer)).status_code == 200
                login = await c.get("/login")
                assert login.status_code == 200
                csrf = c.cookies["fabula_csrf"]
                wrong = await c.post("/login", data={"token": "nope", "csrf_token": csrf})
                assert wrong.status_code == 403
                right = await c.post("/login", data={"token": TOKEN, "csrf_token": csrf})
                assert right.status_code == 303
                assert (await c.get("/api/stories")).status_code == 200

    async def test_login_is_rate_limited(self, redis_url: str, tmp_path: Path) -> None:
        """/login had no limit on guesses: after five wrong tokens in a minute a client is
        told to wait (429, one line), even for the right one."""
        with studio(redis_url, tmp_path, token=TOKEN) as url:
            async with httpx.AsyncClient(base_url=url) as c:
                await c.get("/login")
                csrf = c.cookies["fabula_csrf"]
                for _ in range(5):
                    wrong = await c.post("/login", data={"token": "nope", "csrf_token": csrf})
                    assert wrong.status_code == 403
                late = await c.post("/login", data={"token": TOKEN, "csrf_token": csrf})
                assert late.status_code == 429 and "try again in" in late.text

    async def test_story_text_is_escaped(self, client: httpx.AsyncClient) -> None:
        """Text a model (or a person) wrote is shown as text on every page, never as markup."""
        await new_story(client)
        await run_to_pending(client)
        evil = (
            'Leo said <script>alert(1)</script> and " onload="alert(2)" '
            "<img src=x onerror=alert(3)>."
        )
        r = await client.post("/api/stories/tale/edit", json={"text": evil, "now": True})
        assert r.status_code == 200 and r.json()["outcome"] == "committed", r.text
        for path in ("/stories/tale", "/stories/tale/minds?as_of=4", "/stories/tale/body"):
            html = (await client.get(path)).text
            assert "<script>alert" not in html and "<img src=x" not in html, path
            assert '" onload="alert' not in html
            assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
        for _ in range(400):  # the scenes' summaries quote the text, once it is folded
            scenes = (await client.get("/api/stories/tale/plot")).json()["scenes"]
            if scenes and scenes[-1]["last_turn"] == 4:
                break
            await asyncio.sleep(0.05)
        assert any("<script>alert(1)</script>" in s["summary"] for s in scenes), scenes
        html = (await client.get("/stories/tale/plot")).text
        assert "<script>alert" not in html and "<img src=x" not in html
        assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
