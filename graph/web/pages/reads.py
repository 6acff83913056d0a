"""A story's reads in the studio: the minds at a turn, the plot of a long story, what
its memory recalls for a request, an event's evidence and the model usage (its lore is
:mod:`.lore`'s)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, Request
from fastapi.responses import HTMLResponse, Response

from fabula.graph.service.handles import StoryRef
from fabula.graph.service.reader import MAX_REQUEST_CHARS, RECALL_BUDGET
from fabula.graph.web.deps import AsOf, Branch, Evidence, Fab
from fabula.graph.web.pages.forms import page, whole
from fabula.graph.web.shared import shared_minds

router = APIRouter(include_in_schema=False)


@router.get("/stories/{story}/minds", response_class=HTMLResponse)
async def minds_page(
    request: Request, fab: Fab, story: str, branch: Branch = "main", as_of: AsOf = None
) -> Response:
    minds = await shared_minds(request, fab.read(story, branch), as_of)
    return page(request, "minds.html", story=story, branch=branch, minds=minds)


@router.get("/stories/{story}/plot", response_class=HTMLResponse)
async def plot_page(request: Request, fab: Fab, story: str, branch: Branch = "main") -> Response:
    """The hierarchy of a long story: the plot, its plotlines and the scenes, summarised."""
    found = await fab.read(story, branch).plot()
    return page(request, "plot.html", story=story, branch=branch, plot=found)


@router.get("/stories/{story}/recall", response_class=HTMLResponse)
async def recall_page(
    request: Request,
    fab: Fab,
    story: str,
    branch: Branch = "main",
    q: Annotated[str, Query(max_length=MAX_REQUEST_CHARS)] = "",
    character: str = "",
    budget: str = "",
    as_of: str = "",
) -> Response:
    """Ask the story's memory: the context the writer (or a character) would be given.
    The form's empty fields (no turn, no budget) mean now and the default budget: the
    writer's :data:`RECALL_BUDGET`, or a character's prompt's own, as ``fabula recall``
    without ``--budget`` has them."""
    store = StoryRef(story, branch)
    tokens = whole(budget, "budget") if budget.strip() else None
    turn = whole(as_of, "as of turn") if as_of.strip() else None
    found = None
    if q.strip():  # the recall checks the story and branch exist
        found = await fab.read(store).recall(
            q, budget=tokens, character=character or None, as_of=turn
        )
    else:
        await fab.read(store).require()
    return page(
        request,
        "recall.html",
        story=story,
        branch=branch,
        q=q,
        budget=tokens,
        default_budget=RECALL_BUDGET,
        character=found.holder if found and found.holder else character,
        characters=await fab.read(store).characters(),
        head=await fab.read(store).head(),
        as_of=turn,
        found=found,
        by_line={line.line: line for line in found.lines} if found else {},
    )


@router.get("/stories/{story}/evidence/{event}", response_class=HTMLResponse)
async def evidence_page(
    request: Request,
    fab: Fab,
    found: Evidence,
    story: str,
    branch: Branch = "main",
    as_of: AsOf = None,
) -> Response:
    return page(request, "evidence.html", story=story, branch=branch, ev=found, as_of=as_of)


@router.get("/stories/{story}/usage", response_class=HTMLResponse)
async def usage_page(request: Request, fab: Fab, story: str, branch: Branch = "main") -> Response:
    """Model tokens and cost per committed turn and role, the background work and the total
    (what `fabula show STORY usage` prints)."""
    found = await fab.read(story, branch).usage()
    return page(request, "usage.html", story=story, branch=branch, usage=found)
