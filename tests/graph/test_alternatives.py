"""Alternative drafts of a turn: written side by side, one chosen from any process, all kept.

Offline, the drafts really differ (each is planned with the planner's next choice of anchor
and cast); choosing one commits exactly its delta — the changes it was shown with — and the
others stay with the turn.
"""

from __future__ import annotations

import json

import pytest

from fabula.agents.contracts import Decision
from fabula.errors import InvalidInput
from fabula.graph.service import Fabula
from fabula.memory.delta import TurnDelta
from fabula.memory.drafts import read_drafts
from fabula.memory.projections import project_beliefs, project_world
from fabula.settings import Settings
from fabula.testing.cli import fabula_editing as _cli


class TestAlternatives:
    async def test_drafts_differ_choose_the_second(self, redis_url: str) -> None:
        """Asked for three drafts, hollow_book's turn 4 has two different ones (Leo's step
        and Mara's: every other plan writes one of them again, and the note says so), each
        with findings and changes; approving the second from another application commits
        its text and exactly the changes it showed; both stay with the turn, the second
        marked chosen."""
        async with Fabula(redis_url, Settings()) as fab:
            store = fab.store(await fab.create_story("hollow_book", "tale"))
            drafts = await fab.alternatives(store, 3)
            assert [d.id for d in drafts.drafts] == ["4.d1", "4.d2"]
            assert [d.draft for d in drafts.drafts] == [
                "Leo went to the study.",
                "Mara went to the hallway.",
            ]
            assert drafts.note is not None and "2 different drafts of 3" in drafts.note
            assert drafts.pending_id == (await fab.read(store).pending()).id  # type: ignore[union-attr]
            assert all(d.changes.events for d in drafts.drafts)
            shown = drafts.drafts[1]
        async with Fabula(redis_url, Settings()) as other:  # another process's application
            again = other.store("tale")
            assert (await other.drafts(again)).drafts == drafts.drafts  # the same, anywhere
            done = await other.decide(again, Decision(action="approve", choice="2"))
            assert done.outcome == "committed" and done.head == 4
            assert (await again.turn_texts(4, 4))[0].text == shown.draft
            # exactly the delta it was shown with: its states are W's, its beliefs each B's
            delta = TurnDelta.model_validate((await read_drafts(again, 4)).options[1].delta)
            assert delta.text == shown.draft and delta.states and delta.beliefs
            world = await project_world(again)
            last = {s.slot: s for s in delta.states}  # a slot may change twice in a turn
            assert all(world.states[slot].id == s.id for slot, s in last.items())
            held = {(b.holder, b.slot): b for b in delta.beliefs}
            for (holder, slot), belief in held.items():
                mind = await project_beliefs(again, list(holder))
                assert mind.beliefs[slot].id == belief.id
            kept = await other.drafts(again, 4)
            assert kept.chosen == "4.d2" and [d.draft for d in kept.drafts] == [
                d.draft for d in drafts.drafts
            ]
            assert kept.pending_id is None

    async def test_an_unknown_choice_changes_nothing(self, redis_url: str) -> None:
        """Choosing a draft the turn does not have is one line, and the turn still waits."""
        async with Fabula(redis_url, Settings()) as fab:
            store = fab.store(await fab.create_story("hollow_book", "tale"))
            await fab.alternatives(store, 2)
            with pytest.raises(InvalidInput, match="has no draft '7' to choose"):
                await fab.decide(store, Decision(action="approve", choice="7"))
            assert await store.head() == 3 and await fab.read(store).pending() is not None


class TestCommandLine:
    def test_run_alternatives_then_choose(self, redis_url: str) -> None:
        """`run --alternatives 2` prints two drafts (JSON with --json); `approve --choose 2`
        in another process commits the second."""
        assert _cli(redis_url, "new", "--world", "hollow_book", "--id", "tale").returncode == 0
        made = _cli(redis_url, "run", "tale", "--alternatives", "2", "--json")
        assert made.returncode == 0, made.stderr
        drafts = json.loads(made.stdout)["drafts"]
        assert len(drafts) == 2
        listed = _cli(redis_url, "run", "tale", "--alternatives", "2")  # the same turn's
        assert listed.stdout.count("turn 4: draft") == 2, listed.stdout
        assert "fabula approve tale --choose K" in listed.stdout
        assert "world: brass" in listed.stdout or "believes:" in listed.stdout
        chosen = _cli(redis_url, "approve", "tale", "--choose", "2")
        assert chosen.returncode == 0, chosen.stderr
        story = json.loads(_cli(redis_url, "show", "tale", "story", "--json").stdout)
        assert story["turns"][-1]["text"] == drafts[1]["draft"]
