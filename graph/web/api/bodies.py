"""The JSON bodies the API's POSTs take: strict types and only their own fields."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from fabula.graph.service.pending import (
    MAX_DIRECTION_CHARS,
    MAX_NOTE_CHARS,
    MAX_PENDING_ID_CHARS,
    MAX_RUN_TURNS,
)
from fabula.graph.service.ticking import MAX_TICKS_AT_ONCE


class JsonBody(BaseModel):
    """A JSON body: strict types (``turns: true`` and ``auto: "yes"`` are refused), and
    only its own fields (a field it does not have, ``{"turn": 2}`` for ``turns``, is a 422
    naming it, not a default taken in silence)."""

    model_config = ConfigDict(strict=True, extra="forbid")


class CreateStory(JsonBody):
    """A story from a shipped world pack."""

    world: str = Field(description="A shipped world's id (see GET /api/worlds).")
    id: str | None = Field(None, description="The story's id (default: the world's id).")


class RunRequest(JsonBody):
    """Write turns on a branch."""

    branch: str = "main"
    turns: int = Field(1, ge=1, le=MAX_RUN_TURNS)
    auto: bool = Field(False, description="Approve every turn without asking.")
    direction: str | None = Field(
        None, max_length=MAX_DIRECTION_CHARS, description="A note for the planner."
    )
    wait: bool = Field(True, description="Answer when done; false: start and answer at once.")


class DecisionRequest(JsonBody):
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


class AlternativesRequest(JsonBody):
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


class ForkRequest(JsonBody):
    branch: str = Field("main", description="The branch to fork from.")
    at: int = Field(ge=0, description="The turn to fork at.")
    name: str | None = Field(None, description="The new branch's name.")
    realise: str | None = Field(None, description="An open hypothesis the branch pursues.")


class RewindRequest(JsonBody):
    """Make turn ``to`` the head of a branch; its later turns are kept as branch ``keep``."""

    branch: str = "main"
    to: int = Field(ge=0, description="The turn that becomes the branch's head.")
    keep: str | None = Field(None, description="The branch keeping the later turns.")


class RetconRequest(JsonBody):
    """Edit committed turn ``turn``: a new branch from ``turn - 1`` with the new text."""

    branch: str = "main"
    turn: int = Field(ge=1, description="The committed turn to edit.")
    text: str = Field(min_length=1, description="The turn's new text.")
    name: str | None = Field(None, description="The new branch's name.")
    force: bool = Field(False, description="Commit it whatever the critic finds.")


class TickRequest(JsonBody):
    """Run a branch's next ticks: every place with characters plays its scene at once."""

    branch: str = "main"
    ticks: int = Field(1, ge=1, le=MAX_TICKS_AT_ONCE, description="How many ticks to run.")
    review: bool = Field(
        False, description="Play one tick and keep it for a decision (approve, edit, reject)."
    )
    parts: dict[str, str] = Field(
        default_factory=dict,
        description="With review: played characters' parts (id -> words), each played in "
        "its character's scene.",
    )


class TickDecision(JsonBody):
    """A decision on the tick that waits: ``expect`` is the id shown (another waiting is
    refused, 409); an edit gives ``place``'s scene ``text`` (``force``: despite the
    critic's errors)."""

    branch: str = "main"
    action: Literal["approve", "edit", "reject"]
    expect: str | None = Field(None, description="The id of the tick shown.")
    place: str | None = Field(
        None, description="edit: the scene's place; approve: that scene alone."
    )
    text: str | None = Field(None, min_length=1, description="edit: the scene's new text.")
    force: bool = Field(False, description="edit: keep it whatever the critic finds.")
