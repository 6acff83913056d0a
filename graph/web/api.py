"""The JSON API under ``/api/``: every action of the studio's pages, for programs.

Each route calls the service (:class:`~fabula.graph.service.Fabula`, and for reads its one
door, :meth:`~fabula.graph.service.Fabula.read`) and answers with a model of
:mod:`fabula.graph.service.responses`, the same the command line prints with ``--json``.
State changes are POSTs with a JSON body (or, for an upload, the ``X-CSRF-Token`` header).
``branch`` defaults to ``main`` and ``as_of`` to now.
"""

from __future__ import annotations

from typing import Annotated, Literal
from urllib.parse import quote

from fastapi import APIRouter, File, Form, Query, Request, UploadFile
from fastapi.responses import JSONResponse, PlainTextResponse, Response
from pydantic import BaseModel, ConfigDict, Field
from sse_starlette.sse import EventSourceResponse

from fabula.agents.contracts import Decision
from fabula.errors import InvalidInput
from fabula.graph.service import Fabula, world_infos
from fabula.graph.service.handles import StoryStore
from fabula.graph.service.pending import (
    MAX_DIRECTION_CHARS,
    MAX_NOTE_CHARS,
    MAX_PENDING_ID_CHARS,
    MAX_RUN_TURNS,
)
from fabula.graph.service.reader import MAX_RECALL_BUDGET, MAX_REQUEST_CHARS, RECALL_BUDGET
from fabula.graph.service.responses.reading import (
    BeliefsOut,
    BranchOut,
    CharacterPageOut,
    Development,
    EvidenceOut,
    Hypothesis,
    LoreOut,
    MindsOut,
    PlotOut,
    WorldOut,
)
from fabula.graph.service.responses.recall import ChatOut, RecallOut
from fabula.graph.service.responses.stories import (
    ExportOut,
    LivedOut,
    StorySummary,
    StoryText,
    UsageOut,
    WorldInfo,
)
from fabula.graph.service.responses.turns import (
    DecisionOut,
    DraftsOut,
    PendingListed,
    PendingTurn,
    RetconOut,
    RewindOut,
    RunOut,
)
from fabula.graph.web.deps import (
    MAX_PACK_BYTES,
    AsOf,
    Branch,
    Evidence,
    Fab,
    builtin_pack,
)
from fabula.graph.web.live import Admitted, EventHub, Runs, RunStatus, story_events
from fabula.graph.web.shared import shared_minds
from fabula.worlds.imports import ImportLimits
from fabula.worlds.loader import parse_world

router = APIRouter(prefix="/api", tags=["api"])


def _store(fab: Fabula, story: str, branch: str = "main") -> StoryStore:
    return fab.store(story, branch)


class _Request(BaseModel):
    """A JSON body: strict types (``turns: true`` and ``auto: "yes"`` are refused), and
    only its own fields (a field it does not have, ``{"turn": 2}`` for ``turns``, is a 422
    naming it, not a default taken in silence)."""

    model_config = ConfigDict(strict=True, extra="forbid")


class CreateStory(_Request):
    """A story from a shipped world pack."""

    world: str = Field(description="A shipped world's id (see GET /api/worlds).")
    id: str | None = Field(None, description="The story's id (default: the world's id).")


class RunRequest(_Request):
    """Write turns on a branch."""

    branch: str = "main"
    turns: int = Field(1, ge=1, le=MAX_RUN_TURNS)
    auto: bool = Field(False, description="Approve every turn without asking.")
    direction: str | None = Field(
        None, max_length=MAX_DIRECTION_CHARS, description="A note for the planner."
    )
    wait: bool = Field(True, description="Answer when done; false: start and answer at once.")


class DecisionRequest(_Request):
    """Approve the pending turn; ``pending_id`` (from GET pending) guards against a draft
    decided meanwhile by someone else."""

    branch: str = "main"
    pending_id: str | None = Field(None, max_length=MAX_PENDING_ID_CHARS)


class ApproveRequest(DecisionRequest):
    """Approve the pending turn, or one of its alternative drafts (``choice``)."""

    choice: str | None = Field(
        None,
        max_length=MAX_PENDING_ID_CHARS,
        description="Which of the turn's drafts to commit (its number or id, see drafts).",
    )


class AlternativesRequest(_Request):
    """Write ``count`` drafts of the branch's next turn, to compare and choose from."""

    branch: str = "main"
    count: int = Field(3, ge=1, le=6)
    direction: str | None = Field(None, max_length=MAX_DIRECTION_CHARS)


class EditRequest(DecisionRequest):
    """Replace the draft: the text is read and checked, then awaits approval again."""

    text: str = Field(min_length=1, description="The text to put in place of the draft.")
    now: bool = Field(False, description="Commit it once read, if the critic finds no error.")
    force: bool = Field(False, description="Commit it at once, whatever the critic finds.")


class RejectRequest(DecisionRequest):
    note: str = Field("", max_length=MAX_NOTE_CHARS, description="Why: the planner reads it.")


class ForkRequest(_Request):
    branch: str = Field("main", description="The branch to fork from.")
    at: int = Field(ge=0, description="The turn to fork at.")
    name: str | None = Field(None, description="The new branch's name.")
    realise: str | None = Field(None, description="An open hypothesis the branch pursues.")


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
    store = await fab.create_story(builtin_pack(body.world), body.id or None)
    return await fab.read(store.story).summary()


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
    store = await fab.create_story(parse_world(text, pack.filename or "world.toml"), id or None)
    return await fab.read(store.story).summary()


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
    store = await fab.import_story(read, id or None, greeting=greeting)
    return await fab.read(store.story).summary()


@router.get("/stories/{story}", response_model=StorySummary)
async def story_summary(fab: Fab, story: str) -> StorySummary:
    return await fab.read(story).summary()


@router.post("/stories/{story}/delete")
async def delete_story(fab: Fab, story: str) -> dict[str, str]:
    """Delete a story, its branches, its minds and their Redis users."""
    await _store(fab, story).require(any_version=True)
    await fab.delete_story(story)
    return {"deleted": story}


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
    text activated for the author and for each character (its own lore)."""
    return await fab.read(story, branch).lore(turn)


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
    --json`): the writer's, or a character's own, with the record behind every line."""
    return await fab.read(_store(fab, story, branch)).recall(
        q, budget=budget, character=character, as_of=as_of
    )


@router.get("/stories/{story}/chat", response_model=ChatOut)
async def chat(
    fab: Fab,
    story: str,
    character: Annotated[str, Query(description="The character asked (id or name).")],
    q: Annotated[str, Query(max_length=MAX_REQUEST_CHARS, description="The question.")],
    branch: Branch = "main",
    as_of: AsOf = None,
) -> ChatOut:
    """A character's answer to ``q`` from only its own mind, with the records it rests on
    (the shape of `fabula chat --ask --json`). A GET: nothing of a chat is written."""
    return await fab.read(_store(fab, story, branch)).chat(character, q, as_of=as_of)


@router.get("/stories/{story}/evidence/{event}", response_model=EvidenceOut)
async def evidence(found: Evidence) -> EvidenceOut:
    """An event and its passage; with a holder and a slot, the belief it gave and its span."""
    return found


@router.get("/stories/{story}/usage", response_model=UsageOut)
async def usage(fab: Fab, story: str, branch: Branch = "main") -> UsageOut:
    """Model tokens and cost per committed turn and role (the shape of `show usage --json`)."""
    return await fab.read(story, branch).usage()


@router.get("/pending", response_model=list[PendingListed])
async def all_pending(fab: Fab) -> list[PendingListed]:
    """Every turn awaiting approval, each with its draft, findings and changes (the shape
    of `fabula pending --json`)."""
    return await fab.all_pending()


@router.get("/stories/{story}/pending", response_model=PendingTurn)
async def pending(fab: Fab, story: str, branch: Branch = "main") -> PendingTurn:
    """The pending turn: draft, findings by sentence, what committing it would change."""
    return await fab.pending_details(_store(fab, story, branch))


class RewindRequest(_Request):
    """Make turn ``to`` the head of a branch; its later turns are kept as branch ``keep``."""

    branch: str = "main"
    to: int = Field(ge=0, description="The turn that becomes the branch's head.")
    keep: str | None = Field(None, description="The branch keeping the later turns.")


class RetconRequest(_Request):
    """Edit committed turn ``turn``: a new branch from ``turn - 1`` with the new text."""

    branch: str = "main"
    turn: int = Field(ge=1, description="The committed turn to edit.")
    text: str = Field(min_length=1, description="The turn's new text.")
    name: str | None = Field(None, description="The new branch's name.")
    force: bool = Field(False, description="Commit it whatever the critic finds.")


@router.post("/stories/{story}/run", response_model=RunOut | RunStatus)
async def run(request: Request, fab: Fab, story: str, body: RunRequest) -> RunOut | RunStatus:
    """Write turns; without ``auto``, stop at the first awaiting approval."""
    store = _store(fab, story, body.branch)
    await store.require()
    if not body.wait:
        runs: Runs = request.app.state.runs
        return runs.start(store, body.turns, auto=body.auto, direction=body.direction)
    return await fab.run(store, body.turns, auto=body.auto, direction=body.direction)


async def _decide(
    fab: Fabula,
    story: str,
    body: DecisionRequest,
    decision: Decision,
    force: bool = False,
    runs: Runs | None = None,
) -> DecisionOut:
    store = _store(fab, story, body.branch)
    out = await fab.decide(store, decision, force=force, expect=body.pending_id)
    if runs is not None and out.outcome in ("committed", "duplicate"):
        runs.resume(store)  # a studio run of several turns that stopped here goes on
    return out


@router.post("/stories/{story}/approve", response_model=DecisionOut)
async def approve(request: Request, fab: Fab, story: str, body: ApproveRequest) -> DecisionOut:
    """Commit the pending turn, or with ``choice`` the draft chosen among its alternatives,
    exactly as shown (409 when it was decided meanwhile). A studio run of several turns
    that stopped at it goes on."""
    decision = Decision(action="approve", choice=body.choice)
    return await _decide(fab, story, body, decision, runs=request.app.state.runs)


@router.post("/stories/{story}/alternatives", response_model=DraftsOut)
async def alternatives(fab: Fab, story: str, body: AlternativesRequest) -> DraftsOut:
    """``count`` drafts of the next turn (written first if none is pending), each with its
    findings and changes, kept with the turn: approve one with ``choice``."""
    store = _store(fab, story, body.branch)
    return await fab.alternatives(store, body.count, direction=body.direction)


@router.get("/stories/{story}/drafts", response_model=DraftsOut)
async def drafts(
    fab: Fab,
    story: str,
    branch: Branch = "main",
    turn: Annotated[int | None, Query(ge=1, description="Default: the pending turn.")] = None,
) -> DraftsOut:
    """The alternative drafts kept for a turn (those not chosen too, once it is decided)."""
    return await fab.drafts(_store(fab, story, branch), turn)


@router.post("/stories/{story}/edit", response_model=DecisionOut)
async def edit(request: Request, fab: Fab, story: str, body: EditRequest) -> DecisionOut:
    """Put ``text`` in place of the pending draft: it is read and checked by the critic, then
    awaits approval again (``outcome`` "pending"), or is committed with ``now``. The critic's
    errors refuse it (422, the turn as it was), unless ``force``."""
    decision = Decision(action="edit", text=body.text.strip(), now=body.now)
    return await _decide(fab, story, body, decision, force=body.force, runs=request.app.state.runs)


@router.post("/stories/{story}/reject", response_model=DecisionOut)
async def reject(fab: Fab, story: str, body: RejectRequest) -> DecisionOut:
    """Commit nothing; the turn is planned again with the note."""
    return await _decide(fab, story, body, Decision(action="reject", note=body.note))


@router.post("/stories/{story}/fork", response_model=BranchOut, status_code=201)
async def fork(fab: Fab, story: str, body: ForkRequest) -> BranchOut:
    """Start a branch at a turn, optionally pursuing an open hypothesis."""
    child = await fab.fork(_store(fab, story, body.branch), body.at, body.name, body.realise)
    found = [b for b in await fab.read(child).branches() if b.branch == child.branch]
    return found[0]


@router.post("/stories/{story}/rewind", response_model=RewindOut)
async def rewind(fab: Fab, story: str, body: RewindRequest) -> RewindOut:
    """Make turn ``to`` the branch's head; the turns after it become branch ``kept``
    (nothing is deleted). 409 while a turn awaits approval or a branch forked after ``to``
    reads the branch."""
    return await fab.rewind(_store(fab, story, body.branch), body.to, body.keep)


@router.post("/stories/{story}/retcon", response_model=RetconOut, status_code=201)
async def retcon(fab: Fab, story: str, body: RetconRequest) -> RetconOut:
    """Edit committed turn ``turn``: a new branch forks at ``turn - 1`` with the new text as
    its turn ``turn``, read and checked by the critic (422 for its errors, unless
    ``force``; nothing remains then)."""
    store = _store(fab, story, body.branch)
    return await fab.retcon(store, body.turn, body.text, branch=body.name, force=body.force)


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

    store = _store(fab, story, branch)
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


@router.get("/stories/{story}/run", response_model=RunStatus | None)
async def run_status(request: Request, story: str, branch: Branch = "main") -> RunStatus | None:
    """The latest run this studio started on the branch, if any."""
    runs: Runs = request.app.state.runs
    return runs.status(story, branch)


@router.get("/stories/{story}/events")
async def events(request: Request, fab: Fab, story: str, branch: Branch = "main") -> Response:
    """Server-sent events of the branch: progress, draft, prose, turn, pending."""
    store = _store(fab, story, branch)
    await store.require()
    hub: EventHub = request.app.state.hub
    poll_s: float = request.app.state.config.poll_s
    if not hub.admit():
        return JSONResponse(
            {
                "error": f"the studio serves at most {hub.max_streams} live event streams and "
                "all are open; try again shortly"
            },
            status_code=503,
            headers={"Retry-After": "5"},
        )
    try:
        stream = Admitted(hub, story_events(fab, hub, store, poll_s, request.app.state.runs))
        return EventSourceResponse(stream, ping=15)
    except BaseException:
        hub.release()
        raise
