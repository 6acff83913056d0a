"""The command line, run as separate processes against the test Redis (real subprocesses)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
from click.testing import Result
from typer.testing import CliRunner

from fabula.cli import app
from fabula.errors import Conflict, InvalidInput, InvalidWorld, NotFound, RedisUnavailable
from fabula.testing.cli import Cli, fabula, fabula_process


def story_turns(redis_url: str, story: str) -> list[dict[str, object]]:
    data = json.loads(fabula(redis_url, "show", story, "story", "--json").stdout)
    assert data["story"] == story and data["branch"] == "main"
    turns: list[dict[str, object]] = data["turns"]
    return turns


class TestApprovalAcrossProcesses:
    def test_run_pending_approve_reject(self, redis_url: str, tmp_path: Path) -> None:
        """`run` stops pending; `pending` lists it; `approve` from another process commits
        exactly one turn; `reject` commits nothing; `edit` shows the given text for approval
        again, and `edit --now` commits it."""
        fabula(redis_url, "new", "--world", "hollow_book", "--id", "tale")
        opening = len(story_turns(redis_url, "tale"))
        assert opening == 3

        out = fabula(redis_url, "run", "tale", "--turns", "3")
        assert "awaits approval" in out.stdout
        pending = json.loads(fabula(redis_url, "pending", "--json").stdout)
        assert [{k: p[k] for k in ("story", "branch", "turn")} for p in pending] == [
            {"story": "tale", "branch": "main", "turn": opening + 1}
        ]
        assert pending[0]["draft"] and pending[0]["pending_id"] == pending[0]["id"]
        assert pending[0]["pending_id"].startswith(f"{opening + 1}.")
        assert len(story_turns(redis_url, "tale")) == opening  # nothing committed yet

        fabula(redis_url, "approve", "tale")
        assert len(story_turns(redis_url, "tale")) == opening + 1
        assert json.loads(fabula(redis_url, "pending", "--json").stdout) == []
        again = fabula(redis_url, "approve", "tale", check=False)
        assert again.returncode != 0 and "no turn awaiting approval" in again.stderr
        assert len(story_turns(redis_url, "tale")) == opening + 1

        fabula(redis_url, "run", "tale")
        fabula(redis_url, "reject", "tale", "--note", "not yet")
        assert len(story_turns(redis_url, "tale")) == opening + 1
        # the rejected turn was planned again and waits for approval once more
        assert json.loads(fabula(redis_url, "pending", "--json").stdout)[0]["turn"] == opening + 2

        text = tmp_path / "mine.txt"
        text.write_text("Mara went to the hallway.\n")
        shown = fabula(redis_url, "edit", "tale", "--text-file", str(text))
        assert "awaits approval" in shown.stdout and "Mara went to the hallway." in shown.stdout
        assert len(story_turns(redis_url, "tale")) == opening + 1
        fabula(redis_url, "edit", "tale", "--text-file", str(text), "--now")
        turns = story_turns(redis_url, "tale")
        assert turns[-1] == {"turn": opening + 2, "text": "Mara went to the hallway."}
        world = json.loads(fabula(redis_url, "show", "tale", "world", "--json").stdout)
        where = {(f["subject"], f["attribute"]): f["value"] for f in world["facts"]}
        assert where[("mara", "location")] == "hallway"

    def test_a_decision_names_the_draft_its_maker_saw(self, redis_url: str) -> None:
        """A reads a draft, B rejects it and the redraft appears; A's `approve --expect`
        (the id `pending` showed A) is refused in one line and changes nothing; the id of
        the draft on show commits it. `pending` shows each draft's id. (In process, through
        the CLI's own parser: the cross-process decision is `test_run_pending_approve_reject`.)
        """

        def cli(*args: str, ok: bool = True) -> Result:
            env = {"FABULA_REDIS_URL": redis_url, "COLUMNS": "200"}
            result = CliRunner().invoke(app, list(args), env=env)
            assert (result.exit_code == 0) == ok, (args, result.output, result.stderr)
            return result

        def waiting() -> list[dict[str, Any]]:
            found: list[dict[str, Any]] = json.loads(cli("pending", "--json").stdout)
            return found

        def committed() -> int:
            return len(json.loads(cli("show", "tale", "story", "--json").stdout)["turns"])

        cli("new", "--world", "hollow_book", "--id", "tale")
        opening = committed()
        assert "--expect " in cli("run", "tale").stdout
        (seen,) = waiting()
        assert seen["pending_id"] in cli("pending").stdout
        cli("reject", "tale", "--note", "again", "--expect", seen["pending_id"])
        (redraft,) = waiting()
        assert redraft["turn"] == seen["turn"] and redraft["pending_id"] != seen["pending_id"]
        for verb in (("approve",), ("reject", "--note", "x")):
            late = cli(*verb, "tale", "--expect", seen["pending_id"], ok=False)
            assert "changed nothing" in late.stderr, late.stderr
            assert len(late.stderr.strip().splitlines()) == 1, late.stderr
            assert committed() == opening and waiting() == [redraft]
        cli("approve", "tale", "--expect", redraft["pending_id"])
        assert committed() == opening + 1 and waiting() != [redraft]


class TestErrors:
    @pytest.mark.parametrize(
        ("args", "needle", "status"),
        [
            (("run", "nosuch"), "does not exist", NotFound.exit_code),
            (("show", "nosuch", "world"), "does not exist", NotFound.exit_code),
            (("new", "--world", "nosuch"), "no world pack", NotFound.exit_code),
            (("approve", "nosuch"), "does not exist", NotFound.exit_code),
            (("recall", "nosuch", "where is the key?"), "does not exist", NotFound.exit_code),
        ],
    )
    def test_one_line_and_its_status(
        self, redis_url: str, args: tuple[str, ...], needle: str, status: int
    ) -> None:
        """An error is one clear line on stderr and the exit status its class says (3: not
        found, 2: bad input; see fabula.errors)."""
        proc = fabula(redis_url, *args, check=False)
        assert (proc.returncode, proc.stderr.count("\n")) == (status, 1), proc.stderr
        assert needle in proc.stderr
        assert len(proc.stderr.strip().splitlines()) == 1

    def test_unreachable_redis(self) -> None:
        """A Redis that does not answer is one line on stderr, not a traceback."""
        proc = fabula("redis://127.0.0.1:1", "stories", check=False)
        assert proc.returncode == RedisUnavailable.exit_code
        assert proc.stderr.startswith("error: redis:")
        assert "Traceback" not in proc.stderr

    def test_unknown_character_changes_nothing(self, redis_url: str) -> None:
        """Asking for an unknown character's beliefs is refused, naming the character."""
        fabula(redis_url, "new", "--world", "hollow_book", "--id", "tale")
        proc = fabula(redis_url, "show", "tale", "beliefs", "zed", check=False)
        assert proc.returncode == NotFound.exit_code and "no character 'zed'" in proc.stderr

    def test_bad_world_pack(self, redis_url: str, tmp_path: Path) -> None:
        """A malformed pack is refused with the field named, and no story is created."""
        pack = tmp_path / "bad.toml"
        pack.write_text(
            'id = "bad"\ntitle = "Bad"\npremise = "x"\n'
            '[[places]]\nname = "hall"\n'
            '[[characters]]\nname = "Ann"\nlocation = "attic"\n'
        )
        proc = fabula(redis_url, "new", "--world", str(pack), check=False)
        assert proc.returncode == InvalidWorld.exit_code and "characters[0].location" in proc.stderr
        assert fabula(redis_url, "stories").stdout.strip() == ""


class TestShowAndExport:
    def test_views_as_of_and_export(self, redis_url: str) -> None:
        """`show` gives each view, `--as-of` replays memory, `export` writes the text."""
        fabula(redis_url, "new", "--world", "hollow_book", "--id", "tale")

        def key(*extra: str) -> dict[str, str]:
            view = json.loads(fabula(redis_url, "show", "tale", "world", "--json", *extra).stdout)
            facts = view["facts"]
            return {f["attribute"]: f["value"] for f in facts if f["subject"] == "brass_key"}

        assert key()["location"] == "hollow_book"
        assert key("--as-of", "1")["location"] == "desk_drawer"
        leo = json.loads(fabula(redis_url, "show", "tale", "beliefs", "leo", "--json").stdout)
        held = {(b["subject"], b["attribute"]): b["value"] for b in leo["beliefs"]}
        assert held[("brass_key", "location")] == "desk_drawer"
        md = fabula(redis_url, "export", "tale", "--format", "md").stdout
        assert md.startswith("# The Hollow Book") and "hollow book" in md
        data = json.loads(fabula(redis_url, "export", "tale", "--format", "json").stdout)
        assert [t["turn"] for t in data["turns"]] == [1, 2, 3]

    def test_recall(self, redis_url: str) -> None:
        """`recall` prints what memory gives a request, as text with a footer; `--as` a
        character gives what that character lived (Leo did not see the key moved: his
        memory has the drawer, not the book); an empty request is refused in one line."""
        fabula(redis_url, "new", "--world", "hollow_book", "--id", "tale")
        shown = fabula(redis_url, "recall", "tale", "Where is the brass key?", "--budget", "200")
        assert "what the writer recalls" in shown.stdout and "of 200 tokens" in shown.stdout
        assert "read as: entities brass_key" in shown.stdout, shown.stdout
        assert "the brass key is in the hollow book" in shown.stdout
        assert "Mara moved the brass key to the hollow book." in shown.stdout
        leo = fabula(redis_url, "recall", "tale", "Where is the brass key?", "--as", "Leo")
        assert "what leo recalls" in leo.stdout
        assert "the brass key is in the desk drawer" in leo.stdout
        assert "key is in the hollow book" not in leo.stdout, leo.stdout
        assert "Mara moved" not in leo.stdout, leo.stdout
        empty = fabula(redis_url, "recall", "tale", "  ", check=False)
        assert (
            empty.returncode == InvalidInput.exit_code and "recall needs a request" in empty.stderr
        )


class TestHierarchyViews:
    def test_scenes_and_the_plot(self, redis_url: str) -> None:
        """`show scenes` and `show plot` are tables (JSON with --json): the demo's plot
        lists its plotlines, a development's titled as the development is, and each
        scene's summary tells a sentence once even when two events were read from it."""
        fabula(redis_url, "demo")
        shown = json.loads(fabula(redis_url, "show", "demo", "plot", "--json").stdout)
        lines = shown["plotlines"]
        assert shown["plot"]["children"] == sorted(line["id"] for line in lines)
        devs = json.loads(fabula(redis_url, "show", "demo", "developments", "--json").stdout)
        titles = {line["title"] for line in lines}
        assert {
            d["title"]
            for d in devs
            if f"plotline-dev-{d['id']}".replace("_", "-") in shown["plot"]["children"]
        } <= titles
        assert any(line["id"].startswith("plotline-dev-") for line in lines)
        assert all(t in shown["plot"]["summary"] for t in titles)
        table = fabula(redis_url, "show", "demo", "plot").stdout
        assert "the plot" in table and "plotlines" in table and lines[0]["id"] in table
        scenes = json.loads(fabula(redis_url, "show", "demo", "scenes", "--json").stdout)
        for scene in scenes:
            sentences = [s for s in scene["summary"].split(". ") if s]
            assert len(sentences) == len(set(sentences)), scene["summary"]
        assert scenes[0]["id"] in fabula(redis_url, "show", "demo", "scenes").stdout


class TestExactlyOnce:
    def test_two_processes_approve_one_turn(self, redis_url: str) -> None:
        """Two processes approving the same pending turn at once commit it exactly once."""
        fabula(redis_url, "new", "--world", "hollow_book", "--id", "tale")
        fabula(redis_url, "run", "tale")
        before = story_turns(redis_url, "tale")
        env = {**os.environ, "FABULA_REDIS_URL": redis_url}
        procs = [
            subprocess.Popen(
                [sys.executable, "-m", "fabula", "approve", "tale"],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                env=env,
            )
            for _ in range(2)
        ]
        results = [p.communicate(timeout=120) for p in procs]
        codes = [p.returncode for p in procs]
        after = story_turns(redis_url, "tale")
        assert len(after) == len(before) + 1, results
        assert after[:-1] == before
        # each process either committed it, found it committed, or found nothing pending
        assert all(c in (0, NotFound.exit_code, Conflict.exit_code) for c in codes), results
        assert 0 in codes


class TestServerStatus:
    def test_the_configured_server(self, redis_url: str, tmp_path: Path) -> None:
        """Address (secret masked), running, version, memory, persistence, fsync and the
        stories it holds, as a table and as JSON."""
        cli = Cli(redis_url, tmp_path)
        before = json.loads(cli("server", "status", "--json").stdout)
        cli("new", "--world", "hollow_book", "--id", "counted")
        found = json.loads(cli("server", "status", "--json").stdout)
        assert (found["kind"], found["running"]) == ("configured", True)
        assert found["stories"] == before["stories"] + 1
        assert found["version"].split(".")[0].isdigit() and found["memory"]
        assert found["fsync"] in {"always", "everysec", "no"} and found["persistence"]
        password = urlsplit(redis_url).password
        assert not password or password not in json.dumps(found)
        table = cli("server", "status").stdout
        assert "running" in table and found["version"] in table

    def test_an_embedded_server_not_running_is_not_started(self, tmp_path: Path) -> None:
        result = CliRunner().invoke(
            app, ["server", "status", "--json"], env={"FABULA_HOME": str(tmp_path)}
        )
        assert result.exit_code == 0, result.output
        found = json.loads(result.stdout)
        assert (found["kind"], found["running"], found["stories"]) == ("embedded", False, None)
        assert found["folder"] == str(tmp_path / "redis")
        assert not (tmp_path / "redis" / "redis.sock").exists()

    def test_a_server_that_does_not_answer_is_one_line(self) -> None:
        proc = fabula("redis://u:hidden@127.0.0.1:1/0", "server", "status", check=False)
        assert proc.returncode == RedisUnavailable.exit_code
        assert len(proc.stderr.strip().splitlines()) == 1 and "does not answer" in proc.stderr
        assert "hidden" not in proc.stderr and "Traceback" not in proc.stderr


class TestDemoSaysWhatItLeaves:
    def test_the_embedded_redis_is_named_with_how_to_stop_it(
        self, redis_url: str, tmp_path: Path
    ) -> None:
        """The demo started the embedded Redis and left it running without a word: now its
        last line says so and how to stop it (`fabula server stop`, which does); against a
        Redis of the user's own (FABULA_REDIS_URL) it says nothing of it."""
        env = {k: v for k, v in os.environ.items() if k != "FABULA_REDIS_URL"}
        env |= {"FABULA_HOME": str(tmp_path / "home"), "COLUMNS": "200"}

        def run(*args: str) -> subprocess.CompletedProcess[str]:
            return fabula_process(env, *args)

        try:
            done = run("demo", "--turns", "0")
            assert done.returncode == 0, done.stderr
            last = done.stdout.strip().splitlines()[-1]
            assert "embedded Redis keeps running" in last and "`fabula server stop`" in last
            assert run("server", "stop").stdout.strip() == "stopped"
        finally:
            run("server", "stop")
        own = fabula(redis_url, "demo", "--turns", "0").stdout
        assert "embedded Redis" not in own
