"""The studio's application: FastAPI with server-rendered pages, a JSON API and live events.

:func:`create_app` builds it from a :class:`WebConfig`; ``fabula serve`` runs it with
uvicorn. One :class:`~fabula.graph.service.Fabula` (the same service the command line uses)
is opened when the application starts and closed when it stops; with
``FABULA_MODEL_CASSETTE`` its model exchanges are recorded or replayed for that whole
lifetime (:mod:`fabula.agents.cassette`; the cassette is written when the studio stops).
Errors Fabula raises on purpose become one clear message with a fitting status (404, 409,
422, ...): JSON under ``/api/``; elsewhere the studio's one error style, one inline line
(:func:`~fabula.graph.web.security.error_html`): an htmx request gets that line as a
fragment, a form sent from a studio page is sent back to that page with it, anything else
gets it on a page of its own; never a stack trace.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import fastapi_offline
import jinja2
import redis
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from fastapi.staticfiles import StaticFiles
from fastapi.templating import Jinja2Templates
from starlette.exceptions import HTTPException

from fabula.agents.cassette import cassette
from fabula.errors import (
    FabulaError,
)
from fabula.graph.service import Fabula
from fabula.graph.service.server import disk_error, server_address
from fabula.graph.web.live import MAX_STREAMS, EventHub, Runs
from fabula.graph.web.present import actions, mutual
from fabula.graph.web.remedies import remedy_json, studio_line
from fabula.graph.web.security import (
    Guard,
    back_to,
    check_bind,
    error_cookie,
    error_html,
    is_loopback,
)
from fabula.graph.web.shared import SharedReads
from fabula.logs import get_logger
from fabula.settings import Settings

log = get_logger(__name__)
_HERE = Path(__file__).resolve().parent


@dataclass(frozen=True)
class WebConfig:
    """How the studio runs: settings, where it listens, its token, how often pages poll."""

    settings: Settings
    host: str = "127.0.0.1"
    port: int = 8000
    token: str | None = None
    redis_url: str | None = None  # overrides settings (tests, the bench)
    poll_s: float = 1.0
    max_streams: int = MAX_STREAMS  # live event streams at once; one more is a 503


def _one_line(exc: RequestValidationError) -> str:
    first = exc.errors()[0]
    where = ".".join(str(p) for p in first.get("loc", ()) if p not in ("body", "query", "path"))
    return f"{where}: {first.get('msg', 'invalid')}" if where else str(first.get("msg"))


def _wants_json(request: Request) -> bool:
    return request.url.path.startswith("/api/")


def _error_response(
    request: Request, status: int, message: str, remedy: dict[str, Any] | None = None
) -> Response:
    if _wants_json(request):
        body: dict[str, Any] = {"error": message}
        if remedy is not None:
            body["remedy"] = remedy
        return JSONResponse(body, status_code=status)
    if request.headers.get("hx-request"):
        return HTMLResponse(error_html(message, fragment=True), status_code=status)
    back = back_to(request.headers, request.scope)
    if back is not None:  # the form's own page again, with the line
        response = RedirectResponse(back, status_code=303)
        response.headers.append("set-cookie", error_cookie(message))
        return response
    templates: Jinja2Templates = request.app.state.templates
    return templates.TemplateResponse(
        request,
        "error.html",
        {"status": status, "error": message, "csrf": request.state.csrf},
        status_code=status,
    )


def create_app(config: WebConfig) -> FastAPI:
    """The studio as an ASGI application (see the module docstring).

    Raises :class:`ConfigError` for a non-local ``host`` without a token.
    """
    check_bind(config.host, config.token)
    app = FastAPI(
        title="Fabula studio",
        summary="Steer a story turn by turn and look into every mind.",
        version="1",
        lifespan=_lifespan(config),
        # FastAPI's own pages load Swagger UI and ReDoc from a CDN with an inline script,
        # both refused by the studio's Content-Security-Policy: /docs is served below
        docs_url=None,
        redoc_url=None,
    )
    app.state.config = config
    app.state.templates = _templates()
    # Swagger UI's files (those the fastapi-offline package ships), served by the studio
    swagger = Path(fastapi_offline.__file__).resolve().parent / "static"
    app.mount("/static/swagger", StaticFiles(directory=str(swagger)), name="swagger")
    app.mount("/static", StaticFiles(directory=str(_HERE / "static")), name="static")
    _handle_errors(app, config)

    from fabula.graph.web import api, pages
    from fabula.graph.web.deps import MAX_PACK_BYTES

    app.include_router(api.router)
    app.include_router(pages.router)
    # the largest body a request needs: a pack upload, or an edit at the text limit (JSON
    # may escape each byte to six), with room for the rest of the form; the import routes
    # have their own bound (security.MAX_UPLOAD_BYTES: the card sizes the README names)
    max_body = max(MAX_PACK_BYTES, 6 * config.settings.limits.turn_text_bytes) + 64 * 1024
    app.add_middleware(
        Guard,
        token=config.token,
        local_only=is_loopback(config.host) and not config.token,
        max_body=max_body,
    )
    return app


def _lifespan(config: WebConfig) -> Callable[[FastAPI], AbstractAsyncContextManager[None]]:
    """The application's lifespan: the service, its event hub, runs and shared reads
    opened (within the model cassette, if any) when it starts, closed when it stops."""

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        settings = config.settings
        if config.redis_url is not None:
            settings = settings.model_copy(update={"redis_url": config.redis_url})
        with cassette(settings.model_cassette):
            fab = Fabula.from_settings(settings)
            hub = EventHub(max_streams=config.max_streams)
            app.state.fab = fab
            app.state.hub = hub
            app.state.runs = Runs(fab, hub)
            app.state.reads = SharedReads()
            try:
                yield
            finally:
                await app.state.runs.aclose()
                await fab.aclose()

    return lifespan


def _templates() -> Jinja2Templates:
    """The studio's templates, with its filters."""
    # every variable is escaped, whatever the template's name: story text is a model's output
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(_HERE / "templates")), autoescape=True
    )
    env.filters["mutual"] = mutual
    env.filters["actions"] = actions  # escapes first, then *actions* in italics
    return Jinja2Templates(env=env)


def _handle_errors(app: FastAPI, config: WebConfig) -> None:
    """Register the studio's error handlers: Fabula's errors, bad requests, HTTP errors
    and Redis's, each one line with a fitting status (see the module docstring)."""

    @app.exception_handler(FabulaError)
    async def fabula_error(request: Request, exc: FabulaError) -> Response:
        # the class says the status; the remedy is worded as the studio's
        return _error_response(request, exc.http_status, studio_line(exc), remedy_json(exc))

    @app.exception_handler(RequestValidationError)
    async def bad_request(request: Request, exc: RequestValidationError) -> Response:
        return _error_response(request, 422, _one_line(exc))

    @app.exception_handler(HTTPException)
    async def http_error(request: Request, exc: HTTPException) -> Response:
        message = exc.detail if isinstance(exc.detail, str) else "error"
        if exc.status_code == 404 and message == "Not Found":
            message = f"no such page: {request.url.path}"
        return _error_response(request, exc.status_code, message)

    @app.exception_handler(redis.RedisError)
    async def redis_error(request: Request, exc: redis.RedisError) -> Response:
        where = config.redis_url or server_address(config.settings)
        disk = disk_error(exc, where)  # a full disk: 507, named
        if disk is not None:
            return _error_response(request, disk.http_status, str(disk))
        return _error_response(request, 503, f"redis: {exc}")
