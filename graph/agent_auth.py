"""Who may do what on LangGraph's Agent Server: the custom auth handler ``langgraph.json``
names (``"auth": {"path": "fabula.graph.agent_auth:auth"}``).

Without ``FABULA_AGENT_TOKENS`` the server is the author's own desk, as ``langgraph dev`` on
one's machine is: every request is the author (identity ``desk``), as before. With it, the
setting names a JSON file of tokens, each a :class:`Grant`::

    {"s3cret-ana": {"identity": "ana", "role": "author", "stories": ["tale"]},
     "s3cret-leo": {"identity": "bo", "role": "player", "stories": ["tale"], "character": "leo"}}

and every request needs ``Authorization: Bearer <token>`` (401 without a known one):

- an **author** (of the ``stories`` listed; none listed: every story) may do everything
  on the threads they own: a thread is stamped with its creator (``owner`` in its
  metadata), and every read, search, run and change is filtered to the caller's own, so
  another owner's thread is not found; a run on a story not granted is refused (403);
- a **player** of character C, and a **reader**, may run one graph only, ``fabula_play``
  (:mod:`fabula.graph.agent_play`), whose state holds the public story and, for a player,
  B[C] and what C lived, read from C's own mind: never the turn graph (``fabula``), whose
  state holds the author's whole view (every character's mind, the briefs and their
  secrets, the plan). Their threads are their own too (stamped, filtered), and a player's
  are stamped with its character; a run on a story not granted, or, for a player, one where
  C is not played or that names another character, is refused (403). The store, crons and
  assistants' changes are the author's.

A run is checked here before it is made: a story or branch not there is a 404 with its words
(``NotFound: story 'nope' does not exist``), and a resume's malformed decision a 422 naming
the field (:func:`fabula.graph.hitl.decision_from`).
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any, Literal, NoReturn
from uuid import UUID, uuid5

from langgraph_sdk import Auth
from pydantic import BaseModel, ConfigDict, ValidationError

from fabula.errors import AccessDenied, ConfigError, FabulaError, InvalidInput
from fabula.graph.agent_part import part_answer
from fabula.graph.agent_play import PLAY_GRAPH
from fabula.graph.agent_server import application
from fabula.graph.hitl import decision_from
from fabula.settings import Settings

auth = Auth()
"""The handler ``langgraph.json`` names."""

Role = Literal["author", "player", "reader"]


class Grant(BaseModel):
    """What one token may do: who it is, in which role, on which stories."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    identity: str
    """Who holds the token: the owner stamped on the threads it creates."""
    role: Role
    """``author`` (everything on its own threads), ``player`` or ``reader``."""
    stories: tuple[str, ...] = ()
    """The stories it may touch (none: every story)."""
    character: str | None = None
    """A player's character."""


_NAMESPACE_GRAPH = UUID("6ba7b821-9dad-11d1-80b4-00c04fd430c8")
"""langgraph-api's namespace for the assistant it makes of each graph (``langgraph_api.graph``)."""
PLAY_ASSISTANT = str(uuid5(_NAMESPACE_GRAPH, PLAY_GRAPH))
"""The assistant the server makes of :data:`PLAY_GRAPH`: a player's and a reader's only one."""

DESK = Grant(identity="desk", role="author")
"""Everyone, where no tokens are configured: the author at their own desk."""


def read_grants(path: Path) -> dict[str, Grant]:
    """The tokens of the file at ``path``; a file that cannot be read, or a grant that is not
    valid, is a :class:`ConfigError` naming the file and the token's place."""
    try:
        given = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise ConfigError(f"FABULA_AGENT_TOKENS: cannot read {path}: {exc}") from None
    if not isinstance(given, dict):
        raise ConfigError(f"FABULA_AGENT_TOKENS: {path} must hold an object of token -> grant")
    grants: dict[str, Grant] = {}
    for i, (token, grant) in enumerate(given.items()):
        try:
            grants[token] = Grant.model_validate(grant)
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first["loc"])
            raise ConfigError(
                f"FABULA_AGENT_TOKENS: {path}: token #{i + 1}: {where}: {first['msg']}"
            ) from None
    return grants


_loaded: list[dict[str, Grant] | None] = []


async def _grants() -> dict[str, Grant] | None:
    """The configured tokens (read once, in a worker thread), or None: the author's desk."""
    if not _loaded:
        path = (await asyncio.to_thread(Settings.from_env)).agent_tokens
        _loaded.append(None if path is None else await asyncio.to_thread(read_grants, path))
    return _loaded[0]


@auth.authenticate
async def authenticate(authorization: str | None) -> Auth.types.MinimalUserDict:
    """The caller's grant from its bearer token (everyone is the desk without tokens)."""
    grants = await _grants()
    if grants is None:
        grant = DESK
    else:
        scheme, _, token = (authorization or "").partition(" ")
        found = grants.get(token) if scheme.lower() == "bearer" else None
        if found is None:
            raise Auth.exceptions.HTTPException(
                status_code=401, detail="a known bearer token is needed (FABULA_AGENT_TOKENS)"
            )
        grant = found
    user: dict[str, Any] = {"identity": grant.identity, **grant.model_dump(mode="json")}
    return user  # type: ignore[return-value]


def _grant(ctx: Auth.types.AuthContext) -> Grant:
    user = ctx.user
    return Grant(
        identity=user.identity,
        role=user["role"],
        stories=tuple(user["stories"]),
        character=user["character"],
    )


def _authors_only(grant: Grant) -> None:
    if grant.role != "author":
        raise Auth.exceptions.HTTPException(
            status_code=403,
            detail=f"a {grant.role}'s token cannot do this: it runs {PLAY_GRAPH!r} on its own "
            "threads (the turn graph's state holds every character's mind)",
        )


def _stamp(grant: Grant) -> dict[str, str]:
    """What a thread or a run is stamped with when made, and filtered by always: its owner,
    and for a player or a reader its role (and a player's character), so that a token of one
    role never finds what the same identity made in another."""
    if grant.role == "author":
        return {"owner": grant.identity}
    stamp = {"owner": grant.identity, "role": grant.role}
    if grant.role == "player":
        stamp["character"] = grant.character or ""
    return stamp


def _owned(ctx: Auth.types.AuthContext, value: Any) -> dict[str, str]:
    """A thread or a run: stamped with its owner when made (or changed), filtered to it
    always, so that another owner's is not found."""
    stamp = _stamp(_grant(ctx))
    if isinstance(value, dict) and isinstance(value.get("metadata"), dict):
        value["metadata"].update(stamp)
    elif isinstance(value, dict) and ctx.action in ("create", "create_run"):
        value["metadata"] = dict(stamp)
    return stamp


@auth.on.assistants
async def on_assistants(ctx: Auth.types.AuthContext, value: Any) -> None:
    """Anyone may see the graphs (their assistants, schemas and drawing); only an author may
    make or change an assistant."""
    if ctx.action not in ("read", "search"):
        _authors_only(_grant(ctx))


@auth.on.threads.create_run
async def on_run(ctx: Auth.types.AuthContext, value: Any) -> dict[str, str]:
    """A run: on the caller's own thread, on a story granted. A player's or a reader's runs
    only :data:`PLAY_ASSISTANT` (its view), a player's on a story where its character is
    played, reading and writing that character's mind and part and no other's, a reader's
    writing nothing; a resume has its answer checked before the run is made (422 naming
    the field)."""
    owner = _owned(ctx, value)
    grant = _grant(ctx)
    kwargs = value.get("kwargs") or {}
    given = kwargs.get("input")
    story = given.get("story") if isinstance(given, dict) else None
    if story is not None and grant.stories and story not in grant.stories:
        raise Auth.exceptions.HTTPException(
            status_code=403, detail=f"story {story!r}: not granted to {grant.identity!r}"
        )
    if isinstance(given, dict) and story is not None:
        await _exists(story, given.get("branch") or "main")
    command = kwargs.get("command")
    play = str(value.get("assistant_id")) == PLAY_ASSISTANT
    if grant.role != "author":
        await _may_play(grant, play, given, command)
    if isinstance(command, dict) and "resume" in command:
        _check_resume(command["resume"], story=story or "?", play=play)
    return owner


def _check_resume(resume: Any, *, story: str, play: bool) -> None:
    """A resume's answers checked before the run is made: a decision on a turn's draft
    (:func:`~fabula.graph.hitl.decision_from`), or, on :data:`PLAY_ASSISTANT`, a part
    (:func:`~fabula.graph.agent_part.part_answer`); a malformed one is refused with its
    status and one line (422 ``InvalidInput: ...``)."""
    # a resume may be keyed by the interrupt's id: each value is an answer
    keyed = isinstance(resume, dict) and resume and all(map(_is_interrupt_id, resume))
    answers = resume.values() if keyed else [resume]
    try:
        for answer in answers:
            if play:
                part_answer(answer, story=story)
            # a played character's part ({"words": ...}) is another interrupt's answer:
            # its own node reads it; an answer of no known shape is left to the graph's
            # response_schema, which refuses it without losing the turn
            elif isinstance(answer, dict) and ("decisions" in answer or "action" in answer):
                decision_from(answer, story=story)
    except FabulaError as error:  # the story is the thread's, not the resume's: unnamed
        raise _refusal(error, where=False) from None


def _refusal(error: FabulaError, *, where: bool = True) -> Auth.exceptions.HTTPException:
    """``error`` as the server's refusal: its status, its class and its one line (with its
    context, unless ``where`` is false)."""
    line = str(error) if where else error.message
    return Auth.exceptions.HTTPException(
        status_code=error.http_status, detail=f"{type(error).__name__}: {line}"
    )


async def _may_play(grant: Grant, play: bool, given: Any, command: Any) -> None:
    """A player's or a reader's run: on :data:`PLAY_ASSISTANT` only, a story named (or a
    resume of its own thread's interrupt); a reader's names no character and writes no
    part, a player's names none but its own, on a story where it is played (403
    ``AccessDenied: ...`` otherwise, before the run is made)."""
    story = given.get("story") if isinstance(given, dict) else None

    def refuse(why: str) -> NoReturn:
        raise _refusal(AccessDenied(f"{grant.role}: {why}", story=story))

    if not play:
        refuse(f"runs the {PLAY_GRAPH!r} graph only (its state is what this token may see)")
    if isinstance(command, dict) and set(command) - {"resume"}:
        refuse("a command resumes its own interrupt, nothing else (no goto, no update)")
    resumes = isinstance(command, dict) and "resume" in command
    if grant.role == "reader" and resumes:
        refuse("writes no part: it reads the public story")
    if given is None and resumes:
        return  # the thread is the player's own; the graph checks the part's character
    if not isinstance(given, dict) or not isinstance(story, str):
        refuse("a run names its story: input {'story': ...}")
    asked = given.get("character")
    writes = given.get("part") is not None or bool(given.get("write"))
    if grant.role == "reader":
        if writes:
            refuse("writes no part: it reads the public story")
        if asked:
            refuse("reads the public story, no character's mind")
        return
    reader = (await application()).read(story, given.get("branch") or "main")
    doing = "writes that character's part" if writes else "reads that character's mind"
    try:
        own = (await reader.resolve(grant.character or "", "character")).id
        if asked and (await reader.resolve(str(asked), "character")).id != own:
            refuse(f"a player of {grant.character!r} {doing} only (not {asked!r})")
        if own not in await reader.played():
            refuse(f"{grant.character!r} is not played in story {story!r}")
    except FabulaError:
        refuse(f"a player of {grant.character!r} {doing} only")


async def _exists(story: Any, branch: Any) -> None:
    """A run's story and branch are there, or the run is refused with the error's status
    and words (404 ``NotFound: story 'nope' does not exist``) before it is made."""
    try:
        if not isinstance(story, str) or not isinstance(branch, str):
            raise InvalidInput("input: story and branch must be text")
        await (await application()).read(story, branch).require()
    except FabulaError as error:
        raise _refusal(error) from None


def _is_interrupt_id(key: Any) -> bool:
    return isinstance(key, str) and len(key) == 32 and all(c in "0123456789abcdef" for c in key)


@auth.on
async def on_anything_else(ctx: Auth.types.AuthContext, value: Any) -> dict[str, str] | None:
    """Threads and runs: the caller's own only; crons: an author's own; the store: authors
    only."""
    if ctx.resource in ("store", "crons"):
        _authors_only(_grant(ctx))
        if ctx.resource == "store":
            return None
    return _owned(ctx, value)
