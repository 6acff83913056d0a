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
- a **player** of character C, and a **reader**, may see the assistants only: a turn's
  thread state and stream hold the author's whole view (every character's mind, the briefs
  and their secrets), which is more than B[C] or the public story, so they are refused
  (403) on threads and runs. They read the story, and play their part, where Fabula
  filters it for them (the studio's character and reader pages, ``fabula play``).

A run is checked here before it is made: a story or branch not there is a 404 with its words
(``NotFound: story 'nope' does not exist``), and a resume's malformed decision a 422 naming
the field (:func:`fabula.graph.hitl.decision_from`).
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any, Literal

from langgraph_sdk import Auth
from pydantic import BaseModel, ConfigDict, ValidationError

from fabula.errors import ConfigError, FabulaError, InvalidInput
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
            detail=f"a {grant.role}'s token cannot read or run turns here: a turn's state "
            "holds every character's mind (read the story where Fabula filters it)",
        )


def _owned(ctx: Auth.types.AuthContext, value: Any) -> dict[str, str]:
    """An author's thread or run: stamped with its owner when made, filtered to it always."""
    grant = _grant(ctx)
    _authors_only(grant)
    if isinstance(value, dict) and isinstance(value.get("metadata"), dict):
        value["metadata"]["owner"] = grant.identity
    elif isinstance(value, dict) and ctx.action in ("create", "create_run"):
        value["metadata"] = {"owner": grant.identity}
    return {"owner": grant.identity}


@auth.on.assistants
async def on_assistants(ctx: Auth.types.AuthContext, value: Any) -> None:
    """Anyone may see the graph (its assistants, schemas and drawing); only an author may
    make or change an assistant."""
    if ctx.action not in ("read", "search"):
        _authors_only(_grant(ctx))


@auth.on.threads.create_run
async def on_run(ctx: Auth.types.AuthContext, value: Any) -> dict[str, str]:
    """A run: an author's, on their own thread, on a story granted; a resume's decision
    checked before the run is made (422 naming the field)."""
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
    if isinstance(command, dict) and "resume" in command:
        resume = command["resume"]
        # a resume may be keyed by the interrupt's id: each value is a decision
        keyed = isinstance(resume, dict) and resume and all(map(_is_interrupt_id, resume))
        answers = resume.values() if keyed else [resume]
        try:
            for answer in answers:
                # a played character's part ({"words": ...}) is another interrupt's answer:
                # its own node reads it; an answer of no known shape is left to the graph's
                # response_schema, which refuses it without losing the turn
                if isinstance(answer, dict) and ("decisions" in answer or "action" in answer):
                    decision_from(answer, story=story or "?")
        except FabulaError as error:
            raise Auth.exceptions.HTTPException(
                status_code=error.http_status, detail=f"{type(error).__name__}: {error.message}"
            ) from None
    return owner


async def _exists(story: Any, branch: Any) -> None:
    """A run's story and branch are there, or the run is refused with the error's status
    and words (404 ``NotFound: story 'nope' does not exist``) before it is made."""
    try:
        if not isinstance(story, str) or not isinstance(branch, str):
            raise InvalidInput("input: story and branch must be text")
        await (await application()).read(story, branch).require()
    except FabulaError as error:
        raise Auth.exceptions.HTTPException(
            status_code=error.http_status, detail=f"{type(error).__name__}: {error}"
        ) from None


def _is_interrupt_id(key: Any) -> bool:
    return isinstance(key, str) and len(key) == 32 and all(c in "0123456789abcdef" for c in key)


@auth.on
async def on_anything_else(ctx: Auth.types.AuthContext, value: Any) -> dict[str, str] | None:
    """Threads, runs, crons: an author's own only; the store: authors only."""
    if ctx.resource == "store":
        _authors_only(_grant(ctx))
        return None
    return _owned(ctx, value)
