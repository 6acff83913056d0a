"""Fabula: collaborative fiction written by many agents at once — shared worlds, private minds.

Everything Fabula installs lives under this one import name:

- :mod:`fabula.memory` — the substrate: records, the atomic store, the views W, B[c], D, H,
  per-character Redis users, episodes, the hierarchy and recall;
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
            story = await app.create_story("hollow_book", "mine")   # a StoryRef: its ids
            await app.run(story, auto=True)
            leo = await fabula.project_beliefs(app.store(story), "leo")  # memory's own store
            print(leo.where("brass_key"))

    asyncio.run(main())

The application
    :class:`Fabula` (create, run, approve, fork stories), :class:`StoryRef` (the handle its
    operations take and hand back: a story's and a branch's ids), :class:`Pending`,
    :data:`TurnOutcome`, :class:`Committed` (what ``on_commit`` observers get),
    :class:`Settings`, :func:`make_roles`, :func:`redis_url`.
The store and its views
    :class:`StoryStore` (one branch of one story, as memory keeps it: ``app.store(ref)``
    opens it), :func:`project_world` (W),
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

import typing as _typing

from fabula.lazy import exports as _exports

if _typing.TYPE_CHECKING:
    from fabula.agents.contracts import Decision as Decision
    from fabula.agents.contracts import Draft as Draft
    from fabula.agents.contracts import Finding as Finding
    from fabula.agents.contracts import Proposal as Proposal
    from fabula.agents.contracts import TurnPlan as TurnPlan
    from fabula.agents.factory import make_roles as make_roles
    from fabula.agents.roles import Roles as Roles
    from fabula.errors import FabulaError as FabulaError
    from fabula.graph.runtime import Committed as Committed
    from fabula.graph.service import Fabula as Fabula
    from fabula.graph.service import Pending as Pending
    from fabula.graph.service import StoryRef as StoryRef
    from fabula.graph.service import TurnOutcome as TurnOutcome
    from fabula.memory.projections import BeliefView as BeliefView
    from fabula.memory.projections import WorldView as WorldView
    from fabula.memory.projections import project_beliefs as project_beliefs
    from fabula.memory.projections import project_developments as project_developments
    from fabula.memory.projections import project_hypotheses as project_hypotheses
    from fabula.memory.projections import project_world as project_world
    from fabula.memory.rules import WorldRules as WorldRules
    from fabula.memory.server import redis_url as redis_url
    from fabula.memory.store import StoryStore as StoryStore
    from fabula.settings import Settings as Settings
    from fabula.worlds.loader import builtin_worlds as builtin_worlds
    from fabula.worlds.loader import load_world as load_world
    from fabula.worlds.pack import WorldPack as WorldPack

# where each public name lives: imported from there when first asked for
_HOMES = {
    "Fabula": "fabula.graph.service",
    "Pending": "fabula.graph.service",
    "StoryRef": "fabula.graph.service",
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


__all__ = sorted(_HOMES)
__getattr__, __dir__ = _exports(__name__, _HOMES)
