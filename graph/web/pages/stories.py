"""The studio's stories: the list (with the forms that create a story from a world pack
or import one from character cards and lorebooks), a story's page and its live body, and
deleting a story."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, Response
from starlette.datastructures import UploadFile

from fabula.errors import InvalidInput, StoryExists
from fabula.graph.service import Fabula, world_infos
from fabula.graph.service.handles import StoryRef
from fabula.graph.service.ticking import MAX_TICKS_AT_ONCE
from fabula.graph.web.deps import MAX_PACK_BYTES, Branch, Fab, builtin_pack
from fabula.graph.web.live import Runs
from fabula.graph.web.pages.forms import Form, field, go, page
from fabula.graph.web.remedies import studio_line
from fabula.worlds.imports import ImportLimits
from fabula.worlds.loader import parse_world

router = APIRouter(include_in_schema=False)


@router.get("/", response_class=HTMLResponse)
async def index(request: Request, fab: Fab) -> Response:
    return page(request, "index.html", stories=await fab.summaries(), worlds=world_infos())


@router.post("/stories")
async def create(request: Request, fab: Fab, form: Form) -> Response:
    """Create a story from a built-in world or an uploaded pack. A pack that cannot be read
    (or an id already taken) is said on the stories page, on the form, in one line
    (422, 409); nothing is written."""
    pack = form.get("pack")
    story_id = field(form, "id") or None
    try:
        if isinstance(pack, UploadFile) and pack.filename:
            data = await pack.read(MAX_PACK_BYTES + 1)
            if len(data) > MAX_PACK_BYTES:
                raise InvalidInput(f"a world pack is at most {MAX_PACK_BYTES // 1024} KiB")
            try:
                text = data.decode("utf-8")
            except UnicodeDecodeError:
                raise InvalidInput(f"{pack.filename} is not UTF-8 text") from None
            made = await fab.create_story(parse_world(text, pack.filename), story_id)
        else:
            made = await fab.create_story(builtin_pack(field(form, "world")), story_id)
    except (InvalidInput, StoryExists) as exc:
        return page(
            request,
            "index.html",
            status=exc.http_status,
            stories=await fab.summaries(),
            worlds=world_infos(),
            create_error=studio_line(exc),
            story_id=story_id or "",
        )
    return go(f"/stories/{made.story}", notice="created")


@router.post("/stories/import")
async def import_files(request: Request, fab: Fab, form: Form) -> Response:
    """A story from uploaded cards and lorebooks (several files: one cast), as ``fabula
    import FILE... --id STORY`` makes it."""
    uploads = [
        f
        for f in (await request.form()).getlist("files")
        if isinstance(f, UploadFile) and f.filename
    ]
    files = [(f.filename or "", await f.read(ImportLimits().max_file_bytes + 1)) for f in uploads]
    made = await fab.import_story(files, field(form, "id") or None)
    return go(f"/stories/{made.story}", notice="created")


async def _story_context(fab: Fabula, request: Request, story: str, branch: str) -> dict[str, Any]:
    store = StoryRef(story, branch)
    reader = fab.read(store)
    text = await reader.text()
    pending = await fab.read(store).pending()
    runs: Runs = request.app.state.runs
    usage = await reader.usage()
    last = text.turns[-1].turn if text.turns else 0
    pictured = await reader.turn_pictures(text.turns[0].turn, last) if text.turns else {}
    names = {e.id: e.name for e in (await reader.entities()).values()} if pictured else {}
    parts = [] if pending is not None else await fab.read(store).waiting_parts()
    return {
        "story": story,
        "branch": branch,
        "text": text,
        "pictured": pictured,
        "names": names,
        "usage": usage,
        "usage_of": {u.turn: u for u in usage.turns},
        "pending": pending,
        # the played characters' parts the next turn waits for, each with its own view
        "parts": parts,
        # with no turn under way, each played character's view beside a field for its part
        # in the next turn: writing it and pressing one button plays the turn
        "next_parts": await reader.played_views() if pending is None and not parts else [],
        "branches": await reader.branches(),
        "run": runs.status(story, branch),
        # the first turn a rewind may go back to: the branch's fork (main: the setup)
        "first_own": await reader.first_own(),
        # a story run in ticks links to its town and the spread of its news
        "last_tick": await reader.last_tick(),
        # a story made in ticks mode is written a tick at a time: its form runs ticks
        "ticks_mode": (await reader.info()).mode == "ticks",
        "most_ticks": MAX_TICKS_AT_ONCE,
    }


@router.get("/stories/{story}", response_class=HTMLResponse)
async def story_page(request: Request, fab: Fab, story: str, branch: Branch = "main") -> Response:
    return page(request, "story.html", **await _story_context(fab, request, story, branch))


@router.get("/stories/{story}/body", response_class=HTMLResponse)
async def story_body(request: Request, fab: Fab, story: str, branch: Branch = "main") -> Response:
    """The live part of the story page: text, pending banner, branch tree."""
    return page(request, "_story_body.html", **await _story_context(fab, request, story, branch))


@router.get("/stories/{story}/delete", response_class=HTMLResponse)
async def confirm_delete(request: Request, fab: Fab, story: str) -> Response:
    return page(request, "confirm_delete.html", summary=await fab.read(story).summary())


@router.post("/stories/{story}/delete")
async def delete(fab: Fab, story: str, form: Form) -> Response:
    await fab.read(story).require(any_version=True)
    await fab.delete_story(story)
    return go("/", notice="deleted")
