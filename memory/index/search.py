"""Searching the episode indexes: lexical (BM25), by entity, by time; never a scan.

A search reads a branch's own index and its ancestors' up to their fork turns (a
:class:`Source` each), or a character's own index of what it witnessed, through whatever
connection it is given — for a character, its read-only Redis user. Each query term reads
only the ``per_term`` best postings of its sorted set (ordered by BM25 weight) and the
set's size (its document frequency), in one pipelined round trip, so a search costs
``O(terms · per_term)`` whatever the story's length.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import redis.asyncio as aredis

from fabula.memory.episodes import Episode, parse_episodes
from fabula.memory.keys import EpisodeKeys
from fabula.memory.records import event_position
from fabula.memory.store.view import StoryReads

PER_TERM = 256


@dataclass(frozen=True)
class Source:
    """One index a search reads: ``keys``, visible up to turn ``through`` (None: all)."""

    keys: EpisodeKeys
    through: int | None = None


def turn_of(episode_id: str) -> int:
    """``"e12.3"`` → 12."""
    return int(episode_id[1 : episode_id.index(".")])


async def sources(store: StoryReads, character: str | None = None) -> list[Source]:
    """The indexes a search on the store's branch reads (a character's own, if given)."""
    out = [Source(EpisodeKeys(store.story, store.branch, character))]
    for anc in await store.ancestry():
        out.append(Source(EpisodeKeys(store.story, anc.branch, character), anc.through))
    return out


def visible(episode_id: str, source: Source, as_of: int | None) -> bool:
    """Whether an episode of ``source`` is part of the story it is read for."""
    turn = turn_of(episode_id)
    if source.through is not None and turn > source.through:
        return False
    return as_of is None or turn <= as_of


async def lexical(
    client: aredis.Redis,
    where: Sequence[Source],
    query: Iterable[str],
    *,
    as_of: int | None = None,
    per_term: int = PER_TERM,
    families: Sequence[str] = ("t",),
    general: Iterable[str] = (),
) -> list[dict[str, float]]:
    """BM25 scores of the episodes matching ``query`` terms (repeats count once), one
    mapping per posting family asked for: ``"t"`` the episodes' own text, ``"w"`` their
    windows, ``"g"`` their general terms, matched with ``general`` instead of ``query``
    (the last two in a branch's index only), all read in one round trip."""
    wanted = list(dict.fromkeys(query))
    asked = {f: list(dict.fromkeys(general)) if f == "g" else wanted for f in families}
    if not wanted or not where:
        return [{} for _ in families]
    replies = await _postings(client, where, families, asked, per_term)
    offsets = [0]
    for family in families:
        offsets.append(offsets[-1] + 2 * len(asked[family]))
    step = 1 + offsets[-1]
    total = sum(int(replies[i * step] or 0) for i in range(len(where)))
    out = []
    for f, family in enumerate(families):
        terms = asked[family]
        df: dict[str, int] = dict.fromkeys(terms, 0)
        for i in range(len(where)):
            base = i * step + 1 + offsets[f]
            for j, term in enumerate(terms):
                df[term] += int(replies[base + 2 * j])
        scores: dict[str, float] = {}
        for i, src in enumerate(where):
            base = i * step + 1 + offsets[f]
            for j, term in enumerate(terms):
                if not df[term]:
                    continue
                idf = math.log(1 + (total - df[term] + 0.5) / (df[term] + 0.5))
                for member, w in replies[base + 2 * j + 1]:
                    if visible(member, src, as_of):
                        scores[member] = scores.get(member, 0.0) + idf * float(w)
        out.append(scores)
    return out


async def _postings(
    client: aredis.Redis,
    where: Sequence[Source],
    families: Sequence[str],
    asked: dict[str, list[str]],
    per_term: int,
) -> list[Any]:
    """In one round trip, for each source: its episode count, then for each family and
    each of its ``asked`` terms the posting's length and its best ``per_term`` members
    with their weights."""
    keyed = {"t": EpisodeKeys.term, "w": EpisodeKeys.window, "g": EpisodeKeys.general}
    async with client.pipeline(transaction=False) as pipe:
        for src in where:
            pipe.hget(src.keys.stats, "episodes")
            for family in families:
                for term in asked[family]:
                    key = keyed[family](src.keys, term)
                    pipe.zcard(key)
                    pipe.zrange(
                        key,
                        "+inf",
                        "-inf",
                        byscore=True,
                        desc=True,
                        offset=0,
                        num=per_term,
                        withscores=True,
                    )
        replies: list[Any] = await pipe.execute()
    return replies


async def by_entities(
    client: aredis.Redis,
    where: Sequence[Source],
    entities: Sequence[str],
    *,
    as_of: int | None = None,
    last: int = 20,
) -> list[str]:
    """The ``last`` most recent episodes that involve or name any of ``entities``, newest
    first (one round trip)."""
    keyed = [(s, s.keys.entity(e)) for e in dict.fromkeys(entities) for s in where]
    return await _latest(client, keyed, as_of, last)


async def by_entity(
    client: aredis.Redis,
    where: Sequence[Source],
    entity: str,
    *,
    as_of: int | None = None,
    last: int = 20,
) -> list[str]:
    """The ``last`` most recent episodes that involve or name ``entity``, newest first."""
    return await _latest(client, [(s, s.keys.entity(entity)) for s in where], as_of, last)


async def by_time(
    client: aredis.Redis,
    where: Sequence[Source],
    *,
    as_of: int | None = None,
    last: int = 20,
    earliest: bool = False,
) -> list[str]:
    """The ``last`` most recent episodes (or the first ones, ``earliest``), in that order."""
    if earliest:
        async with client.pipeline(transaction=False) as pipe:
            for src in reversed(where):  # the oldest ancestor holds the first episodes
                pipe.zrange(src.keys.time, 0, last - 1)
            replies = await pipe.execute()
        out = [
            m
            for src, ids in zip(reversed(where), replies, strict=True)
            for m in ids
            if visible(m, src, as_of)
        ]
        return out[:last]
    return await _latest(client, [(s, s.keys.time) for s in where], as_of, last)


async def _latest(
    client: aredis.Redis, keyed: Sequence[tuple[Source, str]], as_of: int | None, last: int
) -> list[str]:
    upper = "+inf" if as_of is None else f"({(as_of + 1) * 10_000}"
    async with client.pipeline(transaction=False) as pipe:
        for src, key in keyed:
            top = upper
            if src.through is not None:
                limit = (min(src.through, as_of) if as_of is not None else src.through) + 1
                top = f"({limit * 10_000}"
            pipe.zrange(key, top, "-inf", byscore=True, desc=True, offset=0, num=last)
        replies = await pipe.execute()
    # an id says its story time (turn, then order in the turn): no scores need reading
    merged = sorted({m for ids in replies for m in ids}, key=event_position, reverse=True)
    return merged[:last]


async def days_of(
    client: aredis.Redis,
    where: Sequence[Source],
    first_day: int | None,
    last_day: int | None,
    *,
    as_of: int | None = None,
    limit: int = 200,
) -> list[tuple[str, int]]:
    """Episodes dated between two day numbers (inclusive), oldest first, at most ``limit``,
    each with its day number."""
    low = "-inf" if first_day is None else first_day
    high = "+inf" if last_day is None else last_day
    async with client.pipeline(transaction=False) as pipe:
        for src in where:
            pipe.zrange(src.keys.day, low, high, byscore=True, offset=0, num=limit, withscores=True)
        replies = await pipe.execute()
    return [
        (m, int(day))
        for src, pairs in zip(where, replies, strict=True)
        for m, day in pairs
        if visible(m, src, as_of)
    ][:limit]


async def latest_day(
    client: aredis.Redis, where: Sequence[Source], *, as_of: int | None = None, look: int = 16
) -> int | None:
    """The story's present on its clock: the day number of the latest dated episode among
    the ``look`` most recent ones (None: the story gives no date). Two round trips."""
    recent = await by_time(client, where, as_of=as_of, last=look)
    found = await fetch(client, where, recent)
    return next((found[i].day for i in recent if i in found and found[i].day is not None), None)


async def fetch(
    client: aredis.Redis, where: Sequence[Source], ids: Sequence[str]
) -> dict[str, Episode]:
    """The episodes ``ids`` from the first source that holds each (one round trip)."""
    if not ids:
        return {}
    wanted = list(dict.fromkeys(ids))
    async with client.pipeline(transaction=False) as pipe:
        for src in where:
            pipe.hmget(src.keys.episodes, wanted)
        replies = await pipe.execute()
    found: dict[str, Episode] = {}
    for src, values in zip(where, replies, strict=True):
        for episode_id, raw in zip(wanted, values, strict=True):
            if raw is not None and episode_id not in found and visible(episode_id, src, None):
                found[episode_id] = parse_episodes([raw])[0]
    return found
