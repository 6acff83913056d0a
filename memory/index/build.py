"""Keeping the episode indexes current: a consolidation step that never blocks a commit.

:func:`index_through` turns every committed turn not yet indexed into episodes and writes
them, with one call of the Redis function ``fabula_index`` per batch of turns, into:

- the branch's index (:class:`~fabula.memory.keys.EpisodeKeys`): each episode, its BM25
  term weights (one sorted set per term, ordered by weight, so a search reads only the
  best postings of each term), its window's (the episode with its turn's neighbours:
  a reply is found by the words of the question it answers) and its nouns' general
  terms' (:mod:`fabula.memory.index.general`: "taekwondo" is found as a "martial art"),
  its entities, its story time and its date;
- the same for each witness, in the witness's own keyspace (what a character lived is
  searchable through its read-only Redis user, and nothing else is there), each episode
  as the witness remembers it (its recollection, see :mod:`fabula.memory.recollection`),
  its window made of the episodes of that turn the witness remembers (``WINDOW`` of them
  on each side), and no general terms;
- the watermark (the last turn indexed).

Python reads the turns and derives the episodes once; the function fans them out to the
witnesses and computes each index's windows and weights inside Redis, so a turn witnessed by
twenty characters costs one round trip, not hundreds of commands. The function checks the
watermark it was given before writing anything: two indexers racing over the same turns
(an RQ job run twice, an inline call and a job) write once; the loser sees the new
watermark and has nothing left to do. A branch indexes only its own turns; earlier ones
are read from its ancestors' indexes (see :mod:`fabula.memory.index.search`), which are
brought up to the fork first.

The indexes are derived data, laid out by generation
(:data:`~fabula.memory.keys.INDEX_GENERATION`): a store indexed by an earlier Fabula is
indexed again, whole, under the current generation's keys the first time it is caught up
(by the writer's next context, the background indexer or a bench), and the earlier
generation's keys are dropped; with dense retrieval on, its episodes are embedded again.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from fabula.logs import get_logger
from fabula.memory.delta import TurnDelta
from fabula.memory.episodes import EntityMatcher, Episode, episode_of
from fabula.memory.index.general import general_counts
from fabula.memory.index.terms import term_counts
from fabula.memory.index.vectors import Embedder, add_vectors, embed_missing
from fabula.memory.keys import INDEX_GENERATION, EpisodeKeys, index_layout, index_prefix
from fabula.memory.keys import head as head_key
from fabula.memory.lua import fcall
from fabula.memory.recollection import recollect, render_event
from fabula.memory.records import Entity, Event
from fabula.memory.store.view import StoryReads

K1 = 1.2  # BM25's parameters; fabula.lua computes the same weights
B = 0.75
BATCH_TURNS = 256  # turns per call when catching up a long backlog
RETIRE_BATCH = 500  # keys per DEL when an earlier generation of an index is dropped
WINDOW = 2  # a window is an episode with this many of its turn's episodes on each side


log = get_logger(__name__)


def weight(tf: int, length: int, avgdl: float) -> float:
    """BM25's saturated, length-normalised term frequency (the idf is applied at search)."""
    return tf * (K1 + 1) / (tf + K1 * (1 - B + B * length / max(avgdl, 1e-9)))


async def _start(store: StoryReads) -> int:
    """The turn before a branch's own turns: its fork (main: -1)."""
    ancestry = await store.ancestry()
    return ancestry[0].through if ancestry else -1


async def indexed_through(store: StoryReads) -> int:
    """The last turn whose episodes are indexed on this branch."""
    raw = await store.client.hget(EpisodeKeys(store.story, store.branch).stats, "turn")
    return await _start(store) if raw is None else int(raw)


async def behind(store: StoryReads, turn: int | None = None) -> bool:
    """Whether turns up to ``turn`` (default: the head) are committed but not yet indexed,
    on the branch or, up to where it forked, on an ancestor it reads (one round trip)."""
    ancestry = await store.ancestry()
    async with store.client.pipeline(transaction=False) as pipe:
        pipe.hget(EpisodeKeys(store.story, store.branch).stats, "turn")
        pipe.hget(head_key(store.story, store.branch), "turn")
        for anc in ancestry:
            pipe.hget(EpisodeKeys(store.story, anc.branch).stats, "turn")
        mark, head, *marks = await pipe.execute()
    target = -1 if head is None else int(head)
    if turn is not None:
        target = min(target, turn)
    # each ancestor's own first turn to index: where it forked from the next one (main: -1)
    starts = [*(anc.through for anc in ancestry[1:]), -1][: len(ancestry)]
    for anc, raw, start in zip(ancestry, marks, starts, strict=True):
        if (start if raw is None else int(raw)) < min(anc.through, target):
            return True
    own = (ancestry[0].through if ancestry else -1) if mark is None else int(mark)
    return own < target


async def index_through(
    store: StoryReads,
    turn: int | None = None,
    *,
    embedder: Embedder | None = None,
    known: Mapping[int, TurnDelta] | None = None,
) -> int:
    """Index the committed turns up to ``turn`` (default: the head); return the watermark.
    With an ``embedder``, the new episodes' embeddings go into the branch's vector set too
    (:mod:`fabula.memory.index.vectors`), after those of episodes whose embedding failed
    before. ``known``: the committed deltas of some turns (by
    turn), which need not be read back (the caller that just committed them has them).

    Idempotent, and safe to run concurrently (see the module docstring).
    """
    target = await store.head() if turn is None else min(turn, await store.head())
    ancestry = await store.ancestry()
    if ancestry:  # a branch's search reads its parent's index up to the fork: first that
        fork, needed = ancestry[0], min(ancestry[0].through, target)
        held = await store.client.hget(EpisodeKeys(store.story, fork.branch).stats, "turn")
        if held is None or int(held) < needed:  # one read when the parent is up to date
            parent = StoryReads(store.client, store.story, fork.branch)
            await index_through(parent, needed, embedder=embedder)
    start = await _start(store)
    stats = EpisodeKeys(store.story, store.branch).stats
    layout = json.dumps(index_layout(store.story, store.branch))
    mark = await indexed_through(store)
    keys = EpisodeKeys(store.story, store.branch)
    if mark == start < target:
        await _retire(store)  # nothing of this generation yet: drop any older one's
    if embedder is not None:
        await embed_missing(store.client, keys, embedder)  # what failed before, first
    while mark < target:
        last = min(target, mark + BATCH_TURNS)
        batch = await _batch(store, mark, last, known)
        done = await fcall(
            store.client, "fabula_index", [stats], [layout, mark, last, start, batch, WINDOW]
        )
        if done == "gone":
            break
        if done == "ok" and embedder is not None:
            texts = [(ep["id"], json.loads(ep["json"])["text"]) for ep in json.loads(batch)["eps"]]
            await add_vectors(store.client, keys, embedder, texts)
        # 'moved': another indexer wrote these turns first; look again
        mark = last if done == "ok" else await indexed_through(store)
    return mark


async def _retire(store: StoryReads) -> int:
    """Delete the branch's episode indexes of earlier generations, its own and its
    witnesses' (see :data:`~fabula.memory.keys.INDEX_GENERATION`); how many keys went.
    An older generation's watermark goes last, so a run cut short is finished by the next."""
    olds = [
        EpisodeKeys(store.story, store.branch, generation=g) for g in range(1, INDEX_GENERATION)
    ]
    async with store.client.pipeline(transaction=False) as pipe:
        for old in olds:
            pipe.exists(old.stats)
        present = await pipe.execute()
    removed = 0
    for generation, (old, there) in enumerate(zip(olds, present, strict=True), start=1):
        if not there:
            continue
        log.info(
            "episode index: dropping an earlier generation",
            story=store.story,
            branch=store.branch,
            generation=generation,
        )
        mind = index_prefix(store.story, store.branch, "*", generation)
        for prefix in (old.prefix, mind):
            batch: list[str] = []
            async for key in store.client.scan_iter(match=f"{prefix}*", count=1000):
                if key != old.stats:
                    batch.append(key)
                if len(batch) >= RETIRE_BATCH:
                    removed += await store.client.delete(*batch)
                    batch = []
            if batch:
                removed += await store.client.delete(*batch)
        removed += await store.client.delete(old.stats)
    return removed


def _terms(text: str) -> tuple[int, Counter[str]]:
    counts = term_counts(text)
    return sum(counts.values()), counts


async def _batch(
    store: StoryReads, mark: int, last: int, known: Mapping[int, TurnDelta] | None = None
) -> str:
    """The episodes of turns ``mark+1..last`` as ``fabula_index`` reads them (JSON).
    ``known``: committed deltas of some of those turns, used instead of reading them back."""
    known = known or {}
    turns: list[tuple[int, str, str | None, list[Event], Mapping[str, str] | None]] = []
    if any(t not in known for t in range(mark + 1, last + 1)):
        texts = await store.turn_texts(mark + 1, last)
        events = await store.events([e for t in texts if t.turn not in known for e in t.events])
        by_turn: dict[int, list[Event]] = {}
        for ev in events:
            by_turn.setdefault(ev.turn, []).append(ev)
        turns = [
            (t.turn, t.text, t.clock, by_turn.get(t.turn, []), None)
            for t in texts
            if t.turn not in known
        ]
    turns += [
        (t, d.text, d.clock, list(d.events), d.recollections)
        for t, d in known.items()
        if mark < t <= last
    ]
    entities = await store.entities()
    matcher = EntityMatcher(entities)
    out: list[dict[str, Any]] = []
    for _turn, text, clock, mine, remembered in sorted(turns, key=lambda t: t[0]):
        # a witness keeps what it witnessed, never more: the same recollection its
        # first-person memory holds (memory.recollection; the delta's own when it is
        # given), not the raw span the author's index keeps
        quotes = recollect(text, mine, entities) if remembered is None else remembered
        items = [
            _payload(
                episode_of(ev, clock, matcher),
                ev,
                quotes.get(ev.id) or render_event(ev, entities),
                matcher,
                entities,
            )
            for ev in sorted(mine, key=lambda e: e.seq)
        ]
        out += items
    return json.dumps({"eps": out}, separators=(",", ":"))


def _payload(
    ep: Episode, ev: Event, quote: str, matcher: EntityMatcher, entities: Mapping[str, Entity]
) -> dict[str, Any]:
    length, counts = _terms(ep.text)
    general = general_counts(counts)
    item: dict[str, Any] = {
        "id": ep.id,
        "time": ep.time,
        "day": ep.day,
        "json": _json(ep),
        "len": length,
        "tf": counts,
        "gtf": general,
        "glen": sum(general.values()),
        "ents": list(ep.entities),
        "who": list(ep.witnesses),
    }
    if quote != ep.text:
        # what a witness remembers names only what its recollection names, and who and
        # where it saw: never an entity of the raw span it was not told
        known = _known(matcher.find(quote), [ev.actor, *ev.participants, ev.place], entities)
        lived = ep.model_copy(update={"text": quote, "entities": known})
        length, counts = _terms(quote)
        item["mine"] = {"json": _json(lived), "len": length, "tf": counts, "ents": list(known)}
    return item


def _known(
    found: Sequence[str], seen: Sequence[str | None], entities: Mapping[str, Entity]
) -> tuple[str, ...]:
    return tuple(dict.fromkeys([*found, *(s for s in seen if s and s in entities)]))


def _json(ep: Episode) -> str:
    return ep.model_dump_json(exclude_defaults=True)
