"""The service's answers about turns: what a run wrote, what waits for a decision (the
draft, its findings, what it would change), the alternatives, and a decision's, a rewind's
or a retcon's result."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

from fabula.agents.contracts import Finding, TurnPlan
from fabula.graph.service.summaries import PendingSummary as PendingSummary
from fabula.memory.records import AcquisitionMode


class _Out(BaseModel):
    model_config = ConfigDict(frozen=True)


Outcome = Literal["committed", "duplicate", "pending", "part", "abandoned"]
"""How a turn's run ended; ``part``: it waits for a played character's part."""


ChangeKind = Literal["added", "changed", "closed"]


class Change(_Out):
    """One slot a pending turn would change: from ``before`` to ``after`` (names, for people).

    ``added``: nothing was held about the slot; ``changed``: another value replaces the
    current one; ``closed``: the current value stops holding and nothing positive replaces it.
    """

    kind: ChangeKind
    holder: list[str] = []  # the holder chain's names; empty for the world
    subject: str
    attribute: str
    before: str | None = None
    after: str | None = None
    mode: AcquisitionMode | None = None


class ChangesOut(_Out):
    """What committing a pending turn would do to memory."""

    events: list[str] = []
    world: list[Change] = []
    beliefs: list[Change] = []
    developments: list[str] = []
    hypotheses: list[str] = []


class SentenceOut(_Out):
    """One sentence of a draft with the critic's findings about it."""

    text: str
    findings: list[Finding] = []


class PendingTurn(_Out):
    """A turn waiting for a decision: the draft, the critic's findings, what would change.

    ``id`` names this pending draft; a decision that carries another ``id`` is refused as
    already decided (someone decided the draft it was about).
    """

    id: str
    story: str
    branch: str
    turn: int
    draft: str
    revision: int = 0
    sentences: list[SentenceOut]
    findings: list[Finding]
    changes: ChangesOut
    plan: TurnPlan | None = None
    edit_problem: str | None = None  # why the last edit of this turn was not taken


class DraftOut(_Out):
    """One of a turn's alternative drafts, as an approver compares them: its id (what
    ``approve --choose`` names), its text, the critic's findings and what it would change."""

    id: str
    draft: str
    sentences: list[SentenceOut]
    findings: list[Finding]
    changes: ChangesOut
    plan: TurnPlan | None = None


class DraftsOut(_Out):
    """The alternative drafts of a turn, side by side; ``chosen`` names the one committed
    (once the turn is decided), ``pending_id`` the turn's pending draft while it waits."""

    story: str
    branch: str
    turn: int
    pending_id: str | None = None
    drafts: list[DraftOut]
    chosen: str | None = None
    note: str | None = None  # why fewer drafts than asked for were written


class PendingListed(PendingTurn):
    """A turn awaiting a decision as ``fabula pending --json`` lists it: what the API's
    pending gives (draft, findings, changes), and ``pending_id`` as in the summaries."""

    pending_id: str


class DecisionOut(_Out):
    """The result of approving, editing or rejecting a pending turn.

    ``durable``: for a commit, whether the server confirmed it is on disk (``WAITAOF``);
    when it did not (False), the turn is committed all the same and ``unsynced`` says why
    the server could not confirm it. None when nothing was committed. ``moved_to``: the
    branch holding the committed turn when a rewind took it off ``branch`` the moment it
    was committed (the rewind's kept branch); None when it is on ``branch``."""

    story: str
    branch: str
    turn: int
    action: Literal["approve", "edit", "reject"]
    outcome: Outcome
    head: int
    durable: bool | None = None
    unsynced: str | None = None
    moved_to: str | None = None


class RunOut(_Out):
    """The result of writing turns: how many were committed, and what waits, if anything."""

    story: str
    branch: str
    written: int
    outcome: Outcome | None = None
    head: int
    pending: PendingSummary | None = None
    rest: str | None = None  # why it stopped early: no character had anything to do


class RewindOut(_Out):
    """A rewound branch: ``branch`` now ends at ``head``; its turns after it are branch
    ``kept`` (forked from it at ``head``), which ends at ``kept_head``."""

    story: str
    branch: str
    head: int
    kept: str
    kept_head: int


class RetconOut(_Out):
    """An edited committed turn: branch ``branch`` forks ``parent`` at ``turn - 1`` and
    holds the new text as ``turn``, read and checked again (``findings``)."""

    story: str
    parent: str
    branch: str
    turn: int
    head: int
    findings: list[Finding] = []
