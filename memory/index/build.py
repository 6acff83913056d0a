"""Keeping the episode indexes current: a consolidation step that never blocks a commit.

:func:`index_through` turns every committed turn not yet indexed into episodes and writes,
in one transaction per batch of turns:

- the branch's index (:class:`~fabula.memory.keys.EpisodeKeys`): each episode, its BM25
  term weights (one sorted set per term, ordered by weight, so a search reads only the
  best postings of each term), its entities, its story time and its date;
- the same for each witness, in the witness's own keyspace (what a character lived is
  searchable through its read-only Redis user, and nothing else is there), each episode
  as the witness remembers it (its recollection, see :mod:`fabula.memory.recollection`);
- the watermark (the last turn indexed).

The transaction watches the watermark: two indexers racing over the same turns (an RQ
job run twice, an inline call and a job) write once; the loser sees the new watermark and
has nothing left to do. A branch indexes only its own turns; earlier ones are read from
its ancestors' indexes (see :mod:`fabula.memory.index.search`).
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass
from typing import Any

from redis.exceptions import WatchError

from fabula.memory.episodes import EntityMatcher, Episode, episode_of, time_score
from fabula.memory.index.terms import term_counts
from fabula.memory.keys import EpisodeKeys
from fabula.memory.recollection import recollect, render_event
from fabula.memory.store import StoryStore

__all__ = ["BATCH_TURNS", "K1", "B", "IndexStats", "index_through", "indexed_through"]

K1 = 1.2
B = 0.75
BATCH_TURNS = 256  # turns per transaction when catching up a long backlog


@dataclass
class IndexStats:
    """An index's collection statistics: episodes and their total length in terms."""

    episodes: int = 0
    length: int = 0

    def avgdl(self) -> float:
        return self.length / self.episodes if self.episodes else 1.0


def weight(tf: int, length: int, avgdl: float) -> float:
    """BM25's saturated, length-normalised term frequency (the idf is applied at search)."""
    return tf * (K1 + 1) / (tf + K1 * (1 - B + B * length / max(avgdl, 1e-9)))


async def _start(store: StoryStore) -> int:
    """The turn before a branch's own turns: its fork (main: -1)."""
    ancestry = await store.ancestry()
    return ancestry[0].through if ancestry else -1


async def indexed_through(store: StoryStore) -> int:
    """The last turn whose episodes are indexed on this branch."""
    raw = await store.client.hget(EpisodeKeys(store.story, store.branch).stats, "turn")
    return await _start(store) if raw is None else int(raw)


async def index_through(store: StoryStore, turn: int | None = None) -> int:
    """Index the committed turns up to ``turn`` (default: the head); return the watermark.

    Idempotent, and safe to run concurrently (see the module docstring).
    """
    target = await store.head() if turn is None else min(turn, await store.head())
    while True:
        mark = await indexed_through(store)
        if mark >= target:
            return mark
        last = min(target, mark + BATCH_TURNS)
        try:
            await _index_batch(store, mark, last)
        except WatchError:
            continue  # another indexer moved the watermark: look again


async def _read_stats(store: StoryStore, keys: list[EpisodeKeys]) -> list[IndexStats]:
    async with store.client.pipeline(transaction=False) as pipe:
        for k in keys:
            pipe.hmget(k.stats, ["episodes", "length"])
        rows = await pipe.execute()
    return [IndexStats(int(n or 0), int(length or 0)) for n, length in rows]


async def _index_batch(store: StoryStore, mark: int, last: int) -> None:
    own = EpisodeKeys(store.story, store.branch)
    texts = await store.turn_texts(mark + 1, last)
    events = await store.events([e for t in texts for e in t.events])
    entities = await store.entities()
    matcher = EntityMatcher(entities)
    clocks = {t.turn: t.clock for t in texts}
    episodes = [episode_of(ev, clocks.get(ev.turn), matcher) for ev in events]
    counted = [(ep, term_counts(ep.text)) for ep in episodes]
    # a witness keeps what it witnessed, never more: the same recollection its first-person
    # memory holds (memory.recollection), not the raw span the author's index keeps
    remembered: dict[str, str] = {}
    for text in texts:
        mine = [ev for ev in events if ev.turn == text.turn]
        quotes = recollect(text.text, mine, entities)
        for ev in mine:
            remembered[ev.id] = quotes.get(ev.id) or render_event(ev, entities)
    lived = []
    for ep, count in counted:
        quote = remembered.get(ep.id, ep.text)
        if quote == ep.text:
            lived.append((ep, count))
        else:
            lived.append((ep.model_copy(update={"text": quote}), term_counts(quote)))
    witnesses = sorted({w for ep in episodes for w in ep.witnesses})
    indexes: list[tuple[EpisodeKeys, list[tuple[Episode, Counter[str]]]]] = [(own, counted)]
    for w in witnesses:
        mine_lived = [(ep, c) for ep, c in lived if w in ep.witnesses]
        indexes.append((EpisodeKeys(store.story, store.branch, w), mine_lived))
    stats = await _read_stats(store, [k for k, _ in indexes])
    async with store.client.pipeline(transaction=True) as pipe:
        await pipe.watch(own.stats)
        raw = await pipe.hget(own.stats, "turn")
        if (await _start(store) if raw is None else int(raw)) != mark:
            raise WatchError("the watermark moved")
        pipe.multi()
        for (index, chosen), held in zip(indexes, stats, strict=True):
            if chosen:
                _write(pipe, index, held, chosen)
        pipe.hset(own.stats, "turn", last)
        await pipe.execute()


def _write(
    pipe: Any, index: EpisodeKeys, stats: IndexStats, chosen: list[tuple[Episode, Counter[str]]]
) -> None:
    """Queue one index's writes for ``chosen`` episodes on a pipeline in MULTI mode."""
    batch_length = sum(sum(c.values()) for _, c in chosen)
    avgdl = (stats.length + batch_length) / (stats.episodes + len(chosen))
    records: dict[str, str] = {}
    postings: dict[str, dict[str, float]] = {}
    by_entity: dict[str, dict[str, float]] = {}
    times: dict[str, float] = {}
    days: dict[str, float] = {}
    for ep, count in chosen:
        records[ep.id] = ep.model_dump_json(exclude_defaults=True)
        length = sum(count.values())
        for term, tf in count.items():
            postings.setdefault(term, {})[ep.id] = round(weight(tf, length, avgdl), 4)
        score = time_score(ep.turn, ep.seq)
        times[ep.id] = score
        for entity in ep.entities:
            by_entity.setdefault(entity, {})[ep.id] = score
        if ep.day is not None:
            days[ep.id] = ep.day
    pipe.hset(index.episodes, mapping=records)
    for term, members in postings.items():
        pipe.zadd(index.term(term), members)
    for entity, members in by_entity.items():
        pipe.zadd(index.entity(entity), members)
    pipe.zadd(index.time, times)
    if days:
        pipe.zadd(index.day, days)
    pipe.hincrby(index.stats, "episodes", len(chosen))
    pipe.hincrby(index.stats, "length", batch_length)


def parse_episodes(values: list[str | None]) -> list[Episode]:
    """Episodes from their stored JSON (missing ones skipped)."""
    return [Episode.model_validate(json.loads(v)) for v in values if v]
