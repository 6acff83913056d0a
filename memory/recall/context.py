"""Planned recall, end to end: plan the request, retrieve, render within the budget.

:func:`author_context` is the author's (the writer's, a question's): W, B of the
characters involved, D, H when writing, the summaries of the consolidated scenes and
plotlines the request bears on (:mod:`fabula.memory.recall.summaries`) and the branch's
episodes; it first brings the episode index up to the head (the consolidation step, done
here if nothing has done it yet, so a context never misses a committed turn).
:func:`character_context` is a character's: its own beliefs and the episodes it witnessed,
read through the connection it is given — the character's read-only Redis user — and
nothing else (never the hierarchy: its summaries are the author's omniscient view).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from functools import partial

import redis.asyncio as aredis

from fabula.logs import get_logger
from fabula.memory import projections
from fabula.memory.episodes import UTTERANCE_KINDS
from fabula.memory.index.build import behind, index_through
from fabula.memory.index.search import by_entities, fetch, latest_day, sources
from fabula.memory.index.vectors import Embedder
from fabula.memory.projections import BeliefView, WorldView
from fabula.memory.recall.assemble import (
    Assembly,
    fact_candidates,
    render,
    room_for_summaries,
)
from fabula.memory.recall.plan import Purpose, RecallPlan, RecallRequest, plan_request
from fabula.memory.recall.rank import candidates, rank_episodes
from fabula.memory.recall.summaries import relevant_nodes
from fabula.memory.records import Development, Entity, Hypothesis
from fabula.memory.store.view import StoryReads
from fabula.memory.tokens import TokenCounter, default_counter

log = get_logger(__name__)

OWN_WORDS_SCAN = 40  # recent episodes of a character looked through for its own words


async def author_context(
    store: StoryReads,
    request: str,
    *,
    budget: int,
    counter: TokenCounter | None = None,
    as_of: int | None = None,
    purpose: Purpose = "answer",
    focus: Sequence[str] = (),
    plan: RecallPlan | None = None,
    entities: Mapping[str, Entity] | None = None,
    world: WorldView | None = None,
    beliefs: Mapping[str, BeliefView] | None = None,
    developments: Mapping[str, Development] | None = None,
    hypotheses: Mapping[str, Hypothesis] | None = None,
    preface: Iterable[tuple[str, str]] = (),
    trailer: Iterable[tuple[str, str]] = (),
    embedder: Embedder | None = None,
) -> Assembly:
    """The author's context for ``request`` in at most ``budget`` tokens, with its manifest.

    Views the caller already holds (``entities``, ``world``, ``beliefs``, ``developments``,
    ``hypotheses``) are used as given; the others are projected ``as_of`` here. ``plan``
    replaces the offline planner (a model planner's plan). ``embedder``: dense retrieval
    (the index is caught up with its vectors too, and the request is embedded).
    """
    counter = counter or default_counter()
    if await behind(store, as_of):
        await index_through(store, embedder=embedder)
    if entities is None:
        entities = await store.entities(as_of)
    if developments is None:
        developments = await projections.project_developments(store, as_of)
    where = await sources(store)
    if plan is None:
        today = await latest_day(store.client, where, as_of=as_of)
        recall = RecallRequest(request, entities, purpose, developments, tuple(focus), today)
        plan = plan_request(recall)
    world, beliefs, hypotheses = await _plan_views(store, plan, as_of, world, beliefs, hypotheses)
    facts = fact_candidates(plan, entities, world, beliefs, developments, hypotheses, budget=budget)
    vector = await _embedded(embedder, plan.request) if embedder is not None else None
    ranked = await rank_episodes(
        store.client, where, plan, as_of=as_of, limit=candidates(budget), query_vector=vector
    )
    # rendered without the summaries, then again with those the room left can take
    assemble = partial(render, plan, facts, ranked.episodes, entities, budget, counter)
    assembly = assemble(preface=preface, trailer=trailer)
    if not room_for_summaries(assembly):
        return assembly  # the hierarchy is read only when a summary could still fit
    summaries = await relevant_nodes(store, plan, ranked, entities, as_of=as_of)
    if not summaries:
        return assembly
    return assemble(preface=preface, trailer=trailer, summaries=summaries)


async def _plan_views(
    store: StoryReads,
    plan: RecallPlan,
    as_of: int | None,
    world: WorldView | None,
    beliefs: Mapping[str, BeliefView] | None,
    hypotheses: Mapping[str, Hypothesis] | None,
) -> tuple[WorldView, Mapping[str, BeliefView], Mapping[str, Hypothesis]]:
    """The views ``plan`` reads: W, the beliefs of its characters (only theirs, of those
    given), H when writing; each projected ``as_of`` unless given."""
    if world is None:
        world = await projections.project_world(store, as_of)
    if beliefs is None:
        beliefs = {c: await projections.project_beliefs(store, c, as_of) for c in plan.characters}
    else:
        beliefs = {c: v for c, v in beliefs.items() if c in plan.characters}
    if hypotheses is None:
        hypotheses = (
            await projections.project_hypotheses(store, as_of) if plan.purpose == "write" else {}
        )
    return world, beliefs, hypotheses


async def character_context(
    client: aredis.Redis,
    story: str,
    branch: str,
    character: str,
    request: str,
    *,
    budget: int,
    counter: TokenCounter | None = None,
    as_of: int | None = None,
) -> Assembly:
    """A character's context: its beliefs and the episodes it witnessed, nothing else.

    ``client`` is the character's own read-only connection: every key read here is in the
    character's keyspace (its roster too: the entities it knows of) or the story's branch
    tree, so Redis refuses anything else.
    A request that names an episode the character did not witness finds nothing of it.
    """
    counter = counter or default_counter()
    store = StoryReads(client, story, branch, viewer=character)
    entities = await store.entities(as_of)  # what it knows of, no more
    where = await sources(store, character)
    today = await latest_day(client, where, as_of=as_of)  # the last day it lived
    plan = plan_request(
        RecallRequest(request, entities, "character", focus=(character,), today=today)
    )
    mine = await projections.project_beliefs(store, character, as_of)
    facts = fact_candidates(plan, entities, None, {character: mine}, {}, {}, budget=budget)
    # in its own memory the character is everywhere (it witnessed all of it): itself weighs
    # an episode up only where the request names it, not as the focus it is given; a
    # mind's index has no general terms
    ranked = await rank_episodes(
        client,
        where,
        plan,
        as_of=as_of,
        limit=candidates(budget),
        general=False,
        unweighted=plan.implied,
    )
    return render(plan, facts, ranked.episodes, entities, budget, counter)


async def own_words(
    client: aredis.Redis,
    story: str,
    branch: str,
    character: str,
    last: int = 3,
    *,
    as_of: int | None = None,
) -> list[str]:
    """What ``character`` said last (up to ``last`` utterances, oldest first; by turn
    ``as_of`` if given, never a word said after it), from its own index through the
    connection it is given: voice exemplars for its prompt."""
    store = StoryReads(client, story, branch, viewer=character)
    where = await sources(store, character)
    recent = await by_entities(client, where, [character], as_of=as_of, last=OWN_WORDS_SCAN)
    found = await fetch(client, where, recent)
    said = [
        found[i]
        for i in recent
        if i in found and found[i].speaker == character and found[i].kind in UTTERANCE_KINDS
    ]
    return [ep.text for ep in reversed(said[:last])]


async def _embedded(embedder: Embedder, request: str) -> list[float] | None:
    try:
        return await embedder.embed_query(request)
    except Exception as exc:  # any transport or model error: recall stays lexical
        log.warning("embedding the request failed", error=str(exc))
        return None
