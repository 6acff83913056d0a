"""The state of one turn as it moves through the graph (checkpointed in Redis).

Every value is typed: the role contracts themselves (:class:`TurnPlan`, :class:`Draft`,
:class:`Finding`, :class:`Decision`), the delta a draft commits (:class:`TurnDelta`) and its
readable :class:`Preview`. LangGraph's checkpoint serialiser stores a pydantic value with its
registry name and builds it again when it is read (:data:`CHECKPOINT_TYPES` is the registry
the service hands its saver's serialiser), so no node validates what another node wrote.

Checkpoints written before the values were typed (plain JSON) belong to stories of schema 1:
``fabula migrate`` types them once (:mod:`fabula.graph.service.migration`); nothing here reads them.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, NotRequired

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator
from typing_extensions import TypedDict

from fabula.agents.character.played import PlayedView
from fabula.agents.contracts import CharacterBrief, Decision, Draft, Finding, Proposal, TurnPlan
from fabula.agents.usage import add_usage
from fabula.errors import InvalidInput
from fabula.graph.checkpoint.serde import TypeRegistry
from fabula.memory.delta import TurnDelta


class HypothesesPreview(BaseModel):
    """The hypotheses a draft would propose (their premises) and realise (their ids)."""

    model_config = ConfigDict(frozen=True)

    proposed: list[str] = []
    realised: list[str] = []


class Preview(BaseModel):
    """A readable summary of the delta a draft would commit, for the approver: one line per
    event, world state, belief and development (names, not ids)."""

    model_config = ConfigDict(frozen=True)

    events: list[str] = []
    world: list[str] = []
    beliefs: list[str] = []
    developments: list[str] = []
    hypotheses: HypothesesPreview = HypothesesPreview()


def gather_proposals(old: list[Proposal] | None, new: list[Proposal] | None) -> list[Proposal]:
    """This attempt's proposals: the fanned-out character agents' answers accumulate (the
    planner starts each attempt afresh with ``Overwrite([])``)."""
    return [*(old or []), *(new or [])]


def merge_parts(old: dict[str, str] | None, new: dict[str, str] | None) -> dict[str, str]:
    """The played characters' parts so far: each fanned-out played character adds its own."""
    return {**(old or {}), **(new or {})}


class TurnState(TypedDict, total=False):
    """One turn of one branch of one story: plan → proposals → draft → findings → decision."""

    story: str
    """The story's id."""
    branch: str
    """The branch the turn is written on."""
    turn: int
    """The turn being written: the branch's head + 1."""
    direction: str | None
    """The human's note for the planner (``--direction``), if any."""
    attempt: int
    """How many plans were made before this one (0 for the first; a rejection re-plans)."""
    parts: Annotated[dict[str, str], merge_parts]
    """The played characters' parts, their person's words by character id: given with the
    run, or answered when the turn asked for them (kept for a re-plan of the turn)."""
    played: list[str]
    """The characters a person plays in this story (read by the planner's step)."""
    plan: TurnPlan
    """The planner's plan of this attempt."""
    briefs: dict[str, CharacterBrief]
    """Each focal character's brief, by character id."""
    proposals: Annotated[list[Proposal], gather_proposals]
    """This attempt's proposals, one per focal character (in the order they came back)."""
    draft: Draft | None
    """The writer's passage (None until written, and again after a re-plan)."""
    context: str
    """The memory context the writer was given (within the token budget)."""
    findings: list[Finding]
    """The critic's findings on the draft (and on an approver's read edit)."""
    draft_findings: list[Finding]
    """What the writer marked in its own draft (a passage cut at its token limit)."""
    preview: Preview | None
    """The readable summary of :attr:`delta`, for the approver."""
    delta: TurnDelta | None
    """The delta the draft commits, read once when the critic reads the draft and committed
    verbatim on approval, from any process."""
    build_ms: float
    """Milliseconds the memory-builder took to read the draft."""
    edit: str | None
    """An approver's edited text, still to be read."""
    edit_error: str | None
    """Why the last edit could not be read (the turn stays pending)."""
    edit_refused: list[Finding] | None
    """The critic's errors that refused the last edit (the turn stays pending)."""
    usage: Annotated[dict[str, dict[str, int | str]], add_usage]
    """Model usage by role, summed over the turn's nodes (rejected attempts included)."""
    revisions: int
    """How many times the critic sent this attempt's draft back to the writer."""
    revision_kept: bool
    """The last revision stopped at its token limit, so the draft it revised was kept (and
    goes to approval as it was critiqued)."""
    notes: list[str]
    """The approvers' rejection notes, for the next plan."""
    decision: Decision
    """The approver's last answer (or the autonomous one)."""
    outcome: Literal["committed", "duplicate", "abandoned"]
    """How the turn ended: ``committed``, ``duplicate`` or ``abandoned``."""
    unsynced: str | None
    """A human's approval committed but not confirmed on disk (WAITAOF): why; else absent."""


class CharacterTask(TypedDict):
    """What the fan-out sends to one character agent."""

    story: str
    branch: str
    turn: int
    attempt: int
    character: str
    brief: CharacterBrief
    played: NotRequired[bool]
    """A person plays this character: its part is theirs (``part``, or asked for)."""
    part: NotRequired[str | None]
    """The person's words for its part, when given with the run."""


MAX_PART_CHARS = 1000
"""The longest part a person writes for a played character in one turn."""


class Part(BaseModel):
    """A person's answer for a played character: its part in their ``words``, or ``accept``
    the engine's proposal shown beside the question."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    words: str | None = Field(None, max_length=MAX_PART_CHARS)
    accept: bool = False

    @model_validator(mode="after")
    def _one(self) -> Part:
        if self.accept == bool(self.words and self.words.strip()):
            raise ValueError("a part is either words or accept: true (not both, not neither)")
        return self


class PartRequest(BaseModel):
    """What a turn asks the person playing ``character`` (the ``character`` node's
    interrupt value, one per played character): its own :attr:`view` (from its mind only)
    and the engine's :attr:`suggestion`. Answered with a :class:`Part`."""

    model_config = ConfigDict(frozen=True)

    kind: Literal["part"] = "part"
    story: str
    branch: str
    turn: int
    character: str
    view: PlayedView
    suggestion: Proposal | None = None


def part_from(answer: Any, *, story: str) -> Part:
    """The person's :class:`Part` from a resume value (``{"words": ...}`` or ``{"accept":
    true}``); anything else is :class:`InvalidInput`, one line."""
    try:
        return Part.model_validate(answer)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise InvalidInput(
            f"a played character's part{': ' + where if where else ''}: {first['msg']}",
            story=story,
        ) from None


def typed_part(words: str, *, story: str) -> Part:
    """The part a person typed for a played character (the studio's field, ``write``'s
    prompt, ``run --as``): what the character does or says, or, left empty, the
    character's own idea taken as it is."""
    words = words.strip()
    return part_from({"words": words} if words else {"accept": True}, story=story)


class ApprovalRequest(BaseModel):
    """What a turn awaiting a human decision shows (the ``approve`` node's interrupt value):
    the draft, the critic's findings, the :attr:`preview` of its changes and the very
    :attr:`delta` approving it commits, the plan, and why the last edit was not taken."""

    model_config = ConfigDict(frozen=True)

    story: str
    branch: str
    turn: int
    draft: Draft
    findings: list[Finding] = []
    preview: Preview = Preview()
    delta: TurnDelta | None = None
    plan: TurnPlan | None = None
    edit_error: str | None = None
    edit_refused: list[Finding] | None = None
    # LangChain's HITLRequest (fabula.graph.hitl.hitl_request): the one action, commit_turn
    action_requests: list[dict[str, Any]] = []
    review_configs: list[dict[str, Any]] = []


CHECKPOINT_TYPES = TypeRegistry(
    types={
        "fabula.ApprovalRequest": ApprovalRequest,
        "fabula.CharacterBrief": CharacterBrief,
        "fabula.Decision": Decision,
        "fabula.Draft": Draft,
        "fabula.Finding": Finding,
        "fabula.HypothesesPreview": HypothesesPreview,
        "fabula.PartRequest": PartRequest,
        "fabula.PlayedView": PlayedView,
        "fabula.Preview": Preview,
        "fabula.Proposal": Proposal,
        "fabula.TurnDelta": TurnDelta,
        "fabula.TurnPlan": TurnPlan,
    },
    # where checkpointer version 1 stored each (frozen: a class that moves keeps its line)
    legacy={
        "fabula.graph.state.ApprovalRequest": "fabula.ApprovalRequest",
        "fabula.agents.contracts.CharacterBrief": "fabula.CharacterBrief",
        "fabula.agents.contracts.Decision": "fabula.Decision",
        "fabula.agents.contracts.Draft": "fabula.Draft",
        "fabula.agents.contracts.Finding": "fabula.Finding",
        "fabula.graph.state.HypothesesPreview": "fabula.HypothesesPreview",
        "fabula.graph.state.PartRequest": "fabula.PartRequest",
        "fabula.agents.character.played.PlayedView": "fabula.PlayedView",
        "fabula.graph.state.Preview": "fabula.Preview",
        "fabula.agents.contracts.Proposal": "fabula.Proposal",
        "fabula.memory.delta.TurnDelta": "fabula.TurnDelta",
        "fabula.agents.contracts.TurnPlan": "fabula.TurnPlan",
    },
)
"""The types a turn's checkpoints hold, each under the stable name its checkpoints store it
by (``fabula.TurnPlan``), for the saver's serialiser to build again: a class may move to
another module without a migration; one renamed or dropped needs one."""
