"""The studio's pages that are not a story's: the login form that takes the studio's
token (a client sending wrong tokens too often is made to wait), and the API's
documentation."""

from __future__ import annotations

import secrets
import time

from fastapi import APIRouter, HTTPException, Request
from fastapi.responses import HTMLResponse, Response

from fabula.errors import AccessDenied
from fabula.graph.web.pages.forms import Form, field, go, page
from fabula.graph.web.security import TOKEN_COOKIE

router = APIRouter(include_in_schema=False)


@router.get("/docs", response_class=HTMLResponse)
async def docs(request: Request) -> Response:
    """The API's documentation: Swagger UI on ``/openapi.json``, its script and styles served
    by the studio (the Content-Security-Policy allows no other source, and no inline script)."""
    return page(request, "docs.html")


@router.get("/login", response_class=HTMLResponse)
async def login_form(request: Request) -> Response:
    return page(request, "login.html")


LOGIN_TRIES = 5
"""Wrong tokens a client may send in :data:`LOGIN_WINDOW_S` before it is made to wait."""
LOGIN_WINDOW_S = 60.0


@router.post("/login")
async def login(request: Request, form: Form) -> Response:
    token: str | None = request.app.state.config.token
    who = request.client.host if request.client else ""
    failures: dict[str, list[float]] = request.app.state.__dict__.setdefault("login_failures", {})
    now = time.monotonic()
    recent = [t for t in failures.get(who, []) if now - t < LOGIN_WINDOW_S]
    if len(recent) >= LOGIN_TRIES:
        wait = int(LOGIN_WINDOW_S - (now - recent[0])) + 1
        raise HTTPException(429, f"{LOGIN_TRIES} wrong tokens in a minute: try again in {wait} s")
    given = field(form, "token")
    if not token or not secrets.compare_digest(given.encode(), token.encode()):
        failures[who] = [*recent, now]
        raise AccessDenied("that is not this studio's token")
    failures.pop(who, None)
    response = go("/")
    response.set_cookie(TOKEN_COOKIE, given, httponly=True, samesite="strict", path="/")
    return response
