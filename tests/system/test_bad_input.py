"""Bad input, as a careless user gives it: one clear error line, nothing changed.

Each test reproduces a breakage found by trying (a traceback, a swallowed message, nonsense
accepted) and states what happens now. The command line runs in-process (typer's runner).
"""

from __future__ import annotations

import asyncio
import io
import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.main import get_command

from fabula.agents.contracts import Decision
from fabula.cli import app
from fabula.errors import (
    ConfigError,
    EditRefused,
    InvalidInput,
    InvalidWorld,
    LimitExceeded,
    TurnConflict,
)
from fabula.graph.cli.chat import read_line
from fabula.graph.service import Fabula
from fabula.graph.service.responses.turns import DecisionOut
from fabula.graph.service.turns import Turns
from fabula.limits import FILE_BYTES, read_bounded
from fabula.memory.records import slug
from fabula.settings import Settings
from fabula.testing import imports as fx
from fabula.testing.cli import Cli
from fabula.worlds.loader import load_world

HOLLOW = Path(load_world("hollow_book").source).read_text()


@pytest.fixture()
def cli(redis_url: str, tmp_path: Path) -> Cli:
    return Cli(redis_url, tmp_path)


@pytest.fixture()
def tale(cli: Cli) -> Iterator[Cli]:
    """A story `tale` from hollow_book (its opening committed: turns 0 to 3)."""
    assert cli("new", "--world", "hollow_book", "--id", "tale").exit_code == 0
    yield cli


def pack_with(tmp_path: Path, old: str, new: str) -> Path:
    """hollow_book's world.toml with one change, written as a pack folder."""
    assert old in HOLLOW
    folder = tmp_path / "pack"
    folder.mkdir(exist_ok=True)
    (folder / "world.toml").write_text(HOLLOW.replace(old, new, 1))
    return folder


class TestOneLine:
    def test_invalid_story_and_branch_ids(self, tale: Cli) -> None:
        """Was a ValueError traceback; now one line naming the id and what is allowed."""
        assert "story 'My Tale' is not a valid id" in tale.fails("show", "My Tale", "world")
        message = tale.fails("show", "tale", "world", "--branch", "My Branch")
        assert "branch 'My Branch' is not a valid id" in message

    def test_settings_name_the_variable(self, cli: Cli) -> None:
        """Was a traceback (FABULA_REDIS_URL) or a silent acceptance (negative budget)."""
        cases = {
            "FABULA_TOKEN_BUDGET": ("abc", "-5"),
            "FABULA_REDIS_URL": ("notaurl",),
            "FABULA_CONSOLIDATE": ("bogus",),
            "FABULA_MAX_TURN_TEXT": ("0",),
        }
        for variable, values in cases.items():
            for value in values:
                message = cli.fails("stories", **{variable: value})
                assert message.startswith(f"{variable}={value!r} is invalid"), message
                with pytest.raises(ConfigError, match=variable):
                    Settings.from_env({variable: value})

    def test_unusable_home(self, cli: Cli) -> None:
        """Was a FileNotFoundError traceback; now one line naming the folder."""
        env = {"FABULA_REDIS_URL": "", "FABULA_HOME": "/dev/null/fabula"}
        assert "cannot use /dev/null/fabula/redis" in cli.fails("stories", **env)

    def test_as_of_outside_the_story(self, tale: Cli) -> None:
        """Was answered silently (an empty or final view); now refused."""
        for as_of in ("99", "-1"):
            message = tale.fails("show", "tale", "world", "--as-of", as_of)
            assert message.startswith(f"--as-of {as_of} is outside story 'tale'")
        assert tale("show", "tale", "world", "--as-of", "3").exit_code == 0

    def test_export_as_of(self, tale: Cli) -> None:
        """`export --as-of 0` without --as gave the whole story and a turn past the head
        (99999999999999999999) was accepted; now the export is the story as of that turn
        (0: no turn yet), in every format, and a turn outside it is one line."""
        md = tale("export", "tale", "--as-of", "0")
        assert md.exit_code == 0 and md.stdout == "# The Hollow Book\n\n", md.output
        two = tale("export", "tale", "--as-of", "2").stdout
        whole = tale("export", "tale").stdout
        assert two.count("\n\n") == 3 and whole.count("\n\n") == 4 and whole.startswith(two)
        data = json.loads(tale("export", "tale", "--format", "json", "--as-of", "1").stdout)
        assert [t["turn"] for t in data["turns"]] == [1] and data["as_of"] == 1
        assert data["world"]["as_of"] == 1
        for as_of in ("99999999999999999999", "-1", "4"):
            for fmt in ("md", "json", "epub", "lorebook"):
                message = tale.fails("export", "tale", "--format", fmt, "--as-of", as_of)
                assert f"as_of {as_of} is not a turn of branch 'main' (turns 0..3)" in message

    def test_characters_by_name_or_id_in_any_case(self, tale: Cli) -> None:
        """`beliefs Leo` was "no character"; ids and names resolve case-insensitively."""
        outputs = {
            tale("show", "tale", "beliefs", who, "--json").stdout for who in ("leo", "Leo", "LEO")
        }
        assert len(outputs) == 1 and '"holder": [\n    "leo"' in outputs.pop()
        assert tale("show", "tale", "beliefs", "Mara>LEO").exit_code == 0
        assert "no character 'Bob'" in tale.fails("show", "tale", "beliefs", "Bob")

    def test_flags_are_shown_as_flags(self, cli: Cli) -> None:
        """Help showed `--auto <bool>` for flags that take no value; now no flag has one."""
        checked = 0
        for path, command in _commands(get_command(app)):
            help_text = cli(*path, "--help").stdout
            for param in command.params:
                if not getattr(param, "is_flag", False):
                    continue
                for opt in param.opts:
                    line = next(ln for ln in help_text.splitlines() if opt in ln)
                    after = line.split(opt, 1)[1]
                    assert not re.match(r"\s*<", after), f"{path}: {line.strip()}"
                    checked += 1
        assert checked >= 5  # --verbose, run --auto, show and pending --json, edit --force


def _commands(group: Any, path: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], Any]]:
    """Every command of the CLI tree with its path (typer's own click types)."""
    yield path, group
    for name, sub in getattr(group, "commands", {}).items():
        yield from _commands(sub, (*path, name))


class TestLiteral:
    def test_story_text_is_printed_as_written(self, tale: Cli, redis_url: str) -> None:
        """`[/red]` in story text crashed `show story`; `[bold]` was rendered. Now literal."""
        text = "Leo read a note: [/red] and [bold]loud[/bold]. Leo went to the study."
        assert tale("run", "tale").exit_code == 0
        note = Path(tale.env["FABULA_HOME"]) / "note.txt"
        note.write_text(text)
        result = tale("edit", "tale", "--text-file", str(note), "--force")
        assert result.exit_code == 0, result.output
        # the outcome line kept its "[main]" (it was swallowed as a markup tag)
        assert result.stdout.strip() == "tale [main]: committed"
        shown = tale("show", "tale", "story")
        assert shown.exit_code == 0 and text in shown.stdout.replace("\n", " ").replace("  ", " ")

    def test_terminal_escapes_do_not_reach_the_terminal(self, cli: Cli, tmp_path: Path) -> None:
        """A greeting with `ESC]0;PWNED BEL ESC[2J` set the terminal's title and cleared it
        on `fabula show`; C1 controls and a bare ESC passed too. Now every line the command
        line prints is stripped of control sequences: the text stays."""
        card = fx.v1_card()
        card["first_mes"] = "Ada\x1b]0;PWNED\x07\x1b[2J looks\x9b31m up\x1bc. Who\x00 are you?"
        path = fx.write_json(tmp_path / "ada.json", card)
        made = cli("import", str(path), "--id", "isle", "--greeting", "0")
        assert made.exit_code == 0, made.output
        for args in (("show", "isle", "story"), ("show", "isle", "world")):
            shown = cli(*args)
            assert shown.exit_code == 0, shown.output
            assert not re.search(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]", shown.output), repr(shown.output)
            assert "PWNED" not in shown.output
        story = cli("show", "isle", "story").stdout
        assert "Ada looks up. Who are you?" in story
        # an error line that quotes a name is stripped too
        message = cli.fails("show", "isle", "beliefs", "zed\x1b[2J")
        assert "\x1b" not in message and "zed" in message

    def test_markdown_export_escapes_html(self, cli: Cli, tmp_path: Path) -> None:
        """The Markdown export kept raw HTML and `<script>` from a card's name and greeting
        (the studio and the EPUB escape them), and its control characters. Now the text is
        escaped (shown as written by any Markdown reader), the controls dropped, for the
        story and for the story as a character lived it."""
        card = fx.v1_card()
        card["name"] = "Ada <b>Bold</b>"
        card["first_mes"] = "<script>alert(1)</script> Ada & co\x1b[2J look <img src=x>."
        path = fx.write_json(tmp_path / "ada.json", card)
        assert cli("import", str(path), "--id", "isle", "--greeting", "0").exit_code == 0
        for args in ((), ("--as", "Ada <b>Bold</b>")):
            md = cli("export", "isle", "--format", "md", *args)
            assert md.exit_code == 0, md.output
            assert "<script>" not in md.stdout and "<img" not in md.stdout, md.stdout
            assert "<b>" not in md.stdout and "\x1b" not in md.stdout
            assert "Ada &lt;b&gt;Bold&lt;/b&gt;" in md.stdout
        story = cli("export", "isle", "--format", "md").stdout
        assert "&lt;script&gt;alert(1)&lt;/script&gt; Ada &amp; co[2J look &lt;img" in story


class TestWorldPacks:
    def test_containment_cycle(self, tmp_path: Path) -> None:
        """A drawer in the book and the book in the drawer was accepted; now refused."""
        folder = pack_with(
            tmp_path,
            'location = "study"\ncontainer = true\ndescription = "The top drawer',
            'location = "hollow book"\ncontainer = true\ndescription = "The top drawer',
        )
        text = (
            (folder / "world.toml")
            .read_text()
            .replace(
                'location = "study"\ncontainer = true\ndescription = "A thick atlas',
                'location = "desk drawer"\ncontainer = true\ndescription = "A thick atlas',
            )
        )
        (folder / "world.toml").write_text(text)
        with pytest.raises(InvalidWorld, match="containment cycle") as info:
            load_world(folder)
        assert info.value.context["field"] == "objects[0].location"
        assert info.value.context["path"] == str(folder / "world.toml")

    def test_names_in_any_alphabet_keep_their_letters(self, tmp_path: Path) -> None:
        """A Cyrillic `Аnn` became the id `nn`, `Zoë` `zo`, a name in Chinese nothing: a
        letter outside ASCII was dropped. Now it is transliterated (Cyrillic and Greek),
        its accent dropped, or, with no ASCII form, written as its code point; an ASCII
        name's id is what it was."""
        folder = tmp_path / "names"
        folder.mkdir()
        names = {
            "Аnn": "ann",
            "Zoë Straße": "zoe_strasse",
            "Ёжик": "ezhik",
            "Σοφία": "sofia",
            "王 Wei": "u738b_wei",
            "Sam O'Neil": "sam_o_neil",
        }
        people = "".join(f'[[characters]]\nname = "{name}"\nlocation = "hall"\n' for name in names)
        (folder / "world.toml").write_text(
            'id = "names"\ntitle = "Names"\npremise = "All wait."\n'
            '[[places]]\nname = "hall"\n' + people
        )
        pack = load_world(folder)
        assert [slug(c.name) for c in pack.characters] == list(names.values())

    def test_bad_rules(self, tmp_path: Path) -> None:
        """[rules] with a wrong type or an unknown rule names the file and the field."""
        for old, new, field in (
            ("open_containers = false", 'open_containers = "maybe"', "rules.open_containers"),
            ("open_containers = false", "telepathy = true", "rules.telepathy"),
        ):
            with pytest.raises(InvalidWorld) as info:
                load_world(pack_with(tmp_path, old, new))
            assert info.value.context["field"] == field
            assert str(info.value).startswith(str(tmp_path / "pack" / "world.toml"))

    @pytest.mark.parametrize(
        ("sentence", "why"),
        [
            ("Leo put the study in the desk drawer.", "study is a place"),
            ("Bob entered the study.", "Bob is not a character of this story"),
            ("Leo took the desk drawer.", "fixture of its place"),
        ],
    )
    async def test_opening_validated_like_model_output(
        self, redis_url: str, tmp_path: Path, sentence: str, why: str
    ) -> None:
        """Such openings were committed; now refused with file and field, nothing kept."""
        folder = pack_with(tmp_path, '"Leo went to the hallway.",', f'"{sentence}",')
        async with Fabula(redis_url, Settings(home=tmp_path)) as fab:
            with pytest.raises(InvalidWorld, match=why) as info:
                await fab.create_story(load_world(folder), "bad")
            assert info.value.context["field"] == "opening.turns[1]"
            assert str(info.value).startswith(str(folder / "world.toml"))
            assert "bad" not in await fab.stories()


class TestEdits:
    async def test_an_edit_goes_through_the_critic(self, redis_url: str, tmp_path: Path) -> None:
        """An edit introducing a character out of nowhere was committed unchecked; now the
        findings refuse it (nothing written) unless the human forces it."""
        async with Fabula(redis_url, Settings(home=tmp_path)) as fab:
            store = fab.store(await fab.create_story("hollow_book", "ed"))
            assert (await fab.run(store, auto=False)).outcome == "pending"
            head = await store.head()
            bad = Decision(action="edit", text="Bob entered the study. Leo took the desk drawer.")
            with pytest.raises(EditRefused) as info:
                await fab.decide(store, bad)
            assert "Bob is not a character" in str(info.value)
            assert "fixture of its place" in str(info.value)
            assert await store.head() == head and await fab.read(store).pending() is not None
            assert (await fab.decide(store, bad, force=True)).outcome == "committed"
            assert await store.head() == head + 1


class TestDemo:
    def test_demo_leaves_a_users_story_alone(self, cli: Cli) -> None:
        """`fabula demo` deleted a user's own story named demo; now it refuses, and
        re-creates only a story it made itself."""
        assert cli("new", "--world", "hollow_book", "--id", "demo").exit_code == 0
        before = cli("show", "demo", "story", "--json").stdout
        assert "did not make" in cli.fails("demo", "--turns", "0")
        assert cli("show", "demo", "story", "--json").stdout == before
        assert cli("delete", "demo", "--yes").exit_code == 0
        assert cli("demo", "--turns", "0").exit_code == 0
        assert cli("demo", "--turns", "0").exit_code == 0  # its own: recreated


class TestDecisionRace:
    @pytest.mark.parametrize("first", ["approve", "reject"])
    async def test_one_decision_wins_the_other_says_so(
        self, redis_url: str, tmp_path: Path, first: str
    ) -> None:
        """Approve and reject racing in one process: reject reported `pending` while
        nothing was pending. Now exactly one acts and the other raises TurnConflict."""
        async with Fabula(redis_url, Settings(home=tmp_path)) as fab:
            store = fab.store(await fab.create_story("hollow_book", "race", opening=False))
            assert (await fab.run(store, auto=False)).outcome == "pending"
            decisions = {
                "approve": Decision(action="approve"),
                "reject": Decision(action="reject", note="no"),
            }
            order = [first, *(d for d in decisions if d != first)]
            results = await asyncio.gather(
                *(fab.decide(store, decisions[d]) for d in order), return_exceptions=True
            )
            outcomes = {
                d: r.outcome if isinstance(r, DecisionOut) else r
                for d, r in zip(order, results, strict=True)
            }
            winners = [d for d, r in outcomes.items() if isinstance(r, str)]
            losers = [d for d, r in outcomes.items() if isinstance(r, TurnConflict)]
            assert len(winners) == 1 and len(losers) == 1, outcomes
            if winners == ["approve"]:
                assert outcomes["approve"] == "committed" and await store.head() == 1
                assert await fab.read(store).pending() is None
            else:
                assert outcomes["reject"] == "pending" and await store.head() == 0
                assert await fab.read(store).pending() is not None

    async def test_an_auto_run_racing_an_approval_waits_for_it(
        self, redis_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """`run --auto` while another process approves the waiting turn: the run found the
        draft waiting, stopped, and reported its id as the one to approve, stale once the
        approval landed. Now a run that finds a decision of the turn in flight waits for
        it, then writes on from what it left."""
        async with (
            Fabula(redis_url, Settings(home=tmp_path)) as fab,
            Fabula(redis_url, Settings(home=tmp_path)) as other,
        ):
            store = fab.store(await fab.create_story("hollow_book", "race", opening=False))
            assert (await fab.run(store, auto=False)).outcome == "pending"
            seen = await fab.read(store).pending()
            assert seen is not None
            drive = other._turns.drive
            deciding = asyncio.Event()

            async def slow_drive(*args: Any, **kwargs: Any) -> Any:
                deciding.set()  # the decision holds the turn's lock from here
                await asyncio.sleep(0.5)
                return await drive(*args, **kwargs)

            monkeypatch.setattr(other._turns, "drive", slow_drive)
            approving = asyncio.create_task(
                other.decide(other.store("race"), Decision(action="approve"), expect=seen.id)
            )
            await deciding.wait()
            ran = await fab.run(store, auto=True)
            assert (await approving).outcome == "committed"
            assert ran.outcome == "committed" and ran.written == 1, ran
            assert ran.pending is None and ran.head == seen.turn + 1
            assert await fab.read(store).pending() is None

    async def test_a_rewind_right_after_an_approval_is_told(
        self, redis_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """`approve --choose 2` racing `rewind --to 3` (another process, once the turn is
        committed): the approval died on an IndexError, the choice unrecorded. Now it says
        the turn was committed and which branch holds it (the rewind's kept branch), and
        the choice is recorded there."""
        async with (
            Fabula(redis_url, Settings(home=tmp_path)) as fab,
            Fabula(redis_url, Settings(home=tmp_path)) as other,
        ):
            store = fab.store(await fab.create_story("hollow_book", "race"))
            drafts = await fab.alternatives(store, 2)
            assert [d.id for d in drafts.drafts] == ["4.d1", "4.d2"]
            drive = fab._turns.drive

            async def drive_then_rewind(*args: Any, **kwargs: Any) -> Any:
                outcome = await drive(*args, **kwargs)
                await other.rewind(other.store("race"), 3)  # lands between commit and reply
                return outcome

            monkeypatch.setattr(fab._turns, "drive", drive_then_rewind)
            done = await fab.decide(store, Decision(action="approve", choice="2"))
            assert done.outcome == "committed" and done.head == 3
            assert done.moved_to == "main-after-3"
            kept = store.on_branch("main-after-3")
            assert (await kept.turn_texts(4, 4))[0].text == drafts.drafts[1].draft
            assert (await fab.drafts(kept, 4)).chosen == "4.d2"

    def test_the_command_line_says_where_the_turn_went(self, tale: Cli) -> None:
        """The same told on the command line: committed, and on which branch it is now."""
        assert tale("run", "tale", "--alternatives", "2").exit_code == 0
        original = Turns.drive

        async def drive_then_rewind(self: Turns, *args: Any, **kwargs: Any) -> Any:
            outcome = await original(self, *args, **kwargs)
            core = self.core
            assert isinstance(core, Fabula)
            await core.rewind(core.store("tale"), 3)
            return outcome

        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(Turns, "drive", drive_then_rewind)
            done = tale("approve", "tale", "--choose", "2")
        assert done.exit_code == 0, done.output
        assert "committed" in done.stdout and "main-after-3" in done.stdout


class TestChatLines:
    def test_an_overlong_line_is_refused_and_the_chat_goes_on(self, tale: Cli) -> None:
        """A chat line over 4,000 characters ended the session (the lines after it were
        never asked); now that line is refused in one line and the next is answered. The
        exit status says a line was refused."""
        lines = ["Where is the brass key?", "x" * 4001, "Where is Leo?", ""]
        done = tale.runner.invoke(
            app, ["chat", "tale", "leo"], input="\n".join(lines), env=tale.env
        )
        assert done.exit_code == 2, done.output
        assert done.stderr.count("error: ") == 1 and "at most 4000 are read" in done.stderr
        assert "Traceback" not in done.output
        assert done.stdout.count("Leo:") == 2, done.stdout


class TestConflictsExitFour:
    def test_a_state_that_refuses_is_a_conflict(self, tale: Cli) -> None:
        """A refusal by the story's state (a turn awaiting a decision, a child branch that
        reads the turns, a branch name taken) exited 2, as bad input; now 4, a conflict."""
        assert tale("fork", "tale", "--at", "2", "--name", "late").exit_code == 0
        cases = [
            (("rewind", "tale", "--to", "1"), "branch 'late' was forked from it"),
            (("rewind", "tale", "--to", "2", "--keep", "late"), "already has a branch 'late'"),
            (("fork", "tale", "--at", "1", "--name", "late"), "already has a branch 'late'"),
            (("run", "tale"), None),  # turn 4 awaits a decision
            (("rewind", "tale", "--to", "2"), "awaits a decision"),
        ]
        for args, needle in cases:
            done = tale(*args)
            if needle is None:
                assert done.exit_code == 0, done.output
                continue
            assert done.exit_code == 4, (args, done.exit_code, done.output)
            assert done.stderr.startswith("error: ") and needle in done.stderr, done.stderr

    def test_a_rewind_to_no_turn_says_why(self, tale: Cli) -> None:
        """`rewind --to -1` said "it can go back to a turn in none"; now why, in one line."""
        message = tale.fails("rewind", "tale", "--to", "-1")
        assert "to turn -1: turns are numbered from 0" in message
        assert tale("fork", "tale", "--at", "3", "--name", "b").exit_code == 0
        message = tale.fails("rewind", "tale", "--branch", "b", "--to", "2")
        assert "it has no turn of its own before its head to go back to" in message
        assert "none" not in message
        assert "can go back to a turn in 0..2" in tale.fails("rewind", "tale", "--to", "3")

    def test_a_branch_moved_while_it_was_rewound(
        self, tale: Cli, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """Another process made the rewind's kept branch while the rewind read the minds:
        "moved while it was rewound" exited 2; now 4, and nothing changed."""
        from fabula.memory import rewind as rewinding

        read_mind = rewinding._mind
        raced: list[bool] = []

        async def mind_then_race(store: Any, *args: Any) -> Any:
            if not raced:
                raced.append(True)
                async with Fabula(tale.env["FABULA_REDIS_URL"], Settings()) as other:
                    await other.fork(other.store("tale"), 1, "main-after-2")
            return await read_mind(store, *args)

        monkeypatch.setattr(rewinding, "_mind", mind_then_race)
        done = tale("rewind", "tale", "--to", "2")
        assert done.exit_code == 4, done.output
        assert "moved while it was rewound" in done.stderr
        head = tale("show", "tale", "story", "--json")
        assert '"head": 3' in head.stdout


class TestBenchData:
    @pytest.mark.parametrize(
        ("bench", "text", "needle"),
        [
            ("locomo", '{"a": 1}', "not a LoCoMo file: expected a non-empty list"),
            ("locomo", '[{"sample_id": "x"}]', "at conversation 0: no 'conversation' field"),
            ("locomo", "not json", "not a LoCoMo file: not JSON"),
            (
                "locomo",
                '[{"sample_id": "x", "conversation": {"speaker_a": "A"}, "qa": []}]',
                "no 'session_1' field",
            ),
            ("longstory", '{"type": "turn", "turn": "x", "text": "t"}', "line 1: ValueError"),
            ("longstory", '{"type": "meta"}\n[1]', "line 2: not a JSON object"),
            ("longstory", '{"kind": "turn"}', "line 1: no 'type' field"),
            ("hitom", '{"story": "1 Ann."}', "Hi-ToM file at line 1: no 'question' field"),
            ("hitom", "\xff", "not UTF-8"),
            ("tomi", "1 Ann is here.\n2 Where is Ann?", "no trace beside"),
            ("opentom", "[1]", "not an OpenToM file: not an object of stories"),
            ("opentom", '{"k": {"narrative": "x"}}', "at story k: field 'plot_info' is not"),
        ],
    )
    def test_a_malformed_file_is_one_line(
        self, cli: Cli, tmp_path: Path, bench: str, text: str, needle: str
    ) -> None:
        """Were tracebacks (KeyError, TypeError, JSONDecodeError) from deep in a loader;
        now one line naming the file, the kind it should be, where and what is wrong."""
        path = tmp_path / "data.json"
        if text == "\xff":
            path.write_bytes(b"\xff\xfe")
        else:
            path.write_text(text)
        assert needle in cli.fails("bench", bench, str(path))


class TestNumbersAndViews:
    @pytest.mark.parametrize(
        ("args", "needle"),
        [
            (("bench", "scale", "--turns", "0"), "--turns needs positive numbers"),
            (
                ("bench", "scale", "--turns", "10", "--characters", "0"),
                "--characters needs positive numbers",
            ),
            (("bench", "scale", "--turns", "ten"), "expected numbers separated by commas"),
        ],
    )
    def test_bench_numbers_are_checked_before_anything_runs(
        self, cli: Cli, args: tuple[str, ...], needle: str
    ) -> None:
        """Were tracebacks from inside the run (max() of an empty list, an index out of
        range); now a usage error naming the option."""
        result = cli(*args)
        assert result.exit_code == 2 and needle in result.output, result.output
        assert "Traceback" not in result.output

    def test_views_of_now_refuse_as_of(self, tale: Cli) -> None:
        """`show ... --as-of` was silently ignored by the views that only know the branch as
        it is now (the hierarchy, the branches, the usage): now one line says so."""
        for what in ("scenes", "plot", "branches", "usage"):
            assert f"show {what} has no --as-of" in tale.fails("show", "tale", what, "--as-of", "1")
        assert tale("show", "tale", "world", "--as-of", "1").exit_code == 0


class TestEnvironment:
    """Settings that cannot work are one line each, before anything starts."""

    def test_cluster_declared_on_the_embedded_socket(self, tmp_path: Path) -> None:
        """FABULA_REDIS_CLUSTER=yes with the embedded server (a unix socket, never a
        cluster) was a 76-line traceback."""
        cli = Cli("", tmp_path)
        cli.env.pop("FABULA_REDIS_URL")
        message = cli.fails("stories", FABULA_REDIS_CLUSTER="yes")
        assert "FABULA_REDIS_CLUSTER" in message and "unix socket" in message
        assert not (tmp_path / "redis").exists()  # refused before any server was started

    def test_a_cassette_where_nothing_can_be_written(self, cli: Cli) -> None:
        """FABULA_MODEL_CASSETTE=/proc/x/y was a 54-line traceback."""
        message = cli.fails("stories", FABULA_MODEL_CASSETTE="/proc/x/y")
        assert "FABULA_MODEL_CASSETTE" in message and "/proc/x/y" in message

    @pytest.mark.parametrize("home", ["", "   ", "/tmp/caf\udce9"])
    def test_an_empty_or_undecodable_home_is_refused(self, tmp_path: Path, home: str) -> None:
        """An empty or non-UTF-8 FABULA_HOME silently started a new server elsewhere."""
        cli = Cli("", tmp_path)
        cli.env.pop("FABULA_REDIS_URL")
        assert "FABULA_HOME" in cli.fails("stories", FABULA_HOME=home)
        with pytest.raises(ConfigError, match="FABULA_HOME"):
            Settings.from_env({"FABULA_HOME": home})


class TestDeepInput:
    def test_a_deeply_nested_pack_is_one_line(self, tmp_path: Path) -> None:
        """A 200 KB world.toml nested 100,000 levels deep was a 2,981-line RecursionError."""
        folder = tmp_path / "deep"
        folder.mkdir()
        (folder / "world.toml").write_text("x = " + "[" * 100_000 + "]" * 100_000 + "\n")
        with pytest.raises(InvalidWorld, match="nested too deeply") as info:
            load_world(folder)
        assert "\n" not in str(info.value)


class TestSameLimitsAsTheApi:
    def test_run_reject_and_expect_bounds(self, tale: Cli) -> None:
        """`--turns`, `--direction`, `--note` and `--expect` are bounded as the API bounds
        them (graph/service/pending.py), one line each, nothing written."""
        from fabula.graph.service.pending import (
            MAX_DIRECTION_CHARS,
            MAX_NOTE_CHARS,
            MAX_PENDING_ID_CHARS,
            MAX_RUN_TURNS,
        )

        assert "--turns" in tale("run", "tale", "--turns", str(MAX_RUN_TURNS + 1)).output
        long = "d" * (MAX_DIRECTION_CHARS + 1)
        assert "direction" in tale.fails("run", "tale", "--direction", long)
        assert tale("run", "tale").exit_code == 0
        note = "n" * (MAX_NOTE_CHARS + 1)
        assert "note" in tale.fails("reject", "tale", "--note", note)
        expect = "4." + "x" * MAX_PENDING_ID_CHARS
        assert "expect" in tale.fails("approve", "tale", "--expect", expect)
        assert tale("approve", "tale").exit_code == 0


def _zeros_charx(name: str, size: int) -> bytes:
    """A CHARX of a card and ``size`` bytes of zeros (deflated: a thousandth of that)."""
    import io
    import json
    import zipfile

    from fabula.testing import imports as fx

    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("card.json", json.dumps(fx.v3_card(name)))
        z.writestr("assets/pad.bin", b"\0" * size)
    return buf.getvalue()


def _story_keys(redis_url: str, story: str) -> list[str]:
    from fabula.memory.connection import connect

    found = connect(redis_url).scan_iter(match=f"*{{{story}}}*")
    return [k for k in found if not k.endswith(":deleted")]


class TestHostileImports:
    def test_an_archive_that_inflates(self, cli: Cli, redis_url: str, tmp_path: Path) -> None:
        """A 30 KB CHARX of 30 MB of zeros: was unpacked and stored whole (a 127 MB one
        peaked at 1.15 GB and put 202 MB into Redis); now one line, nothing written."""
        bomb = tmp_path / "bomb.charx"
        bomb.write_bytes(_zeros_charx("Bomb", 30_000_000))
        assert "would unpack to 3000" in cli.fails("import", str(bomb), "--id", "bomb")
        assert _story_keys(redis_url, "bomb") == []

    def test_deep_json_and_deep_extensions(self, cli: Cli, redis_url: str, tmp_path: Path) -> None:
        """`[` x 200,000 was a RecursionError traceback; a card whose extensions nest 600
        deep crashed `import --id` and left a hidden unfinished story."""
        import json

        from fabula.testing import imports as fx

        deep = tmp_path / "deep.json"
        deep.write_text("[" * 200_000)
        result = cli("import", str(deep), "--id", "deep")
        assert result.exit_code == InvalidInput.exit_code
        assert "nests 200000 levels deep" in cli.fails("import", str(deep), "--id", "deep")
        card = fx.v2_card()
        inner = card["data"]["extensions"]
        for _ in range(600):
            inner["d"] = {}
            inner = inner["d"]
        (tmp_path / "ext.json").write_text(json.dumps(card))
        assert "levels deep" in cli.fails("import", str(tmp_path / "ext.json"), "--id", "ext")
        assert _story_keys(redis_url, "ext") == [] and _story_keys(redis_url, "deep") == []

    def test_a_card_export_of_a_jpeg_picture(self, cli: Cli, tmp_path: Path) -> None:
        """A role whose icon.png is a JPEG (BookWorld's often are): `export --format card`
        was a PngError traceback; now one line pointing at charx, which carries it."""
        import zipfile

        from fabula.testing import imports as fx

        path = fx.bookworld_preset(tmp_path / "p")
        (tmp_path / "p/data/roles/isle/Ann-en/icon.png").write_bytes(fx.TINY_JPEG)
        assert cli("import", str(path), "--id", "isle").exit_code == 0
        message = cli.fails("export", "isle", "--format", "card", "--character", "Ann")
        assert "picture is a JPEG" in message and "--format charx" in message
        out = tmp_path / "ann.charx"
        made = cli("export", "isle", "--format", "charx", "--character", "Ann", "--out", str(out))
        assert made.exit_code == 0
        with zipfile.ZipFile(out) as z:
            assert z.read("assets/icon/images/main.jpeg") == fx.TINY_JPEG
            assert sorted(z.namelist()) == ["assets/icon/images/main.jpeg", "card.json"]


class TestBoundedReads:
    """Issue 45, High 5: `edit --text-file /dev/zero` read without end (23 GB in 60 s, until
    the process was killed). Every file a command reads is read to its bound and no more."""

    def test_an_endless_text_file_is_refused_in_one_line(self, tale: Cli, redis_url: str) -> None:
        """In a process of its own with 4 GB of address space: before, a MemoryError
        traceback after filling it; now one line at once, exit 2, the draft unchanged."""
        env = {**tale.env, "PATH": os.environ.get("PATH", "")}
        script = (
            f"ulimit -v 4000000; exec {sys.executable} -m fabula edit tale --text-file /dev/zero"
        )
        done = subprocess.run(
            ["bash", "-c", script], capture_output=True, text=True, env=env, timeout=120
        )
        assert done.returncode == 2, done.stderr[-500:]
        assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr
        assert "/dev/zero: a turn's text may be at most" in done.stderr
        assert "FABULA_MAX_TURN_TEXT" in done.stderr

    def test_a_file_past_its_bound_is_read_to_one_byte_more(self, tmp_path: Path) -> None:
        big = tmp_path / "big.txt"
        big.write_bytes(b"a" * 101)
        assert read_bounded(big, 101) == b"a" * 101
        with pytest.raises(LimitExceeded, match=r"big.txt: a pack may be at most 100 bytes"):
            read_bounded(big, 100, "a pack")
        with pytest.raises(LimitExceeded):
            read_bounded(Path("/dev/zero"), 1000)
        with pytest.raises(InvalidInput, match="cannot read"):
            read_bounded(tmp_path, 10)

    def test_a_world_pack_past_its_bound(self, cli: Cli, tmp_path: Path) -> None:
        """A world.toml is read to FILE_BYTES, never whole."""
        folder = pack_with(tmp_path, "[[places]]", "# " + "x" * FILE_BYTES + "\n[[places]]")
        message = cli.fails("new", "--world", str(folder), "--id", "big")
        assert "world.toml: a world pack may be at most" in message

    def test_a_chat_line_without_end_is_read_in_bounded_memory(self) -> None:
        stream = io.StringIO("x" * 200_000 + "\nWhere is Leo?\n")
        assert read_line(stream, 1000) == "x" * 1000
        assert read_line(stream, 1000) == "Where is Leo?\n"
        assert read_line(stream, 1000) == ""


class TestWhoAndWhich:
    """Issue 45, lows: a blank ``--as`` recalled as the writer (everything); ``approve
    --expect nonsense`` said "turn ? was already decided"."""

    def test_a_blank_as_is_refused_an_unknown_one_names_those_there(self, tale: Cli) -> None:
        assert "not an empty one" in tale.fails("recall", "tale", "where", "--as", " ")
        message = tale.fails("recall", "tale", "where", "--as", "nobody")
        assert "no character 'nobody'" in message and "leo, mara" in message
        assert "leo, mara" in tale.fails("export", "tale", "--as", "nobody")

    def test_an_expect_that_is_no_draft_id_is_unknown(self, tale: Cli) -> None:
        assert tale("run", "tale").exit_code == 0
        result = tale("approve", "tale", "--expect", "nonsense")
        assert result.exit_code == 3, result.stderr
        assert "no draft 'nonsense' in story 'tale'" in result.stderr
        assert "the one waiting is 4." in result.stderr
        shown = tale("show", "tale", "story")  # nothing was committed
        assert shown.exit_code == 0 and "Leo went to the study." not in shown.stdout
