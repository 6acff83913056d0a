"""What the studio's API (:mod:`~fabula.graph.web.api`) and its pages
(:mod:`~fabula.graph.web.pages`) both take from a request: the application, the branch and
as-of parameters, a shipped world pack's name, an event's evidence, and the largest pack
an upload may be. Each is defined here once; neither router imports the other."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Query, Request

from fabula.errors import NotFound
from fabula.graph.service import Fabula
from fabula.graph.service.responses.reading import EvidenceOut
from fabula.worlds.loader import builtin_worlds

MAX_PACK_BYTES = 256 * 1024

Branch = Annotated[str, Query(description="The branch (default main).")]
AsOf = Annotated[int | None, Query(ge=0, description="The view as of this turn.")]


def get_fab(request: Request) -> Fabula:
    fab: Fabula = request.app.state.fab
    return fab


Fab = Annotated[Fabula, Depends(get_fab)]


def builtin_pack(world: str) -> str:
    """``world`` if it names a shipped pack (a path is never read from a request)."""
    if world not in builtin_worlds():
        raise NotFound(
            f"no world pack {world!r} (built-in: {', '.join(builtin_worlds())}; upload any other)",
        )
    return world


async def evidence_found(
    fab: Fab,
    story: str,
    event: str,
    branch: Branch = "main",
    holder: str | None = None,
    subject: str | None = None,
    attribute: str | None = None,
    as_of: AsOf = None,
) -> EvidenceOut:
    """The evidence of ``event`` that the endpoint and the studio's page show (a
    dependency: ``holder`` is a path of minds, ``a>b``)."""
    return await fab.read(story, branch).evidence(
        event,
        holder=holder.split(">") if holder else None,
        subject=subject,
        attribute=attribute,
        as_of=as_of,
    )


Evidence = Annotated[EvidenceOut, Depends(evidence_found)]
