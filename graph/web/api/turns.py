"""The API's turns: what awaits a decision, runs and ticks, approving, editing and rejecting a
draft, alternatives side by side, branches (fork, rewind, retcon), and a branch's live
events."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, Request
from fastapi.responses import JSONResponse, Response
from sse_starlette.sse import EventSourceResponse

from fabula.agents.contracts import Decision
from fabula.errors import InvalidInput
from fabula.graph.service import Fabula
from fabula.graph.service.handles import StoryRef
from fabula.graph.service.responses.reading import BranchOut
from fabula.graph.service.responses.turns import (
    DecisionOut,
    DraftsOut,
    PendingListed,
    PendingTurn,
    RetconOut,
    RewindOut,
    RunOut,
)
from fabula.graph.service.ticking import TickOut
from fabula.graph.web.api.bodies import (
    AlternativesRequest,
    ApproveRequest,
    DecisionRequest,
    EditRequest,
    ForkRequest,
    RejectRequest,
    RetconRequest,
    RewindRequest,
    RunRequest,
    TickDecision,
    TickRequest,
)
from fabula.graph.web.deps import Branch, Fab
from fabula.graph.web.live import Admitted, EventHub, Runs, RunStatus, story_events

router = APIRouter()


@router.get("/pending", response_model=list[PendingListed])
async def all_pending(fab: Fab) -> list[PendingListed]:
    """Every turn awaiting approval, each with its draft, findings and changes (the shape
    of `fabula pending --json`)."""
    return await fab.all_pending()


@router.get("/stories/{story}/pending", response_model=PendingTurn)
async def pending(fab: Fab, story: str, branch: Branch = "main") -> PendingTurn:
    """The pending turn: draft, findings by sentence, what committing it would change."""
    return await fab.pending_details(StoryRef(story, branch))


@router.post("/stories/{story}/run", response_model=RunOut | RunStatus)
async def run(request: Request, fab: Fab, story: str, body: RunRequest) -> RunOut | RunStatus:
    """Write turns; without ``auto``, stop at the first awaiting approval."""
    store = StoryRef(story, body.branch)
    await fab.read(store).require()
    if not body.wait:
        runs: Runs = request.app.state.runs
        return runs.start(store, body.turns, auto=body.auto, direction=body.direction)
    return await fab.run(store, body.turns, auto=body.auto, direction=body.direction)


@router.post(
    "/stories/{story}/tick", response_model=list[TickOut], response_model_exclude_defaults=True
)
async def tick(fab: Fab, story: str, body: TickRequest) -> list[TickOut]:
    """Run the branch's next ticks (the shape of `fabula tick --json`): every place with
    characters plays its own scene at once, and each tick commits whole or not at all; the
    last entry says ``rest`` when nobody anywhere had anything to do. With ``review``, one
    tick is played and kept for a decision (status ``pending``, its ``id``)."""
    if body.review or body.parts:
        return [await fab.draft_tick(StoryRef(story, body.branch), body.parts)]
    return await fab.tick(StoryRef(story, body.branch), body.ticks)


@router.get(
    "/stories/{story}/tick/pending",
    response_model=TickOut | None,
    response_model_exclude_defaults=True,
)
async def pending_tick(fab: Fab, story: str, branch: Branch = "main") -> TickOut | None:
    """The tick that waits for a decision on the branch (null: none)."""
    reader = fab.read(story, branch)
    await reader.require()
    return await reader.pending_tick()


@router.post(
    "/stories/{story}/tick/decide", response_model=TickOut, response_model_exclude_defaults=True
)
async def decide_tick(fab: Fab, story: str, body: TickDecision) -> TickOut:
    """Approve (committed whole, exactly as shown), edit one scene (kept under a new id)
    or reject (nothing committed) the tick that waits."""
    store = StoryRef(story, body.branch)
    if body.action == "approve":  # with a place: that scene alone
        return await fab.approve_tick(store, body.expect, body.place)
    if body.action == "reject":
        return await fab.reject_tick(store, body.expect)
    if body.place is None or body.text is None:
        raise InvalidInput("edit: give the scene's place and its text", story=story)
    return await fab.edit_tick(store, body.place, body.text, expect=body.expect, force=body.force)


async def _decide(
    request: Request,
    fab: Fabula,
    story: str,
    body: DecisionRequest,
    decision: Decision,
    force: bool = False,
) -> DecisionOut:
    """``decision`` on the turn awaiting approval (the studio's one decision,
    :meth:`Runs.decide`), on the draft the caller read as ``body`` names it."""
    runs: Runs = request.app.state.runs
    return await runs.decide(
        StoryRef(story, body.branch), decision, force=force, expect=body.pending_id
    )


@router.post("/stories/{story}/approve", response_model=DecisionOut)
async def approve(request: Request, fab: Fab, story: str, body: ApproveRequest) -> DecisionOut:
    """Commit the pending turn, or with ``choice`` the draft chosen among its alternatives,
    exactly as shown (409 when it was decided meanwhile). A studio run of several turns
    that stopped at it goes on."""
    decision = Decision(action="approve", choice=body.choice)
    return await _decide(request, fab, story, body, decision)


@router.post("/stories/{story}/alternatives", response_model=DraftsOut)
async def alternatives(fab: Fab, story: str, body: AlternativesRequest) -> DraftsOut:
    """``count`` drafts of the next turn (written first if none is pending), each with its
    findings and changes, kept with the turn: approve one with ``choice``."""
    store = StoryRef(story, body.branch)
    return await fab.alternatives(store, body.count, direction=body.direction)


@router.get("/stories/{story}/drafts", response_model=DraftsOut)
async def drafts(
    fab: Fab,
    story: str,
    branch: Branch = "main",
    turn: Annotated[int | None, Query(ge=1, description="Default: the pending turn.")] = None,
) -> DraftsOut:
    """The alternative drafts kept for a turn (those not chosen too, once it is decided)."""
    return await fab.drafts(StoryRef(story, branch), turn)


@router.post("/stories/{story}/edit", response_model=DecisionOut)
async def edit(request: Request, fab: Fab, story: str, body: EditRequest) -> DecisionOut:
    """Put ``text`` in place of the pending draft: it is read and checked by the critic, then
    awaits approval again (``outcome`` "pending"), or is committed with ``now``. The critic's
    errors refuse it (422, the turn as it was), unless ``force``."""
    decision = Decision(action="edit", text=body.text.strip(), now=body.now)
    return await _decide(request, fab, story, body, decision, force=body.force)


@router.post("/stories/{story}/reject", response_model=DecisionOut)
async def reject(request: Request, fab: Fab, story: str, body: RejectRequest) -> DecisionOut:
    """Commit nothing; the turn is planned again with the note."""
    return await _decide(request, fab, story, body, Decision(action="reject", note=body.note))


@router.post("/stories/{story}/fork", response_model=BranchOut, status_code=201)
async def fork(fab: Fab, story: str, body: ForkRequest) -> BranchOut:
    """Start a branch at a turn, optionally pursuing an open hypothesis."""
    child = await fab.fork(StoryRef(story, body.branch), body.at, body.name, body.realise)
    found = [b for b in await fab.read(child).branches() if b.branch == child.branch]
    return found[0]


@router.post("/stories/{story}/rewind", response_model=RewindOut)
async def rewind(fab: Fab, story: str, body: RewindRequest) -> RewindOut:
    """Make turn ``to`` the branch's head; the turns after it become branch ``kept``
    (nothing is deleted). 409 while a turn awaits approval or a branch forked after ``to``
    reads the branch."""
    return await fab.rewind(StoryRef(story, body.branch), body.to, body.keep)


@router.post("/stories/{story}/retcon", response_model=RetconOut, status_code=201)
async def retcon(fab: Fab, story: str, body: RetconRequest) -> RetconOut:
    """Edit committed turn ``turn``: a new branch forks at ``turn - 1`` with the new text as
    its turn ``turn``, read and checked by the critic (422 for its errors, unless
    ``force``; nothing remains then)."""
    store = StoryRef(story, body.branch)
    return await fab.retcon(store, body.turn, body.text, branch=body.name, force=body.force)


@router.get("/stories/{story}/run", response_model=RunStatus | None)
async def run_status(request: Request, story: str, branch: Branch = "main") -> RunStatus | None:
    """The latest run this studio started on the branch, if any."""
    runs: Runs = request.app.state.runs
    return runs.status(story, branch)


@router.get("/stories/{story}/events")
async def events(request: Request, fab: Fab, story: str, branch: Branch = "main") -> Response:
    """Server-sent events of the branch: progress, draft, prose, turn, pending."""
    store = StoryRef(story, branch)
    await fab.read(store).require()
    hub: EventHub = request.app.state.hub
    poll_s: float = request.app.state.config.poll_s
    if not hub.admit():
        return JSONResponse(
            {
                "error": f"the studio serves at most {hub.max_streams} live event streams and "
                "all are open; try again shortly"
            },
            status_code=503,
            headers={"Retry-After": "5"},
        )
    try:
        stream = Admitted(hub, story_events(fab, hub, store, poll_s, request.app.state.runs))
        return EventSourceResponse(stream, ping=15)
    except BaseException:
        hub.release()
        raise
