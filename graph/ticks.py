"""Ticks: every place with characters plays its own scene in the same span of story time.

::

    START ──► scene × places (Send) ──► commit ──► END
                 │
                 └─ plan (place and cast fixed) ──► character × N (Send) ──► write ──► critique ─┐
                                                                            ▲                    │
                                                                            └── revise (bounded) ┘

A story runs either one scene a turn (narration, the default: :mod:`fabula.graph.build`)
or one tick at a time (simulation, :func:`run_tick`). A tick is prepared from the author's
view at the branch's head: each place where characters are is a scene whose cast is
everyone there, whose focal characters are those with a step to take (at most
:data:`~fabula.agents.contracts.MAX_FOCAL`), and whose turn is the next free one (scene
``k`` of the tick after turn ``h`` is turn ``h + 1 + k``). A place where nobody has
anything to do is a quiet scene (recorded, no turn).

The scenes run concurrently in this process (LangGraph ``Send`` over places), each through
today's nodes — the character agents, the writer, the critic with its bounded revisions —
all reading the view of the tick's start, so nobody perceives another place's scene: a
scene's text is read against the world as the tick began, where only its cast is at its
place. Its accepted text's delta is read once, by the critic's step, as its own turn.
Then :func:`fabula.memory.ticks.commit_tick` commits every scene's turn and the tick's
record in one atomic call: all or none, and the same tick again is a duplicate.

Each tick adds to a character's own goals (the pack's) a piece of news it holds that
someone at its place lacks, first (``spread Mara's secret``: told to each one with it who
has not shared it with it, once), and its routine's hour, last (``keep to the market``:
tick ``t`` is hour ``(t - 1) mod`` the routine's length; the plan is
:mod:`fabula.graph.tick_plan`'s). A scene opens
with who is there ("Faye and Hal are in the bakery.": :func:`opening`), so that the people
of a place see who came, a move being perceived only in the scene of the place it left. It
ends with the moves of those of its cast not asked to act whose routine's hour is elsewhere
("Hal went to the mill.": :func:`closing`), so that nobody misses an errand for not being
among a scene's at most three speakers.

A scene whose draft still has errors after its revisions fails the tick as a whole:
:class:`~fabula.errors.SceneFailed`, one line naming the place; nothing is committed.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Annotated, Any, NotRequired, TypedDict

from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.runtime import Runtime
from langgraph.types import Overwrite, Send

from fabula.agents.contracts import Action, CharacterBrief, Draft, TurnPlan
from fabula.agents.shared.brief import brief_for
from fabula.agents.views import AuthorView, author_view
from fabula.agents.writer.offline import realise
from fabula.errors import FabulaError, SceneFailed, StoryAtRest
from fabula.graph.commit import CommitPath, read_text
from fabula.graph.nodes import drafting, review
from fabula.graph.runtime import RunCache, TurnContext
from fabula.graph.state import CharacterTask, TurnState
from fabula.graph.tick_plan import ScenePlan, TickPlan, opening, plan_tick, with_parts
from fabula.logs import get_logger
from fabula.memory.delta import TurnDelta
from fabula.memory.index.build import index_through
from fabula.memory.store import CommitResult, StoryStore
from fabula.memory.store.handle import TickStart
from fabula.memory.ticks import TickRecord, commit_tick, confine, last_tick

log = get_logger(__name__)


SCENES_AT_ONCE = 8
"""The most scenes one process plays at once. Each scene's reading of its text reads the
minds of the story in one Redis call; a hundred at once (a town of 1,000 in 100 places)
queue behind each other in the server past the client's read timeout."""


class SceneState(TurnState, total=False):
    """One scene of a tick: a turn's state with its place and cast fixed."""

    cast: list[str]
    """Everyone at the scene's place as the tick began."""
    focal: list[str]
    """The characters who act in it."""
    goals: dict[str, list[str]]
    """Each focal character's goals this tick (:func:`tick_goals`)."""
    opening: str
    """Who is there, said first (:func:`opening`): those of the cast someone of it does
    not know to be there (an arrival, and those it finds)."""
    movers: dict[str, str]
    """Those of the cast, not focal, whose routine's hour is elsewhere, and where it is
    (:func:`closing`)."""


class SceneOutcome(TypedDict):
    """What a played scene hands to the tick's commit."""

    place: str
    turn: int
    delta: TurnDelta | None
    """None for a scene where nobody did anything after all (quiet)."""
    errors: list[str]
    usage: dict[str, dict[str, int | str]]


class SceneTask(TypedDict):
    """What the tick sends to one scene."""

    story: str
    branch: str
    turn: int
    place: str
    cast: list[str]
    focal: list[str]
    goals: dict[str, list[str]]
    """Each focal character's goals this tick (:func:`tick_goals`): its brief's."""
    movers: NotRequired[dict[str, str]]
    """Those of the cast, not focal, whose routine's hour is elsewhere, and where it is
    (:attr:`ScenePlan.movers`)."""
    parts: NotRequired[dict[str, str]]
    """The played characters' parts in this scene, by character (:func:`with_parts`)."""


def _add_scenes(old: list[SceneOutcome] | None, new: list[SceneOutcome] | None) -> list[Any]:
    return [*(old or []), *(new or [])]


class _TickGraphState(TypedDict, total=False):
    """The tick graph's state: the scenes to play, and what each hands back."""

    tasks: list[SceneTask]
    scenes: Annotated[list[SceneOutcome], _add_scenes]


async def plan_scene(state: SceneState, runtime: Runtime[TurnContext]) -> dict[str, Any]:
    """The scene's plan: its place and focal characters fixed by the tick, its beats each
    focal character's first goal; each focal character's brief as a turn's, with the
    tick's goals (news to tell before its own, its routine's hour after: :func:`tick_goals`)."""
    ctx = runtime.context
    key = (state["story"], state["branch"], state["turn"])
    view = ctx.cache.views[key]
    focal = tuple(state["focal"])
    place = view.place_of(focal[0])
    ticked = state.get("goals", {})
    goals = {c: list(ticked.get(c) or view.goals_of(c)) for c in focal}
    beats = tuple(f"{view.name(c)}: {(goals[c] or ['reacts'])[0]}" for c in focal)
    turn_plan = TurnPlan(
        scene_goal=f"the scene at the {view.name(place or '')}",
        place=place,
        focal=focal,
        beats=beats[:4],
        memory_needs=tuple(f"beliefs of {c}" for c in focal)[:4],
    )
    attempt = state.get("attempt", -1) + 1
    first = opening(view, place, state.get("cast", list(focal)))
    briefs = {c: _ticked(brief_for(view, c, turn_plan, variant=attempt), goals[c]) for c in focal}
    return {
        "plan": turn_plan,
        "briefs": briefs,
        "attempt": attempt,
        "played": [c for c in focal if c in state.get("parts", {})],
        "proposals": Overwrite([]),
        "revisions": 0,
        "findings": [],
        "draft": None,
        "opening": first,
    }


async def write_scene(state: SceneState, runtime: Runtime[TurnContext]) -> dict[str, Any]:
    """The writer's draft (:func:`fabula.graph.nodes.drafting.write`), opened with who is
    there (:func:`opening`), so that the scene's cast perceives it as the text is read, and
    closed with the routine's moves of those who did not act (:func:`closing`): a scene
    whose speakers did nothing after all is then only those moves. Nobody approves a
    scene: the writer's memory context is assembled only for a writer that reads it."""
    view = runtime.context.cache.views[(state["story"], state["branch"], state["turn"])]
    last = closing(view, state.get("movers", {}))
    try:
        out = await drafting.write(state, runtime, shown=False)
        draft = out.get("draft")
        if not isinstance(draft, Draft):
            return out
        text, revision = draft.text, draft.revision
    except StoryAtRest:
        if not last:
            raise
        out = {"draft_findings": [], "context": "", "revision_kept": False}
        text, revision, draft = "", state.get("revisions", 0), None
    first = state.get("opening", "")
    if first and not text.startswith(first):
        text = f"{first} {text}"
    text = " ".join([text, *(m for m in last if m not in text)]).strip()
    left_out = draft.left_out if draft is not None else ()
    out["draft"] = Draft(text=text, revision=revision, left_out=left_out)
    return out


def closing(view: AuthorView, movers: Mapping[str, str]) -> list[str]:
    """The sentences a scene ends with: each of ``movers`` (not among its speakers) going to
    its routine's place this hour ("Hal went to the mill."), as the writer says a move."""
    return [realise(view, c, Action(kind="go", target=place)) for c, place in movers.items()]


def _ticked(brief: CharacterBrief, goals: Sequence[str]) -> CharacterBrief:
    """``brief`` with the tick's goals added to its own: those before them in ``goals``
    (news to tell) first, those after (the routine's hour) last."""
    own = list(brief.goals)
    extra = [g for g in goals if g not in own]
    first = [g for g in extra if g.startswith("spread ")]
    last = [g for g in extra if g not in first]
    return brief.model_copy(update={"goals": (*first, *own, *last)})


def _untyped(node: Callable[..., Any]) -> Callable[..., Any]:
    """``node`` as LangGraph's overloads take a node with its own input schema (as
    :func:`fabula.graph.build.build_turn_graph` passes its nodes)."""
    return node


def build_scene_graph() -> CompiledStateGraph[SceneState, TurnContext, SceneState, SceneState]:
    """One scene: the turn graph's nodes from the plan to the critic, with no approval and
    no commit (the tick commits its scenes together)."""
    g: StateGraph[SceneState, TurnContext, SceneState, SceneState] = StateGraph(
        SceneState, context_schema=TurnContext
    )
    g.add_node("plan", plan_scene)
    g.add_node("character", _untyped(drafting.character), input_schema=CharacterTask)
    g.add_node("write", write_scene)
    g.add_node("critique", review.critique)
    g.add_edge(START, "plan")
    g.add_conditional_edges("plan", drafting.fan_out, ["character"])
    g.add_edge("character", "write")
    g.add_conditional_edges(
        "write", drafting.route_after_write, {"critique": "critique", "approve": END}
    )
    g.add_conditional_edges(
        "critique", review.route_after_critique, {"write": "write", "approve": END}
    )
    return g.compile()


_SCENE_GRAPH = build_scene_graph()


async def scene(task: SceneTask, runtime: Runtime[TurnContext]) -> dict[str, Any]:
    """The tick graph's node: one scene played (:func:`play_scene`)."""
    return {"scenes": [await play_scene(task, runtime.context)]}


async def play_scene(task: SceneTask, ctx: TurnContext) -> SceneOutcome:
    """Play one scene to its critiqued draft and the delta it commits (a quiet scene, no
    delta, when its focal characters proposed nothing after all). ``ctx``'s cache holds
    the tick's view for the scene's turn. Raises :class:`SceneFailed` naming the scene."""
    start: SceneState = {
        "story": task["story"],
        "branch": task["branch"],
        "turn": task["turn"],
        "cast": task["cast"],
        "focal": task["focal"],
        "goals": task.get("goals", {}),
        "movers": dict(task.get("movers", {})),
        "parts": dict(task.get("parts", {})),
    }
    try:
        done = await _SCENE_GRAPH.ainvoke(start, context=_scene_only(task, ctx))
    except StoryAtRest:
        return SceneOutcome(place=task["place"], turn=task["turn"], delta=None, errors=[], usage={})
    except FabulaError as error:
        raise _failed(task, error.message) from error
    errors = [f.message for f in done.get("findings", []) if f.severity == "error"]
    return SceneOutcome(
        place=task["place"],
        turn=task["turn"],
        delta=done.get("delta"),
        errors=errors,
        usage=dict(done.get("usage", {})),
    )


def _scene_only(task: SceneTask, ctx: TurnContext) -> TurnContext:
    """``ctx`` for one scene: its store reads the prior minds of the scene's cast only
    (:meth:`StoryStore.for_scene`), and the story's entities and W from the view of the
    tick's start (read once for the tick), so that reading its text costs what the scene
    holds, not what the story holds. Nobody else can gain anything from the scene: its delta is
    confined to its cast (:func:`~fabula.memory.ticks.confine`)."""
    key = (task["story"], task["branch"])
    store = ctx.cache.stores.get(key)
    if store is None:
        store = StoryStore(ctx.admin, *key, limits=ctx.settings.limits)
    view = ctx.cache.views.get((*key, task["turn"]))
    start = None if view is None else TickStart(view.turn, view.entities, view.world.states)
    cache = RunCache(views=ctx.cache.views, stores={key: store.for_scene(task["cast"], start)})
    return dataclasses.replace(ctx, cache=cache)


def scene_context(
    ctx: TurnContext, store: StoryStore, view: AuthorView, turns: Sequence[int]
) -> TurnContext:
    """``ctx`` for the scenes of one tick: every scene's turn reads ``view``, the view of
    the tick's start."""
    cache = RunCache()
    cache.stores[(store.story, store.branch)] = store
    for turn in turns:
        cache.views[(store.story, store.branch, turn)] = view
    return dataclasses.replace(ctx, cache=cache)


def _failed(task: SceneTask, why: str) -> SceneFailed:
    return SceneFailed(
        f"the scene at {task['place']} (turn {task['turn']}) failed: {why}; nothing of the "
        "tick was committed",
        story=task["story"],
        branch=task["branch"],
        place=task["place"],
    )


def _fan_out_scenes(state: dict[str, Any]) -> list[Send]:
    return [Send("scene", task) for task in state["tasks"]]


_TICK_GRAPH: CompiledStateGraph[Any, TurnContext, Any, Any] | None = None


def _tick_graph() -> CompiledStateGraph[Any, TurnContext, Any, Any]:
    global _TICK_GRAPH
    if _TICK_GRAPH is None:
        g: StateGraph[Any, TurnContext, Any, Any] = StateGraph(
            _TickGraphState, context_schema=TurnContext
        )
        g.add_node("scene", _untyped(scene), input_schema=SceneTask)
        g.add_conditional_edges(START, _fan_out_scenes, ["scene"])
        g.add_edge("scene", END)
        _TICK_GRAPH = g.compile()
    return _TICK_GRAPH


@dataclass(frozen=True)
class TickResult:
    """A tick that ran: its plan, its commit's status and each scene's delta."""

    plan: TickPlan
    status: str
    deltas: tuple[TurnDelta, ...]


ScenePlayer = Callable[
    [TurnContext, StoryStore, AuthorView, Sequence[SceneTask]], Awaitable[list[SceneOutcome]]
]
"""Plays a tick's scenes to their outcomes: in this process (:func:`scenes_here`), or on
RQ workers (:func:`fabula.graph.scene_jobs.scenes_on_rq`)."""


async def scenes_here(
    ctx: TurnContext, store: StoryStore, view: AuthorView, tasks: Sequence[SceneTask]
) -> list[SceneOutcome]:
    """The scenes played concurrently in this process (LangGraph ``Send`` over places)."""
    run = scene_context(ctx, store, view, [t["turn"] for t in tasks])
    done = await _tick_graph().ainvoke(
        {"tasks": list(tasks)}, context=run, config={"max_concurrency": SCENES_AT_ONCE}
    )
    return list(done.get("scenes", []))


async def play_tick(
    ctx: TurnContext,
    store: StoryStore,
    player: ScenePlayer = scenes_here,
    parts: Mapping[str, str] | None = None,
) -> tuple[TickPlan, list[TurnDelta]]:
    """Play the next tick's scenes (by ``player``: concurrently in this process by
    default) to the deltas they would commit; nothing is written. ``parts``: played
    characters' parts, each played in its character's scene (:func:`with_parts`). Raises
    :class:`SceneFailed` naming the first scene that failed."""
    view = await author_view(store)
    previous = await last_tick(store)
    plan = plan_tick(view, previous.tick + 1 if previous is not None else 1)
    written = dict(parts or {})
    plan = with_parts(plan, written, view)
    given = {s.place: {c: written[c] for c in s.cast if c in written} for s in plan.scenes}
    tasks = [
        SceneTask(
            story=store.story,
            branch=store.branch,
            turn=s.turn,
            place=s.place,
            cast=list(s.cast),
            focal=list(s.focal),
            goals={c: list(g) for c, g in s.goals.items()},
            movers=dict(s.movers),
            parts=given[s.place],
        )
        for s in plan.played
        if s.turn is not None
    ]
    outcomes = {o["place"]: o for o in await player(ctx, store, view, tasks)}
    for task in tasks:
        errors = outcomes[task["place"]]["errors"]
        if errors:
            raise _failed(task, "; ".join(errors))
    return await _settle(ctx, store, view, plan, outcomes)


async def _settle(
    ctx: TurnContext,
    store: StoryStore,
    view: AuthorView,
    plan: TickPlan,
    outcomes: dict[str, SceneOutcome],
) -> tuple[TickPlan, list[TurnDelta]]:
    """The tick's scenes as committed: a scene that went quiet has no turn, and the turns
    after it move up so they stay consecutive (their text read again as its new turn)."""
    scenes: list[ScenePlan] = []
    deltas: list[TurnDelta] = []
    turn = plan.head + 1
    for s in plan.scenes:
        outcome = outcomes.get(s.place)
        delta = outcome["delta"] if outcome is not None else None
        if delta is None:
            scenes.append(dataclasses.replace(s, turn=None))
            continue
        if delta.turn != turn:
            delta, _ = await read_text(CommitPath.of(ctx), store, turn, delta.text, view)
        delta = confine(delta, s.cast)
        scenes.append(dataclasses.replace(s, turn=turn))
        deltas.append(delta)
        turn += 1
    settled = dataclasses.replace(plan, scenes=tuple(scenes))
    if not deltas:
        raise StoryAtRest(
            f"tick {plan.tick}: nobody in any place did anything",
            story=store.story,
            branch=store.branch,
        )
    return settled, deltas


async def run_tick(
    ctx: TurnContext, store: StoryStore, player: ScenePlayer = scenes_here
) -> TickResult:
    """Play the branch's next tick and commit it, all scenes or none (see the module).

    Raises :class:`SceneFailed` (one line naming the scene) when a scene fails,
    :class:`StoryAtRest` when nobody has anything to do, and
    :class:`~fabula.errors.TurnConflict` when another writer moved the branch meanwhile;
    nothing is committed then.
    """
    plan, deltas = await play_tick(ctx, store, player)
    done = await commit_scenes(ctx, store, plan, deltas)
    log.info(
        "tick_committed",
        story=store.story,
        tick=plan.tick,
        scenes=len(deltas),
        quiet=len(plan.scenes) - len(deltas),
        status=done.status,
    )
    return TickResult(plan=plan, status=done.status, deltas=tuple(deltas))


async def commit_scenes(
    ctx: TurnContext, store: StoryStore, plan: TickPlan | TickRecord, deltas: Sequence[TurnDelta]
) -> CommitResult:
    """Commit a played tick (atomic, exactly once), then index its episodes and
    consolidate its turns, as a turn's commit does; ``plan``, or its record (a tick kept
    for a decision: :mod:`fabula.graph.tick_review`)."""
    record = plan if isinstance(plan, TickRecord) else plan.record()
    done = await commit_tick(store, record, deltas)
    if done.status == "committed":
        await index_through(store, deltas[-1].turn, embedder=ctx.embedder)
        if ctx.consolidate is not None:
            for d in deltas:
                await ctx.consolidate(store, d.turn)
    return done
