"""The turn's typed state (:mod:`fabula.graph.state`), and the checkpoints written before it
was typed: plain JSON values, proposals keyed by ``str(attempt)``, an approval payload whose
``delta`` was the preview and ``turn_delta`` the delta. Offline engine, real LangGraph, the
Redis checkpointer and the real store."""

from __future__ import annotations

from typing import Any

from fabula.agents.contracts import Decision, Draft, Finding, TurnPlan
from fabula.graph.build import thread_id
from fabula.graph.service import Fabula
from fabula.graph.state import ApprovalRequest, Preview
from fabula.memory.delta import TurnDelta
from fabula.memory.store import StoryStore
from fabula.settings import Settings
from fabula.worlds.loader import load_world


async def _opened(fab: Fabula, story: str) -> StoryStore:
    pack = load_world("hollow_book")
    store = await fab.create_story(pack, story, opening=False)
    for text in pack.opening.turns:
        await fab.commit_scripted(store, text)
    return store


def _untyped(values: dict[str, Any]) -> dict[str, Any]:
    """``values`` as the untyped graph checkpointed them: every model a JSON dict, the
    proposals by ``str(attempt)``."""
    out: dict[str, Any] = {}
    for key, value in values.items():
        if key == "proposals":
            out[key] = {str(values["attempt"]): [p.model_dump() for p in value]}
        elif key == "delta":
            out[key] = value.model_dump(mode="json")
        elif hasattr(value, "model_dump"):
            out[key] = value.model_dump()
        elif key == "briefs":
            out[key] = {c: b.model_dump() for c, b in value.items()}
        elif isinstance(value, list) and value and hasattr(value[0], "model_dump"):
            out[key] = [v.model_dump() for v in value]
        else:
            out[key] = value
    return out


class TestTypedState:
    async def test_a_pending_turn_holds_its_values_typed(self, redis_url: str) -> None:
        """The checkpointed state holds the contracts themselves, built again from Redis,
        and the approval request names the preview and the delta for what they are."""
        async with Fabula(redis_url, Settings()) as fab:
            store = await _opened(fab, "typed")
            assert (await fab.run(store, auto=False)).outcome == "pending"
            turn = await store.head() + 1
            config = {"configurable": {"thread_id": thread_id("typed", "main", turn)}}
            values = (await fab.graph.aget_state(config)).values  # type: ignore[arg-type]
            assert isinstance(values["plan"], TurnPlan)
            assert isinstance(values["draft"], Draft)
            assert isinstance(values["delta"], TurnDelta)
            assert isinstance(values["preview"], Preview)
            assert all(isinstance(f, Finding) for f in values["findings"])
            assert [p.character for p in values["proposals"]] == list(values["plan"].focal)
            pending = await fab.pending(store)
            assert pending is not None
            assert pending.request.delta == values["delta"]
            assert pending.request.preview == values["preview"]
            assert pending.request.draft.text == values["delta"].text


class TestOldCheckpoints:
    def test_an_old_approval_payload_reads_into_its_names(self) -> None:
        """``delta`` (the preview) and ``turn_delta`` (the delta) of an old payload land in
        ``preview`` and ``delta``; an old payload's empty ``{}`` is no value."""
        delta = TurnDelta(turn=4, text="Leo went to the hallway.")
        old = {
            "story": "s",
            "branch": "main",
            "turn": 4,
            "draft": {"text": "Leo went to the hallway.", "revision": 0},
            "findings": [],
            "delta": {"events": ["go: Leo went to the hallway."], "world": [], "beliefs": []},
            "turn_delta": delta.model_dump(mode="json"),
            "plan": {},
            "edit_error": None,
            "edit_refused": None,
        }
        request = ApprovalRequest.model_validate(old)
        assert request.preview.events == ["go: Leo went to the hallway."]
        assert request.delta == delta
        assert request.plan is None
        assert ApprovalRequest.model_validate({**old, "turn_delta": {}}).delta is None

    async def test_an_untyped_checkpoint_resumes_and_commits(self, redis_url: str) -> None:
        """A turn whose checkpoint holds the untyped JSON of before (written here as that
        graph wrote it) is shown for approval and committed exactly as it was drafted."""
        async with Fabula(redis_url, Settings()) as fab:
            store = await _opened(fab, "old")
            assert (await fab.run(store, auto=False)).outcome == "pending"
            turn = await store.head() + 1
            config: Any = {"configurable": {"thread_id": thread_id("old", "main", turn)}}
            typed = (await fab.graph.aget_state(config)).values
            await fab.saver.adelete_thread(config["configurable"]["thread_id"])
            old = _untyped(typed)
            assert isinstance(old["plan"], dict) and isinstance(old["proposals"], dict)
            # as after an edit read back unchanged: the turn goes to the approver again
            old["decision"] = {"action": "edit", "text": typed["draft"].text}
            await fab.graph.aupdate_state(config, old, as_node="reread")
            assert isinstance((await fab.graph.aget_state(config)).values["delta"], dict)
            await fab.graph.ainvoke(None, config, context=fab.context(auto=False))
            pending = await fab.pending(store)
            assert pending is not None and pending.request.delta == typed["delta"]
            details = await fab.pending_details(store)
            assert details.draft == typed["draft"].text
            assert (await fab.decide(store, Decision(action="approve"))).outcome == "committed"
            (text,) = await store.turn_texts(turn, turn)
            assert text.text == typed["draft"].text
