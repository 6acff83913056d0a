"""The studio's pages (server-rendered with Jinja2; htmx and a small script enhance them).

Every form works without JavaScript: it posts, and the answer redirects (303) to the page
that shows the result, with a short notice; a form refused is sent back to its page with
one line saying why (:func:`page` shows it). With JavaScript, htmx swaps fragments in place
(the story's text, the minds at another turn, a run's progress, a chat's next exchange)
and the story page listens to the branch's event stream. Every piece of story text is
escaped by the templates. An imported character's picture (its card's image) is served by
:func:`character_picture`, for its card's page and beside the turns it acts in.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Sequence
from typing import Annotated, Any
from urllib.parse import unquote, urlencode

from fastapi import APIRouter, Depends, HTTPException, Query, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from pydantic import TypeAdapter, ValidationError
from starlette.datastructures import UploadFile

from fabula.agents.contracts import CHAT_EXCHANGE_CHARS, CHAT_MEMORY, ChatExchange, Decision
from fabula.errors import (
    AccessDenied,
    EditRefused,
    InvalidInput,
    NotFound,
    StoryAtRest,
    StoryExists,
    TurnConflict,
)
from fabula.graph.service import Fabula, world_infos
from fabula.graph.service.handles import StoryStore, TurnText
from fabula.graph.service.pending import check_bounds
from fabula.graph.service.reader import MAX_REQUEST_CHARS, RECALL_BUDGET
from fabula.graph.service.responses.reading import Hypothesis
from fabula.graph.state import part_from
from fabula.graph.web.deps import MAX_PACK_BYTES, AsOf, Branch, Evidence, Fab, builtin_pack
from fabula.graph.web.live import Runs
from fabula.graph.web.remedies import studio_line
from fabula.graph.web.security import (
    ERROR_COOKIE,
    MAX_ERROR_CHARS,
    TOKEN_COOKIE,
    require_form_token,
)
from fabula.graph.web.shared import shared_minds
from fabula.worlds.imports import ImportLimits
from fabula.worlds.loader import parse_world

router = APIRouter(include_in_schema=False)
Form = Annotated[dict[str, Any], Depends(require_form_token)]

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
    "at-rest": "Nobody anywhere had anything to do: the town is at rest.",
}


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


def _whole(raw: str, name: str) -> int:
    """A form field that must be a whole number (its range is checked where it is used)."""
    try:
        return int(raw.strip())
    except ValueError:
        raise InvalidInput(f"{name}: a whole number, not {raw.strip()[:40]!r}") from None


def _text(form: dict[str, Any], name: str) -> str:
    value = form.get(name)
    return value.strip() if isinstance(value, str) else ""


# -- pictures ------------------------------------------------------------------------------
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


# -- stories -------------------------------------------------------------------------------
@router.get("/", response_class=HTMLResponse)
async def index(request: Request, fab: Fab) -> Response:
    return page(request, "index.html", stories=await fab.summaries(), worlds=world_infos())


@router.post("/stories")
async def create(request: Request, fab: Fab, form: Form) -> Response:
    """Create a story from a built-in world or an uploaded pack. A pack that cannot be read
    (or an id already taken) is said on the stories page, on the form, in one line
    (422, 409); nothing is written."""
    pack = form.get("pack")
    story_id = _text(form, "id") or None
    try:
        if isinstance(pack, UploadFile) and pack.filename:
            data = await pack.read(MAX_PACK_BYTES + 1)
            if len(data) > MAX_PACK_BYTES:
                raise InvalidInput(f"a world pack is at most {MAX_PACK_BYTES // 1024} KiB")
            try:
                text = data.decode("utf-8")
            except UnicodeDecodeError:
                raise InvalidInput(f"{pack.filename} is not UTF-8 text") from None
            store = await fab.create_story(parse_world(text, pack.filename), story_id)
        else:
            store = await fab.create_story(builtin_pack(_text(form, "world")), story_id)
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
    return go(f"/stories/{store.story}", notice="created")


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
    store = await fab.import_story(files, _text(form, "id") or None)
    return go(f"/stories/{store.story}", notice="created")


async def _story_context(fab: Fabula, request: Request, story: str, branch: str) -> dict[str, Any]:
    store = fab.store(story, branch)
    reader = fab.read(store)
    text = await reader.text()
    pending = await fab.pending(store)
    runs: Runs = request.app.state.runs
    usage = await reader.usage()
    last = text.turns[-1].turn if text.turns else 0
    pictured = await reader.turn_pictures(text.turns[0].turn, last) if text.turns else {}
    names = {e.id: e.name for e in (await reader.entities()).values()} if pictured else {}
    parts = [] if pending is not None else await fab.waiting_parts(store)
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
    await fab.store(story).require(any_version=True)
    await fab.delete_story(story)
    return go("/", notice="deleted")


# -- running and deciding ------------------------------------------------------------------
@router.post("/stories/{story}/run")
async def run(request: Request, fab: Fab, story: str, form: Form) -> Response:
    branch = _text(form, "branch") or "main"
    try:
        turns = int(_text(form, "turns") or "1")
    except ValueError:
        raise InvalidInput("turns: a whole number, at least 1") from None
    check_bounds(turns=turns, direction=_text(form, "direction") or None)
    auto = _text(form, "auto") in ("on", "true", "1")
    direction = _text(form, "direction") or None
    store = fab.store(story, branch)
    await store.require()
    if request.headers.get("hx-request"):
        runs: Runs = request.app.state.runs
        status = runs.start(store, turns, auto=auto, direction=direction)
        return page(request, "_progress.html", run=status, story=story, branch=branch)
    out = await fab.run(store, turns, auto=auto, direction=direction)
    if out.pending is not None:
        return go(f"/stories/{story}/pending", branch=branch)
    return go(f"/stories/{story}", branch=branch)


@router.post("/stories/{story}/characters/{character}/play")
async def play_character(fab: Fab, story: str, character: str, form: Form) -> Response:
    """Play the character (``played`` on), or stop playing it."""
    reader = fab.read(story)
    ident = (await reader.character(character)).character
    played = [c for c in await reader.played() if c != ident]
    if _text(form, "played") in ("on", "true", "1"):
        played.append(ident)
    await fab.set_played(fab.store(story), played)
    return go(f"/stories/{story}/characters/{ident}", branch=_text(form, "branch") or "main")


@router.post("/stories/{story}/play")
async def play(fab: Fab, story: str, form: Form) -> Response:
    """The played characters' parts (``part:<id>``; empty: take the character's own idea)
    of the waiting turn, or, with none waiting, of the next turn, which is run with them:
    the turn goes on to its draft."""
    branch = _text(form, "branch") or "main"
    store = fab.store(story, branch)
    await store.require()
    parts = {}
    # the parts a waiting turn asks for; with none waiting, the played characters' parts
    # of the next turn, which this request runs (one step: part, then the draft)
    asked = [a.character for a in await fab.waiting_parts(store)]
    if not asked and await fab.pending(store) is None:
        asked = await fab.read(store).played()
    for character in asked:
        words = _text(form, f"part:{character}")
        answer = {"words": words} if words else {"accept": True}
        parts[character] = part_from(answer, story=story)
    if not parts:
        raise InvalidInput(f"story {story!r} waits for no played character's part")
    ran = await fab.run(store, auto=False, parts=parts)
    if ran.rest is not None:  # a 409, as any refusal by the story's state
        raise StoryAtRest(ran.rest, story=story, branch=branch)
    if ran.outcome == "pending":
        return go(f"/stories/{story}/pending", branch=branch)
    return go(f"/stories/{story}", branch=branch)


@router.get("/stories/{story}/pending", response_class=HTMLResponse)
async def pending_page(request: Request, fab: Fab, story: str, branch: Branch = "main") -> Response:
    store = fab.store(story, branch)
    await store.require()
    found = await fab.pending(store)
    details = await fab.pending_details(store) if found is not None else None
    before = await _before(fab, store, found.turn) if found is not None else []
    return page(request, "pending.html", story=story, branch=branch, pending=details, before=before)


BEFORE_PENDING = 3
"""Turns shown before a pending draft, so it is read where it stands in the story."""


async def _before(fab: Fabula, store: StoryStore, turn: int) -> list[TurnText]:
    """The committed turns just before ``turn`` (at most :data:`BEFORE_PENDING`)."""
    return await fab.read(store).turns(max(1, turn - BEFORE_PENDING), turn - 1)


async def _decide(
    request: Request,
    fab: Fabula,
    story: str,
    form: dict[str, Any],
    decision: Decision,
    force: bool = False,
) -> Response:
    branch = _text(form, "branch") or "main"
    expect = _text(form, "pending_id") or None
    store = fab.store(story, branch)
    try:
        out = await fab.decide(store, decision, force=force, expect=expect)
    except TurnConflict as exc:
        turn = exc.context.get("turn")
        return go(f"/stories/{story}", branch=branch, notice="decided", turn=turn)
    except EditRefused as exc:
        # the pending page again, the person's text kept, with what the critic found
        details = await fab.pending_details(store)
        return page(
            request,
            "pending.html",
            status=422,
            story=story,
            branch=branch,
            pending=details,
            before=await _before(fab, store, details.turn) if details is not None else [],
            edit_text=decision.text,
            edit_error=studio_line(exc, plain=True),
        )
    if out.outcome == "pending":
        notice = "edited" if decision.action == "edit" else "pending"
        return go(f"/stories/{story}/pending", branch=branch, notice=notice, turn=out.turn)
    if out.outcome in ("committed", "duplicate"):
        # a run of several turns that stopped here goes on with the next
        runs: Runs = request.app.state.runs
        runs.resume(store)
    if out.durable is False:  # committed all the same: the person is told plainly
        return go(
            f"/stories/{story}", branch=branch, notice="unsynced", turn=out.turn, why=out.unsynced
        )
    return go(f"/stories/{story}", branch=branch, notice=out.outcome, turn=out.turn)


@router.post("/stories/{story}/approve")
async def approve(request: Request, fab: Fab, story: str, form: Form) -> Response:
    choice = _text(form, "choice") or None
    return await _decide(request, fab, story, form, Decision(action="approve", choice=choice))


@router.post("/stories/{story}/alternatives")
async def alternatives(fab: Fab, story: str, form: Form) -> Response:
    branch = _text(form, "branch") or "main"
    count = _whole(_text(form, "count") or "3", "count")
    done = await fab.alternatives(fab.store(story, branch), count)
    return go(f"/stories/{story}/drafts", branch=branch, turn=done.turn, note=done.note)


@router.get("/stories/{story}/drafts", response_class=HTMLResponse)
async def drafts_page(
    request: Request,
    fab: Fab,
    story: str,
    branch: Branch = "main",
    turn: Annotated[int | None, Query(ge=1)] = None,
) -> Response:
    found = await fab.drafts(fab.store(story, branch), turn)
    note = request.query_params.get("note", "")[:300] or None
    found = found.model_copy(update={"note": note or found.note})
    return page(request, "drafts.html", story=story, branch=branch, drafts=found)


@router.post("/stories/{story}/edit")
async def edit(request: Request, fab: Fab, story: str, form: Form) -> Response:
    text = _text(form, "text")
    if not text:
        raise InvalidInput("an edit needs the new text")
    now = _text(form, "now") in ("on", "true", "1")
    force = _text(form, "force") in ("on", "true", "1")
    decision = Decision(action="edit", text=text, now=now)
    return await _decide(request, fab, story, form, decision, force)


@router.post("/stories/{story}/reject")
async def reject(request: Request, fab: Fab, story: str, form: Form) -> Response:
    note = _text(form, "note")  # optional, as on the command line
    return await _decide(request, fab, story, form, Decision(action="reject", note=note))


# -- minds, evidence, branches ---------------------------------------------------------------
@router.get("/stories/{story}/minds", response_class=HTMLResponse)
async def minds_page(
    request: Request, fab: Fab, story: str, branch: Branch = "main", as_of: AsOf = None
) -> Response:
    minds = await shared_minds(request, fab.read(story, branch), as_of)
    return page(request, "minds.html", story=story, branch=branch, minds=minds)


@router.get("/stories/{story}/plot", response_class=HTMLResponse)
async def plot_page(request: Request, fab: Fab, story: str, branch: Branch = "main") -> Response:
    """The hierarchy of a long story: the plot, its plotlines and the scenes, summarised."""
    found = await fab.read(story, branch).plot()
    return page(request, "plot.html", story=story, branch=branch, plot=found)


@router.get("/stories/{story}/recall", response_class=HTMLResponse)
async def recall_page(
    request: Request,
    fab: Fab,
    story: str,
    branch: Branch = "main",
    q: Annotated[str, Query(max_length=MAX_REQUEST_CHARS)] = "",
    character: str = "",
    budget: str = "",
    as_of: str = "",
) -> Response:
    """Ask the story's memory: the context the writer (or a character) would be given.
    The form's empty fields (no turn, no budget) mean now and the default budget."""
    store = fab.store(story, branch)
    tokens = _whole(budget, "budget") if budget.strip() else RECALL_BUDGET
    turn = _whole(as_of, "as of turn") if as_of.strip() else None
    found = None
    if q.strip():  # the recall checks the story and branch exist
        found = await fab.read(store).recall(
            q, budget=tokens, character=character or None, as_of=turn
        )
    else:
        await store.require()
    return page(
        request,
        "recall.html",
        story=story,
        branch=branch,
        q=q,
        budget=tokens,
        character=found.holder if found and found.holder else character,
        characters=await fab.read(store).characters(),
        head=await fab.read(store).head(),
        as_of=turn,
        found=found,
        by_line={line.line: line for line in found.lines} if found else {},
    )


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


@router.get("/stories/{story}/lore", response_class=HTMLResponse)
async def lore_page(
    request: Request, fab: Fab, story: str, branch: Branch = "main", turn: str = ""
) -> Response:
    """The story's lore by book, who knows each entry, and what a turn activated."""
    at = _whole(turn, "turn") if turn.strip() else None
    found = await fab.read(story, branch).lore(at)
    return page(request, "lore.html", story=story, branch=branch, lore=found)


@router.get("/stories/{story}/chat", response_class=HTMLResponse)
async def chat_page(
    request: Request,
    fab: Fab,
    story: str,
    branch: Branch = "main",
    character: str = "",
    q: Annotated[str, Query(max_length=MAX_REQUEST_CHARS)] = "",
    as_of: str = "",
) -> Response:
    """The Chat page: the form, filled from the address (a link may name the character,
    the question and the turn). A GET asks nothing: a question is answered when the form
    is sent (:func:`chat_answer`), so a link from another site spends no model call."""
    return await _chat(request, fab, story, branch, character, q, as_of, ask=False)


@router.post("/stories/{story}/chat", response_class=HTMLResponse)
async def chat_answer(request: Request, fab: Fab, story: str, form: Form) -> Response:
    """Talk to a character: its answer to a question, from only its own mind. The form's
    empty 'as of' means now; nothing said here enters the story."""
    q = _text(form, "q")
    if len(q) > MAX_REQUEST_CHARS:
        raise InvalidInput(f"q: at most {MAX_REQUEST_CHARS} characters")
    branch = _text(form, "branch") or "main"
    character, as_of = _text(form, "character"), _text(form, "as_of")
    talked = _conversation(_text(form, "conversation"))
    return await _chat(
        request, fab, story, branch, character, q, as_of, ask=True, conversation=talked
    )


_EXCHANGES = TypeAdapter(list[ChatExchange])


def _conversation(sent: str) -> list[ChatExchange]:
    """The conversation the Chat page sends with a question (JSON: its last exchanges with
    the character asked, oldest first), its last :data:`CHAT_MEMORY` read; "" is none.
    :class:`InvalidInput` when it is not such a list or is too long to be one."""
    if not sent:
        return []
    if len(sent) > 2 * CHAT_MEMORY * (2 * CHAT_EXCHANGE_CHARS + 64):
        raise InvalidInput("conversation: too long")
    try:
        talked = _EXCHANGES.validate_json(sent)
    except ValidationError:
        raise InvalidInput("conversation: a list of {question, answer}") from None
    return talked[-CHAT_MEMORY:]


async def _chat(
    request: Request,
    fab: Fab,
    story: str,
    branch: str,
    character: str,
    q: str,
    as_of: str,
    *,
    ask: bool,
    conversation: Sequence[ChatExchange] = (),
) -> Response:
    """The Chat page, with the answer to ``q`` when ``ask`` (read against
    ``conversation``, the exchanges before it)."""
    store = fab.store(story, branch)
    await store.require()
    turn = _whole(as_of, "as of turn") if as_of.strip() else None
    answer = None
    if ask and character.strip() and q.strip():
        answer = await fab.read(store).chat(character, q, as_of=turn, conversation=conversation)
    entities = await fab.read(store).entities()
    characters = sorted(
        (e for e in entities.values() if e.kind == "character"), key=lambda e: e.name
    )
    return page(
        request,
        "chat.html",
        story=story,
        branch=branch,
        q=q,
        as_of=turn,
        character=answer.character if answer else character.strip().casefold(),
        characters=characters,
        head=await fab.read(store).head(),
        answer=answer,
    )


@router.get("/stories/{story}/evidence/{event}", response_class=HTMLResponse)
async def evidence_page(
    request: Request,
    fab: Fab,
    found: Evidence,
    story: str,
    branch: Branch = "main",
    as_of: AsOf = None,
) -> Response:
    return page(request, "evidence.html", story=story, branch=branch, ev=found, as_of=as_of)


@router.get("/stories/{story}/fork", response_class=HTMLResponse)
async def fork_form(
    request: Request, fab: Fab, story: str, branch: Branch = "main", at: AsOf = None
) -> Response:
    store = fab.store(story, branch)
    head = await fab.read(store).head() if at is None else at
    minds = await fab.read(store).minds(head)
    open_hyps: list[Hypothesis] = [h for h in minds.hypotheses if h.status == "open"]
    return page(
        request,
        "fork.html",
        story=story,
        branch=branch,
        at=minds.as_of,
        head=minds.head,
        text=minds.text,
        hypotheses=open_hyps,
    )


@router.post("/stories/{story}/fork")
async def fork(fab: Fab, story: str, form: Form) -> Response:
    branch = _text(form, "branch") or "main"
    try:
        at = int(_text(form, "at"))
    except ValueError:
        raise InvalidInput("at: the turn to fork at, a whole number") from None
    name = _text(form, "name") or None
    realise = _text(form, "realise") or None
    child = await fab.fork(fab.store(story, branch), at, name, realise)
    return go(f"/stories/{story}", branch=child.branch, notice="forked")


@router.get("/stories/{story}/rewind", response_class=HTMLResponse)
async def rewind_form(
    request: Request, fab: Fab, story: str, to: Annotated[int, Query(ge=0)], branch: Branch = "main"
) -> Response:
    store = fab.store(story, branch)
    text = await fab.read(store).turn(to)
    return page(
        request,
        "rewind.html",
        story=story,
        branch=branch,
        to=to,
        text=text,
        head=await fab.read(store).head(),
    )


@router.post("/stories/{story}/rewind")
async def rewind(fab: Fab, story: str, form: Form) -> Response:
    branch = _text(form, "branch") or "main"
    to = _whole(_text(form, "to"), "to")
    done = await fab.rewind(fab.store(story, branch), to, _text(form, "keep") or None)
    return go(f"/stories/{story}", branch=branch, notice="rewound", turn=done.head)


@router.get("/stories/{story}/retcon", response_class=HTMLResponse)
async def retcon_form(
    request: Request,
    fab: Fab,
    story: str,
    turn: Annotated[int, Query(ge=1)],
    branch: Branch = "main",
) -> Response:
    text = await fab.read(story, branch).turn(turn)
    return page(request, "retcon.html", story=story, branch=branch, turn=turn, text=text)


@router.post("/stories/{story}/retcon")
async def retcon(request: Request, fab: Fab, story: str, form: Form) -> Response:
    branch = _text(form, "branch") or "main"
    turn = _whole(_text(form, "turn"), "turn")
    text = _text(form, "text")
    force = _text(form, "force") in ("on", "true", "1")
    store = fab.store(story, branch)
    try:
        done = await fab.retcon(store, turn, text, branch=_text(form, "name") or None, force=force)
    except EditRefused as exc:
        # the form again, the person's text kept, with what the critic found (the hint
        # names this page's checkbox)
        why = studio_line(
            exc, plain=True, force="tick “Commit it even if the critic finds errors” to save it"
        )
        return page(
            request,
            "retcon.html",
            status=422,
            story=story,
            branch=branch,
            turn=turn,
            text=text,
            edit_error=why,
        )
    return go(f"/stories/{story}", branch=done.branch, notice="retconned", turn=turn)


@router.get("/stories/{story}/usage", response_class=HTMLResponse)
async def usage_page(request: Request, fab: Fab, story: str, branch: Branch = "main") -> Response:
    """Model tokens and cost per committed turn and role, the background work and the total
    (what `fabula show STORY usage` prints)."""
    found = await fab.read(story, branch).usage()
    return page(request, "usage.html", story=story, branch=branch, usage=found)


# -- the API's documentation ---------------------------------------------------------------
@router.get("/docs", response_class=HTMLResponse)
async def docs(request: Request) -> Response:
    """The API's documentation: Swagger UI on ``/openapi.json``, its script and styles served
    by the studio (the Content-Security-Policy allows no other source, and no inline script)."""
    return page(request, "docs.html")


# -- the token -----------------------------------------------------------------------------
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
    given = _text(form, "token")
    if not token or not secrets.compare_digest(given.encode(), token.encode()):
        failures[who] = [*recent, now]
        raise AccessDenied("that is not this studio's token")
    failures.pop(who, None)
    response = go("/")
    response.set_cookie(TOKEN_COOKIE, given, httponly=True, samesite="strict", path="/")
    return response
