"""A story's lore in the studio: the Lore page (its books, who knows each entry, what a
turn activated, and the story's World Info settings) and the form that changes those
settings.

The settings are the story's (kept in its pack, so every branch reads them), shown as
``fabula lore settings`` shows them: each with SillyTavern's name, whether activation
applies it, and the lore budget they give. The form posts every setting's value; those
that differ from the stored ones are set together through
:meth:`~fabula.graph.service.Fabula.set_world_info`, so a bad name or value is refused in
one line (its :class:`~fabula.errors.InvalidInput`), shown on the page beside the form,
and nothing is changed. Like every studio form, it needs the studio's token (the author's)
and its CSRF token (:data:`~fabula.graph.web.pages.forms.Form`).
"""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, Response

from fabula.errors import InvalidInput
from fabula.graph.service.handles import StoryRef
from fabula.graph.web.deps import Branch, Fab
from fabula.graph.web.pages.forms import Form, field, go, page, whole
from fabula.graph.web.remedies import studio_line
from fabula.logs import get_logger
from fabula.worlds.lore import SETTINGS, WorldInfoSettings

router = APIRouter(include_in_schema=False)
log = get_logger(__name__)


@router.get("/stories/{story}/lore", response_class=HTMLResponse)
async def lore_page(
    request: Request, fab: Fab, story: str, branch: Branch = "main", turn: str = ""
) -> Response:
    """The story's lore by book, who knows each entry, what a turn activated, and the
    story's World Info settings with the form that changes them."""
    at = whole(turn, "turn") if turn.strip() else None
    found = await fab.read(story, branch).lore(at)
    return page(request, "lore.html", story=story, branch=branch, lore=found)


def as_typed(value: bool | int | None) -> str:
    """A setting's value as the form shows it and a person types it: ``true``/``false``,
    a whole number, or "" for no context."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def changed(form: dict[str, object], now: WorldInfoSettings) -> list[tuple[str, str]]:
    """The ``(name, value)`` pairs of ``form`` (fields named by Fabula's names for the
    settings, :data:`~fabula.worlds.lore.SETTINGS`) whose value differs from ``now``'s, in
    the settings' order; a setting the form leaves out is left as it is."""
    pairs = []
    for name in SETTINGS:
        if name not in form:
            continue
        typed = field(form, name)
        if typed.lower() != as_typed(getattr(now, name)):
            pairs.append((name, typed))
    return pairs


@router.post("/stories/{story}/lore/settings")
async def lore_settings(request: Request, fab: Fab, story: str, form: Form) -> Response:
    """Change the story's World Info settings: the form's values that differ from the
    stored ones, all or none (see the module's docstring); back to the Lore page, with
    the line saying what was refused and the stored settings as they were."""
    branch = field(form, "branch") or "main"
    store = StoryRef(story)
    pairs = changed(form, await fab.read(store).world_info())
    try:
        if pairs:
            await fab.set_world_info(store, pairs)
    except InvalidInput as exc:
        log.info("world_info_refused", story=story, error=exc.message)
        found = await fab.read(story, branch).lore(None)
        return page(
            request,
            "lore.html",
            status=422,
            story=story,
            branch=branch,
            lore=found,
            settings_error=studio_line(exc, plain=True),
        )
    notice = "world-info" if pairs else "world-info-same"
    return go(f"/stories/{story}/lore", branch=branch, notice=notice)
