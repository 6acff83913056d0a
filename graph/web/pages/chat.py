"""The studio's Chat page: a question to a character, answered from only its own mind,
with the conversation's last exchanges; nothing said here enters the story."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated

from fastapi import APIRouter, Query, Request
from fastapi.responses import HTMLResponse, Response
from pydantic import TypeAdapter, ValidationError

from fabula.agents.contracts import CHAT_EXCHANGE_CHARS, CHAT_MEMORY, ChatExchange
from fabula.errors import InvalidInput
from fabula.graph.service.handles import StoryRef
from fabula.graph.service.reader import MAX_REQUEST_CHARS
from fabula.graph.web.deps import Branch, Fab
from fabula.graph.web.pages.forms import Form, field, page, whole

router = APIRouter(include_in_schema=False)


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
    q = field(form, "q")
    if len(q) > MAX_REQUEST_CHARS:
        raise InvalidInput(f"q: at most {MAX_REQUEST_CHARS} characters")
    branch = field(form, "branch") or "main"
    character, as_of = field(form, "character"), field(form, "as_of")
    talked = _conversation(field(form, "conversation"))
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
    store = StoryRef(story, branch)
    await fab.read(store).require()
    turn = whole(as_of, "as of turn") if as_of.strip() else None
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
