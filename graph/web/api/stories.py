"""The API's stories: the shipped worlds, every story, and making (from a pack, an
uploaded pack, cards and lorebooks), summing up and deleting one."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, File, Form, UploadFile

from fabula.errors import InvalidInput
from fabula.graph.service import world_infos
from fabula.graph.service.responses.stories import StorySummary, WorldInfo
from fabula.graph.web.api.bodies import CreateStory
from fabula.graph.web.deps import MAX_PACK_BYTES, Fab, builtin_pack
from fabula.worlds.imports import ImportLimits
from fabula.worlds.loader import parse_world

router = APIRouter()


@router.get("/worlds", response_model=list[WorldInfo])
async def worlds() -> list[WorldInfo]:
    """The world packs shipped with Fabula."""
    return world_infos()


@router.get("/stories", response_model=list[StorySummary])
async def stories(fab: Fab) -> list[StorySummary]:
    """Every story, with its head and what waits for approval."""
    return await fab.summaries()


@router.post("/stories", response_model=StorySummary, status_code=201)
async def create_story(fab: Fab, body: CreateStory) -> StorySummary:
    """Create a story from a shipped world and commit its scripted opening."""
    made = await fab.create_story(builtin_pack(body.world), body.id or None)
    return await fab.read(made).summary()


async def read_pack(pack: UploadFile) -> str:
    """The text of an uploaded ``world.toml`` (UTF-8, at most 256 KiB)."""
    data = await pack.read(MAX_PACK_BYTES + 1)
    if len(data) > MAX_PACK_BYTES:
        raise InvalidInput(f"a world pack is at most {MAX_PACK_BYTES // 1024} KiB")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise InvalidInput(f"{pack.filename or 'the pack'} is not UTF-8 text") from None


@router.post("/stories/upload", response_model=StorySummary, status_code=201)
async def upload_story(
    fab: Fab,
    pack: Annotated[UploadFile, File(description="A world.toml.")],
    id: Annotated[str | None, Form()] = None,
) -> StorySummary:
    """Create a story from an uploaded pack, validated with the command line's errors."""
    text = await read_pack(pack)
    made = await fab.create_story(parse_world(text, pack.filename or "world.toml"), id or None)
    return await fab.read(made).summary()


@router.post("/stories/import", response_model=StorySummary, status_code=201)
async def import_story(
    fab: Fab,
    files: Annotated[list[UploadFile], File(description="Character cards and lorebooks.")],
    id: Annotated[str | None, Form()] = None,
    greeting: Annotated[int | None, Form(ge=0, description="Start with this greeting.")] = None,
) -> StorySummary:
    """Create a story from uploaded character cards (V1/V2/V3: JSON, PNG, CHARX) and
    lorebooks, as ``fabula import FILE... --id STORY``: one line naming a bad file."""
    read = [(f.filename or "", await f.read(ImportLimits().max_file_bytes + 1)) for f in files]
    made = await fab.import_story(read, id or None, greeting=greeting)
    return await fab.read(made).summary()


@router.get("/stories/{story}", response_model=StorySummary)
async def story_summary(fab: Fab, story: str) -> StorySummary:
    return await fab.read(story).summary()


@router.post("/stories/{story}/delete")
async def delete_story(fab: Fab, story: str) -> dict[str, str]:
    """Delete a story, its branches, its minds and their Redis users."""
    await fab.read(story).require(any_version=True)
    await fab.delete_story(story)
    return {"deleted": story}
