"""The API's lore of a story: its books with who knows each entry and what a turn
activated (``GET .../lore``, with the story's World Info settings), and those settings on
their own: shown (``GET .../lore/settings``) and set (``POST .../lore/settings``), as
``fabula lore settings`` shows and sets them.

A setting is named by Fabula's name or SillyTavern's (``depth`` or ``world_info_depth``)
and its value is a JSON ``true``/``false``, a whole number, ``null`` for no context, or
the text a person would type on the command line (``"3"``, ``"none"``). Every value is
read as that text by :func:`fabula.worlds.lore.with_setting`, so the API refuses what the
command line and the studio's form refuse, in the same one line (422), and changes
nothing then: the settings are set all together or not at all.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query
from pydantic import Field

from fabula.graph.service.handles import StoryRef
from fabula.graph.service.responses.reading import LoreOut, WorldInfoOut
from fabula.graph.web.api.bodies import JsonBody
from fabula.graph.web.deps import Branch, Fab

router = APIRouter()


class WorldInfoChange(JsonBody):
    """World Info settings to change, by name (Fabula's or SillyTavern's), each to a
    switch, a whole number, ``null`` (the context: none) or the text typed on the command
    line; the settings not named are left as they are."""

    settings: dict[str, bool | int | str | None] = Field(
        description='e.g. {"depth": 3, "world_info_budget_cap": 800, "recursive": false}.'
    )


def as_typed(value: bool | int | str | None) -> str:
    """A JSON value as a person types it on the command line (``fabula lore settings``):
    ``true``/``false``, the number, ``none`` for null, a text as it is."""
    if value is None:
        return "none"
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


@router.get("/stories/{story}/lore", response_model=LoreOut)
async def lore(
    fab: Fab,
    story: str,
    branch: Branch = "main",
    turn: Annotated[
        int | None, Query(ge=1, description="Also what this turn's text activated, for whom.")
    ] = None,
) -> LoreOut:
    """The story's lore by book, with who knows each entry; with ``turn``, what that turn's
    text activated for the author and for each character (its own lore); and the story's
    World Info settings (``world_info``: null for a story with no world pack)."""
    return await fab.read(story, branch).lore(turn)


@router.get("/stories/{story}/lore/settings", response_model=WorldInfoOut)
async def lore_settings(fab: Fab, story: str) -> WorldInfoOut:
    """The story's World Info settings, each with SillyTavern's name and whether it is
    applied, and the lore budget they give (422 for a story with no world pack)."""
    return await fab.read(story).world_info_out()


@router.post("/stories/{story}/lore/settings", response_model=WorldInfoOut)
async def set_lore_settings(fab: Fab, story: str, body: WorldInfoChange) -> WorldInfoOut:
    """Set World Info settings, all together: a bad name or value is a 422 with one line,
    and nothing is changed. Every branch's next scan reads them."""
    store = StoryRef(story)
    await fab.set_world_info(store, [(k, as_typed(v)) for k, v in body.settings.items()])
    return await fab.read(store).world_info_out()
