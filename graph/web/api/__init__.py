"""The JSON API under ``/api/``: every action of the studio's pages, for programs.

Each route calls the service (:class:`~fabula.graph.service.Fabula`, and for reads its one
door, :meth:`~fabula.graph.service.Fabula.read`) and answers with a model of
:mod:`fabula.graph.service.responses`, the same the command line prints with ``--json``.
State changes are POSTs with a JSON body (:mod:`.bodies`; or, for an upload, the
``X-CSRF-Token`` header). ``branch`` defaults to ``main`` and ``as_of`` to now.

The routes live by what they act on, as the service's parts do: :mod:`.stories` (worlds
and stories), :mod:`.reads` (a story's reads), :mod:`.lore` (its lore and World Info
settings) and :mod:`.turns` (turns, decisions, branches, live events).
"""

from __future__ import annotations

from fastapi import APIRouter

from fabula.graph.web.api import lore, reads, stories, turns

router = APIRouter(prefix="/api", tags=["api"])
for _part in (stories, reads, lore, turns):
    router.include_router(_part.router)
