"""What every node of the turn graph reads first: the run's store of the turn's branch and
the author view before the turn, each built once per run (:class:`fabula.graph.runtime.RunCache`);
a view that finds the branch moved on, or rewound, is a :class:`TurnConflict`."""

from __future__ import annotations

from fabula.agents.views import AuthorView, author_view
from fabula.errors import (
    TurnConflict,
)
from fabula.graph.commit import another_writer
from fabula.graph.runtime import TurnContext
from fabula.graph.state import (
    CharacterTask,
    TurnState,
)
from fabula.memory.store import StoryStore


def store_of(state: TurnState | CharacterTask, ctx: TurnContext) -> StoryStore:
    """The run's store of the state's branch (built once, :attr:`RunCache.stores`)."""
    key = (state["story"], state["branch"])
    store = ctx.cache.stores.get(key)
    if store is None:
        store = StoryStore(ctx.admin, *key, limits=ctx.settings.limits)
        ctx.cache.stores[key] = store
    return store


async def view_of(state: TurnState, ctx: TurnContext) -> AuthorView:
    """The author view before the state's turn (built once per turn: the nodes of one run
    share it); :class:`TurnConflict` when the branch moved on or was rewound meanwhile."""
    key = (state["story"], state["branch"], state["turn"])
    if key in ctx.cache.views:
        return ctx.cache.views[key]
    store = store_of(state, ctx)
    view = await author_view(store)
    if view.turn >= state["turn"]:  # moved on since this turn began
        raise another_writer(store, state["turn"])
    if view.turn + 1 != state["turn"]:  # a gap: the branch was rewound since
        raise TurnConflict(
            f"turn {state['turn']} cannot be written: the branch is at turn {view.turn}",
            story=state["story"],
            branch=state["branch"],
            turn=state["turn"],
        )
    ctx.cache.views.clear()  # one turn at a time: keep only the newest
    ctx.cache.views[key] = view
    return view
