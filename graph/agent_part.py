"""A played character's part written through LangGraph's Agent Server: what the play graph
(:mod:`fabula.graph.agent_play`) asks a person playing character C, how it reads the
answer, and how it commits the part.

The request is LangChain v1's ``HITLRequest`` (the types of :mod:`fabula.graph.hitl`): one
action, :data:`WRITE_PART`, whose ``args`` are the turn and C's part (``text``: C's own idea
for the turn when a turn already asks for it, else empty), and whose ``description`` is C's
own view; beside it, under its own keys, the turn and C's :class:`PlayedView`, read from
C's own mind only (what the studio and ``fabula write`` show beside the part's field). The
answer is a ``HITLResponse`` of one decision:

- ``edit``: ``edited_action.args.text`` is C's part, in C's player's words;
- ``approve``: take C's own idea (only where a turn asks for the part and shows it);
- ``reject``: write nothing this time;

or Fabula's own :class:`~fabula.graph.state.Part` (``{"words": ...}``, ``{"accept": true}``),
as the turn graph's ``character`` interrupt takes it.

The part is committed exactly as the studio's *Play the turn* does (:func:`write_part`): the
words read by :func:`~fabula.graph.state.typed_part`, the turn run by the service with C's
part (:meth:`~fabula.graph.service.Fabula.run`): only C's own acts and speech go in the
passage, what the words say of others becomes the critic's findings and the others answer
from their own minds; the draft then waits for the author's decision, as any other, in
Fabula's own pending turns (``fabula pending``, ``fabula approve``, the studio).
"""

from __future__ import annotations

import asyncio
import contextvars
from collections.abc import Coroutine, Mapping
from typing import Annotated, Any, Literal

from pydantic import PlainValidator
from typing_extensions import TypedDict

from fabula.agents.character.played import PlayedView
from fabula.errors import AccessDenied, Conflict, InvalidInput, StoryAtRest
from fabula.graph.hitl import ActionRequest, HITLRequest, HITLResponse, ReviewConfig
from fabula.graph.service import Fabula
from fabula.graph.service.handles import StoryRef
from fabula.graph.service.responses.turns import RunOut
from fabula.graph.state import Part, part_from, typed_part

WRITE_PART = "write_part"
"""The name of the one action a part's request asks about."""

PART_ARGS_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "text": {
            "type": "string",
            "description": "The character's part: what it does, in controlled English naming "
            "it, or a line it says.",
        },
        "character": {"type": "string", "description": "Whose part: the player's character."},
    },
    "required": ["text"],
}
"""The JSON schema of an edit's ``edited_action.args``."""


class Written(TypedDict):
    """What a part written through the play graph did (the state's ``written``)."""

    turn: int
    """The turn the part is in."""
    character: str
    """Whose part."""
    part: str
    """The words given (empty: the character's own idea was taken)."""
    outcome: Literal["pending", "part", "committed", "duplicate", "abandoned"]
    """``pending``: the draft waits for the author's decision; ``part``: the turn waits for
    another played character's part; an autonomous turn's own outcome otherwise."""
    left_out: list[str]
    """What the draft left out of the words, and why: each sentence that speaks for
    another character (the others act from their own minds)."""


def part_request(view: PlayedView, *, story: str, branch: str, turn: int) -> dict[str, Any]:
    """The interrupt value asking for ``view``'s character's part of ``turn``: Fabula's own
    keys (``kind``, the turn, ``character``, ``view``) and LangChain's ``HITLRequest``."""
    lines = [
        f"Write {view.name}'s part of turn {turn} of {story!r} [{branch}]: what {view.name} "
        f"does, in words naming {view.name} ('{view.name} searched the desk drawer.'), or a "
        "line they say. Only their own acts and speech are written; the others answer from "
        "their own minds.",
    ]
    if view.place:
        company = f" (with {', '.join(view.company)})" if view.company else " (alone)"
        lines.append(f"Where: {view.place}{company}")
    lines += [f"Believes: {b}" for b in view.beliefs]
    lines += [f"Remembers: {m}" for m in view.memories]
    lines += [f"Wants: {g}" for g in view.goals]
    if view.suggestion:
        lines.append(f"{view.name}'s own idea (approve to take it): {view.suggestion}")
    action: ActionRequest = {
        "name": WRITE_PART,
        "args": {
            "story": story,
            "branch": branch,
            "turn": turn,
            "character": view.character,
            "text": view.suggestion,
        },
        "description": "\n".join(lines),
    }
    review: ReviewConfig = {
        "action_name": WRITE_PART,
        "allowed_decisions": ["approve", "edit", "reject"]
        if view.suggestion
        else ["edit", "reject"],
        "args_schema": PART_ARGS_SCHEMA,
    }
    asked: HITLRequest = {"action_requests": [action], "review_configs": [review]}
    return {
        "kind": "part",
        "story": story,
        "branch": branch,
        "turn": turn,
        "character": view.character,
        "view": view.model_dump(mode="json"),
        **asked,
    }


def part_answer(
    answer: Any, *, story: str, character: str | None = None, names: tuple[str, ...] = ()
) -> Part | None:
    """The part a resume value gives (None: a ``reject``, nothing written). A malformed one
    is :class:`InvalidInput` of one line naming the field; an edit whose ``args.character``
    is not ``character`` (its id or one of its ``names``, in any case) is
    :class:`AccessDenied`: a player writes its own character's part only."""
    if not (isinstance(answer, Mapping) and "decisions" in answer):
        return part_from(answer, story=story)
    decisions = answer["decisions"]
    if not isinstance(decisions, list) or len(decisions) != 1:
        count = len(decisions) if isinstance(decisions, list) else "not a list"
        raise InvalidInput(
            f"decisions: a part takes exactly one decision (got {count})", story=story
        )
    (given,) = decisions
    kind = given.get("type") if isinstance(given, Mapping) else None
    if kind == "approve":
        return Part(accept=True)
    if kind == "reject":
        return None
    if kind != "edit":
        raise InvalidInput(
            f"decisions[0].type: must be approve, edit or reject (got {kind!r})", story=story
        )
    action = given.get("edited_action")
    args = action.get("args") if isinstance(action, Mapping) else None
    if not isinstance(action, Mapping) or not isinstance(args, Mapping):
        raise InvalidInput("decisions[0].edited_action.args: missing", story=story)
    if action.get("name", WRITE_PART) != WRITE_PART:
        raise InvalidInput(f"decisions[0].edited_action.name: must be {WRITE_PART!r}", story=story)
    who = args.get("character")
    if who is not None and character is not None:
        mine = {character.casefold(), *(n.casefold() for n in names)}
        if not isinstance(who, str) or who.strip().casefold() not in mine:
            raise AccessDenied(
                f"a player of {character!r} writes that character's part only (not {who!r})",
                story=story,
            )
    text = args.get("text")
    if not isinstance(text, str) or not text.strip():
        raise InvalidInput(
            "decisions[0].edited_action.args.text: the part's words (approve takes the "
            "character's own idea)",
            story=story,
        )
    return typed_part(text, story=story)


def answer_schema(story: str, character: str, names: tuple[str, ...]) -> Any:
    """The part interrupt's ``response_schema``: LangGraph checks a resume against it before
    keeping it (:func:`part_answer`), so a malformed one, or one for another character, is
    refused alone and the request keeps waiting."""

    def checked(answer: Any) -> Any:
        part_answer(answer, story=story, character=character, names=names)
        return answer

    return Annotated[Any, PlainValidator(checked, json_schema_input_type=HITLResponse | Part)]


async def _alone(work: Coroutine[Any, Any, RunOut]) -> RunOut:
    """``work`` in a context of its own: inside the play graph's node, LangGraph would take
    the turn graph for its subgraph, and stream the turn's nodes (every mind, the plan, the
    draft) to the player's thread."""
    return await asyncio.create_task(work, context=contextvars.Context())


async def write_part(app: Fabula, story: str, branch: str, character: str, part: Part) -> Written:
    """Write ``character``'s ``part`` of the branch's next turn, as the studio's *Play the
    turn* does: the turn waiting for it is answered, or, with none waiting, the next turn
    is run with it, and it waits for the author's decision. A turn whose draft already
    waits for a decision, or that has this character's part already, is a
    :class:`Conflict`; a story at rest is :class:`StoryAtRest`."""
    ref = StoryRef(story, branch)
    reader = app.read(ref)
    await reader.require()
    turn = await reader.head() + 1
    where = {"story": story, "branch": branch, "turn": turn}
    if await reader.pending() is not None:
        raise Conflict(
            f"turn {turn} waits for the author's decision: a part goes in the next turn, "
            "once it is decided",
            **where,
        )
    waiting = [r.character for r in await reader.waiting_parts()]
    if waiting and character not in waiting:
        raise Conflict(
            f"turn {turn} has the part of {character!r} already: it waits for another "
            "played character's",
            **where,
        )
    ran = await _alone(app.run(ref, auto=False, parts={character: part}))
    if ran.rest is not None:
        raise StoryAtRest(ran.rest, story=story, branch=branch)
    words = part.words or ""
    left_out: list[str] = []
    found = await reader.pending()
    if found is not None and words:
        left_out = [
            f"{f.quote} ({f.message})"
            for f in found.request.findings
            if f.kind == "plan" and f.quote and " ".join(f.quote.split()) in " ".join(words.split())
        ]
    return {
        "turn": turn,
        "character": character,
        "part": words,
        "outcome": ran.outcome or "abandoned",
        "left_out": left_out,
    }
