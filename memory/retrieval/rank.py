"""Ranking episodes for a plan: lexical matches, read in their scene, by whom, and when.

An episode rarely answers a request alone: a question is answered in the line after it, a
topic runs over a few lines, a scene is about something as a whole. So an episode's score
is its own BM25 score, plus a share of its neighbours' (the episodes just before and after
it in the same turn: ``NEIGHBOURS`` on each side, each further one counting less), plus a
share of its scene's (the sum over the turn, scaled to the best episode's score). Then:

- an episode by, to or naming an entity the request names weighs ``ENTITY_BOOST`` more;
- with a time range, episodes dated inside it weigh ``TIME_BOOST`` more; "at the
  beginning" favours the first episodes and "recently" the last ones;
- with no topic terms at all, the most recent episodes of the named entities (or of the
  story) stand in, newest first.

Every read is an index lookup (see :mod:`fabula.memory.index.search`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import redis.asyncio as aredis

from fabula.memory.episodes import Episode
from fabula.memory.index.search import Source, by_day, by_entity, by_time, fetch, lexical
from fabula.memory.records import event_id, event_position
from fabula.memory.retrieval.plan import RetrievalPlan

__all__ = ["NEIGHBOURS", "Ranked", "candidates", "rank_episodes"]

NEIGHBOURS = 2
NEIGHBOUR_SHARE = 0.5
NEIGHBOUR_DECAY = 0.7
SCENE_SHARE = 0.2
ENTITY_BOOST = 1.3
TIME_BOOST = 1.5
ORDER_BOOST = 1.3
CANDIDATES = 120  # episodes fetched and offered to the packer, by default
TOKENS_PER_CANDIDATE = 8  # a budget of N tokens is offered about N / 8 episodes


def candidates(budget: int) -> int:
    """How many ranked episodes to offer a budget: more than fit (a line that does not fit
    is skipped and the next is tried), never a number that grows with the story."""
    return max(40, budget // TOKENS_PER_CANDIDATE)


@dataclass(frozen=True)
class Ranked:
    """Episodes in the order they should be offered to the budget, best first."""

    episodes: list[Episode]
    scores: dict[str, float]


def _smoothed(scores: dict[str, float]) -> dict[str, float]:
    by_slot = {event_position(i): s for i, s in scores.items()}
    out: dict[str, float] = {}
    for turn, seq in {
        (t, q + d) for (t, q) in by_slot for d in range(-NEIGHBOURS, NEIGHBOURS + 1) if q + d >= 0
    }:
        value = by_slot.get((turn, seq), 0.0)
        for d in range(1, NEIGHBOURS + 1):
            share = NEIGHBOUR_SHARE * NEIGHBOUR_DECAY ** (d - 1)
            value += share * (by_slot.get((turn, seq - d), 0.0) + by_slot.get((turn, seq + d), 0.0))
        out[event_id(turn, seq)] = value
    if out:
        scene: dict[int, float] = {}
        for (turn, _), s in by_slot.items():
            scene[turn] = scene.get(turn, 0.0) + s
        top_scene, top = max(scene.values()), max(out.values())
        for episode_id in out:
            out[episode_id] += SCENE_SHARE * top * scene[event_position(episode_id)[0]] / top_scene
    return out


async def rank_episodes(
    client: aredis.Redis,
    where: Sequence[Source],
    plan: RetrievalPlan,
    *,
    as_of: int | None = None,
    limit: int = CANDIDATES,
) -> Ranked:
    """The episodes ``plan`` depends on, best first (at most ``limit``)."""
    scores = _smoothed(await lexical(client, where, plan.terms, as_of=as_of))
    if not scores:
        fallback: list[str] = []
        for entity in plan.entities:
            fallback += await by_entity(client, where, entity, as_of=as_of, last=limit)
        if not fallback:
            fallback = await by_time(client, where, as_of=as_of, last=limit,
                                     earliest=plan.order == "earliest")  # fmt: skip
        scores = {i: 1.0 / (1 + n) for n, i in enumerate(dict.fromkeys(fallback))}
    time = plan.time
    if time.first_day is not None or time.last_day is not None:
        dated = set(await by_day(client, where, time.first_day, time.last_day, as_of=as_of))
        scores = {i: s * (TIME_BOOST if i in dated else 1.0) for i, s in scores.items()}
    ordered = sorted(scores, key=lambda i: (-scores[i], event_position(i)))[: limit * 2]
    found = await fetch(client, where, ordered)
    wanted = set(plan.entities)
    if time.order is not None and found:
        times = sorted(ep.time for ep in found.values())
        cut = times[len(times) // 4] if time.order == "earliest" else times[-len(times) // 4 - 1]
    for episode_id, ep in found.items():
        if wanted and wanted & {ep.speaker, *ep.entities, *ep.participants}:
            scores[episode_id] *= ENTITY_BOOST
        if (time.order == "earliest" and ep.time <= cut) or (
            time.order == "latest" and ep.time >= cut
        ):
            scores[episode_id] *= ORDER_BOOST
    best = sorted(found, key=lambda i: (-scores[i], event_position(i)))[:limit]
    if PAIR_REPLIES:
        best = _with_replies(best, found)
    return Ranked([found[i] for i in best], {i: scores.get(i, 0.0) for i in best})


PAIR_REPLIES = 1


def _with_replies(best: list[str], found: dict[str, Episode]) -> list[str]:
    """Offer the reply to a question right after it, and a question right before its reply:
    in a dialogue, a question is answered in the next line by someone else."""
    out: dict[str, None] = {}
    for episode_id in best:
        turn, seq = event_position(episode_id)
        before = found.get(event_id(turn, seq - 1)) if seq > 0 else None
        after = found.get(event_id(turn, seq + 1))
        here = found[episode_id]
        if (
            PAIR_REPLIES > 1
            and before is not None
            and _asks(before)
            and before.speaker != here.speaker
        ):
            out.setdefault(before.id)
        out.setdefault(episode_id)
        if after is not None and _asks(here) and after.speaker != here.speaker:
            out.setdefault(after.id)
    return list(out)


def _asks(episode: Episode) -> bool:
    return episode.speaker is not None and "?" in episode.text
