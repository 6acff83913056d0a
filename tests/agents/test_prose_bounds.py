"""The prose reader's bounds (issue 45): what one sentence and one turn may cost.

A sentence longer than the reader reads, or a turn whose reading passed its deadline,
keeps the rest as narration with the reason, and the turn still commits; what a long
text yields grows with the text, never faster. Timings are measured by
``tools/reader_scale.py``, not asserted here: these tests hold the output's size and the
reasons, which do not depend on the machine.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator, Mapping

import redis.asyncio as aredis
from redis.asyncio.lock import Lock

from fabula.agents.memory_builder import OfflineMemoryBuilder, readings
from fabula.agents.reading.prose import read_prose
from fabula.graph.commit import CommitPath, commit_text
from fabula.limits import Limits
from fabula.memory.actions import StoryAction
from fabula.memory.delta import DeltaBuilder
from fabula.memory.leases import renewed
from fabula.memory.projections import project_beliefs
from fabula.memory.records import CONTAINER, Entity
from fabula.memory.store import StoryStore

STORY = {
    "bob": Entity(id="bob", kind="character", name="Bob"),
    "ann": Entity(id="ann", kind="character", name="Ann"),
    "key": Entity(id="key", kind="object", name="key"),
    "box": Entity(id="box", kind="object", name="box", attributes={"role": CONTAINER}),
}
# the attacker's shape: one sentence, no full stop, an event in every clause
CLAUSE = "Bob saw Ann take the key from the box, "


def test_a_sentence_is_read_up_to_its_bound_and_the_rest_kept_with_the_reason() -> None:
    text = CLAUSE * 40
    actions = read_prose(text, STORY, Limits(sentence_words=30))
    read = [a for a in actions if a.kind != "narration"]
    [rest] = [a for a in actions if a.kind == "narration"]
    # 30 words and marks are three clauses of ten: three takes (and where the key was
    # before), all before the cut
    assert [a.kind for a in read] == ["state", "take", "take", "take"]
    assert all(a.end <= rest.start for a in read)
    assert text[rest.start :].startswith(CLAUSE) and rest.end == len(text.rstrip())
    assert rest.unsure is not None and "FABULA_MAX_SENTENCE_WORDS" in rest.unsure


def test_what_a_long_sentence_yields_is_bounded_by_the_bound_not_the_text() -> None:
    short = read_prose(CLAUSE * 100, STORY)
    long = read_prose(CLAUSE * 1500, STORY)  # 58 KB, one sentence
    assert [a.kind for a in long] == [a.kind for a in short]
    size = sum(len(a.model_dump_json()) for a in long)
    assert size < 64 * 1024


def test_a_sentence_within_the_bound_is_read_whole() -> None:
    text = CLAUSE * 3
    kinds = [a.kind for a in read_prose(text, STORY, Limits(sentence_words=30))]
    assert kinds == ["state", "take", "take", "take"]


def test_past_the_deadline_the_sentences_left_stay_narration_with_the_reason() -> None:
    ticks: Iterator[float] = iter(float(t) for t in range(1000))
    text = "Ann took the key. Bob took the key. Ann took the key."
    actions = read_prose(text, STORY, Limits(reading_seconds=2.5), clock=lambda: next(ticks))
    # the clock reads 0 at the start, then 1, 2 and 3 before each sentence: the third is late
    assert [a.kind for a in actions] == ["take", "take", "narration"]
    assert actions[2].unsure is not None and "FABULA_READING_DEADLINE" in actions[2].unsure
    assert text[actions[2].start : actions[2].end] == "Ann took the key."


async def test_a_turn_of_one_huge_sentence_commits_with_a_finding(
    aredis_client: aredis.Redis,
) -> None:
    """The 58 KB sentence that made a 16 MB delta: committed, its unread rest a finding."""
    store = StoryStore(aredis_client, "s")
    await store.create(DeltaBuilder(0, "").build(), world="test", title="test")
    opening = "Ann entered the study. Bob entered the study. Ann put the key in the box."
    await commit_text(CommitPath(), store, 1, opening)
    with readings.collect() as found:
        delta = await OfflineMemoryBuilder().build(store, 2, CLAUSE * 1500)
    assert len(delta.model_dump_json()) < 4 * 1024 * 1024
    unread = [f for f in found if "FABULA_MAX_SENTENCE_WORDS" in f.message]
    assert len(unread) == 1 and len(unread[0].quote) <= 200
    await commit_text(CommitPath(), store, 2, CLAUSE * 1500)
    assert (await project_beliefs(store, ["bob"])).where("key") == "ann"


async def _story(client: aredis.Redis) -> StoryStore:
    store = StoryStore(client, "s")
    await store.create(DeltaBuilder(0, "").build(), world="test", title="test")
    await commit_text(CommitPath(), store, 1, "Ann entered the study. Bob entered the study.")
    return store


async def test_reading_leaves_the_event_loop_free(aredis_client: aredis.Redis) -> None:
    """The reader runs while the process's event loop goes on (the studio answers, a lock
    is renewed): here the reading cannot end until a coroutine on the loop lets it."""
    store = await _story(aredis_client)
    started, released = threading.Event(), threading.Event()

    def reader(text: str, entities: Mapping[str, Entity]) -> list[StoryAction]:
        started.set()
        assert released.wait(timeout=10), "the event loop was blocked while reading"
        return read_prose(text, entities)

    async def release() -> None:
        while not started.is_set():
            await asyncio.sleep(0.01)
        released.set()

    delta, _ = await asyncio.gather(
        OfflineMemoryBuilder(reader).build(store, 2, "Ann took the key."), release()
    )
    assert [e.kind for e in delta.events] == ["take"]


async def test_a_lock_is_held_as_long_as_the_reading_runs(aredis_client: aredis.Redis) -> None:
    """A decision's lock lives a second unless renewed; a reading of 2.5 s under it leaves
    it held (the renewal runs on the event loop meanwhile), never expired under its
    holder, where another decision would take the turn."""
    store = await _story(aredis_client)

    def slow(text: str, entities: Mapping[str, Entity]) -> list[StoryAction]:
        time.sleep(2.5)
        return read_prose(text, entities)

    lock = Lock(aredis_client, "test-decision-lock", timeout=1.0)
    assert await lock.acquire()
    async with renewed(lock):
        await OfflineMemoryBuilder(slow).build(store, 2, "Ann took the key.")
        assert await lock.owned()
