"""Fabula: collaborative fiction written by many agents at once — shared worlds, private minds.

Everything Fabula installs lives under this one import name:

- :mod:`fabula.memory` — the substrate: records, the atomic store, the views W, B[c], D, H,
  per-character Redis users, episodes, the hierarchy and retrieval;
- :mod:`fabula.agents` — the roles (planner, character, writer, critic, memory-builder), each
  with a deterministic offline engine and a model back end, and their typed contracts;
- :mod:`fabula.graph` — the LangGraph turn graph, its Redis checkpointer, the service layer and
  the command line;
- :mod:`fabula.worlds` — world packs and their loader;
- :mod:`fabula.bench` — the benchmarks (``fabula bench ...``).

The names below are the small public API for library users. They are imported on first use,
so ``import fabula`` stays cheap and importing a submodule does not load the graph::

    import asyncio
    import fabula

    async def main() -> None:
        settings = fabula.Settings.from_env()
        url = fabula.redis_url(settings)          # the embedded Redis unless one is set
        async with fabula.Fabula(url, settings, roles=fabula.make_roles(settings)) as app:
            story = await app.create_story("hollow_book", "mine")
            await app.run(story, auto=True)
            print((await fabula.project_beliefs(story, "leo")).where("brass_key"))

    asyncio.run(main())

The application
    :class:`Fabula` (create, run, approve, fork stories), :class:`Pending`,
    :data:`TurnOutcome`, :class:`Committed` (what ``on_commit`` observers get),
    :class:`Settings`, :func:`make_roles`, :func:`redis_url`.
The store and its views
    :class:`StoryStore` (one branch of one story), :func:`project_world` (W),
    :func:`project_beliefs` (B[c], nested B[a→b]), :func:`project_developments` (D),
    :func:`project_hypotheses` (H), :class:`WorldView`, :class:`BeliefView`.
Worlds
    :func:`load_world`, :func:`builtin_worlds`, :class:`WorldPack`, :class:`WorldRules`.
Role contracts
    :class:`Roles`, :class:`TurnPlan`, :class:`Proposal`, :class:`Draft`, :class:`Finding`,
    :class:`Decision` (approve, edit or reject a pending turn).
Errors
    :class:`FabulaError`, the root of every error Fabula raises on purpose.
"""

import importlib as _importlib
import typing as _typing

if _typing.TYPE_CHECKING:
    from fabula.agents.contracts import Decision, Draft, Finding, Proposal, TurnPlan
    from fabula.agents.factory import make_roles
    from fabula.agents.roles import Roles
    from fabula.errors import FabulaError
    from fabula.graph.runtime import Committed
    from fabula.graph.service import Fabula, Pending, TurnOutcome
    from fabula.memory.projections import (
        BeliefView,
        WorldView,
        project_beliefs,
        project_developments,
        project_hypotheses,
        project_world,
    )
    from fabula.memory.rules import WorldRules
    from fabula.memory.server import redis_url
    from fabula.memory.store import StoryStore
    from fabula.settings import Settings
    from fabula.worlds.loader import builtin_worlds, load_world
    from fabula.worlds.pack import WorldPack

__all__ = [
    "BeliefView",
    "Committed",
    "Decision",
    "Draft",
    "Fabula",
    "FabulaError",
    "Finding",
    "Pending",
    "Proposal",
    "Roles",
    "Settings",
    "StoryStore",
    "TurnOutcome",
    "TurnPlan",
    "WorldPack",
    "WorldRules",
    "WorldView",
    "builtin_worlds",
    "load_world",
    "make_roles",
    "project_beliefs",
    "project_developments",
    "project_hypotheses",
    "project_world",
    "redis_url",
]

_HOMES = {
    "Fabula": "fabula.graph.service",
    "Pending": "fabula.graph.service",
    "TurnOutcome": "fabula.graph.service",
    "Committed": "fabula.graph.runtime",
    "Settings": "fabula.settings",
    "make_roles": "fabula.agents.factory",
    "redis_url": "fabula.memory.server",
    "StoryStore": "fabula.memory.store",
    "project_world": "fabula.memory.projections",
    "project_beliefs": "fabula.memory.projections",
    "project_developments": "fabula.memory.projections",
    "project_hypotheses": "fabula.memory.projections",
    "WorldView": "fabula.memory.projections",
    "BeliefView": "fabula.memory.projections",
    "load_world": "fabula.worlds.loader",
    "builtin_worlds": "fabula.worlds.loader",
    "WorldPack": "fabula.worlds.pack",
    "WorldRules": "fabula.memory.rules",
    "Roles": "fabula.agents.roles",
    "TurnPlan": "fabula.agents.contracts",
    "Proposal": "fabula.agents.contracts",
    "Draft": "fabula.agents.contracts",
    "Finding": "fabula.agents.contracts",
    "Decision": "fabula.agents.contracts",
    "FabulaError": "fabula.errors",
}


def __getattr__(name: str) -> _typing.Any:
    """The public names, imported when first asked for."""
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'fabula' has no attribute {name!r}")
    value = getattr(_importlib.import_module(home), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    """The public names (the submodules are imported by name)."""
    return sorted(__all__)
