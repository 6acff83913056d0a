"""Ranking episodes for a plan: lexical matches, read in their scene, by whom, and when.

An episode rarely answers a request alone: a question is answered in the line after it, a
topic runs over a few lines, and a request names in general what a line names in
particular. So an episode is matched three times, all from the index: by its own words,
by its *window*'s (the episode with its turn's neighbours, see
:mod:`fabula.memory.index.build`) and by the general terms of its nouns ("taekwondo" is a
"martial art", :mod:`fabula.memory.index.general`); its score is the sum, each scaled to
its best match, the window's weighing ``WINDOW_WEIGHT`` and the general terms'
``GENERAL_WEIGHT``. The reply to a question that matches
gets ``ANSWER_SHARE`` of the question's own match: in a dialogue, what was asked is
answered next, by someone else. A character's own index has windows too, made of the
episodes it witnessed only, but no general terms. Then:

- an episode weighs ``ENTITY_BOOST`` more for each entity the request names that is its
  speaker, one of its participants or its place ("what did Ann see in the cellar" favours
  Ann's lines in the cellar); not its listeners: in a dialogue every line is to the other;
- with a time range, episodes dated inside it, or in the ``TOLD_WITHIN_DAYS`` after it
  (what happened on a day is often told a few days later: "last night I watched..."),
  weigh ``TIME_BOOST`` more; when the range is narrow (a day, a week, a month: under
  ``NARROW_DAYS``), the episodes dated inside it are matches in their own right, worth
  ``DATED_PRIOR`` of the best match before that boost, whatever their words ("what dish did
  Nate make on 9 May" is answered by "coconut ice cream" that day); "at the beginning"
  favours the first episodes and "recently" the last ones;
- with no topic terms matched at all, the episodes of the request's dates stand in,
  then the most recent episodes of the named entities (or of the story), newest first;
- when the matches are fewer than the budget is offered, more follow them, below every
  match, to fill what room they leave: the episodes of the request's dates, the lines
  around the best matches, the named entities' latest episodes.

With dense retrieval on (an embedder configured, :mod:`fabula.memory.index.vectors`), the
request's nearest episodes by meaning add their scaled similarity, ``DENSE_WEIGHT``.

Every read is an index lookup (see :mod:`fabula.memory.index.search`): a request costs a
few round trips, whatever the story's length.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import redis.asyncio as aredis

from fabula.memory.episodes import Episode
from fabula.memory.index.general import general_query
from fabula.memory.index.search import Source, by_entities, by_time, days_of, fetch, lexical
from fabula.memory.index.vectors import nearest
from fabula.memory.recall.plan import RecallPlan
from fabula.memory.records import event_id, event_position
from fabula.memory.timeref import TimeRef

WINDOW_WEIGHT = 2.0
GENERAL_WEIGHT = 1.0
DENSE_WEIGHT = 1.0
ANSWER_SHARE = 0.5
ENTITY_BOOST = 1.6
TIME_BOOST = 1.5
TOLD_WITHIN_DAYS = 7  # what happened on a day is often told in the days after it
DATED_PRIOR = 0.5  # a day the request names: its episodes are worth this share of the best match
NARROW_DAYS = 31  # a range of fewer days is narrow (a day, a week, a month)
ORDER_BOOST = 1.3
FILL_AROUND = 8  # the best matches whose neighbours are offered when matches are few
FILL_SCORE = 1e-3  # below any match
TOKENS_PER_CANDIDATE = 12  # a budget of N tokens is offered about N / 12 episodes


def candidates(budget: int) -> int:
    """How many ranked episodes to offer a budget: more than fit (a line that does not fit
    is skipped and the next is tried), never a number that grows with the story."""
    return max(40, budget // TOKENS_PER_CANDIDATE)


@dataclass(frozen=True)
class Ranked:
    """Episodes in the order they should be offered to the budget, best first."""

    episodes: list[Episode]
    scores: dict[str, float]


def _scaled(scores: dict[str, float]) -> dict[str, float]:
    top = max(scores.values(), default=0.0)
    return {i: s / top for i, s in scores.items()} if top > 0 else {}


def _fused(
    own: dict[str, float], window: dict[str, float], general: dict[str, float]
) -> dict[str, float]:
    """An episode's own match plus its window's and its general terms', each scaled to
    its best."""
    own, window, general = _scaled(own), _scaled(window), _scaled(general)
    return {
        i: own.get(i, 0.0)
        + WINDOW_WEIGHT * window.get(i, 0.0)
        + GENERAL_WEIGHT * general.get(i, 0.0)
        for i in own.keys() | window.keys() | general.keys()
    }


def _narrow(first_day: int | None, last_day: int) -> bool:
    return first_day is not None and last_day - first_day < NARROW_DAYS


def _next(episode_id: str) -> str:
    turn, seq = event_position(episode_id)
    return event_id(turn, seq + 1)


def _asks(episode: Episode) -> bool:
    return episode.speaker is not None and "?" in episode.text


async def rank_episodes(
    client: aredis.Redis,
    where: Sequence[Source],
    plan: RecallPlan,
    *,
    as_of: int | None = None,
    limit: int = 120,
    general: bool = True,
    query_vector: Sequence[float] | None = None,
    unweighted: Sequence[str] = (),
) -> Ranked:
    """The episodes ``plan`` depends on, best first (at most ``limit``). ``general``: the
    indexes read have general-term postings (a branch's do, a character's do not);
    ``query_vector``: the request's embedding, when dense retrieval is on (the nearest
    episodes' similarities, scaled to the best, add ``DENSE_WEIGHT`` times theirs);
    ``unweighted``: entities of the plan that weigh no episode up (a mind's owner, which is
    in all its memories), though they still choose what fills the room left."""
    own, scores = await _matches(client, where, plan, as_of, limit, general, query_vector)
    dated = await _dated(client, where, plan.time, scores, as_of)
    matched = bool(scores)
    if not matched:
        scores = await _fallback(client, where, plan, dated, as_of, limit)
    if dated:
        inside = set(dated)
        scores = {i: s * (TIME_BOOST if i in inside else 1.0) for i, s in scores.items()}
    # a few more than asked for: the boosts below may still move some up
    ordered = sorted(scores, key=lambda i: (-scores[i], event_position(i)))[: limit * 3 // 2]
    if not own:
        ordered = ordered[:limit]  # recency alone: nothing below would reorder enough
    asked = _scaled(own)
    replies = [_next(i) for i in ordered if i in asked]
    found = await fetch(client, where, [*ordered, *replies])
    _answered(asked, found, scores)
    _boosted(found, scores, plan.time, set(plan.entities) - set(unweighted))
    best = sorted((i for i in found if i in scores), key=lambda i: (-scores[i], event_position(i)))
    best = best[:limit]
    ranked = Ranked([found[i] for i in best], {i: scores[i] for i in best})
    if matched and len(best) < limit:
        await _fill(client, where, plan, ranked, set(dated), as_of, limit)
    return ranked


async def _matches(
    client: aredis.Redis,
    where: Sequence[Source],
    plan: RecallPlan,
    as_of: int | None,
    limit: int,
    general: bool,
    query_vector: Sequence[float] | None,
) -> tuple[dict[str, float], dict[str, float]]:
    """The episodes' own lexical match, and every match's score: own, window and general
    terms fused, plus the nearest by meaning when ``query_vector`` is given."""
    if general:
        own, window, kinds = await lexical(
            client,
            where,
            plan.terms,
            as_of=as_of,
            families=("t", "w", "g"),
            general=general_query(plan.terms),
        )
    else:
        (own, window), kinds = (
            await lexical(client, where, plan.terms, as_of=as_of, families=("t", "w")),
            {},
        )
    scores = _fused(own, window, kinds)
    if query_vector is not None:
        near = _scaled(await nearest(client, where, query_vector, count=limit, as_of=as_of))
        for episode_id, similarity in near.items():
            scores[episode_id] = scores.get(episode_id, 0.0) + DENSE_WEIGHT * similarity
    return own, scores


async def _dated(
    client: aredis.Redis,
    where: Sequence[Source],
    time: TimeRef,
    scores: dict[str, float],
    as_of: int | None,
) -> list[str]:
    """The episodes dated in the request's range or told in the days after it (none
    without a range); when the range is narrow, those inside it are added to ``scores``
    as matches in their own right, ``DATED_PRIOR`` of the best."""
    dated: list[str] = []
    if time.first_day is not None or time.last_day is not None:
        told = None if time.last_day is None else time.last_day + TOLD_WITHIN_DAYS
        days = await days_of(client, where, time.first_day, told, as_of=as_of)
        dated = [episode_id for episode_id, _ in days]
        last = time.last_day
        if scores and last is not None and _narrow(time.first_day, last):
            # a request about a day (or a week, a month) is answered on it, in words the
            # request may not share ("what dish did Nate make on 9 May" - "coconut ice cream")
            prior = DATED_PRIOR * max(scores.values())
            for episode_id, day in days:
                if day <= last:
                    scores[episode_id] = scores.get(episode_id, 0.0) + prior
    return dated


async def _fallback(
    client: aredis.Redis,
    where: Sequence[Source],
    plan: RecallPlan,
    dated: list[str],
    as_of: int | None,
    limit: int,
) -> dict[str, float]:
    """Scores when no topic term matched: the request's dates first, then the named
    entities' latest episodes (or the story's, by the order asked), in that order."""
    fallback = await by_entities(client, where, plan.entities, as_of=as_of, last=limit)
    if not fallback:
        fallback = await by_time(
            client, where, as_of=as_of, last=limit, earliest=plan.order == "earliest"
        )
    # the request's dates first: "what happened on 3 May" is answered by that day
    fallback = list(dict.fromkeys([*sorted(dated, key=event_position), *fallback]))
    return {i: 1.0 / (1 + n) for n, i in enumerate(fallback)}


def _answered(asked: dict[str, float], found: dict[str, Episode], scores: dict[str, float]) -> None:
    """Add to ``scores`` the reply to each matched question (``asked``: the questions'
    scaled matches), by someone else: ``ANSWER_SHARE`` of the question's match."""
    for episode_id, share in asked.items():
        question = found.get(episode_id)
        reply = found.get(_next(episode_id))
        if question and reply and _asks(question) and reply.speaker != question.speaker:
            scores[reply.id] = scores.get(reply.id, 0.0) + ANSWER_SHARE * share


def _boosted(
    found: dict[str, Episode], scores: dict[str, float], time: TimeRef, wanted: set[str]
) -> None:
    """Weigh up in ``scores`` the episodes found: ``ENTITY_BOOST`` for each ``wanted``
    entity they involve, ``ORDER_BOOST`` for the first (or last) quarter asked for."""
    if time.order is not None and found:
        times = sorted(ep.time for ep in found.values())
        cut = times[len(times) // 4] if time.order == "earliest" else times[-len(times) // 4 - 1]
    for episode_id, ep in found.items():
        if episode_id not in scores:
            continue
        involved = len(wanted & {ep.speaker, *ep.participants, ep.place})
        if involved:  # who and where: each entity the request names counts
            scores[episode_id] *= ENTITY_BOOST**involved
        if (time.order == "earliest" and ep.time <= cut) or (
            time.order == "latest" and ep.time >= cut
        ):
            scores[episode_id] *= ORDER_BOOST


async def _fill(
    client: aredis.Redis,
    where: Sequence[Source],
    plan: RecallPlan,
    ranked: Ranked,
    dated: set[str],
    as_of: int | None,
    limit: int,
) -> None:
    """Offer more than the matches when they are few, below every match, so they take
    only what room the matches leave: the episodes of the request's dates, then the
    lines around the best matches (a topic runs on past the words that name it), then
    the named entities' latest episodes."""
    have = set(ranked.scores)
    around = [
        event_id(turn, seq + d)
        for turn, seq in map(event_position, [ep.id for ep in ranked.episodes[:FILL_AROUND]])
        for d in (1, -1, 2, -2)
        if seq + d >= 0
    ]
    named = (
        await by_entities(client, where, plan.entities, as_of=as_of, last=limit)
        if (plan.entities)
        else []
    )
    wanted = [
        i
        for i in dict.fromkeys([*sorted(dated, key=event_position), *around, *named])
        if i not in have
    ][: limit - len(have)]
    found = await fetch(client, where, wanted)
    for n, episode_id in enumerate(i for i in wanted if i in found):
        if as_of is not None and found[episode_id].turn > as_of:
            continue
        ranked.episodes.append(found[episode_id])
        ranked.scores[episode_id] = FILL_SCORE / (1 + n)
