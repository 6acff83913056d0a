"""``fabula write``: one terminal session, driven through its standard input.

Each test runs the real command in a subprocess against the test Redis and types its keys:
reject (no note), approve, a direction for the next turn, alternatives and a choice, edit in
$EDITOR, quit; a second session resumes the turn the first left pending; Ctrl-C at the
prompt leaves it pending, decided nothing.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from fabula.testing.cli import editor_script as _editor
from fabula.testing.cli import fabula_editing as _cli


def _write(
    redis_url: str, keys: str, *, editor: str | None = None
) -> subprocess.CompletedProcess[str]:
    """``fabula write tale`` with ``keys`` typed into its standard input."""
    return _cli(redis_url, "write", "tale", editor=editor, input=keys, timeout=300)


def _story(redis_url: str) -> dict[str, object]:
    shown: dict[str, object] = json.loads(_cli(redis_url, "show", "tale", "story", "--json").stdout)
    return shown


def _waiting(redis_url: str) -> list[dict[str, object]]:
    found: list[dict[str, object]] = json.loads(_cli(redis_url, "pending", "--json").stdout)
    return found


class TestWrite:
    def test_one_session_every_key(self, redis_url: str, tmp_path: Path) -> None:
        """An unknown key lists the keys; r (no note) writes the turn again; a commits it; d
        steers the next; n 2 then 2 commits the second of two drafts; e reads the text the
        editor leaves and shows it with its findings; q ends, the edited turn pending."""
        assert _cli(redis_url, "new", "--world", "hollow_book", "--id", "tale").returncode == 0
        editor = _editor(tmp_path, "Mara went to the study.")
        keys = "x\nr\n\na\nd\nMara goes to the study\nn\n2\n2\ne\nq\n"
        done = _write(redis_url, keys, editor=editor)
        assert done.returncode == 0, done.stderr
        said = done.stdout
        assert "keys: [a]pprove [e]dit" in said
        assert "turn 4: committed" in said and "turn 5: committed (draft 2)" in said
        assert "next turn: Mara goes to the study" in said
        assert said.count("turn 4 (draft") >= 2  # the rejected draft, then the new one
        texts = [t["text"] for t in _story(redis_url)["turns"]]  # type: ignore[index]
        assert len(texts) == 5  # turns 1..5: 4 and 5 committed here
        waiting = _waiting(redis_url)
        assert [w["turn"] for w in waiting] == [6]
        assert "Mara went to the study." in said.rsplit("turn 6 (draft", 1)[1]

    def test_resumes_the_pending_turn_and_ctrl_c_loses_nothing(self, redis_url: str) -> None:
        """A session shows the turn another command left pending; Ctrl-C at the prompt
        ends it (status 130) with the turn still pending and nothing committed; end of input
        is q."""
        assert _cli(redis_url, "new", "--world", "hollow_book", "--id", "tale").returncode == 0
        assert _cli(redis_url, "run", "tale").returncode == 0
        pending = _waiting(redis_url)[0]["pending_id"]
        env = {**os.environ, "FABULA_REDIS_URL": redis_url, "COLUMNS": "200"}
        proc = subprocess.Popen(
            [sys.executable, "-m", "fabula", "write", "tale"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        assert proc.stdout is not None
        seen = ""
        deadline = time.monotonic() + 120
        while "[q]uit > " not in seen and time.monotonic() < deadline:
            seen += proc.stdout.read(1)
        assert f"turn 4 (draft {pending})" in seen
        proc.send_signal(signal.SIGINT)
        rest, _ = proc.communicate(timeout=60)
        assert proc.returncode == 130, rest
        assert "a pending turn waits as it was" in rest
        assert [w["pending_id"] for w in _waiting(redis_url)] == [pending]
        assert len(_story(redis_url)["turns"]) == 3  # type: ignore[arg-type]
        ended = _write(redis_url, "")
        assert ended.returncode == 0 and f"turn 4 (draft {pending})" in ended.stdout
        assert "the session ended" in ended.stdout

    def test_plain_words_are_refused_at_once_and_the_loop_goes_on(self, redis_url: str) -> None:
        """A direction the offline planner cannot read ("make it more tense") was accepted,
        then the loop died with status 2 after the next approval; a reject note it cannot
        read was taken and ignored. Now each is refused in one line when it is typed (the
        turn waits as it was), the loop goes on, and a note it reads steers the redraft."""
        assert _cli(redis_url, "new", "--world", "hollow_book", "--id", "tale").returncode == 0
        keys = "d\nmake it more tense\nr\nmake it more tense\nr\nMara goes to the hallway\na\nq\n"
        done = _write(redis_url, keys)
        assert done.returncode == 0, done.stderr
        refused = [line for line in done.stderr.splitlines() if line.startswith("error:")]
        assert len(refused) == 2, done.stderr
        assert "cannot read the direction 'make it more tense'" in refused[0]
        assert "cannot read the note 'make it more tense'" in refused[1]
        said = done.stdout
        assert "next turn: make it more tense" not in said
        first, *redrafts = said.split("turn 4 (draft")[1:]
        assert "Mara went to the hallway" not in first
        assert redrafts[0].split("\n")[0] == first.split("\n")[0]  # refused: the same draft
        assert "Mara went to the hallway" in redrafts[-1]  # the note steered the redraft
        assert "turn 4: committed" in said and "turn 5 (draft" in said
        assert [w["turn"] for w in _waiting(redis_url)] == [5]
