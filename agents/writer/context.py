"""The writer's memory context: planned recall for the turn at hand, within a token budget.

The request is the turn's plan (its scene goal, beats and memory needs), with the focal
characters and the place as the entities it is about. Recall
(:func:`fabula.memory.recall.context.author_context`) renders, in sections: the plan,
W (the world facts about what the plan involves), B of each focal character (a false belief
marked, so the writer can show it without correcting it), D, H, the episodes the plan
depends on — from anywhere in the story, each with its date or turn and its speaker — and
the recent text. The world's lore (the author's books of the story's pack: no character's
own book) activated for the turn at hand — the story's turns so far and the request as
the newest, scanned as SillyTavern scans a chat (:func:`fabula.worlds.recall.author_lore`)
— comes after the plan, in a ``Lore`` section within the lore's own budget, beside the
memory's (``lore_budget``: :mod:`fabula.worlds.recall`; an entry that does not fit is
logged, ``lore_left_out``); then
``How they speak``: for each focal character, the few exemplars of its voice nearest the
turn (its card's example dialogues and role lines, what it said earlier: see
:mod:`fabula.worlds.voice`), in at most an eighth of the budget. The
result never counts more than the budget and the lore section together, and its manifest
names the record behind every line.
"""

from __future__ import annotations

from fabula.agents.contracts import TurnPlan
from fabula.agents.recall.viewer import AuthorViews, RecallBudget, author_recall
from fabula.agents.roles import RecallPlannerRole
from fabula.agents.views import AuthorView
from fabula.memory.index.search import latest_day, sources
from fabula.memory.index.vectors import Embedder
from fabula.memory.recall.assemble import Assembly
from fabula.memory.recall.plan import RecallRequest
from fabula.memory.store.view import StoryReads
from fabula.memory.tokens import TokenCounter
from fabula.settings import LORE_BUDGET
from fabula.worlds.voice import VOICE_SHARE


def plan_request_text(view: AuthorView, plan: TurnPlan) -> str:
    """The plan as a recall request: goal, beats, memory needs, who and where."""
    parts = [plan.scene_goal, *plan.beats, *plan.memory_needs]
    parts += [view.name(c) for c in plan.focal]
    if plan.place:
        parts.append(view.name(plan.place))
    return ". ".join(p for p in parts if p)


def writer_budget(budget: int, lore_budget: int = LORE_BUDGET) -> RecallBudget:
    """The writer's :class:`RecallBudget` for a context of ``budget`` tokens: the voices'
    eighth (:data:`~fabula.worlds.voice.VOICE_SHARE`) within it, the lore beside it."""
    return RecallBudget(memory=budget, voice=budget // VOICE_SHARE, lore=lore_budget)


async def writer_context(
    store: StoryReads,
    view: AuthorView,
    plan: TurnPlan,
    budget: int,
    counter: TokenCounter,
    *,
    planner: RecallPlannerRole | None = None,
    embedder: Embedder | None = None,
    lore_budget: int = LORE_BUDGET,
) -> Assembly:
    """The writer's context for ``plan`` in at most ``budget`` tokens of memory and
    ``lore_budget`` tokens of lore beside it, with its manifest: the author's recall
    (:func:`fabula.agents.recall.viewer.author_recall`) for the plan's text by the view's
    turn, framed by the plan and the recent text. ``planner`` plans the recall (default:
    the offline planner); ``embedder`` turns on dense retrieval."""
    preface = "\n".join(
        [f"scene goal: {plan.scene_goal}"]
        + [f"focal: {', '.join(view.name(c) for c in plan.focal)}"]
        + [f"beat: {b}" for b in plan.beats]
    )
    recent = "\n".join(t.text for t in view.recent)
    focus = [*plan.focal, *([plan.place] if plan.place else [])]
    request = plan_request_text(view, plan)
    recall_plan = None
    if planner is not None:
        today = await latest_day(store.client, await sources(store))
        recall = RecallRequest(
            request, view.entities, "write", view.developments, tuple(focus), today
        )
        recall_plan = await planner.plan(recall)
    views = AuthorViews(
        entities=view.entities,
        world=view.world,
        beliefs=view.beliefs,
        developments=view.developments,
        hypotheses=view.hypotheses,
        names={c: view.name(c) for c in plan.focal},
    )
    found = await author_recall(
        store,
        request,
        as_of=view.turn,
        budget=writer_budget(budget, lore_budget),
        counter=counter,
        embedder=embedder,
        purpose="write",
        focus=focus,
        focal=plan.focal,
        plan=recall_plan,
        views=views,
        preface=[("Plan", preface)],
        trailer=[("Recent text", recent)] if recent else [],
        framed=True,
    )
    return found.context
