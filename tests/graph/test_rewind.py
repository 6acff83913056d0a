"""Rewind and retcon through the service, the real graph and Redis.

Rewinding a branch to turn T must leave every view of it at every turn up to T exactly as
it was (W, every B[c] with its nested chains, D, H, memories, rosters, texts), keep the
turns after T as a branch of their own that reads exactly as the branch did, and let the
branch go on from T. Editing a committed turn forks at T-1 and commits the new text there.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, TypeVar

import pytest

from fabula.errors import Conflict, EditRefused, InvalidInput
from fabula.graph.service import Fabula
from fabula.memory.projections import (
    mind_as_of,
    project_developments,
    project_hypotheses,
    project_world,
    recall,
)
from fabula.memory.records import Belief, State
from fabula.memory.store import StoryStore
from fabula.settings import Settings
from fabula.testing.cli import editor_script as _editor
from fabula.testing.cli import fabula_editing as _cli
from fabula.worlds.loader import load_world


async def _story(fab: Fabula, story: str, turns: int) -> StoryStore:
    store = fab.store(await fab.create_story(load_world("hollow_book"), story))
    for _ in range(turns):
        assert (await fab.run(store, auto=True)).outcome == "committed"
    return store


R = TypeVar("R", State, Belief)


def _then(record: R, turn: int) -> R:
    """``record`` as it stood at ``turn``: an end after ``turn`` is not known then (a
    rewound branch's record closed after its new head is open again)."""
    if record.valid_to is not None and record.valid_to > turn:
        return record.model_copy(update={"valid_to": None})
    return record


def _mind(
    mind: dict[tuple[str, ...], list[Belief]], turn: int
) -> dict[tuple[str, ...], list[Belief]]:
    """A mind's chains with their beliefs as of ``turn``, by id (the order a hash gives them
    is not part of what a mind holds)."""
    return {
        chain: sorted((_then(b, turn) for b in beliefs), key=lambda b: b.id)
        for chain, beliefs in mind.items()
    }


async def _views(store: StoryStore, turn: int) -> dict[str, Any]:
    """Everything a branch holds as of ``turn``, comparable with ``==``."""
    characters = await store.characters()
    return {
        "W": {
            s: _then(v, turn) for s, v in (await project_world(store, as_of=turn)).states.items()
        },
        "B": {c: _mind(await mind_as_of(store, c, turn), turn) for c in characters},
        "D": await project_developments(store, as_of=turn),
        "H": await project_hypotheses(store, as_of=turn),
        "mem": {c: await recall(store, c, last=10_000, as_of=turn) for c in characters},
        "known": {c: await store.known_entities(c, as_of=turn) for c in characters},
        "text": [t.text for t in await store.turn_texts(0, turn)],
    }


async def _now(store: StoryStore) -> dict[str, Any]:
    """The branch's current views (no ``as_of``: its current hashes)."""
    from fabula.memory.projections import project_beliefs

    characters = await store.characters()
    return {
        "W": (await project_world(store)).states,
        "B": {c: (await project_beliefs(store, c)).beliefs for c in characters},
        "D": await project_developments(store),
        "H": await project_hypotheses(store),
    }


class TestRewind:
    async def test_every_turn_kept_and_continuation_branch(self, redis_url: str) -> None:
        """W/B/D/H (and memories, rosters, texts) at every turn up to T are as before on the
        rewound branch, its current views are those of turn T, the kept branch reads every
        turn as the branch did, and the branch writes on from T."""
        async with Fabula(redis_url, Settings()) as fab:
            store = await _story(fab, "tale", 5)
            head = await store.head()
            before = {t: await _views(store, t) for t in range(head + 1)}
            now_at: dict[int, dict[str, Any]] = {}
            to = head - 3
            done = await fab.rewind(store, to)
            assert (done.head, done.kept, done.kept_head) == (to, f"main-after-{to}", head)
            assert await store.head() == to
            for t in range(to + 1):
                assert await _views(store, t) == before[t], f"turn {t} changed"
            now_at[to] = await _now(store)
            kept = store.on_branch(done.kept)
            for t in range(head + 1):
                assert await _views(kept, t) == before[t], f"kept branch: turn {t} differs"
            # the current views of the branch are what it held at turn T
            assert now_at[to]["W"] == before[to]["W"]
            assert now_at[to]["D"] == before[to]["D"]
            assert now_at[to]["H"] == before[to]["H"]
            # the branch goes on from T
            assert (await fab.run(store, auto=True)).outcome == "committed"
            assert await store.head() == to + 1
            for t in range(to + 1):
                assert await _views(store, t) == before[t]
            for t in range(head + 1):
                assert await _views(kept, t) == before[t]

    async def test_rewind_twice_and_from_a_branch(self, redis_url: str) -> None:
        """A kept branch can itself be rewound, to a turn after its fork."""
        async with Fabula(redis_url, Settings()) as fab:
            store = await _story(fab, "tale", 4)
            head = await store.head()
            before = {t: await _views(store, t) for t in range(head + 1)}
            done = await fab.rewind(store, head - 3, keep="later")
            kept = store.on_branch("later")
            again = await fab.rewind(kept, head - 1, keep="latest")
            assert again.head == head - 1
            for t in range(head):
                assert await _views(kept, t) == before[t]
            for t in range(head + 1):
                assert await _views(store.on_branch("latest"), t) == before[t]
            with pytest.raises(InvalidInput, match="can go back to a turn in"):
                await fab.rewind(kept, done.head - 1)

    async def test_refusals_write_nothing(self, redis_url: str) -> None:
        """A pending turn, a child forked after T, a taken name, a turn out of range: one
        line each, and the story is as it was."""
        async with Fabula(redis_url, Settings()) as fab:
            store = await _story(fab, "tale", 4)
            head = await store.head()
            await fab.fork(store, head - 1, "late")
            snapshot = await _views(store, head)
            with pytest.raises(Conflict, match="branch 'late' was forked from it at turn"):
                await fab.rewind(store, head - 2)
            with pytest.raises(Conflict, match="already has a branch 'late'"):
                await fab.rewind(store, head - 1, keep="late")
            with pytest.raises(InvalidInput, match=r"can go back to a turn in 0\.\."):
                await fab.rewind(store, head)
            assert (await fab.run(store, auto=False)).outcome == "pending"
            with pytest.raises(Conflict, match="awaits a decision"):
                await fab.rewind(store, head - 1)
            assert await store.head() == head
            assert await _views(store, head) == snapshot
            assert set(await store.branches()) == {"main", "late"}


class TestRetcon:
    async def test_edit_committed_turn_forks_before_it(self, redis_url: str) -> None:
        """Editing turn T makes a branch from T-1 whose turn T is the new text, read into
        memory; the branch edited is untouched."""
        async with Fabula(redis_url, Settings()) as fab:
            store = await _story(fab, "tale", 3)
            head = await store.head()
            before = await _views(store, head)
            text = "Leo took the brass key."
            done = await fab.retcon(store, head - 1, text)
            assert (done.branch, done.turn, done.head) == (
                f"main-edit-{head - 1}",
                head - 1,
                head - 1,
            )
            child = store.on_branch(done.branch)
            assert (await child.turn_texts(head - 1, head - 1))[0].text == text
            assert (await project_world(child)).where("brass_key") == "leo"
            for t in range(head - 1):
                assert await _views(child, t) == await _views(store, t)
            assert await _views(store, head) == before

    async def test_refused_edit_leaves_no_branch(self, redis_url: str) -> None:
        """A new text the critic finds an error in is refused, and no branch remains; with
        force it is committed."""
        async with Fabula(redis_url, Settings()) as fab:
            store = await _story(fab, "tale", 2)
            head = await store.head()
            bad = "Bob entered the study. Leo took the desk drawer."
            with pytest.raises(EditRefused, match="nothing was written"):
                await fab.retcon(store, head, bad)
            assert set(await store.branches()) == {"main"}
            with pytest.raises(InvalidInput, match=r"committed turns are 1\.\."):
                await fab.retcon(store, head + 1, "Leo waited.")
            done = await fab.retcon(store, head, bad, force=True)
            assert set(await store.branches()) == {"main", done.branch}


class TestCommandLine:
    def test_rewind_and_edit_a_committed_turn(self, redis_url: str, tmp_path: Path) -> None:
        """`rewind --to` moves the head back and names the branch keeping the rest; a bad
        turn is one line on stderr; `edit --turn T --text` and `edit --turn T` with $EDITOR
        make branches from T-1 holding the new text."""
        assert _cli(redis_url, "new", "--world", "hollow_book", "--id", "tale").returncode == 0
        assert _cli(redis_url, "run", "tale", "--auto", "-n", "2").returncode == 0
        done = _cli(redis_url, "rewind", "tale", "--to", "3", "--json")
        assert done.returncode == 0, done.stderr
        assert json.loads(done.stdout) == {
            "story": "tale",
            "branch": "main",
            "head": 3,
            "kept": "main-after-3",
            "kept_head": 5,
        }
        bad = _cli(redis_url, "rewind", "tale", "--to", "9")
        assert bad.returncode != 0
        assert bad.stderr.strip().count("\n") == 0 and "can go back to a turn in" in bad.stderr
        told = _cli(
            redis_url,
            "edit",
            "tale",
            "--turn",
            "3",
            "--text",
            "Mara went to the hallway.",
            "--json",
        )
        assert told.returncode == 0, told.stderr
        made = json.loads(told.stdout)
        assert (made["branch"], made["turn"], made["head"]) == ("main-edit-3", 3, 3)
        story = json.loads(
            _cli(redis_url, "show", "tale", "story", "--branch", "main-edit-3", "--json").stdout
        )
        assert story["turns"][-1]["text"] == "Mara went to the hallway."
        editor = _editor(tmp_path, "Leo went to the study.")
        edited = _cli(redis_url, "edit", "tale", "--turn", "3", "--name", "mine", editor=editor)
        assert edited.returncode == 0, edited.stderr
        assert "branch mine forks main at turn 2" in edited.stdout
        story = json.loads(
            _cli(redis_url, "show", "tale", "story", "--branch", "mine", "--json").stdout
        )
        assert story["turns"][-1]["text"] == "Leo went to the study."

    def test_edit_a_turn_not_committed(self, redis_url: str, tmp_path: Path) -> None:
        """`edit --turn T` ($EDITOR on the committed turn, read through the reader) for a
        turn the branch has not committed is one line and exit 2; for a story that does
        not exist, exit 3."""
        assert _cli(redis_url, "new", "--world", "hollow_book", "--id", "tale").returncode == 0
        editor = _editor(tmp_path, "Leo went to the study.")
        for turn in ("0", "9"):
            bad = _cli(redis_url, "edit", "tale", "--turn", turn, editor=editor)
            assert bad.returncode == 2, bad.stderr
            assert bad.stderr.strip().count("\n") == 0
            assert f"cannot edit turn {turn} of branch 'main': it is not committed" in bad.stderr
        missing = _cli(redis_url, "edit", "nosuch", "--turn", "1", editor=editor)
        assert missing.returncode == 3 and missing.stderr.strip().count("\n") == 0

    def test_pending_edit_in_editor(self, redis_url: str, tmp_path: Path) -> None:
        """`edit` with neither --text nor --text-file opens $EDITOR on the pending draft;
        what is saved is read and shown for approval again."""
        assert _cli(redis_url, "new", "--world", "hollow_book", "--id", "tale").returncode == 0
        assert _cli(redis_url, "run", "tale").returncode == 0
        editor = _editor(tmp_path, "Mara went to the hallway.")
        edited = _cli(redis_url, "edit", "tale", editor=editor)
        assert edited.returncode == 0, edited.stderr
        assert "Mara went to the hallway." in edited.stdout
        waiting = json.loads(_cli(redis_url, "pending", "--json").stdout)
        assert waiting and waiting[0]["turn"] == 4
