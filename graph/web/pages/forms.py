"""What every studio page does with a request: render a template, redirect, read a form.

:func:`page` renders a template with the request's CSRF token, its notice (a short line
named by the ``notice`` query parameter, :data:`NOTICES`) and the one line a refused form
was sent back with; :func:`go` answers a form with a redirect (303) to the page that shows
the result. :data:`Form` is a posted form whose CSRF token was checked; :func:`field`,
:func:`checked` and :func:`whole` read its fields.
"""

from __future__ import annotations

from typing import Annotated, Any
from urllib.parse import unquote, urlencode

from fastapi import Depends, Request
from fastapi.responses import HTMLResponse, RedirectResponse

from fabula.errors import InvalidInput
from fabula.graph.web.security import ERROR_COOKIE, MAX_ERROR_CHARS, require_form_token

Form = Annotated[dict[str, Any], Depends(require_form_token)]
"""A posted form (its CSRF token checked): field name to text, or to an upload."""

NOTICES = {
    "created": "Story created.",
    "deleted": "Story deleted.",
    "committed": "Turn {turn} committed.",
    "unsynced": "Turn {turn} committed, but not confirmed on disk: {why}.",
    "duplicate": "Turn {turn} was already committed by someone else.",
    "decided": "Turn {turn} was already decided by someone else.",
    "pending": "Turn {turn} rejected; here is a new draft.",
    "edited": "Your text for turn {turn} was read: approve it to commit it.",
    "abandoned": "Turn {turn} was rejected too often and abandoned; run it again.",
    "forked": "Branch created.",
    "rewound": "Rewound: this branch ends at turn {turn}; the later turns are on the branch kept.",
    "retconned": "Turn {turn} edited: this branch has your text from there.",
    "nothing": "Nothing awaits approval on this branch.",
    "ticked": "Tick {turn} committed: every place played its scene.",
    "tick-kept": "Tick {turn} was played and waits for your decision: nothing is committed yet.",
    "tick-edited": "Your text was read into its scene of tick {turn}: approve to commit it.",
    "tick-rejected": "Tick {turn} rejected: nothing of it was committed.",
    "tick-scene-approved": "Scene approved: tick {turn} is committed when all its scenes are.",
    "at-rest": "Nobody anywhere had anything to do: the town is at rest.",
    "world-info": "World Info settings saved: every branch's next scan reads them.",
    "world-info-same": "No World Info setting changed.",
}
"""The notices a redirect may name (``?notice=...&turn=...``), each one short line."""


def page(request: Request, name: str, status: int = 200, **context: Any) -> HTMLResponse:
    """Render template ``name`` with the request's CSRF token and notice, and the one-line
    error a refused form was sent back with (read once: the cookie is cleared)."""
    code = request.query_params.get("notice", "")
    turn = request.query_params.get("turn", "")
    # why a commit is not confirmed on disk (the server's reason, escaped like all text)
    why = request.query_params.get("why", "")[:200] or "the server did not say why"
    notice = NOTICES.get(code, "").format(turn=turn if turn.isdigit() else "?", why=why)
    # a fragment (htmx) leaves the error to the page it is part of
    sent_back = None if request.headers.get("hx-request") else request.cookies.get(ERROR_COOKIE)
    if sent_back is not None:
        context.setdefault("error", unquote(sent_back)[:MAX_ERROR_CHARS])
    templates = request.app.state.templates
    response: HTMLResponse = templates.TemplateResponse(
        request,
        name,
        {"csrf": request.state.csrf, "notice": notice, **context},
        status_code=status,
    )
    if sent_back is not None:
        response.delete_cookie(ERROR_COOKIE, path="/", httponly=True, samesite="strict")
    return response


def go(path: str, **query: Any) -> RedirectResponse:
    """A 303 redirect to ``path`` with ``query`` (None values left out)."""
    params = {k: v for k, v in query.items() if v is not None}
    return RedirectResponse(path + ("?" + urlencode(params) if params else ""), status_code=303)


def field(form: dict[str, Any], name: str) -> str:
    """A form field's text, stripped ("" when it is missing or is an upload)."""
    value = form.get(name)
    return value.strip() if isinstance(value, str) else ""


def checked(form: dict[str, Any], name: str) -> bool:
    """Whether a checkbox (or a field saying on, true or 1) is ticked."""
    return field(form, name) in ("on", "true", "1")


def whole(raw: str, name: str) -> int:
    """A field that must be a whole number (its range is checked where it is used)."""
    try:
        return int(raw.strip())
    except ValueError:
        raise InvalidInput(f"{name}: a whole number, not {raw.strip()[:40]!r}") from None
