"""The studio's guard: where it may listen, who may use it, and which requests may change state.

* **Bind.** It listens on a loopback address unless ``FABULA_WEB_TOKEN`` is set
  (:func:`check_bind`); on loopback, a request whose ``Host`` is not a loopback name is
  refused, so a web page elsewhere cannot reach it through DNS rebinding.
* **Token.** With a token configured every request needs it, as ``Authorization: Bearer``
  or as the cookie the ``/login`` form sets (static files and the login page excepted).
* **Cross-site requests.** A state-changing request (anything but GET, HEAD, OPTIONS) is
  refused when the browser says it comes from another site (``Sec-Fetch-Site``, ``Origin``).
  It must also prove it was sent by the studio's own page or by a program: a JSON body
  (which a cross-site form cannot send), or the ``X-CSRF-Token`` header equal to the
  ``fabula_csrf`` cookie (htmx sends it), or, for the HTML forms, a ``csrf_token`` field
  equal to that cookie (checked by :func:`require_form_token` in the page routes).
* **Headers.** Every response carries a strict Content-Security-Policy (scripts and styles
  from the studio itself only, no inline script), ``nosniff`` and no framing.
* **Bodies.** A request body is read up to a bound (413 beyond it, unread): the studio's
  (``max_body``), or for the import routes :data:`MAX_UPLOAD_BYTES`. Under ``/api/`` a
  refusal is JSON; a page gets the studio's one-line error (:func:`error_html`), and a form
  sent from a page of the studio is sent back to that page with it (:data:`ERROR_COOKIE`).
"""

from __future__ import annotations

import hmac
import ipaddress
import json
import re
import secrets
from collections.abc import Mapping
from html import escape
from http.cookies import SimpleCookie
from typing import Any
from urllib.parse import parse_qsl, quote, urlencode, urlsplit

from fastapi import Request
from starlette.datastructures import Headers
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from fabula.errors import AccessDenied, ConfigError

CSRF_COOKIE = "fabula_csrf"
TOKEN_COOKIE = "fabula_token"
ERROR_COOKIE = "fabula_error"
"""A form's one-line error, carried to the page it is sent back to (read once, then gone)."""
MAX_ERROR_CHARS = 300
"""The longest error line a page is sent back with (the studio's own lines are shorter)."""
_SAFE = {"GET", "HEAD", "OPTIONS"}
_LOOPBACK_NAMES = {"localhost", "localhost.", "127.0.0.1", "::1", "[::1]"}
_HEADERS = [
    (
        b"content-security-policy",
        b"default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
        b"object-src 'none'; base-uri 'none'; frame-ancestors 'none'; form-action 'self'",
    ),
    (b"x-content-type-options", b"nosniff"),
    (b"x-frame-options", b"DENY"),
    (b"referrer-policy", b"same-origin"),
]


def is_loopback(host: str) -> bool:
    """True for ``localhost`` and loopback addresses (127.0.0.0/8, ::1)."""
    name = host.strip("[]").lower()
    if name in _LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


MIN_TOKEN_CHARS = 16
"""The shortest ``FABULA_WEB_TOKEN`` accepted (``secrets.token_urlsafe(24)`` gives 32)."""


def check_bind(host: str, token: str | None) -> None:
    """Refuse to listen beyond this machine without a token, or with a token too short to
    resist guessing (raises :class:`ConfigError`)."""
    if token is not None and len(token) < MIN_TOKEN_CHARS:
        raise ConfigError(
            f"FABULA_WEB_TOKEN has {len(token)} characters: use at least {MIN_TOKEN_CHARS} "
            "(python -c 'import secrets; print(secrets.token_urlsafe(24))')"
        )
    if not is_loopback(host) and not token:
        raise ConfigError(
            f"refusing to listen on {host}: set FABULA_WEB_TOKEN to serve beyond this machine"
        )


def _cookies(headers: Headers) -> dict[str, str]:
    jar: SimpleCookie = SimpleCookie()
    try:
        jar.load(headers.get("cookie", ""))
    except Exception:  # a malformed cookie header counts as no cookies
        return {}
    return {k: m.value for k, m in jar.items()}


def _same(a: str | None, b: str | None) -> bool:
    return a is not None and b is not None and hmac.compare_digest(a.encode(), b.encode())


_HOST = re.compile(r"(?P<name>\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9.-]+)(?::(?P<port>[0-9]{1,5}))?")


def _host_name(host_header: str) -> str:
    """The name of a ``Host`` header: ``name`` or ``name:port`` (``[v6]`` or ``[v6]:port``)
    exactly; anything else (``127.0.0.1:18801.evil``, ``localhost:80@evil.example``) is no
    host name, and "" is returned."""
    found = _HOST.fullmatch(host_header.strip())
    if found is None:
        return ""
    port = found.group("port")
    if port is not None and not 0 < int(port) < 65536:
        return ""
    return found.group("name")


MAX_BODY_BYTES = 1024 * 1024
"""The largest request body the studio reads (a pack upload, an edit's text, with room)."""

MAX_UPLOAD_BYTES = 32 * 1024 * 1024
"""The largest import the studio reads in one request (32 MiB): a card's JSON may be 8 MiB
(``ImportLimits.max_card_bytes``, the size the README names), a third more as base64 in a
PNG's text chunk, beside its picture; 32 MiB holds such a card with its lorebooks. A real
card with its World Info is about 0.5 MiB; larger files import with ``fabula import``."""

UPLOAD_PATHS = ("/stories/import", "/api/stories/import")
"""The routes whose bodies are bounded by :data:`MAX_UPLOAD_BYTES` (cards, lorebooks)."""


class Guard:
    """ASGI middleware enforcing the rules of the module docstring."""

    def __init__(
        self,
        app: ASGIApp,
        *,
        token: str | None,
        local_only: bool,
        max_body: int = MAX_BODY_BYTES,
        uploads: Mapping[str, int] | None = None,
    ) -> None:
        self.app = app
        self.token = token
        self.local_only = local_only
        self.max_body = max_body
        self.uploads = dict.fromkeys(UPLOAD_PATHS, MAX_UPLOAD_BYTES) if uploads is None else uploads

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = Headers(scope=scope)
        cookies = _cookies(headers)
        path: str = scope["path"]
        refusal = self._refusal(scope, headers, cookies, path)
        if refusal is not None:
            status, message = refusal
            if status == 401 and scope["method"] == "GET" and not path.startswith("/api/"):
                await _redirect(send, "/login")
            else:
                await _error(send, status, message, path)
            return
        bound = self.uploads.get(path.rstrip("/") or "/", self.max_body)
        declared = headers.get("content-length")
        if declared is not None and (not declared.isdigit() or int(declared) > bound):
            await self._too_large(scope, headers, send, declared, bound)
            return
        receive = self._bounded(receive, bound)
        csrf = cookies.get(CSRF_COOKIE) or ""
        fresh = not csrf
        if fresh:
            csrf = secrets.token_urlsafe(24)
        state = scope.setdefault("state", {})
        state["csrf"] = csrf
        state["csrf_ok"] = scope["method"] in _SAFE or self._programmatic(headers, csrf, fresh)

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                extra = list(_HEADERS)
                if fresh:
                    extra.append(
                        (
                            b"set-cookie",
                            f"{CSRF_COOKIE}={csrf}; Path=/; HttpOnly; SameSite=Strict".encode(),
                        )
                    )
                message["headers"] = [*message.get("headers", []), *extra]
            await send(message)

        if path.startswith("/api/") and not state["csrf_ok"]:
            await _error(
                send,
                403,
                "cross-site request refused: send a JSON body or the X-CSRF-Token header",
            )
            return
        await self.app(scope, receive, send_with_headers)

    def _refusal(
        self, scope: Scope, headers: Headers, cookies: dict[str, str], path: str
    ) -> tuple[int, str] | None:
        if self.local_only and not is_loopback(_host_name(headers.get("host", ""))):
            return 400, "this studio answers only to localhost (see FABULA_WEB_TOKEN)"
        if self.token and not path.startswith(("/static/", "/login")):
            auth = headers.get("authorization", "")
            given = auth[7:] if auth.lower().startswith("bearer ") else cookies.get(TOKEN_COOKIE)
            if not _same(given, self.token):
                return 401, "this studio needs its token (FABULA_WEB_TOKEN)"
        if scope["method"] not in _SAFE:
            site = headers.get("sec-fetch-site")
            if site is not None and site not in ("same-origin", "none"):
                return 403, "cross-site request refused"
            origin = headers.get("origin")
            if origin is not None and origin != "null":
                own = f"{scope.get('scheme', 'http')}://{headers.get('host', '')}"
                if origin.rstrip("/") != own:
                    return 403, "cross-site request refused: foreign Origin"
        return None

    async def _too_large(
        self, scope: Scope, headers: Headers, send: Send, declared: str, bound: int
    ) -> None:
        """A body refused by its length: one line (413), or the Content-Length that is no
        number (400); a page's form is sent back to its page with the line."""
        if not declared.isdigit():
            await _error(send, 400, "the request's Content-Length is not a number", scope["path"])
            return
        message = (
            f"the request's body ({int(declared):,} bytes) is over the studio's bound of "
            f"{bound:,} bytes ({_size(bound)})"
        )
        if scope["path"] in UPLOAD_PATHS:
            message += ": import larger files with the command line, fabula import PATH"
        back = None if scope["path"].startswith("/api/") else back_to(headers, scope)
        htmx = bool(headers.get("hx-request"))
        if back is not None and not htmx:
            await _redirect(send, back, error_cookie(message))
        else:
            await _error(send, 413, message, scope["path"], htmx=htmx)

    def _bounded(self, receive: Receive, bound: int) -> Receive:
        """``receive``, ending the request (as a client that left) once a body sent without
        its length passes ``bound``: it is never read further."""
        seen = 0

        async def bounded() -> Message:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > bound:
                    return {"type": "http.disconnect"}
            return message

        return bounded

    @staticmethod
    def _programmatic(headers: Headers, csrf: str, fresh: bool) -> bool:
        content_type = headers.get("content-type", "").split(";")[0].strip().lower()
        if content_type == "application/json":
            return True
        return not fresh and _same(headers.get("x-csrf-token"), csrf)


def _size(n: int) -> str:
    return f"{n / (1024 * 1024):g} MiB" if n >= 1024 * 1024 else f"{n / 1024:g} KiB"


def error_html(message: str, *, fragment: bool = False) -> str:
    """The studio's one error style: one line, ``p.error-line`` (alone for an htmx request's
    fragment; else in a page that links back to the stories). Escaped like all text."""
    line = f'<p class="error-line" role="alert" data-testid="error">{escape(message)}</p>'
    if fragment:
        return line
    return (
        '<!doctype html><html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        '<title>Fabula studio</title><link rel="stylesheet" href="/static/studio.css"></head>'
        '<body><header class="top"><a href="/" class="brand">Fabula <span>studio</span></a>'
        f"</header><main>{line}</main></body></html>"
    )


_DROPPED = {"notice", "turn", "why"}  # what the page said after the last action: not again


def back_to(headers: Headers, scope: Scope) -> str | None:
    """The studio page a navigation came from (its ``Referer``, on this host), as a path
    with its query less the last action's notice; None when it came from nowhere else, or
    is no navigation (a picture, a fetch)."""
    referer = headers.get("referer")
    if not referer or headers.get("sec-fetch-dest", "document") != "document":
        return None  # an image, a script, a fetch: the error is its answer
    parts = urlsplit(referer)
    own = f"{scope.get('scheme', 'http')}://{headers.get('host', '')}"
    if f"{parts.scheme}://{parts.netloc}" != own or not parts.path.startswith("/"):
        return None
    if parts.path.startswith(("/api/", "/static/", "//")):
        return None
    query = urlencode([(k, v) for k, v in parse_qsl(parts.query) if k not in _DROPPED])
    here = (scope["path"], scope.get("query_string", b"").decode("latin-1"))
    if scope["method"] in _SAFE and (parts.path, parts.query) == here:
        return None  # the page itself: sending it back would go round
    return parts.path + (f"?{query}" if query else "")


def error_cookie(message: str) -> str:
    """The ``Set-Cookie`` value carrying ``message`` (one line, cut) back to a page."""
    line = " ".join(message.split())[:MAX_ERROR_CHARS]
    return f"{ERROR_COOKIE}={quote(line)}; Path=/; HttpOnly; SameSite=Strict; Max-Age=60"


async def _error(
    send: Send, status: int, message: str, path: str = "/api/", *, htmx: bool = False
) -> None:
    if path.startswith("/api/"):
        body, kind = json.dumps({"error": message}).encode(), b"application/json"
    else:
        body, kind = error_html(message, fragment=htmx).encode(), b"text/html; charset=utf-8"
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [(b"content-type", kind), *_HEADERS],
        }
    )
    await send({"type": "http.response.body", "body": body})


async def _redirect(send: Send, location: str, cookie: str | None = None) -> None:
    extra = [(b"set-cookie", cookie.encode("latin-1"))] if cookie else []
    await send(
        {
            "type": "http.response.start",
            "status": 303,
            "headers": [(b"location", location.encode()), *extra, *_HEADERS],
        }
    )
    await send({"type": "http.response.body", "body": b""})


async def require_form_token(request: Request) -> dict[str, Any]:
    """The submitted form, after checking its ``csrf_token`` (or the header) against the cookie.

    Raises :class:`AccessDenied` (403) for a form that does not carry the studio's token.
    """
    form = await request.form()
    fields: dict[str, Any] = {k: form.get(k) for k in form}
    if request.state.csrf_ok:
        return fields
    given = fields.get("csrf_token")
    cookie = request.cookies.get(CSRF_COOKIE)
    if isinstance(given, str) and _same(given, cookie):
        return fields
    raise AccessDenied("cross-site request refused: the form's token is missing or stale")
