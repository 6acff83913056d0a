"""A story's characters in the studio: a character's card, its picture (an imported
card's image, served beside the turns it acts in), and playing it or not."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, Response

from fabula.errors import NotFound
from fabula.graph.service.handles import StoryRef
from fabula.graph.web.deps import Branch, Fab
from fabula.graph.web.pages.forms import Form, checked, field, go, page

router = APIRouter(include_in_schema=False)

_IMAGE_TYPES = (
    (b"\x89PNG\r\n\x1a\n", "image/png"),
    (b"\xff\xd8\xff", "image/jpeg"),
    (b"GIF87a", "image/gif"),
    (b"GIF89a", "image/gif"),
)


def _image_type(data: bytes) -> str | None:
    """The type of a raster picture, read from its bytes (None: not one the studio shows;
    an SVG is never served, it may hold script)."""
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "image/webp"
    return next((kind for magic, kind in _IMAGE_TYPES if data.startswith(magic)), None)


@router.get("/stories/{story}/characters/{character}/picture")
async def character_picture(fab: Fab, story: str, character: str) -> Response:
    """A character's picture (its card's image, kept with the story when it was imported):
    PNG, JPEG, GIF or WebP as its bytes say. 404 for a character without one."""
    name, data = await fab.read(story).picture(character)
    kind = _image_type(data) if data else None
    if data is None or kind is None:
        raise NotFound(f"{name} has no picture", story=story)
    return Response(data, media_type=kind, headers={"cache-control": "private, max-age=300"})


@router.get("/stories/{story}/characters/{character}", response_class=HTMLResponse)
async def character_page(
    request: Request, fab: Fab, story: str, character: str, branch: Branch = "main"
) -> Response:
    """A character as its card: its fields, what its source card kept, its voice."""
    found = await fab.read(story).character(character)
    pictured = found.character in await fab.read(story).pictures()
    played = found.character in await fab.read(story).played()
    return page(
        request,
        "character.html",
        story=story,
        branch=branch,
        card=found,
        pictured=pictured,
        played=played,
    )


@router.post("/stories/{story}/characters/{character}/play")
async def play_character(fab: Fab, story: str, character: str, form: Form) -> Response:
    """Play the character (``played`` on), or stop playing it."""
    reader = fab.read(story)
    ident = (await reader.character(character)).character
    played = [c for c in await reader.played() if c != ident]
    if checked(form, "played"):
        played.append(ident)
    await fab.set_played(StoryRef(story), played)
    return go(f"/stories/{story}/characters/{ident}", branch=field(form, "branch") or "main")
