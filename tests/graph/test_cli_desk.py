"""The command line's rough edges, as real subprocesses against the test Redis: what
``--help`` and ``show`` import (they start quickly because they load no service, graph or
model client), the ``stories`` and ``show branches`` tables, ``delete`` asking first, and
``new`` refusing an existing id before anything starts."""

from __future__ import annotations

import html
import json
import os
import socket
import subprocess
import sys
import zipfile
from pathlib import Path

from fabula.errors import ConfigError, NotFound, StoryExists
from fabula.graph.cli import COMMANDS
from fabula.testing.cli import fabula

HEAVY = (
    "fabula.graph.service.application",
    "langgraph",
    "langchain_openai",
    "fabula.bench",
    "numpy",
)


def imported(redis_url: str, *args: str) -> set[str]:
    """The modules ``fabula ARGS`` imports (``python -X importtime``), after a clean exit."""
    env = {**os.environ, "FABULA_REDIS_URL": redis_url, "COLUMNS": "200"}
    proc = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "fabula", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    lines = [line for line in proc.stderr.splitlines() if line.startswith("import time:")]
    return {line.rpartition("|")[2].strip() for line in lines}


def loaded(redis_url: str, *args: str) -> set[str]:
    """``sys.modules`` after ``fabula ARGS`` ran to a clean exit, in a subprocess
    (``-X importtime`` does not log a module that ``importlib`` imports itself)."""
    code = (
        "import json, runpy, sys\n"
        "try:\n"
        "    runpy.run_module('fabula', run_name='__main__')\n"
        "except SystemExit as e:\n"
        "    assert not e.code, e.code\n"
        "sys.stderr.write('\\nMODULES ' + json.dumps(sorted(sys.modules)))\n"
    )
    env = {**os.environ, "FABULA_REDIS_URL": redis_url, "COLUMNS": "200"}
    proc = subprocess.run(
        [sys.executable, "-c", code, *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    return set(json.loads(proc.stderr.rpartition("MODULES ")[2]))


class TestStartsQuickly:
    def test_help_and_show_load_no_service(self, redis_url: str) -> None:
        """`--help` and `show` import neither the service, LangGraph, a model client, the
        benchmarks nor numpy (the 1.6 s of imports `--help` had); `bench --help` still lists
        the benchmarks, loaded when asked for."""
        fabula(redis_url, "new", "--world", "hollow_book", "--id", "tale")
        fabula(redis_url, "run", "tale")  # a turn waits: `stories` reads the checkpoints
        for args in (
            ("--help",),
            ("show", "tale", "world"),
            ("show", "tale", "story"),
            ("stories",),
        ):
            modules = imported(redis_url, *args)
            assert "fabula.graph.cli" in modules
            loaded = [m for m in modules if m.split(".")[0] in HEAVY or m.startswith(HEAVY)]
            assert loaded == [], (args, sorted(loaded)[:10])
        listed = fabula(redis_url, "--help").stdout
        assert "bench" in listed and "Benchmarks, each with its baselines" in listed
        assert "chat" in listed
        bench = fabula(redis_url, "bench", "--help").stdout
        assert "scale" in bench

    def test_offline_commands_load_no_model_client(self, redis_url: str) -> None:
        """With no model configured, the commands that write and ask a story import neither
        the OpenAI client nor langchain-openai (4 s of `pending` under load was importing
        them): the model back ends and the embedder load them only when a model is set."""
        fabula(redis_url, "new", "--world", "hollow_book", "--id", "tale")
        for args in (
            ("new", "--world", "hollow_book", "--id", "other"),
            ("run", "tale", "--turns", "1"),
            ("pending",),
            ("approve", "tale"),
            ("recall", "tale", "Where is the key?", "--as", "leo"),
            ("chat", "tale", "leo", "--ask", "Where is the key?"),
        ):
            modules = loaded(redis_url, *args)
            assert "fabula.graph.cli.app" in modules, args  # it ran
            model = sorted(m for m in modules if m.split(".")[0] in ("openai", "langchain_openai"))
            assert model == [], (args, model[:5])
            assert "fabula.agents.llm" not in modules, args

    def test_commands_that_run_no_turn_load_no_graph(self, redis_url: str) -> None:
        """The turn graph is compiled when a turn is run or read (``Core.graph``): `new`,
        `recall` and `chat` neither run nor read one, and importing LangGraph's graph (and,
        through langchain-core's runnables, LangSmith's tracing) was a third of their start.
        `pending` reads what waits from the turn's checkpoint: it compiles no graph either."""
        fabula(redis_url, "new", "--world", "hollow_book", "--id", "tale")
        graph = ("langgraph.graph", "langgraph.types", "langsmith", "langchain_core.tracers")
        for args in (
            ("new", "--world", "hollow_book", "--id", "other"),
            ("recall", "tale", "Where is the key?"),
            ("recall", "tale", "Where is the key?", "--as", "leo"),
            ("chat", "tale", "leo", "--ask", "Where is the key?"),
        ):
            modules = loaded(redis_url, *args)
            assert "fabula.graph.cli.app" in modules, args  # it ran
            heavy = sorted(m for m in modules if m.startswith(graph))
            assert heavy == [], (args, heavy[:5])
            assert "fabula.graph.build" not in modules, args
        fabula(redis_url, "run", "tale")  # a draft waits: pending reads it
        listed = loaded(redis_url, "pending")
        assert "fabula.graph.service.pending" in listed
        assert "fabula.graph.build" not in listed and "langgraph.graph" not in listed

    def test_commands_that_count_no_tokens_load_no_encoding(self, redis_url: str) -> None:
        """The token counter is made when something is first counted: `new`, `pending` and
        `approve` count nothing, and decoding the shipped o200k_base (200,000 ranks, most of
        their start) or a cached tiktoken file was a third of each; `recall` counts."""
        code = (
            "import json, runpy, sys\n"
            "try:\n"
            "    runpy.run_module('fabula', run_name='__main__')\n"
            "except SystemExit as e:\n"
            "    assert not e.code, e.code\n"
            "from fabula.memory import tokens\n"
            "made = tokens.shipped_encoding.cache_info().currsize"
            " + tokens._load_encoding.cache_info().currsize\n"
            "sys.stderr.write('\\nENCODINGS ' + str(made))\n"
        )
        env = {**os.environ, "FABULA_REDIS_URL": redis_url, "COLUMNS": "200"}
        env.pop("FABULA_TOKEN_COUNTER", None)

        def encodings(*args: str) -> int:
            proc = subprocess.run(
                [sys.executable, "-c", code, *args],
                capture_output=True,
                text=True,
                env=env,
                timeout=120,
            )
            assert proc.returncode == 0, proc.stderr[-2000:]
            return int(proc.stderr.rpartition("ENCODINGS ")[2])

        fabula(redis_url, "new", "--world", "hollow_book", "--id", "tale")
        fabula(redis_url, "run", "tale")
        assert encodings("new", "--world", "hollow_book", "--id", "other") == 0
        assert encodings("pending") == 0
        assert encodings("approve", "tale") == 0
        assert encodings("recall", "tale", "Where is the key?") == 1  # it counts: made then

    def test_help_loads_no_command_module(self, redis_url: str) -> None:
        """`--help` imported every command module (and so the agents' contracts, the
        readers, ...): now it lists every command from the table, with the help each gives
        itself, and loads none; `fabula CMD --help` loads CMD's module and shows its own
        options; a command that ran loads its own module only."""
        modules = loaded(redis_url, "--help")
        commands = sorted(m for m in modules if m.startswith("fabula.graph.cli."))
        assert commands == ["fabula.graph.cli.app"]
        assert "fabula.agents.contracts" not in modules and "pydantic" not in modules
        listed = fabula(redis_url, "--help").stdout
        for name in (*COMMANDS, "bench"):
            assert f"  {name} " in listed, name
        assert "--auto" in fabula(redis_url, "run", "--help").stdout
        assert "check-aof" in fabula(redis_url, "server", "--help").stdout
        fabula(redis_url, "new", "--world", "hollow_book", "--id", "tale")
        ran = loaded(redis_url, "show", "tale", "world")
        assert sorted(m for m in ran if m.startswith("fabula.graph.cli.")) == [
            "fabula.graph.cli.app",
            "fabula.graph.cli.show",
        ]

    def test_the_table_is_each_commands_own_help(self) -> None:
        """Each line of COMMANDS is the short help its command gives itself, and every
        command a module registers is in the table (a new command cannot go unlisted)."""
        import importlib

        import typer

        from fabula.graph.cli.app import _built, app

        for module in {m for m, _ in COMMANDS.values()}:
            importlib.import_module(f"fabula.graph.cli.{module}")
        names = {
            info.name or typer.main.get_command_name(info.callback.__name__)
            for info in app.registered_commands
            if info.callback is not None
        } | {g.name for g in app.registered_groups}
        assert names == set(COMMANDS)
        for name, (_, short) in COMMANDS.items():
            assert _built(name).get_short_help_str(1000) == short, name

    def test_stories_lists_what_the_service_says_waits(self, redis_url: str) -> None:
        """`stories` reads what waits from the checkpoints' keys, every story at once,
        without the turn graph: it names the same draft the service's pending does, and
        the interrupt's slot it reads is LangGraph's own."""
        from langgraph.checkpoint.base import WRITES_IDX_MAP

        from fabula.graph.checkpoint.waiting import INTERRUPT_SLOT

        assert WRITES_IDX_MAP["__interrupt__"] == INTERRUPT_SLOT
        for name in ("one", "two", "three"):
            fabula(redis_url, "new", "--world", "hollow_book", "--id", name)
        fabula(redis_url, "run", "two")
        fabula(redis_url, "fork", "three", "--at", "2", "--name", "side")
        fabula(redis_url, "run", "three", "--branch", "side")
        fabula(redis_url, "run", "one", "--auto")
        listed = json.loads(fabula(redis_url, "stories", "--json").stdout)
        waiting = json.loads(fabula(redis_url, "pending", "--json").stdout)
        assert [(s["id"], s["head"], s["branches"]) for s in listed] == [
            ("one", 4, 1),
            ("three", 3, 2),
            ("two", 3, 1),
        ]
        assert sorted(
            (p["story"], p["branch"], p["turn"], p["pending_id"])
            for s in listed
            for p in s["pending"]
        ) == sorted((w["story"], w["branch"], w["turn"], w["pending_id"]) for w in waiting)
        assert len(waiting) == 2


def test_a_listing_loads_neither_the_agents_nor_the_memory_models() -> None:
    """`fabula stories` took 1.5 s with 20 stories, most of it importing what a listing
    never uses (the agents' contracts, the story store and its models): the listing reads
    the keys, and loads neither."""
    import subprocess
    import sys

    loaded = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys, fabula.graph.service.listing; "
            "print(sorted(m for m in sys.modules if m.startswith(('fabula.agents', "
            "'fabula.memory.store', 'fabula.memory.records', 'langgraph'))))",
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    assert loaded.stdout.strip() == "[]", loaded.stdout


class TestTables:
    def test_stories_and_branches(self, redis_url: str) -> None:
        """`stories` is a table of title, world, turns and pending turns (JSON with --json);
        `show STORY branches` a table of each branch's parent, fork turn and turns."""
        assert fabula(redis_url, "stories").stdout == ""  # none yet: said on stderr
        fabula(redis_url, "new", "--world", "hollow_book", "--id", "tale")
        fabula(redis_url, "fork", "tale", "--at", "2", "--name", "side")
        fabula(redis_url, "run", "tale", "--branch", "side")  # waits for approval
        table = fabula(redis_url, "stories").stdout
        row = next(line for line in table.splitlines() if " tale " in line)
        for cell in ("The Hollow Book", "hollow_book", " 3 ", " 2 ", "side:3"):
            assert cell in row, row
        listed = json.loads(fabula(redis_url, "stories", "--json").stdout)
        assert [(s["id"], s["head"], s["pending"][0]["branch"]) for s in listed] == [
            ("tale", 3, "side")
        ]
        shown = fabula(redis_url, "show", "tale", "branches").stdout
        side = next(line for line in shown.splitlines() if " side " in line)
        assert side.split() == ["│", "side", "│", "main", "│", "2", "│", "2", "│", "│"]
        data = json.loads(fabula(redis_url, "show", "tale", "branches", "--json").stdout)
        assert [(b["branch"], b["fork_turn"]) for b in data] == [("main", None), ("side", 2)]


class TestAskFirst:
    def test_delete_asks_and_new_refuses_an_existing_id(self, redis_url: str) -> None:
        """`delete` asks (no answer: nothing deleted, status 1) unless --yes; an unknown
        story is said before asking; `new` with an existing id says so, nothing changed."""
        fabula(redis_url, "new", "--world", "hollow_book", "--id", "tale")
        again = fabula(redis_url, "new", "--world", "hollow_book", "--id", "tale", check=False)
        assert again.returncode == StoryExists.exit_code and "story 'tale' already" in again.stderr
        asked = fabula(redis_url, "delete", "tale", check=False)
        assert (
            asked.returncode == 1 and "[y/N]" in asked.stderr and "nothing deleted" in asked.stderr
        )
        assert json.loads(fabula(redis_url, "stories", "--json").stdout)[0]["id"] == "tale"
        unknown = fabula(redis_url, "delete", "nosuch", check=False)
        assert unknown.returncode == NotFound.exit_code and "does not exist" in unknown.stderr
        assert "[y/N]" not in unknown.stderr
        assert "deleted tale" in fabula(redis_url, "delete", "tale", "--yes").stdout
        assert json.loads(fabula(redis_url, "stories", "--json").stdout) == []


class TestExportsAWriterUses:
    def test_as_a_character_and_as_epub(self, redis_url: str, tmp_path: Path) -> None:
        """`export --as leo` holds the turns Leo witnessed and none he did not (turn 3:
        Mara hides the key while he is out), in md, json and epub; `--format epub` is a
        valid EPUB holding every turn; --as with a card, or an unknown character, is one
        line and writes nothing."""
        fabula(redis_url, "new", "--world", "hollow_book", "--id", "lived")
        fabula(redis_url, "run", "lived", "--turns", "3", "--auto")
        story = json.loads(fabula(redis_url, "show", "lived", "story", "--json").stdout)
        texts = {t["turn"]: t["text"] for t in story["turns"]}
        hidden = texts[3]
        assert "Mara" in hidden and "hollow book" in hidden

        md = fabula(redis_url, "export", "lived", "--as", "Leo").stdout
        assert md.startswith("# The Hollow Book\n\n*As Leo lived it.*")
        assert texts[1] in md and hidden not in md and "## Turn 3" not in md
        assert "## What Leo believes" in md and "brass_key" not in md
        mara = fabula(redis_url, "export", "lived", "--as", "mara").stdout
        assert "## Turn 3" in mara and "Mara moved the brass key" in mara

        data = json.loads(
            fabula(redis_url, "export", "lived", "--as", "leo", "--format", "json").stdout
        )
        assert (data["character"], data["name"]) == ("leo", "Leo")
        assert 3 not in [t["turn"] for t in data["turns"]] and data["beliefs"]
        assert all(b["sentence"].endswith(".") for b in data["beliefs"])

        book = tmp_path / "leo.epub"
        fabula(redis_url, "export", "lived", "--as", "leo", "--format", "epub", "--out", str(book))
        with zipfile.ZipFile(book) as z:
            assert z.read("mimetype") == b"application/epub+zip"
            leo_book = "".join(z.read(n).decode() for n in z.namelist() if n.endswith(".xhtml"))
        assert "As Leo lived it" in leo_book and html.escape(hidden, quote=False) not in leo_book

        whole = tmp_path / "story.epub"
        fabula(redis_url, "export", "lived", "--format", "epub", "--out", str(whole))
        with zipfile.ZipFile(whole) as z:
            assert z.namelist()[0] == "mimetype"
            chapters = "".join(z.read(n).decode() for n in z.namelist() if n.endswith(".xhtml"))
        assert all(html.escape(t, quote=False) in chapters for t in texts.values())

        for args, status, needle in [
            (("--as", "leo", "--format", "card", "--out", str(tmp_path / "x")), 2, "--as takes"),
            (("--as", "nobody", "--out", str(tmp_path / "y")), NotFound.exit_code, "nobody"),
        ]:
            proc = fabula(redis_url, "export", "lived", *args, check=False)
            assert proc.returncode == status, proc.stderr
            assert needle in proc.stderr and len(proc.stderr.strip().splitlines()) == 1
        assert not (tmp_path / "x").exists() and not (tmp_path / "y").exists()


class TestServe:
    def test_a_busy_port_is_one_line_before_any_url(self, redis_url: str) -> None:
        """Reproduction: `serve` on a port in use announced its URL, then failed in
        uvicorn's words. Now the port is taken first: a busy one is one error line, and no
        URL is announced."""
        with socket.create_server(("127.0.0.1", 0)) as busy:
            port = str(busy.getsockname()[1])
            proc = fabula(redis_url, "serve", "--port", port, check=False)
        assert proc.returncode == ConfigError.exit_code
        assert proc.stderr == (
            f"error: cannot listen on 127.0.0.1:{port}: address already in use "
            "(choose another with --port)\n"
        )
        assert "http://" not in proc.stdout + proc.stderr
