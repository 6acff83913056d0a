"""The studio's turns: running the next turns (in the background with htmx, whole without
it), giving the played characters' parts, the turn awaiting a decision and deciding it
(approve, edit, reject), and alternative drafts side by side."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query, Request
from fastapi.responses import HTMLResponse, Response

from fabula.agents.contracts import Decision
from fabula.errors import EditRefused, InvalidInput, StoryAtRest, TurnConflict
from fabula.graph.service import Fabula
from fabula.graph.service.handles import StoryRef, TurnText
from fabula.graph.service.pending import check_bounds
from fabula.graph.state import typed_part
from fabula.graph.web.deps import Branch, Fab
from fabula.graph.web.live import Runs
from fabula.graph.web.pages.forms import Form, checked, field, go, page, whole
from fabula.graph.web.remedies import studio_line

router = APIRouter(include_in_schema=False)


@router.post("/stories/{story}/run")
async def run(request: Request, fab: Fab, story: str, form: Form) -> Response:
    branch = field(form, "branch") or "main"
    try:
        turns = int(field(form, "turns") or "1")
    except ValueError:
        raise InvalidInput("turns: a whole number, at least 1") from None
    check_bounds(turns=turns, direction=field(form, "direction") or None)
    auto = checked(form, "auto")
    direction = field(form, "direction") or None
    store = StoryRef(story, branch)
    await fab.read(store).require()
    if request.headers.get("hx-request"):
        runs: Runs = request.app.state.runs
        status = runs.start(store, turns, auto=auto, direction=direction)
        return page(request, "_progress.html", run=status, story=story, branch=branch)
    out = await fab.run(store, turns, auto=auto, direction=direction)
    if out.pending is not None:
        return go(f"/stories/{story}/pending", branch=branch)
    return go(f"/stories/{story}", branch=branch)


@router.post("/stories/{story}/play")
async def play(fab: Fab, story: str, form: Form) -> Response:
    """The played characters' parts (``part:<id>``; empty: take the character's own idea)
    of the waiting turn, or, with none waiting, of the next turn, which is run with them:
    the turn goes on to its draft."""
    branch = field(form, "branch") or "main"
    store = StoryRef(story, branch)
    await fab.read(store).require()
    parts = {}
    # the parts a waiting turn asks for; with none waiting, the played characters' parts
    # of the next turn, which this request runs (one step: part, then the draft)
    asked = [a.character for a in await fab.read(store).waiting_parts()]
    if not asked and await fab.read(store).pending() is None:
        asked = await fab.read(store).played()
    for character in asked:
        parts[character] = typed_part(field(form, f"part:{character}"), story=story)
    if not parts:
        raise InvalidInput(f"story {story!r} waits for no played character's part")
    ran = await fab.run(store, auto=False, parts=parts)
    if ran.rest is not None:  # a 409, as any refusal by the story's state
        raise StoryAtRest(ran.rest, story=story, branch=branch)
    if ran.outcome == "pending":
        return go(f"/stories/{story}/pending", branch=branch)
    return go(f"/stories/{story}", branch=branch)


@router.get("/stories/{story}/pending", response_class=HTMLResponse)
async def pending_page(request: Request, fab: Fab, story: str, branch: Branch = "main") -> Response:
    store = StoryRef(story, branch)
    await fab.read(store).require()
    found = await fab.read(store).pending()
    details = await fab.pending_details(store) if found is not None else None
    before = await _before(fab, store, found.turn) if found is not None else []
    return page(request, "pending.html", story=story, branch=branch, pending=details, before=before)


BEFORE_PENDING = 3
"""Turns shown before a pending draft, so it is read where it stands in the story."""


async def _before(fab: Fabula, store: StoryRef, turn: int) -> list[TurnText]:
    """The committed turns just before ``turn`` (at most :data:`BEFORE_PENDING`)."""
    return await fab.read(store).turns(max(1, turn - BEFORE_PENDING), turn - 1)


async def _decide(
    request: Request,
    fab: Fabula,
    story: str,
    form: dict[str, Any],
    decision: Decision,
    force: bool = False,
) -> Response:
    """``decision`` on the pending turn (the studio's one decision, :meth:`Runs.decide`),
    answered as a page: the story with a notice, the pending page when a draft awaits
    again, or, for an edit the critic refused, the pending page with the person's text
    and what the critic found (422)."""
    branch = field(form, "branch") or "main"
    expect = field(form, "pending_id") or None
    store = StoryRef(story, branch)
    runs: Runs = request.app.state.runs
    try:
        out = await runs.decide(store, decision, force=force, expect=expect)
    except TurnConflict as exc:
        turn = exc.context.get("turn")
        return go(f"/stories/{story}", branch=branch, notice="decided", turn=turn)
    except EditRefused as exc:
        # the pending page again, the person's text kept, with what the critic found
        details = await fab.pending_details(store)
        return page(
            request,
            "pending.html",
            status=422,
            story=story,
            branch=branch,
            pending=details,
            before=await _before(fab, store, details.turn) if details is not None else [],
            edit_text=decision.text,
            edit_error=studio_line(exc, plain=True),
        )
    if out.outcome == "pending":
        notice = "edited" if decision.action == "edit" else "pending"
        return go(f"/stories/{story}/pending", branch=branch, notice=notice, turn=out.turn)
    if out.durable is False:  # committed all the same: the person is told plainly
        return go(
            f"/stories/{story}", branch=branch, notice="unsynced", turn=out.turn, why=out.unsynced
        )
    return go(f"/stories/{story}", branch=branch, notice=out.outcome, turn=out.turn)


@router.post("/stories/{story}/approve")
async def approve(request: Request, fab: Fab, story: str, form: Form) -> Response:
    choice = field(form, "choice") or None
    return await _decide(request, fab, story, form, Decision(action="approve", choice=choice))


@router.post("/stories/{story}/alternatives")
async def alternatives(fab: Fab, story: str, form: Form) -> Response:
    branch = field(form, "branch") or "main"
    count = whole(field(form, "count") or "3", "count")
    done = await fab.alternatives(StoryRef(story, branch), count)
    return go(f"/stories/{story}/drafts", branch=branch, turn=done.turn, note=done.note)


@router.get("/stories/{story}/drafts", response_class=HTMLResponse)
async def drafts_page(
    request: Request,
    fab: Fab,
    story: str,
    branch: Branch = "main",
    turn: Annotated[int | None, Query(ge=1)] = None,
) -> Response:
    found = await fab.drafts(StoryRef(story, branch), turn)
    note = request.query_params.get("note", "")[:300] or None
    found = found.model_copy(update={"note": note or found.note})
    return page(request, "drafts.html", story=story, branch=branch, drafts=found)


@router.post("/stories/{story}/edit")
async def edit(request: Request, fab: Fab, story: str, form: Form) -> Response:
    text = field(form, "text")
    if not text:
        raise InvalidInput("an edit needs the new text")
    decision = Decision(action="edit", text=text, now=checked(form, "now"))
    return await _decide(request, fab, story, form, decision, checked(form, "force"))


@router.post("/stories/{story}/reject")
async def reject(request: Request, fab: Fab, story: str, form: Form) -> Response:
    note = field(form, "note")  # optional, as on the command line
    return await _decide(request, fab, story, form, Decision(action="reject", note=note))
