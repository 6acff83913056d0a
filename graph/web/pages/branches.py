"""A story's branches in the studio: forking at a turn (optionally to pursue an open
hypothesis), rewinding a branch (the later turns kept on a branch of their own), and
retconning a committed turn (a new branch with the person's text from there)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, Request
from fastapi.responses import HTMLResponse, Response

from fabula.errors import EditRefused, InvalidInput
from fabula.graph.service.handles import StoryRef
from fabula.graph.service.responses.reading import Hypothesis
from fabula.graph.web.deps import AsOf, Branch, Fab
from fabula.graph.web.pages.forms import Form, checked, field, go, page, whole
from fabula.graph.web.remedies import studio_line

router = APIRouter(include_in_schema=False)


@router.get("/stories/{story}/fork", response_class=HTMLResponse)
async def fork_form(
    request: Request, fab: Fab, story: str, branch: Branch = "main", at: AsOf = None
) -> Response:
    store = StoryRef(story, branch)
    head = await fab.read(store).head() if at is None else at
    minds = await fab.read(store).minds(head)
    open_hyps: list[Hypothesis] = [h for h in minds.hypotheses if h.status == "open"]
    return page(
        request,
        "fork.html",
        story=story,
        branch=branch,
        at=minds.as_of,
        head=minds.head,
        text=minds.text,
        hypotheses=open_hyps,
    )


@router.post("/stories/{story}/fork")
async def fork(fab: Fab, story: str, form: Form) -> Response:
    branch = field(form, "branch") or "main"
    try:
        at = int(field(form, "at"))
    except ValueError:
        raise InvalidInput("at: the turn to fork at, a whole number") from None
    name = field(form, "name") or None
    realise = field(form, "realise") or None
    child = await fab.fork(StoryRef(story, branch), at, name, realise)
    return go(f"/stories/{story}", branch=child.branch, notice="forked")


@router.get("/stories/{story}/rewind", response_class=HTMLResponse)
async def rewind_form(
    request: Request, fab: Fab, story: str, to: Annotated[int, Query(ge=0)], branch: Branch = "main"
) -> Response:
    store = StoryRef(story, branch)
    text = await fab.read(store).turn(to)
    return page(
        request,
        "rewind.html",
        story=story,
        branch=branch,
        to=to,
        text=text,
        head=await fab.read(store).head(),
    )


@router.post("/stories/{story}/rewind")
async def rewind(fab: Fab, story: str, form: Form) -> Response:
    branch = field(form, "branch") or "main"
    to = whole(field(form, "to"), "to")
    done = await fab.rewind(StoryRef(story, branch), to, field(form, "keep") or None)
    return go(f"/stories/{story}", branch=branch, notice="rewound", turn=done.head)


@router.get("/stories/{story}/retcon", response_class=HTMLResponse)
async def retcon_form(
    request: Request,
    fab: Fab,
    story: str,
    turn: Annotated[int, Query(ge=1)],
    branch: Branch = "main",
) -> Response:
    text = await fab.read(story, branch).turn(turn)
    return page(request, "retcon.html", story=story, branch=branch, turn=turn, text=text)


@router.post("/stories/{story}/retcon")
async def retcon(request: Request, fab: Fab, story: str, form: Form) -> Response:
    branch = field(form, "branch") or "main"
    turn = whole(field(form, "turn"), "turn")
    text = field(form, "text")
    force = checked(form, "force")
    store = StoryRef(story, branch)
    try:
        done = await fab.retcon(store, turn, text, branch=field(form, "name") or None, force=force)
    except EditRefused as exc:
        # the form again, the person's text kept, with what the critic found (the hint
        # names this page's checkbox)
        why = studio_line(
            exc, plain=True, force="tick “Commit it even if the critic finds errors” to save it"
        )
        return page(
            request,
            "retcon.html",
            status=422,
            story=story,
            branch=branch,
            turn=turn,
            text=text,
            edit_error=why,
        )
    return go(f"/stories/{story}", branch=done.branch, notice="retconned", turn=turn)
