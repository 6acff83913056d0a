"""The studio's pages for a story run in ticks: the Town and the Spread of a piece of news.

The Town draws every place and who is there at a tick (the last by default), with what
each place's scene made of it, and runs the next ticks (a form: POST, with the CSRF token
as every form). The Spread follows a clause through the characters' own minds: a bar per
tick (the share of the cast who hold it) and the same as a table, what ``fabula show STORY
spread CLAUSE`` prints. Both read through the service's one door for reads
(:meth:`~fabula.graph.service.Fabula.read`); a refused clause or tick is the page again
with one line saying why.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, Request
from fastapi.responses import HTMLResponse, Response

from fabula.errors import InvalidInput, NotFound
from fabula.graph.service.handles import StoryRef
from fabula.graph.service.spread import MAX_CLAUSE_CHARS, SpreadOut
from fabula.graph.service.ticking import MAX_TICKS_AT_ONCE
from fabula.graph.web.deps import Branch, Fab
from fabula.graph.web.pages.forms import Form, checked, field, go, page, whole
from fabula.graph.web.remedies import studio_line

router = APIRouter(include_in_schema=False)

SPREAD_LABELS = 12
"""About how many tick numbers the spread chart writes under its bars (every bar has its
own tooltip); more would overlap on a phone."""


@router.get("/stories/{story}/town", response_class=HTMLResponse)
async def town_page(
    request: Request, fab: Fab, story: str, branch: Branch = "main", tick: str = ""
) -> Response:
    """Every place and who is there at ``tick`` (empty: the last tick), with each place's
    scene; the form to run the next ticks. A tick the branch has not run is the page at
    its last tick, with one line saying which ticks it has."""
    reader = fab.read(story, branch)
    error = None
    try:
        town = await reader.town(whole(tick, "tick") if tick.strip() else None)
    except (InvalidInput, NotFound) as exc:
        await reader.require()  # a story that does not exist is a 404 of its own
        error, town = studio_line(exc), await reader.town()
    return page(
        request,
        "town.html",
        status=422 if error else 200,
        story=story,
        branch=branch,
        town=town,
        most_ticks=MAX_TICKS_AT_ONCE,
        tick_error=error,
        # a tick played and kept for a decision: its scenes, each editable
        waiting=await reader.pending_tick(),
        # the played characters, each with a field for its part in the next tick
        played=[(c, (await reader.resolve(c, "character")).name) for c in await reader.played()],
    )


@router.post("/stories/{story}/tick")
async def tick(fab: Fab, story: str, form: Form) -> Response:
    """Run the branch's next ticks (1 to :data:`MAX_TICKS_AT_ONCE`, ``auto``: committed as
    they are played), or, not ``auto`` or with a played character's part, play one and
    keep it for a decision; then show the town. A tick that fails is said in one line and
    commits nothing."""
    branch = field(form, "branch") or "main"
    count = whole(field(form, "ticks") or "1", "ticks")
    if not 1 <= count <= MAX_TICKS_AT_ONCE:
        raise InvalidInput(f"ticks: 1 to {MAX_TICKS_AT_ONCE} at once, not {count}", story=story)
    store = StoryRef(story, branch)
    # the played characters' parts (``part:<id>``), each played in its scene of the tick
    played = await fab.read(store).played()
    parts = {c: words for c in played if (words := field(form, f"part:{c}").strip())}
    if not checked(form, "auto") or parts:
        kept = await fab.draft_tick(store, parts)
        notice = "at-rest" if kept.rest is not None else "tick-kept"
        return go(f"/stories/{story}/town", branch=branch, notice=notice, turn=kept.tick)
    done = await fab.tick(store, count)
    ran = [t.tick for t in done if t.tick is not None]
    notice = "at-rest" if done and done[-1].rest is not None else "ticked"
    return go(f"/stories/{story}/town", branch=branch, notice=notice, turn=ran[-1] if ran else None)


@router.post("/stories/{story}/tick/decide")
async def decide_tick(fab: Fab, story: str, form: Form) -> Response:
    """Approve or reject the tick that waits (``expect``: the one shown), or give one of
    its scenes (``place``) the text written beside it (``action=edit``, ``force``: despite
    the critic's errors). A refusal is the page again with one line; nothing changes."""
    branch = field(form, "branch") or "main"
    store = StoryRef(story, branch)
    expect = field(form, "expect") or None
    action = field(form, "action")
    if action == "approve":  # with a place: that scene alone (the last one commits)
        done = await fab.approve_tick(store, expect, field(form, "place") or None)
        notice = "tick-scene-approved" if done.status == "pending" else "ticked"
        return go(f"/stories/{story}/town", branch=branch, notice=notice, turn=done.tick)
    if action == "reject":
        dropped = await fab.reject_tick(store, expect)
        return go(
            f"/stories/{story}/town", branch=branch, notice="tick-rejected", turn=dropped.tick
        )
    if action == "edit":
        place, text = field(form, "place"), field(form, "text").strip()
        if not place or not text:
            raise InvalidInput("a scene's edit needs its place and a text", story=story)
        edited = await fab.edit_tick(
            store, place, text, expect=expect, force=checked(form, "force")
        )
        return go(f"/stories/{story}/town", branch=branch, notice="tick-edited", turn=edited.tick)
    raise InvalidInput(f"action: approve, edit or reject, not {action!r}", story=story)


@router.get("/stories/{story}/spread", response_class=HTMLResponse)
async def spread_page(
    request: Request,
    fab: Fab,
    story: str,
    branch: Branch = "main",
    clause: Annotated[str | None, Query()] = None,
) -> Response:
    """The form for a clause; with one, its spread tick by tick as a chart and a table.
    An empty clause, one too long, or a story that has run no tick is the form again with
    one line saying why."""
    reader = fab.read(story, branch)
    await reader.require()
    found: SpreadOut | None = None
    error = None
    if clause is not None:
        try:
            found = await reader.spread(clause)
        except InvalidInput as exc:
            error = studio_line(exc)
    return page(
        request,
        "spread.html",
        status=422 if error else 200,
        story=story,
        branch=branch,
        clause=clause or "",
        most_chars=MAX_CLAUSE_CHARS,
        found=found,
        label_every=max(1, -(-len(found.ticks) // SPREAD_LABELS)) if found else 1,
        spread_error=error,
    )
