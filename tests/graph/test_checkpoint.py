"""RedisCheckpointSaver on the real embedded Redis: conformance, forks, restarts and races."""

from __future__ import annotations

import json
import operator
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator, Sequence
from pathlib import Path
from typing import Annotated, Any, TypedDict

import pytest
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    CheckpointTuple,
)
from langgraph.checkpoint.conformance import checkpointer_test, validate
from langgraph.checkpoint.conformance.capabilities import Capability
from langgraph.checkpoint.conformance.test_utils import generate_checkpoint, generate_metadata
from langgraph.checkpoint.serde.types import INTERRUPT
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.types import Command, interrupt

from fabula.graph.checkpoint import RedisCheckpointSaver
from fabula.memory.connection import connect
from fabula.memory.server import EmbeddedRedis

ROOT = Path(__file__).resolve().parents[2]
DRAFT = "the keeper lights the lamp"


def thread(thread_id: str, **extra: str) -> RunnableConfig:
    return {"configurable": {"thread_id": thread_id, "checkpoint_ns": "", **extra}}


@pytest.fixture()
def saver(redis_url: str) -> Iterator[RedisCheckpointSaver]:
    saver = RedisCheckpointSaver.from_url(redis_url)
    yield saver
    saver.close()


# --- graphs ---


class Story(TypedDict):
    premise: str
    tone: str
    beats: Annotated[list[str], operator.add]


def build_story_graph(saver: RedisCheckpointSaver) -> CompiledStateGraph[Any, Any, Any, Any]:
    """outline -> draft; ``beats`` accumulates, so a fork must inherit the outline's beat."""

    def outline(state: Story) -> dict[str, Any]:
        return {"beats": [f"outline of {state['premise']}"], "tone": state["tone"] or "plain"}

    def draft(state: Story) -> dict[str, Any]:
        return {"beats": [f"draft in a {state['tone']} tone"]}

    builder = StateGraph(Story)
    builder.add_node("outline", outline)
    builder.add_node("draft", draft)
    builder.add_edge(START, "outline")
    builder.add_edge("outline", "draft")
    builder.add_edge("draft", END)
    return builder.compile(checkpointer=saver)


class Approval(TypedDict):
    draft: str
    answer: str
    final: str


def build_approval_graph(saver: RedisCheckpointSaver) -> CompiledStateGraph[Any, Any, Any, Any]:
    """write -> approve (interrupts for an answer) -> publish."""

    def write(state: Approval) -> dict[str, Any]:
        return {"draft": DRAFT}

    def approve(state: Approval) -> dict[str, Any]:
        return {"answer": interrupt({"draft": state["draft"]})}

    def publish(state: Approval) -> dict[str, Any]:
        return {"final": f"{state['draft']} ({state['answer']})"}

    builder = StateGraph(Approval)
    builder.add_node("write", write)
    builder.add_node("approve", approve)
    builder.add_node("publish", publish)
    builder.add_edge(START, "write")
    builder.add_edge("write", "approve")
    builder.add_edge("approve", "publish")
    builder.add_edge("publish", END)
    return builder.compile(checkpointer=saver)


EMPTY_APPROVAL: Approval = {"draft": "", "answer": "", "final": ""}


# --- a child process that runs the approval graph (started with `python -c`) ---

_CHILD = (
    "import importlib.util, sys\n"
    "spec = importlib.util.spec_from_file_location('checkpoint_child', sys.argv[1])\n"
    "module = importlib.util.module_from_spec(spec)\n"
    "spec.loader.exec_module(module)\n"
    "module.child_main(sys.argv[2:])\n"
)


def child_main(args: Sequence[str]) -> None:
    """``start URL THREAD`` or ``resume URL THREAD ANSWER READY_FILE GO_FILE``; prints the state."""
    action, url, thread_id, *rest = args
    saver = RedisCheckpointSaver.from_url(url)
    graph = build_approval_graph(saver)
    config = thread(thread_id)
    if action == "start":
        graph.invoke(EMPTY_APPROVAL, config)
        state = graph.get_state(config)
        print(json.dumps({"next": list(state.next), "values": state.values}))
    else:
        answer, ready, go = rest
        Path(ready).touch()
        while not Path(go).exists():  # line up with the other resumer
            time.sleep(0.001)
        # report this run's own outcome: the thread's latest checkpoint may belong to the
        # other resumer's branch, still in flight
        values = graph.invoke(Command(resume=answer), config)
        print(json.dumps({"next": [], "values": values}))
    saver.close()


def spawn(*args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", _CHILD, __file__, *args],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def finish(child: subprocess.Popen[str]) -> dict[str, Any]:
    out, err = child.communicate(timeout=60)
    assert child.returncode == 0, err
    report: dict[str, Any] = json.loads(out.strip().splitlines()[-1])
    return report


# --- 1. the conformance suite ---


class SyncPathSaver(RedisCheckpointSaver):
    """Routes the async API through the synchronous methods, so the suite checks those too."""

    async def aget_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        return self.get_tuple(config)

    # the same arguments as the saver's: passed on as they come
    async def alist(self, *args: Any, **kwargs: Any) -> AsyncIterator[CheckpointTuple]:
        for item in self.list(*args, **kwargs):
            yield item

    async def aput(self, *args: Any, **kwargs: Any) -> RunnableConfig:
        return self.put(*args, **kwargs)

    async def aput_writes(self, *args: Any, **kwargs: Any) -> None:
        self.put_writes(*args, **kwargs)

    async def adelete_thread(self, thread_id: str) -> None:
        self.delete_thread(thread_id)

    async def adelete_for_runs(self, run_ids: Sequence[str]) -> None:
        self.delete_for_runs(run_ids)

    async def acopy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        self.copy_thread(source_thread_id, target_thread_id)

    async def aprune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        self.prune(thread_ids, strategy=strategy)


class TestConformance:
    @pytest.mark.parametrize("kind", [RedisCheckpointSaver, SyncPathSaver], ids=["async", "sync"])
    async def test_every_capability_passes(
        self, redis_url: str, kind: type[RedisCheckpointSaver]
    ) -> None:
        """The saver claims all eight capabilities, base and extended, and passes every test
        of each, through the async methods and (via SyncPathSaver) the synchronous ones."""

        @checkpointer_test(name=kind.__name__)
        async def factory() -> AsyncIterator[RedisCheckpointSaver]:
            saver = kind.from_url(redis_url)
            yield saver
            await saver.aclose()
            saver.close()

        report = await validate(factory)
        failures = {
            name: result.failures for name, result in report.results.items() if not result.passed
        }
        assert not failures
        assert {name for name, result in report.results.items() if result.detected} == {
            capability.value for capability in Capability
        }
        assert report.passed_all_base()
        assert report.conformance_level() == "FULL"


# --- 2. forks ---


class TestForks:
    def test_forks_from_one_checkpoint_keep_their_own_values(
        self, saver: RedisCheckpointSaver
    ) -> None:
        """Two update_state calls on one earlier checkpoint make two sibling branches; each
        keeps its own tone, inherits the outline beat, and runs on to its own ending, while
        the original branch is untouched."""
        graph = build_story_graph(saver)
        config = thread("forks")
        original = graph.invoke({"premise": "a lighthouse", "tone": "", "beats": []}, config)
        assert original["beats"][-1] == "draft in a plain tone"

        (fork_point,) = [s for s in graph.get_state_history(config) if s.next == ("draft",)]
        grim = graph.update_state(fork_point.config, {"tone": "grim"})
        bright = graph.update_state(fork_point.config, {"tone": "bright"})

        for fork, tone in ((grim, "grim"), (bright, "bright")):
            stored = saver.get_tuple(fork)
            assert stored is not None and stored.parent_config is not None
            assert (
                stored.parent_config["configurable"]["checkpoint_id"]
                == (fork_point.config["configurable"]["checkpoint_id"])
            )
            state = graph.get_state(fork)
            assert state.values["tone"] == tone
            assert state.values["beats"] == ["outline of a lighthouse"]
            assert state.next == ("draft",)

        assert graph.invoke(None, grim)["beats"][-1] == "draft in a grim tone"
        assert graph.invoke(None, bright)["beats"][-1] == "draft in a bright tone"

        history = list(graph.get_state_history(config))
        endings = sorted(s.values["beats"][-1] for s in history if not s.next)
        assert endings == [f"draft in a {t} tone" for t in ("bright", "grim", "plain")]
        # Each ending's parent chain runs through its own fork (if any) to the fork point.
        by_id = {s.config["configurable"]["checkpoint_id"]: s for s in history}
        forks = {"grim": grim, "bright": bright}
        for ending in (s for s in history if not s.next):
            chain = [ending.config["configurable"]["checkpoint_id"]]
            while (parent := by_id[chain[-1]].parent_config) is not None:
                chain.append(parent["configurable"]["checkpoint_id"])
            assert fork_point.config["configurable"]["checkpoint_id"] in chain
            own_fork = forks.get(ending.values["tone"])
            if own_fork is not None:
                assert own_fork["configurable"]["checkpoint_id"] in chain
        assert graph.get_state(fork_point.config).values["tone"] == "plain"

    async def test_siblings_at_equal_versions_keep_their_own_values(
        self, saver: RedisCheckpointSaver
    ) -> None:
        """Two children of one parent that write one channel at the same version each keep
        their value, and a grandchild that does not write it inherits its own parent's."""
        root = await saver.aput(
            thread("siblings"),
            generate_checkpoint(channel_values={"x": "root"}, channel_versions={"x": 1}),
            generate_metadata(step=0),
            {"x": 1},
        )
        children = {}
        for value in ("left", "right"):
            children[value] = await saver.aput(
                root,
                generate_checkpoint(channel_values={"x": value}, channel_versions={"x": 2}),
                generate_metadata(step=1),
                {"x": 2},
            )
        grandchild = await saver.aput(
            children["left"],
            generate_checkpoint(
                channel_values={"x": "left", "y": "new"}, channel_versions={"x": 2, "y": 1}
            ),
            generate_metadata(step=2),
            {"y": 1},
        )
        expected = [(root, "root"), (children["left"], "left"), (children["right"], "right")]
        for config, value in [*expected, (grandchild, "left")]:
            found = await saver.aget_tuple(config)
            assert found is not None
            assert found.checkpoint["channel_values"]["x"] == value

    async def test_prune_copies_inherited_values_into_the_kept_checkpoint(
        self, saver: RedisCheckpointSaver
    ) -> None:
        """keep_latest removes the ancestors but the newest checkpoint keeps every value,
        including those its ancestors wrote."""
        first = await saver.aput(
            thread("prune"),
            generate_checkpoint(channel_values={"a": 1, "b": 2}, channel_versions={"a": 1, "b": 1}),
            generate_metadata(step=0),
            {"a": 1, "b": 1},
        )
        latest = await saver.aput(
            first,
            generate_checkpoint(
                channel_values={"a": 10, "b": 2}, channel_versions={"a": 2, "b": 1}
            ),
            generate_metadata(step=1),
            {"a": 2},
        )
        await saver.aprune(["prune"])
        assert await saver.aget_tuple(first) is None
        kept = await saver.aget_tuple(latest)
        assert kept is not None and kept.checkpoint["channel_values"] == {"a": 10, "b": 2}


# --- namespaces ---


class Scene(TypedDict):
    line: str
    reply: str


def build_nested_graph(saver: RedisCheckpointSaver) -> CompiledStateGraph[Any, Any, Any, Any]:
    """A parent whose one node is a subgraph that interrupts: its checkpoints live in a
    child namespace."""

    def ask(state: Scene) -> dict[str, Any]:
        return {"reply": interrupt(state["line"])}

    inner = StateGraph(Scene)
    inner.add_node("ask", ask)
    inner.add_edge(START, "ask")
    inner.add_edge("ask", END)
    outer = StateGraph(Scene)
    outer.add_node("scene", inner.compile())
    outer.add_edge(START, "scene")
    outer.add_edge("scene", END)
    return outer.compile(checkpointer=saver)


class TestNamespaces:
    async def test_list_merges_namespaces_newest_first_unless_one_is_named(
        self, saver: RedisCheckpointSaver
    ) -> None:
        """Without checkpoint_ns, list returns every namespace of the thread newest first;
        with one it returns only that namespace; with a checkpoint_id only that checkpoint;
        ``before`` and ``limit`` apply to the merged order."""
        stored = []
        for ns in ("", "scene:1", "", "scene:1"):
            config = thread("ns", checkpoint_ns=ns)
            stored.append(await saver.aput(config, generate_checkpoint(), generate_metadata(), {}))
        ids = [c["configurable"]["checkpoint_id"] for c in stored]

        async def listed(config: RunnableConfig, **options: Any) -> list[str]:
            return [t.checkpoint["id"] async for t in saver.alist(config, **options)]

        everything: RunnableConfig = {"configurable": {"thread_id": "ns"}}
        assert await listed(everything) == ids[::-1]
        assert await listed(thread("ns")) == [ids[2], ids[0]]
        assert await listed(everything, before=stored[2], limit=1) == [ids[1]]
        assert await listed(thread("ns", checkpoint_id=ids[2])) == [ids[2]]
        assert [t.checkpoint["id"] for t in saver.list(everything, limit=3)] == ids[:0:-1]

    def test_an_interrupt_inside_a_subgraph_resumes(self, saver: RedisCheckpointSaver) -> None:
        """A subgraph's interrupt is stored under its namespace and resuming completes it."""
        graph = build_nested_graph(saver)
        config = thread("nested")
        first = graph.invoke({"line": "who goes there?", "reply": ""}, config)
        assert first["__interrupt__"][0].value == "who goes there?"
        namespaces = {
            t.config["configurable"]["checkpoint_ns"]
            for t in saver.list({"configurable": {"thread_id": "nested"}})
        }
        assert "" in namespaces and any(ns.startswith("scene:") for ns in namespaces)
        assert graph.invoke(Command(resume="a friend"), config) == {
            "line": "who goes there?",
            "reply": "a friend",
        }


# --- pending writes and keys ---


class TestWritesAndKeys:
    def test_regular_writes_keep_the_first_and_special_writes_the_last(
        self, saver: RedisCheckpointSaver
    ) -> None:
        """A retried task's regular write is not stored again; an interrupt write replaces the
        earlier one; writes come back in (task path, task id, index) order."""
        stored = saver.put(thread("writes"), generate_checkpoint(), generate_metadata(), {})
        saver.put_writes(stored, [("beats", "first"), (INTERRUPT, "ask once")], "task-b", "b")
        saver.put_writes(stored, [("beats", "retry"), (INTERRUPT, "ask again")], "task-b", "b")
        saver.put_writes(stored, [("beats", "other")], "task-a", "a")
        found = saver.get_tuple(stored)
        assert found is not None
        assert found.pending_writes == [
            ("task-a", "beats", "other"),
            ("task-b", INTERRUPT, "ask again"),
            ("task-b", "beats", "first"),
        ]

    def test_every_key_of_a_thread_shares_its_hash_tag_and_goes_with_it(
        self, saver: RedisCheckpointSaver, redis_url: str
    ) -> None:
        """Keys carry ``{thread}`` (escaped, so odd thread ids stay one tag), no key has a
        TTL, and delete_thread leaves nothing of the thread behind."""
        odd = "tale:{1}"
        graph = build_story_graph(saver)
        graph.invoke({"premise": "a storm", "tone": "", "beats": []}, thread(odd))
        graph.invoke({"premise": "a calm", "tone": "", "beats": []}, thread("other"))
        client = connect(redis_url, decode_responses=False)  # a cluster client on a cluster
        try:
            tag = "{tale%3A%7B1%7D}"
            own = [k.decode() for k in client.scan_iter(match="fab:ckpt:{tale*")]
            assert own and all(key.startswith(f"fab:ckpt:{tag}:") for key in own)
            assert all(client.ttl(key) == -1 for key in client.scan_iter(match="fab:ckpt:*"))
            saver.delete_thread(odd)
            assert list(client.scan_iter(match="fab:ckpt:{tale*")) == []
            assert {t.config["configurable"]["thread_id"] for t in saver.list(None)} == {"other"}
        finally:
            client.close()


# --- 3. durability across a server restart ---


class TestDurability:
    def test_interrupted_run_resumes_after_a_server_restart(self, tmp_path: Path) -> None:
        """A run interrupted in another process survives stopping and restarting the server on
        its append-only file, and resuming it here completes with the answer given."""
        server = EmbeddedRedis(tmp_path / "r")
        url = server.ensure_started()
        try:
            started = finish(spawn("start", url, "durable"))
            assert started["next"] == ["approve"]
            server.stop()
            assert not server.is_running()
            server.ensure_started()

            saver = RedisCheckpointSaver.from_url(url)
            try:
                graph = build_approval_graph(saver)
                result = graph.invoke(Command(resume="approved"), thread("durable"))
                assert result == {
                    "draft": DRAFT,
                    "answer": "approved",
                    "final": f"{DRAFT} (approved)",
                }
                assert graph.get_state(thread("durable")).next == ()
            finally:
                saver.close()
        finally:
            server.stop()


# --- 4. two processes resuming one interrupt ---


class TestConcurrency:
    def test_two_resumers_of_one_interrupt_leave_a_valid_history(
        self, saver: RedisCheckpointSaver, redis_url: str, tmp_path: Path
    ) -> None:
        """Both processes finish without error; the thread ends in one of the two valid
        outcomes; every checkpoint's parent exists and is older; every branch grows from the
        interrupted checkpoint and ends in a valid outcome."""
        graph = build_approval_graph(saver)
        graph.invoke(EMPTY_APPROVAL, thread("race"))
        interrupted = saver.get_tuple(thread("race"))
        assert interrupted is not None
        interrupted_id = interrupted.config["configurable"]["checkpoint_id"]

        go = tmp_path / "go"
        answers = ("left", "right")
        children = [
            spawn("resume", redis_url, "race", answer, str(tmp_path / answer), str(go))
            for answer in answers
        ]
        deadline = time.monotonic() + 30
        while not all((tmp_path / answer).exists() for answer in answers):
            assert time.monotonic() < deadline, "the resumers did not start"
            time.sleep(0.01)
        go.touch()
        reports = [finish(child) for child in children]

        valid = {f"{DRAFT} ({answer})" for answer in answers}
        for report in reports:
            assert report["next"] == [] and report["values"]["final"] in valid
        final = graph.get_state(thread("race"))
        assert final.next == () and final.values["final"] in valid

        history = list(saver.list(thread("race")))
        ids = [t.config["configurable"]["checkpoint_id"] for t in history]
        assert ids == sorted(set(ids), reverse=True)
        by_id = dict(zip(ids, history, strict=True))
        roots = [t for t in history if t.parent_config is None]
        assert len(roots) == 1
        for cid, tup in by_id.items():
            if tup.parent_config is not None:
                parent = tup.parent_config["configurable"]["checkpoint_id"]
                assert parent in by_id and parent < cid
        parents = {
            t.parent_config["configurable"]["checkpoint_id"] for t in history if t.parent_config
        }
        for leaf_id in set(ids) - parents:
            leaf = by_id[leaf_id]
            assert leaf.checkpoint["channel_values"]["final"] in valid
            chain = [leaf_id]
            while by_id[chain[-1]].parent_config is not None:
                chain.append(by_id[chain[-1]].parent_config["configurable"]["checkpoint_id"])
            assert interrupted_id in chain
