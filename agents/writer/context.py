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
from fabula.agents.roles import RecallPlannerRole
from fabula.agents.views import AuthorView
from fabula.logs import get_logger
from fabula.memory.index.search import latest_day, sources
from fabula.memory.index.vectors import Embedder
from fabula.memory.recall.assemble import Assembly
from fabula.memory.recall.context import author_context, own_words
from fabula.memory.recall.plan import RecallRequest
from fabula.memory.store import StoryStore
from fabula.memory.tokens import TokenCounter
from fabula.settings import LORE_BUDGET
from fabula.worlds.recall import author_lore
from fabula.worlds.voice import VOICE_EXEMPLARS, VOICE_SHARE, Exemplar, nearest, parse_voice

VOICE_SCAN = 12  # a focal character's last utterances looked through for its voice

log = get_logger(__name__)


def plan_request_text(view: AuthorView, plan: TurnPlan) -> str:
    """The plan as a recall request: goal, beats, memory needs, who and where."""
    parts = [plan.scene_goal, *plan.beats, *plan.memory_needs]
    parts += [view.name(c) for c in plan.focal]
    if plan.place:
        parts.append(view.name(plan.place))
    return ". ".join(p for p in parts if p)


async def writer_context(
    store: StoryStore,
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
    ``lore_budget`` tokens of lore beside it, with its manifest. ``planner`` plans the
    recall (default: the offline planner); ``embedder`` turns on dense retrieval."""
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
    lore, beside = await _lore_section(store, view, request, lore_budget, counter)
    voices = await voice_section(store, view, plan, request, budget // VOICE_SHARE, counter)
    return await author_context(
        store,
        request,
        plan=recall_plan,
        budget=budget + beside,
        counter=counter,
        purpose="write",
        focus=focus,
        entities=view.entities,
        world=view.world,
        beliefs=view.beliefs,
        developments=view.developments,
        hypotheses=view.hypotheses,
        preface=[("Plan", preface), *lore, *voices],
        embedder=embedder,
        trailer=[("Recent text", recent)] if recent else [],
    )


async def _lore_section(
    store: StoryStore, view: AuthorView, request: str, lore_budget: int, counter: TokenCounter
) -> tuple[list[tuple[str, str]], int]:
    """The ``Lore`` section (none when nothing is lit): the world's entries activated for
    the turn after ``view.turn`` — the branch's turns so far and ``request`` (the plan's
    text) as the turn at hand, scanned as SillyTavern scans a chat
    (:func:`fabula.worlds.recall.author_lore`: depth, minimum activations, timed effects)
    — within ``lore_budget`` (each left out logged), and the tokens it costs as rendered,
    which the memory's budget gets beside its own."""
    found = await author_lore(
        store, request, budget=lore_budget, count_tokens=counter.count, as_of=view.turn
    )
    for x in found.left_out:
        log.info(
            "lore_left_out",
            turn=view.turn,
            book=x.book,
            entry=x.activated.entry.name,
            tokens=x.activated.tokens,
            budget=found.budget,
        )
    body = "\n".join(f"- {x.text}" for x in found.lit)
    lore = [("Lore", body)] if found.lit else []
    # the lore's own budget is beside the memory's: the section, as rendering costs it
    beside = (
        sum(counter.count(line) + 1 for line in body.split("\n")) + counter.count("## Lore") + 2
        if lore
        else 0
    )
    return lore, beside


async def voice_section(
    store: StoryStore,
    view: AuthorView,
    plan: TurnPlan,
    request: str,
    budget: int,
    counter: TokenCounter,
) -> list[tuple[str, str]]:
    """The ``How they speak`` section: for each focal character, the exemplars of its
    voice (its keyspace's voice document and its last :data:`VOICE_SCAN` utterances, read
    by the author) nearest ``request``, the plan's text, in an equal share of ``budget``
    tokens; nothing when no focal character has any."""
    if not plan.focal or budget < 1:
        return []
    share = budget // len(plan.focal)
    blocks = []
    for c in plan.focal:
        document = await store.voice(c)
        said = await own_words(store.client, store.story, store.branch, c, VOICE_SCAN)
        exemplars = [*parse_voice(document), *(Exemplar(w, "said") for w in said)]
        chosen = nearest(
            exemplars, request, k=VOICE_EXEMPLARS, budget=share, count_tokens=counter.count
        )
        if chosen:
            lines = [
                "- " + "\n  ".join(x.strip() for x in ex.text.strip().splitlines()) for ex in chosen
            ]
            blocks.append("\n".join([f"{view.name(c)}:", *lines]))
    return [("How they speak", "\n".join(blocks))] if blocks else []
