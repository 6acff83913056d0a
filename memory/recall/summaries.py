"""The hierarchy's summaries as a recall layer of the author's context.

A long story's older parts reach the author as the summaries of its scenes and plotlines
(:mod:`fabula.memory.hierarchy`): for a request, the nodes that bear on it are the scenes
holding its best-ranked episodes and the plotlines those scenes belong to, with the
plotlines of the developments the plan names; each is scored by the ranking scores of its
episodes there and by how many of the plan's terms and entity names its title and summary
share. Rendering (:func:`fabula.memory.recall.assemble.render`) shows them, in their own
section, only where their episodes are not all rendered already, within a bounded share of
the budget.

Only what consolidation has written is read, and nothing later than ``as_of``: a story
never consolidated simply has no such section. Characters never read this layer — the
hierarchy is the author's omniscient view, and a character's Redis user cannot read it.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import lru_cache

from fabula.memory.consolidation import plotline_id
from fabula.memory.hierarchy import related_nodes
from fabula.memory.index.terms import terms
from fabula.memory.recall.plan import RecallPlan
from fabula.memory.recall.rank import Ranked
from fabula.memory.records import Entity, HierarchyNode, event_position
from fabula.memory.store.view import StoryReads

SCENES_READ = 12  # the scenes of the best-ranked episodes' first this many turns are read
TERM_WEIGHT = 0.5  # a node whose text holds every plan term gains this (scores scale to 1)
LINE_SHARE = 0.5  # a plotline weighs this share of its scenes' episode scores


@lru_cache(maxsize=4096)
def _terms_of(text: str) -> frozenset[str]:
    """A node's index terms (a closed node's text never changes: stemmed once)."""
    return frozenset(terms(text))


async def relevant_nodes(
    store: StoryReads,
    plan: RecallPlan,
    ranked: Ranked,
    entities: Mapping[str, Entity],
    *,
    as_of: int | None = None,
) -> list[tuple[HierarchyNode, float]]:
    """The consolidated scenes and plotlines that bear on ``plan``, best first, each with
    its score; none that ends after ``as_of``, none that matches nothing."""
    turns: list[int] = []
    for ep in ranked.episodes:
        if ep.turn not in turns:
            turns.append(ep.turn)
        if len(turns) >= SCENES_READ:
            break
    found = await related_nodes(store, turns, plan.developments)
    if as_of is not None:
        found = [n for n in found if n.last_turn <= as_of]
    if not found:
        return []
    top = max(ranked.scores.values(), default=0.0) or 1.0
    by_turn: dict[int, float] = {}
    for episode_id, score in ranked.scores.items():
        turn = event_position(episode_id)[0]
        by_turn[turn] = by_turn.get(turn, 0.0) + score / top
    wanted = set(plan.terms) | {
        t for e in plan.entities if e in entities for t in terms(entities[e].name)
    }
    named_lines = {plotline_id(f"dev:{d}") for d in plan.developments}
    scene_scores = {
        n.id: sum(s for t, s in by_turn.items() if n.first_turn <= t <= n.last_turn)
        for n in found
        if n.level == "scene"
    }
    scored: list[tuple[HierarchyNode, float]] = []
    for node in found:
        if node.level == "scene":
            score = scene_scores[node.id]
        elif node.level == "plotline":
            score = LINE_SHARE * sum(scene_scores.get(m, 0.0) for m in node.children)
            if node.id in named_lines:
                score += 1.0
        else:
            continue
        if wanted:
            shared = wanted & _terms_of(f"{node.title} {node.summary}")
            score += TERM_WEIGHT * len(shared) / len(wanted)
        if score > 0 and node.summary:
            scored.append((node, score))
    scored.sort(key=lambda p: (-p[1], p[0].first_turn, p[0].id))
    return scored
