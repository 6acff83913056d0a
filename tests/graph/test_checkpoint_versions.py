"""The checkpointer's own versions: types stored by registry name, a thread stored by an
older checkpointer refused until the saver's ``migrate`` brings it up (then it resumes), a
newer one refused in one line and left as it is, a moved class still read (issue 46)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, TypedDict

import pytest
import redis
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.types import Command, interrupt
from pydantic import BaseModel

from fabula.errors import Conflict, StoryOutdated
from fabula.graph.checkpoint import RedisCheckpointSaver, RegistrySerializer, TypeRegistry
from fabula.graph.checkpoint.batches import unpack
from fabula.graph.checkpoint.keys import ThreadKeys
from fabula.graph.checkpoint.migrations import CHECKPOINT_VERSION, MIGRATIONS
from fabula.memory.connection import connect


class Note(BaseModel):
    text: str
    mood: str = "calm"


class MovedNote(BaseModel):
    """``Note`` as if it had moved (and been renamed): the class registered under its
    name is no longer where the checkpoint was written from."""

    text: str
    mood: str = "calm"


REGISTRY = TypeRegistry({"test.Note": Note}, legacy={f"{__name__}.Note": "test.Note"})
# how checkpointer version 1 stored a value: the class named by its module path
OLD_SERDE = JsonPlusSerializer(allowed_msgpack_modules=[(__name__, "Note")])


class Desk(TypedDict):
    note: Note | None
    answer: str
    final: str


EMPTY: Desk = {"note": None, "answer": "", "final": ""}


def build(saver: RedisCheckpointSaver) -> CompiledStateGraph[Any, Any, Any, Any]:
    """write (a typed note) -> approve (interrupts with the note) -> publish."""

    def write(state: Desk) -> dict[str, Any]:
        return {"note": Note(text="the lamp is lit")}

    def approve(state: Desk) -> dict[str, Any]:
        return {"answer": interrupt(state["note"])}

    def publish(state: Desk) -> dict[str, Any]:
        note = state["note"]
        assert isinstance(note, Note), note  # built again as its type, not a dict
        return {"final": f"{note.text} ({state['answer']})"}

    builder = StateGraph(Desk)
    builder.add_node("write", write)
    builder.add_node("approve", approve)
    builder.add_node("publish", publish)
    builder.add_edge(START, "write")
    builder.add_edge("write", "approve")
    builder.add_edge("approve", "publish")
    builder.add_edge("publish", END)
    return builder.compile(checkpointer=saver)


def conf(thread_id: str) -> RunnableConfig:
    return {"configurable": {"thread_id": thread_id, "checkpoint_ns": ""}}


@pytest.fixture()
def raw(redis_url: str) -> Iterator[redis.Redis]:
    client = connect(redis_url, decode_responses=False)
    yield client
    client.close()


@pytest.fixture()
def saver(redis_url: str) -> Iterator[RedisCheckpointSaver]:
    saver = RedisCheckpointSaver.from_url(redis_url, serde=RegistrySerializer(REGISTRY))
    yield saver
    saver.close()


def stored_payloads(raw: redis.Redis, thread_id: str) -> list[bytes]:
    """Every serialised value of a thread, as stored."""
    tk, out = ThreadKeys(thread_id), []
    for ns in raw.smembers(tk.namespaces):
        for cid in raw.zrange(tk.index(ns.decode()), 0, -1):
            for key in (
                tk.checkpoint(ns.decode(), cid.decode()),
                tk.writes(ns.decode(), cid.decode()),
            ):
                for field, value in raw.hgetall(key).items():
                    if field not in (b"owners", b"parent", b"run_id"):
                        out.append(unpack(value)[1])
    return out


def write_as_version_1(redis_url: str, raw: redis.Redis, thread_id: str) -> None:
    """Run the graph to its interrupt as checkpointer version 1 did: types by module path,
    no version key."""
    old = RedisCheckpointSaver.from_url(redis_url, serde=OLD_SERDE)
    try:
        build(old).invoke(EMPTY, conf(thread_id))
    finally:
        old.close()
    assert raw.delete(ThreadKeys(thread_id).version) == 1
    assert any(__name__.encode() in p for p in stored_payloads(raw, thread_id))


def snapshot(raw: redis.Redis, thread_id: str) -> dict[bytes, Any]:
    return {k: raw.dump(k) for k in raw.scan_iter(f"*{thread_id}*")}


class TestRegistryNames:
    def test_types_are_stored_by_registry_name_and_read_back(
        self, saver: RedisCheckpointSaver, raw: redis.Redis
    ) -> None:
        graph = build(saver)
        graph.invoke(EMPTY, conf("names"))
        payloads = stored_payloads(raw, "names")
        assert not any(__name__.encode() in p for p in payloads)  # no module path
        assert any(b"test" in p and b"Note" in p for p in payloads)
        assert raw.get(ThreadKeys("names").version) == str(CHECKPOINT_VERSION).encode()
        state = graph.get_state(conf("names"))
        assert state.values["note"] == Note(text="the lamp is lit")
        assert state.tasks[0].interrupts[0].value == Note(text="the lamp is lit")

    def test_a_moved_class_is_read_under_its_name(self) -> None:
        kind, payload = RegistrySerializer(REGISTRY).dumps_typed([Note(text="x", mood="dark")])
        moved = RegistrySerializer(TypeRegistry({"test.Note": MovedNote}))
        assert moved.loads_typed((kind, payload)) == [MovedNote(text="x", mood="dark")]

    def test_a_registry_refuses_names_it_cannot_store(self) -> None:
        with pytest.raises(ValueError, match="namespace"):
            TypeRegistry({"Note": Note})
        with pytest.raises(ValueError, match="unregistered"):
            TypeRegistry({"test.Note": Note}, legacy={"a.b.Note": "test.Other"})


class TestMigration:
    async def test_a_version_1_thread_is_refused_then_migrated_and_resumes(
        self, redis_url: str, saver: RedisCheckpointSaver, raw: redis.Redis
    ) -> None:
        assert MIGRATIONS[-1].version == CHECKPOINT_VERSION
        for thread_id in ("story/main/1", "story/main/2", "other/main/1"):
            write_as_version_1(redis_url, raw, thread_id)
        graph = build(saver)
        with pytest.raises(StoryOutdated, match="checkpoint version 1, this one reads") as no:
            graph.get_state(conf("story/main/1"))
        assert "\n" not in str(no.value)
        with pytest.raises(StoryOutdated):  # a put refuses it too: nothing is mixed in
            graph.invoke(Command(resume="yes"), conf("story/main/1"))

        done = await saver.amigrate(prefix="story/")
        assert (done.threads, done.was) == (2, 1) and done.values > 0, done
        assert f"checkpoints 1 -> {CHECKPOINT_VERSION} (2 threads" in done.line()
        for thread_id in ("story/main/1", "story/main/2"):
            assert raw.get(ThreadKeys(thread_id).version) == str(CHECKPOINT_VERSION).encode()
            assert not any(__name__.encode() in p for p in stored_payloads(raw, thread_id))
        assert raw.get(ThreadKeys("other/main/1").version) is None  # another story: not asked

        again = await saver.amigrate(prefix="story/")
        assert again.threads == 0 and "already at version" in again.line()

        state = graph.get_state(conf("story/main/1"))
        assert state.values["note"] == Note(text="the lamp is lit")
        out = graph.invoke(Command(resume="yes"), conf("story/main/1"))
        assert out["final"] == "the lamp is lit (yes)"
        assert saver.migrate().threads == 1  # the synchronous driver: the rest

    async def test_a_story_with_an_unreadable_thread_is_refused_whole(
        self, redis_url: str, saver: RedisCheckpointSaver, raw: redis.Redis
    ) -> None:
        for thread_id in ("bad/main/1", "bad/main/2"):
            write_as_version_1(redis_url, raw, thread_id)
        tk = ThreadKeys("bad/main/2")
        (cid, *_) = raw.zrange(tk.index(""), 0, 0)
        raw.hset(tk.checkpoint("", cid.decode()), "metadata", b"\x00 not a checkpoint")
        before = snapshot(raw, "bad/main/")
        with pytest.raises(ValueError):
            await saver.amigrate(prefix="bad/")
        assert snapshot(raw, "bad/main/") == before  # nothing of the story written

    async def test_a_newer_thread_is_refused_in_one_line_and_left_as_it_is(
        self, saver: RedisCheckpointSaver, raw: redis.Redis
    ) -> None:
        graph = build(saver)
        graph.invoke(EMPTY, conf("later/main/1"))
        raw.set(ThreadKeys("later/main/1").version, "99")
        before = snapshot(raw, "later/main/1")
        for attempt in (
            lambda: graph.get_state(conf("later/main/1")),
            lambda: graph.invoke(Command(resume="yes"), conf("later/main/1")),
            lambda: saver.migrate(prefix="later/"),
        ):
            with pytest.raises(Conflict, match="newer Fabula \\(checkpoint version 99") as no:
                attempt()
            assert "\n" not in str(no.value)
        with pytest.raises(Conflict, match="newer Fabula"):
            await saver.amigrate(prefix="later/")
        raw.set(ThreadKeys("later/main/1").version, "two")
        with pytest.raises(Conflict, match="unreadable version \\('two'\\)"):
            graph.get_state(conf("later/main/1"))
        raw.set(ThreadKeys("later/main/1").version, "99")
        assert snapshot(raw, "later/main/1") == before

    def test_a_copy_keeps_its_version_and_a_deleted_thread_drops_it(
        self, redis_url: str, saver: RedisCheckpointSaver, raw: redis.Redis
    ) -> None:
        write_as_version_1(redis_url, raw, "src/old")
        saver.copy_thread("src/old", "dst/old")
        assert raw.get(ThreadKeys("dst/old").version) is None  # still version 1: refused
        with pytest.raises(StoryOutdated):
            saver.get_tuple(conf("dst/old"))
        build(saver).invoke(EMPTY, conf("src/new"))
        saver.copy_thread("src/new", "dst/new")
        assert raw.get(ThreadKeys("dst/new").version) == str(CHECKPOINT_VERSION).encode()
        assert saver.get_tuple(conf("dst/new")) is not None
        saver.delete_thread("dst/new")
        assert raw.get(ThreadKeys("dst/new").version) is None
        build(saver).invoke(EMPTY, conf("dst/new"))  # made again, new
        assert raw.get(ThreadKeys("dst/new").version) == str(CHECKPOINT_VERSION).encode()
