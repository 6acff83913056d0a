"""What the belief benchmarks share: a Redis for the run, story set-up, scoring, output.

Every benchmark ingests its stories through the service's one commit path
(:func:`~fabula.graph.commit.commit_text`: limits, the offline memory-builder, enrichment,
the episode index, consolidation; :func:`commit_path`) and answers from the Redis-backed
views. Its ``shared_memory`` baseline is the conventional design: the same memory-builder
and store, but one memory that every character reads (``answer(..., shared=True)`` reads W
whoever asks).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import hashlib
import json
import secrets
import shutil
import tempfile
import time
from collections import defaultdict
from collections.abc import (
    AsyncIterator,
    Callable,
    Coroutine,
    Iterable,
    Iterator,
    Mapping,
    Sequence,
)
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Literal

import redis
import redis.asyncio as aredis

from fabula.agents.roles import MemoryBuilderRole
from fabula.bench.report import write_json
from fabula.graph.commit import CommitPath, commit_text
from fabula.memory.answer import answer
from fabula.memory.delta import DeltaBuilder, TurnDelta
from fabula.memory.hierarchy import consolidate
from fabula.memory.index.vectors import Embedder
from fabula.memory.rules import WorldRules
from fabula.memory.server import EmbeddedRedis, connect_async
from fabula.memory.store import StoryStore
from fabula.settings import FsyncPolicy, Settings


@dataclass(frozen=True)
class Scored:
    """One answered question: ``answer`` from the per-character views, ``baseline`` from the
    shared memory; ``group`` is what the figures are broken down by."""

    index: int
    question: str
    gold: str
    answer: str
    baseline: str
    group: str
    extra: Mapping[str, Any] | None = None

    @property
    def correct(self) -> bool:
        return self.answer == self.gold

    @property
    def baseline_correct(self) -> bool:
        return self.baseline == self.gold


def part_of(key: str) -> Literal["working", "checking"]:
    """The part of a public dataset a key falls in, by the SHA-256 of the key: a third
    ``checking`` (the first 8 hex, as a number, divisible by 3), two thirds ``working``.
    Rules are tuned on the working part only; both are reported."""
    digest = hashlib.sha256(key.encode("utf-8")).hexdigest()
    return "checking" if int(digest[:8], 16) % 3 == 0 else "working"


def rate(hits: Iterable[bool]) -> float:
    """The share of true values, rounded to 4 places (0.0 for none)."""
    values = list(hits)
    return round(sum(values) / len(values), 4) if values else 0.0


def rates_by(
    items: Sequence[Scored], key: Callable[[Scored], str], hit: Callable[[Scored], bool]
) -> dict[str, float]:
    groups: dict[str, list[bool]] = defaultdict(list)
    for item in items:
        groups[key(item)].append(hit(item))
    return {name: rate(groups[name]) for name in sorted(groups)}


CONCURRENCY = 24  # stories in flight at once on one connection pool


async def score_stories(
    redis_url: str | None,
    prefix: str,
    stories: Mapping[str, list[Any]],
    run_story: Callable[[aredis.Redis, str, str, list[Any]], Coroutine[Any, Any, list[Scored]]],
) -> tuple[list[Scored], float]:
    """Ingest and question every distinct story concurrently, each under its own story id;
    return the scored questions in input order and the seconds it took."""
    tag = run_id()
    started = time.perf_counter()
    async with bench_redis(redis_url) as client:
        gate = asyncio.Semaphore(CONCURRENCY)

        async def one(k: int, text: str, group: list[Any]) -> list[Scored]:
            async with gate:
                return await run_story(client, f"{prefix}-{tag}-{k}", text, group)

        done = await asyncio.gather(
            *(one(k, text, group) for k, (text, group) in enumerate(stories.items()))
        )
    seconds = round(time.perf_counter() - started, 3)
    return sorted((s for batch in done for s in batch), key=lambda s: s.index), seconds


async def _consolidate(store: StoryStore, turn: int) -> None:
    await consolidate(store, turn)


def commit_path(
    memory_builder: MemoryBuilderRole | None = None, *, embedder: Embedder | None = None
) -> CommitPath:
    """The service's commit path as a benchmark takes it: the memory-builder (by default the
    offline one), the default limits, enrichment, the episode index inline, the hierarchy
    consolidated inline and awaited (the application does it in a background task: awaited,
    each figure is deterministic), no wait for the disk (an autonomous turn's)."""
    path = CommitPath(consolidate=_consolidate, embedder=embedder)
    return path if memory_builder is None else replace(path, memory_builder=memory_builder)


@dataclass(frozen=True)
class QuestionBench:
    """A question benchmark whose items each carry their ``story`` (one sentence a line),
    ``question``, ``index`` and ``gold``; calling it runs the file at ``path``.

    Each distinct story is its own story in Redis with ``rules`` (world ``name``), committed
    as ONE turn whose text is the story, so its events are ordered within the turn; its
    questions are answered from the per-character views and from the shared memory, scored
    under ``group(item)`` with ``extra(item)``, and the story deleted. The run groups the
    questions by story, scores them (:func:`score_stories`), summarises, prints the table,
    writes the JSON and one answer line per question (``answer_fields`` adds to the four
    required fields)."""

    name: str
    title: str
    rules: WorldRules
    load: Callable[[str | Path], Sequence[Any]]
    group: Callable[[Any], str]
    summarise: Callable[[Sequence[Scored], float, int], dict[str, Any]]
    show: Callable[[dict[str, Any]], None]
    answer_fields: Callable[[Scored], Mapping[str, Any]]
    extra: Callable[[Any], Mapping[str, Any] | None] = lambda item: None

    async def run_story(
        self, client: aredis.Redis, story_id: str, text: str, items: Sequence[Any]
    ) -> list[Scored]:
        store = await create_story(client, story_id, self.rules, world=self.name, title=self.title)
        try:
            await commit_text(commit_path(), store, 1, text)
            out = []
            for item in items:
                own = await answer(store, item.question)
                shared = await answer(store, item.question, shared=True)
                out.append(
                    Scored(
                        item.index,
                        item.question,
                        item.gold,
                        own,
                        shared,
                        self.group(item),
                        self.extra(item),
                    )
                )
            return out
        finally:
            await store.delete()

    async def __call__(
        self,
        path: str | Path,
        *,
        redis_url: str | None,
        json_out: str | Path | None = None,
        answers_out: str | Path | None = None,
        quiet: bool = False,
    ) -> dict[str, Any]:
        """Run the benchmark on ``path``; print a table, write the JSON and answers if asked;
        return it."""
        stories: dict[str, list[Any]] = {}
        for item in self.load(path):
            stories.setdefault(item.story, []).append(item)
        scored, seconds = await score_stories(redis_url, self.name, stories, self.run_story)
        result = self.summarise(scored, seconds, len(stories))
        if not quiet:
            self.show(result)
        write_json(json_out, result)
        write_answers(
            answers_out,
            (
                {
                    "index": s.index,
                    "question": s.question,
                    "answer": s.answer,
                    "gold": s.gold,
                    **self.answer_fields(s),
                    "shared_memory": s.baseline,
                }
                for s in scored
            ),
        )
        return result


def run_id() -> str:
    """A short random tag so a run's story ids never collide with another's."""
    return secrets.token_hex(3)


@contextlib.contextmanager
def private_redis_url(redis_url: str | None, fsync: FsyncPolicy = "always") -> Iterator[str]:
    """``redis_url``; with None, the URL of a private server started (and stopped) here,
    with the ``fsync`` policy."""
    if redis_url is not None:
        yield redis_url
        return
    # a short path: the unix socket's path must stay under ~100 characters
    server = EmbeddedRedis(Path(tempfile.mkdtemp(prefix="fabench-", dir="/tmp")), fsync=fsync)
    try:
        yield server.ensure_started()
    finally:
        server.stop()
        shutil.rmtree(server.directory, ignore_errors=True)


async def appendfsync(client: aredis.Redis) -> str:
    """The server's ``appendfsync`` policy, for a report ("?" when it does not say)."""
    try:
        return str((await client.config_get("appendfsync")).get("appendfsync", "?"))
    except (redis.RedisError, AttributeError):
        return "?"


@contextlib.asynccontextmanager
async def bench_redis(redis_url: str | None) -> AsyncIterator[aredis.Redis]:
    """A client on ``redis_url``; with None, on a private server started (and stopped) here."""
    with private_redis_url(redis_url) as url:
        client = connect_async(url, max_connections=64)
        try:
            yield client
        finally:
            await client.aclose()


async def create_story(
    client: aredis.Redis,
    story: str,
    rules: WorldRules,
    *,
    world: str,
    title: str,
    setup: TurnDelta | None = None,
) -> StoryStore:
    """A new story with ``rules`` and a setup turn (empty unless given)."""
    store = StoryStore(client, story)
    await store.create(
        setup if setup is not None else DeltaBuilder(0, "").build(),
        world=world,
        title=title,
        rules=rules,
    )
    return store


def write_answers(path: str | Path | None, rows: Iterable[Mapping[str, Any]]) -> None:
    """One JSON object a line, in input order."""
    if path is None:
        return
    with open(path, "w", encoding="utf-8") as handle:
        for row in rows:
            handle.write(json.dumps(row, ensure_ascii=False) + "\n")


def bench_main(
    name: str,
    run: Callable[..., Coroutine[Any, Any, dict[str, Any]]],
    argv: Sequence[str] | None = None,
) -> int:
    """``python -m bench.<name> PATH [--json OUT] [--answers OUT.jsonl]``."""
    parser = argparse.ArgumentParser(prog=f"python -m bench.{name}")
    parser.add_argument("path")
    parser.add_argument("--json", dest="json_out")
    parser.add_argument("--answers", dest="answers_out")
    args = parser.parse_args(argv)
    asyncio.run(
        run(
            args.path,
            redis_url=Settings.from_env().redis_url,
            json_out=args.json_out,
            answers_out=args.answers_out,
        )
    )
    return 0
