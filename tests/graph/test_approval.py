"""What a human approves is exactly what is committed, from whichever process approves.

Model mode through the real graph, Redis, ChatOpenAI and HTTP. The turn's delta is computed
once, when the critic runs, kept in the checkpointed turn state, shown in the approval
payload (``ApprovalRequest.delta``) and committed verbatim; an edit is read and shown again (or
committed at once with ``now``); an edit that cannot be read leaves the turn pending.
"""

from __future__ import annotations

import os
import subprocess
import sys
from typing import Any

import pytest

from fabula.agents.contracts import Decision
from fabula.errors import InvalidInput
from fabula.graph.service import Fabula
from fabula.memory.projections import project_world
from fabula.memory.store import StoryStore
from fabula.settings import Settings
from fabula.testing.model import STORY, FakeOpenAI, action, requests_for, script_turn

EDIT = "Leo went to the hallway. Mara watched him go."


def other_reading() -> dict[str, Any]:
    """What the model would answer if asked to read PASSAGE again: another place."""
    go = "Leo went to the study."
    return {"actions": [action("go", 0, len(go), actors=["Leo"], place="hallway")]}


def records(delta: dict[str, Any]) -> dict[str, Any]:
    return {k: delta[k] for k in ("events", "states", "beliefs", "entities", "text")}


async def committed_records(fab: Fabula, turn: int) -> dict[str, Any]:
    store = fab.store(STORY)
    (text,) = await store.turn_texts(turn, turn)
    events = await store.events(list(text.events))
    return {
        "text": text.text,
        "events": [e.model_dump(mode="json") for e in events],
    }


class TestAcrossProcesses:
    async def test_approve_in_another_process_commits_the_preview(
        self, fab: Fabula, fake_openai: FakeOpenAI, settings: Settings, redis_url: str
    ) -> None:
        """Reproduction: the preview's extraction lived in one process's memory; `fabula
        approve` elsewhere extracted again and committed the model's second reading (Leo in
        the hallway though the preview said the study). Now the other process commits the
        checkpointed delta verbatim and never asks the model."""
        script_turn(fake_openai)
        store = fab.store(STORY)
        assert (await fab.run(store, auto=False)).outcome == "pending"
        pending = await fab.read(store).pending()
        assert pending is not None
        delta = pending.request.delta
        assert delta is not None
        assert ("leo", "study") in [(s.subject, s.value) for s in delta.states]
        fake_openai.reply_json(other_reading(), schema="ExtractedActions")
        asked = len(fake_openai.requests)

        env = {
            **os.environ,
            "FABULA_REDIS_URL": redis_url,
            "FABULA_MODEL": "fake-model",
            "FABULA_MODEL_BASE_URL": fake_openai.base_url,
            "FABULA_MODEL_API_KEY": "test-key",
            # no hierarchy: its model-written summaries would be requests of their own
            "FABULA_CONSOLIDATE": "off",
        }
        proc = subprocess.run(
            [sys.executable, "-m", "fabula", "approve", STORY],
            capture_output=True,
            text=True,
            env=env,
            timeout=120,
        )
        assert proc.returncode == 0, proc.stderr
        assert len(fake_openai.requests) == asked  # nothing was read again

        assert (await project_world(store)).where("leo") == "study"
        committed = await committed_records(fab, 4)
        assert committed["text"] == delta.text
        assert committed["events"] == [e.model_dump(mode="json") for e in delta.events]


async def _pending_with_edit_scripted(fab: Fabula, fake_openai: FakeOpenAI) -> StoryStore:
    """A turn awaiting approval, and the memory-builder's reading of an edit (Leo stays in the
    hallway) scripted next."""
    script_turn(fake_openai)
    store = fab.store(STORY)
    assert (await fab.run(store, auto=False)).outcome == "pending"
    wait = action("stay", 0, 24, actors=["Leo"], place="hallway")
    fake_openai.reply_json({"actions": [wait]}, schema="ExtractedActions")
    return store


class TestEdits:
    async def test_an_edit_is_read_and_shown_again(
        self, fab: Fabula, fake_openai: FakeOpenAI
    ) -> None:
        store = await _pending_with_edit_scripted(fab, fake_openai)
        assert (await fab.decide(store, Decision(action="edit", text=EDIT))).outcome == "pending"
        pending = await fab.read(store).pending()
        assert pending is not None and pending.request.draft.text == EDIT
        assert pending.request.delta is not None and pending.request.delta.text == EDIT
        assert await store.head() == 3
        asked = len(requests_for(fake_openai, "ExtractedActions"))
        assert (await fab.decide(store, Decision(action="approve"))).outcome == "committed"
        assert len(requests_for(fake_openai, "ExtractedActions")) == asked
        assert (await store.turn_texts(4, 4))[0].text == EDIT
        assert (await project_world(store)).where("leo") == "hallway"

    async def test_an_edit_now_is_committed_at_once(
        self, fab: Fabula, fake_openai: FakeOpenAI
    ) -> None:
        store = await _pending_with_edit_scripted(fab, fake_openai)
        decision = Decision(action="edit", text=EDIT, now=True)
        assert (await fab.decide(store, decision)).outcome == "committed"
        assert (await store.turn_texts(4, 4))[0].text == EDIT

    async def test_an_edit_that_cannot_be_read_keeps_the_turn_pending(
        self, fab: Fabula, fake_openai: FakeOpenAI
    ) -> None:
        """Reproduction: a model error while reading an edit lost the pending turn. Now
        the error is one clear line, nothing is written, and the turn still awaits a
        decision with its draft; approving it commits the draft's delta."""
        script_turn(fake_openai)
        store = fab.store(STORY)
        assert (await fab.run(store, auto=False)).outcome == "pending"
        before = await fab.read(store).pending()
        assert before is not None
        for _ in range(3):
            bad = action("go", 40, 90, actors=["Leo"], place="study")
            fake_openai.reply_json({"actions": [bad]}, schema="ExtractedActions")
        with pytest.raises(InvalidInput, match=r"could not be read.*still awaits"):
            await fab.decide(store, Decision(action="edit", text=EDIT, now=True))
        after = await fab.read(store).pending()
        assert after is not None
        assert after.request.draft == before.request.draft
        assert after.request.delta == before.request.delta
        assert await store.head() == 3
        assert (await fab.decide(store, Decision(action="approve"))).outcome == "committed"
        assert (await project_world(store)).where("leo") == "study"
