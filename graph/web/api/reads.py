"""The API's reads of a story, each through the service's one door for reads
(:meth:`~fabula.graph.service.Fabula.read`): its text and branches, W, B, D and H, the
minds, a character's card, the plot, recall, chat, evidence, usage, exports, and
for a story run in ticks its town and the spread of a piece of news.
Nothing here writes."""

from __future__ import annotations

from typing import Annotated, Literal
from urllib.parse import quote

from fastapi import APIRouter, Query, Request
from fastapi.responses import PlainTextResponse, Response
from pydantic import BaseModel, ConfigDict, Field

from fabula.agents.contracts import CHAT_MEMORY, ChatExchange
from fabula.graph.service.handles import StoryRef
from fabula.graph.service.reader import MAX_RECALL_BUDGET, MAX_REQUEST_CHARS, RECALL_BUDGET
from fabula.graph.service.responses.reading import (
    BeliefsOut,
    BranchOut,
    CharacterPageOut,
    Development,
    EvidenceOut,
    Hypothesis,
    MindsOut,
    PlotOut,
    WorldOut,
)
from fabula.graph.service.responses.recall import ChatOut, RecallOut
from fabula.graph.service.responses.stories import ExportOut, LivedOut, StoryText, UsageOut
from fabula.graph.service.spread import MAX_CLAUSE_CHARS, SpreadOut
from fabula.graph.service.town import TownOut
from fabula.graph.web.deps import AsOf, Branch, Evidence, Fab
from fabula.graph.web.shared import shared_minds

router = APIRouter()


@router.get("/stories/{story}/text", response_model=StoryText)
async def story_text(
    fab: Fab, story: str, branch: Branch = "main", as_of: AsOf = None
) -> StoryText:
    return await fab.read(story, branch).text(as_of)


@router.get("/stories/{story}/branches", response_model=list[BranchOut])
async def branches(fab: Fab, story: str) -> list[BranchOut]:
    return await fab.read(story).branches()


@router.get("/stories/{story}/world", response_model=WorldOut)
async def world(fab: Fab, story: str, branch: Branch = "main", as_of: AsOf = None) -> WorldOut:
    return await fab.read(story, branch).world(as_of)


@router.get("/stories/{story}/beliefs/{holder}", response_model=BeliefsOut)
async def beliefs(
    fab: Fab, story: str, holder: str, branch: Branch = "main", as_of: AsOf = None
) -> BeliefsOut:
    """B[holder]; ``holder`` is a character or a chain such as ``mara>leo``."""
    return await fab.read(story, branch).beliefs(holder.split(">"), as_of)


@router.get("/stories/{story}/developments", response_model=list[Development])
async def developments(
    fab: Fab, story: str, branch: Branch = "main", as_of: AsOf = None
) -> list[Development]:
    return (await fab.read(story, branch).minds(as_of)).developments


@router.get("/stories/{story}/hypotheses", response_model=list[Hypothesis])
async def hypotheses(
    fab: Fab, story: str, branch: Branch = "main", as_of: AsOf = None
) -> list[Hypothesis]:
    return (await fab.read(story, branch).minds(as_of)).hypotheses


@router.get("/stories/{story}/minds", response_model=MindsOut)
async def minds(
    request: Request, fab: Fab, story: str, branch: Branch = "main", as_of: AsOf = None
) -> Response:
    """W, every B[c] with nested beliefs, D, H and the who-knows-what grid at a turn."""
    found = await shared_minds(request, fab.read(story, branch), as_of)
    # written as it is: FastAPI would dump and validate every belief again (half the time)
    return Response(found.model_dump_json(), media_type="application/json")


@router.get("/stories/{story}/characters/{character}", response_model=CharacterPageOut)
async def character_card(fab: Fab, story: str, character: str) -> CharacterPageOut:
    """A character as its card: its fields, what its source card kept, its voice."""
    return await fab.read(story).character(character)


@router.get("/stories/{story}/plot", response_model=PlotOut)
async def plot(fab: Fab, story: str, branch: Branch = "main") -> PlotOut:
    """The branch's hierarchy now: the plot, its plotlines and its scenes, with summaries."""
    return await fab.read(story, branch).plot()


@router.get("/stories/{story}/recall", response_model=RecallOut)
async def recall(
    fab: Fab,
    story: str,
    q: Annotated[
        str,
        Query(max_length=MAX_REQUEST_CHARS, description="A question, or what a turn is about."),
    ],
    character: Annotated[
        str | None, Query(description="Recall as this character: only what it lived.")
    ] = None,
    budget: Annotated[
        int, Query(ge=1, le=MAX_RECALL_BUDGET, description="The most tokens.")
    ] = RECALL_BUDGET,
    branch: Branch = "main",
    as_of: AsOf = None,
) -> RecallOut:
    """The context memory gives ``q`` within ``budget`` tokens (the shape of `fabula recall
    --json`): the writer's, or a character's own, with the record behind every line. An
    empty ``character`` is the writer's, as the Recall page's blank field is."""
    return await fab.read(StoryRef(story, branch)).recall(
        q, budget=budget, character=character or None, as_of=as_of
    )


class ChatIn(BaseModel):
    """A question to a character (``POST /api/stories/{story}/chat``)."""

    model_config = ConfigDict(extra="forbid")

    character: str = Field(description="The character asked (id or name).")
    q: str = Field(max_length=MAX_REQUEST_CHARS, description="The question.")
    as_of: int | None = Field(None, ge=0, description="Ask it as it was at this turn.")
    conversation: list[ChatExchange] = Field(
        default_factory=list,
        max_length=CHAT_MEMORY,
        description=(
            "The conversation so far with this character, oldest first (at most "
            f"{CHAT_MEMORY} exchanges): a follow-up ('Why?', 'And where is it now?') is "
            "read against it. The caller keeps it; nothing of it is written."
        ),
    )


@router.post("/stories/{story}/chat", response_model=ChatOut)
async def chat(fab: Fab, story: str, asked: ChatIn, branch: Branch = "main") -> ChatOut:
    """A character's answer to ``q`` from only its own mind, with the records it rests on
    (the shape of `fabula chat --ask --json`). Nothing of a chat is written; it is a POST
    because an answer may cost a model call, and a GET (a link or a picture on another
    site) must spend nothing."""
    store = StoryRef(story, branch)
    return await fab.read(store).chat(
        asked.character, asked.q, as_of=asked.as_of, conversation=asked.conversation
    )


@router.get("/stories/{story}/evidence/{event}", response_model=EvidenceOut)
async def evidence(found: Evidence) -> EvidenceOut:
    """An event and its passage; with a holder and a slot, the belief it gave and its span."""
    return found


@router.get("/stories/{story}/usage", response_model=UsageOut)
async def usage(fab: Fab, story: str, branch: Branch = "main") -> UsageOut:
    """Model tokens and cost per committed turn and role (the shape of `show usage --json`)."""
    return await fab.read(story, branch).usage()


@router.get("/stories/{story}/town", response_model=TownOut)
async def town(
    fab: Fab,
    story: str,
    branch: Branch = "main",
    tick: Annotated[
        int | None, Query(ge=0, description="The tick (0: before the first; default: the last).")
    ] = None,
) -> TownOut:
    """A story run in ticks: every place, who is there at the tick, and its scene's turn."""
    return await fab.read(story, branch).town(tick)


@router.get("/stories/{story}/spread", response_model=SpreadOut)
async def spread(
    fab: Fab,
    story: str,
    clause: Annotated[str, Query(max_length=MAX_CLAUSE_CHARS, description="The news to follow.")],
    branch: Branch = "main",
) -> SpreadOut:
    """The share of characters who hold ``clause``, tick by tick, read from their own minds
    (the shape of `fabula show STORY spread CLAUSE --json`); 422 for an empty clause or a
    story that has run no tick."""
    return await fab.read(story, branch).spread(clause)


@router.get("/stories/{story}/export", response_model=ExportOut | LivedOut)
async def export(
    fab: Fab,
    story: str,
    branch: Branch = "main",
    format: Literal["json", "md", "epub"] = "json",
    as_character: Annotated[
        str | None,
        Query(alias="as", max_length=200, description="The story as this character lived it."),
    ] = None,
    as_of: AsOf = None,
) -> Response | ExportOut | LivedOut:
    """The branch's text (markdown, an EPUB book) or its text with W, D and H (JSON); with
    ``as=C``, the story as C lived it, read from C's own mind only (as ``fabula export
    --as C``); as of ``as_of`` (0 to the head: 422 otherwise), or now."""
    from fabula.graph.service.epub import lived_epub
    from fabula.graph.service.lived import lived_markdown

    store = StoryRef(story, branch)
    name = f"{story}-{branch}"
    if as_character is not None:
        found = await fab.read(store).lived(as_character, as_of=as_of)
        name += f"-as-{found.character}"  # its id, not the name as asked ("ſam" finds sam)
        if format == "json":
            return found
        text = lived_markdown(found) if format == "md" else None
        data = lived_epub(found) if format == "epub" else None
    else:
        if format == "json":
            return await fab.read(store).export(as_of)
        text = await fab.read(store).markdown(as_of) if format == "md" else None
        data = await fab.read(store).epub(as_of) if format == "epub" else None
    if text is not None:
        return PlainTextResponse(
            text, media_type="text/markdown; charset=utf-8", headers=_attachment(f"{name}.md")
        )
    return Response(data, media_type="application/epub+zip", headers=_attachment(f"{name}.epub"))


def _attachment(filename: str) -> dict[str, str]:
    """A Content-Disposition naming ``filename``: ASCII in ``filename`` (anything else an
    underscore), the name as it is in ``filename*`` (RFC 6266, RFC 5987's UTF-8 form), so
    that any name can be sent in a header, which is Latin-1."""
    kept = "".join(c if c.isalnum() or c in "-_." else "_" for c in filename)
    ascii_name = "".join(c if c.isascii() else "_" for c in kept)
    header = f'attachment; filename="{ascii_name}"'
    if ascii_name != kept:
        header += f"; filename*=UTF-8''{quote(kept, safe='')}"
    return {"content-disposition": header}
