"""The shapes the service answers with: one set of models for the CLI's ``--json`` and the API.

Every read or decision the command line prints with ``--json`` and the web studio serves
under ``/api/`` is one of these models, so the two cannot drift apart; FastAPI publishes
them in the OpenAPI schema. Records of memory (developments, hypotheses, findings, plans)
appear as they are; states and beliefs drop their source span (one lookup away through
:class:`EvidenceOut`).
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

from fabula.agents.contracts import Finding, TurnPlan
from fabula.graph.service.summaries import PendingSummary, StorySummary
from fabula.memory.records import (
    AcquisitionMode,
    Attitude,
    Belief,
    Development,
    Event,
    HierarchyNode,
    Hypothesis,
    State,
)

__all__ = [
    "BeliefOut",
    "BeliefsOut",
    "BranchOut",
    "CardField",
    "CellStatus",
    "Change",
    "ChangeKind",
    "ChangesOut",
    "CharacterOut",
    "CharacterPageOut",
    "ChatOut",
    "ChatRecord",
    "DecisionOut",
    "DraftOut",
    "DraftsOut",
    "EvidenceOut",
    "ExportOut",
    "FactOut",
    "GridCell",
    "GridRow",
    "LivedBelief",
    "LivedOut",
    "LivedTurn",
    "LoreBookOut",
    "LoreEntryOut",
    "LoreFired",
    "LoreOut",
    "MindOut",
    "MindsOut",
    "Outcome",
    "PendingListed",
    "PendingSummary",
    "PendingTurn",
    "PlotOut",
    "RecallLine",
    "RecallLore",
    "RecallOut",
    "RecallPlan",
    "RecallVoice",
    "RetconOut",
    "RewindOut",
    "RunOut",
    "SentenceOut",
    "StorySummary",
    "StoryText",
    "TurnOut",
    "TurnUsage",
    "UsageOut",
    "UsageTotal",
    "WorldInfo",
    "WorldOut",
]

Outcome = Literal["committed", "duplicate", "pending", "part", "abandoned"]
"""How a turn's run ended; ``part``: it waits for a played character's part."""


class _Out(BaseModel):
    model_config = ConfigDict(frozen=True)


class TurnOut(_Out):
    """One accepted passage."""

    turn: int
    text: str


class StoryText(_Out):
    """The text of a branch, turn by turn (turns 1..as_of, or all)."""

    story: str
    branch: str
    title: str
    head: int
    turns: list[TurnOut]


class WorldInfo(_Out):
    """A world pack one can start a story from."""

    id: str
    title: str
    premise: str


class FactOut(_Out):
    """A world state (W) with its validity in story time."""

    id: str
    subject: str
    attribute: str
    value: str
    polarity: bool = True
    valid_from: int
    valid_to: int | None = None
    event: str | None = None

    @classmethod
    def of(cls, state: State) -> FactOut:
        return cls.model_validate(state.model_dump(exclude={"span"}))


class WorldOut(_Out):
    """W on a branch, now (``as_of`` null) or as of a turn."""

    story: str
    branch: str
    as_of: int | None
    facts: list[FactOut]


class BeliefOut(_Out):
    """One belief of a holder chain, with how it was acquired."""

    id: str
    holder: list[str]
    subject: str
    attribute: str
    value: str
    polarity: bool = True
    attitude: Attitude = "believes"
    mode: AcquisitionMode
    event: str
    speaker: str | None = None
    valid_from: int
    valid_to: int | None = None

    @classmethod
    def of(cls, belief: Belief) -> BeliefOut:
        # a Belief is validated already: its fields are copied, not checked again (a minds
        # page holds thousands)
        fields = belief.model_dump(exclude={"span"})
        fields["holder"] = list(belief.holder)
        return cls.model_construct(**fields)


class BeliefsOut(_Out):
    """B[holder] on a branch; ``holder`` is a chain (``["mara", "leo"]``: Mara thinks Leo...)."""

    story: str
    branch: str
    holder: list[str]
    as_of: int | None
    beliefs: list[BeliefOut]


class BranchOut(_Out):
    """A branch: where it forked from (main has no parent), how far it is, what it pursues."""

    story: str
    branch: str
    parent: str | None = None
    fork_turn: int | None = None
    pursue: str | None = None
    head: int


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


CellStatus = Literal["true", "false", "unknown", "negative"]


class GridCell(_Out):
    """What one character holds about one fact, compared with the world.

    ``true``: believes the world's value; ``false``: believes something the world contradicts;
    ``negative``: knows only what the value is not (and is right); ``unknown``: holds nothing.
    """

    character: str
    status: CellStatus
    value: str | None = None
    polarity: bool = True
    mode: AcquisitionMode | None = None
    speaker: str | None = None
    event: str | None = None
    belief: str | None = None


class GridRow(_Out):
    """One fact of the world (a slot) with every character's cell."""

    subject: str
    attribute: str
    world: str | None
    cells: list[GridCell]


class MindOut(_Out):
    """One character's mind: its beliefs and the nested chains rooted at it."""

    character: str
    name: str
    beliefs: list[BeliefOut]
    nested: list[BeliefsOut]


class MindsOut(_Out):
    """W, every B[c] (nested too), D and H as of one turn, and who knows what."""

    story: str
    branch: str
    as_of: int
    head: int
    text: str | None  # the passage of turn ``as_of``
    names: dict[str, str]
    world: WorldOut
    minds: list[MindOut]
    grid: list[GridRow]
    developments: list[Development]
    hypotheses: list[Hypothesis]


class EvidenceOut(_Out):
    """How something was learned: the event, and the passage with the exact span marked."""

    story: str
    branch: str
    event: Event
    text: str
    start: int
    end: int
    belief: BeliefOut | None = None


class PlotOut(_Out):
    """A branch's hierarchy as it is now: the plot, its plotlines and the scenes, in story
    order (each node with its summary, who wrote it and its member ids)."""

    story: str
    branch: str
    head: int
    plot: HierarchyNode | None
    plotlines: list[HierarchyNode]
    scenes: list[HierarchyNode]


class RecallLine(_Out):
    """Where one line of a recalled context came from (a heading has no entry): ``kind`` and
    ``id`` of the record (a state, belief, development, hypothesis, episode, ``turn`` for a
    date heading, or a scene or plotline), an episode's ``span`` (turn, start, end) in its
    turn's text, a summary's ``members``."""

    line: int
    section: str
    kind: str
    id: str
    span: tuple[int, int, int] | None = None
    members: list[str] = []


class RecallPlan(_Out):
    """What a request was read as: the entities and characters it involves (``implied``: the
    ones the caller's focus added, unnamed), its topic terms (stemmed), the attributes and
    developments it bears on, and the dates it is about (ISO, inclusive) or the end of the
    story it favours."""

    entities: list[str]
    implied: list[str]
    characters: list[str]
    terms: list[str]
    attributes: list[str]
    developments: list[str]
    first_date: str | None
    last_date: str | None
    order: Literal["earliest", "latest"] | None
    asks_when: bool

    def describe(self) -> str:
        """The plan in one line: "entities leo, brass_key · terms key · dates 2023-05-06"."""
        parts = []
        for label, items in (
            ("entities", self.entities),
            ("terms", self.terms),
            ("attributes", self.attributes),
            ("developments", self.developments),
        ):
            if items:
                parts.append(f"{label} {', '.join(items)}")
        if self.first_date or self.last_date:
            first, last = self.first_date or "the start", self.last_date or "now"
            parts.append(f"dates {first}" + ("" if first == last else f" to {last}"))
        if self.order:
            parts.append(f"favours the {self.order}")
        return " · ".join(parts) or "nothing to look up: the most recent episodes"


class RecallLore(_Out):
    """A lore entry the request (and the recent text) activated: its book and name, how it
    fired (a key, constant, recursion at ``step``, a decorator) and which key, its text."""

    book: str
    name: str
    fired: str
    key: str | None = None
    step: int = 0
    tokens: int
    text: str


class LoreEntryOut(_Out):
    """One lore entry of a story's pack: its book's index and its own, its name, keys and
    flags, who knows it (``author``: the author sees it, the writer and planner; ``known_to``
    the characters whose own lore holds it, by name), and its text."""

    index: int
    name: str
    keys: list[str]
    secondary_keys: list[str]
    constant: bool
    enabled: bool
    use_regex: bool
    author: bool
    known_to: list[str]
    text: str


class LoreBookOut(_Out):
    """A lorebook of the story's pack: its name, its owner (a character's name; None: the
    world's, the author's), its source format and its entries."""

    name: str
    owner: str | None
    format: str
    entries: list[LoreEntryOut]


class LoreFired(_Out):
    """An entry a turn's text activated for one holder (``holder`` None: the author, the
    world's books; else a character's name, its own lore): its book, name, how it fired
    and which key, its size in tokens and the lore budget it was weighed against
    (``fits`` False: it activated but did not fit, so no context holds it)."""

    holder: str | None
    book: str
    name: str
    fired: str
    key: str | None = None
    text: str
    tokens: int = 0
    budget: int = 0
    fits: bool = True


class LoreOut(_Out):
    """A story's lore by book, with who knows each entry; with ``turn``, what that turn's
    text activated for the author and for each character (its own lore only): those within
    the lore budget (``activated``) and those that did not fit (``left_out``)."""

    story: str
    branch: str
    head: int
    books: list[LoreBookOut]
    turn: int | None = None
    activated: list[LoreFired] = []
    left_out: list[LoreFired] = []  # activated, but over the lore budget (``fits`` False)
    lore_budget: int = 0  # the lore's own budget, in tokens, each holder's activation had


class CardField(_Out):
    """A field of a character's source card that the pack has no place for, kept verbatim
    (``value`` its JSON, cut at 2,000 characters for display)."""

    field: str
    value: str


class CharacterPageOut(_Out):
    """A character as the author sees its card: its pack fields (name, aliases,
    description, voice, goals, example dialogues), what its source card kept (the spec and
    every other field), and its voice as its own keyspace holds it."""

    story: str
    character: str
    name: str
    aliases: list[str]
    description: str
    voice: str
    goals: list[str]
    examples: list[str]
    spec: str | None
    card: list[CardField]
    exemplars: list[str]
    books: list[str]


class RecallVoice(_Out):
    """An exemplar of a character's voice near the request: its text, where it came from
    (``example``: its card's dialogues or role lines; ``said``: the story), its tokens."""

    text: str
    source: str
    tokens: int


class RecallOut(_Out):
    """What memory gives a request within a token budget: the context the writer (``holder``
    None: the author's view, everything on the branch) or a character (its own beliefs and
    the episodes it witnessed, read as its own Redis user) would be given, with the record
    behind every line; and the lore the request activated within the lore's own budget
    (beside the memory's), with the entries that did not fit."""

    story: str
    branch: str
    request: str
    holder: str | None
    as_of: int | None
    budget: int
    tokens: int
    text: str
    lines: list[RecallLine]
    plan: RecallPlan | None
    lore: list[RecallLore] = []  # the lore the request activated (the holder's own only)
    voice: list[RecallVoice] = []  # with a holder: the exemplars of its voice nearest it
    # the lore's own budget, beside the memory's ``budget``, and what it could not hold:
    # entries the request activated that did not fit (each with its size in ``tokens``)
    lore_budget: int = 0
    lore_left_out: list[RecallLore] = []


class CharacterOut(_Out):
    """A character of the story: its id and its name."""

    id: str
    name: str


class ExportOut(_Out):
    """A branch's text with its premise and characters, and its world, every character's
    beliefs, developments and hypotheses now (or as of turn ``as_of``)."""

    story: str
    branch: str
    title: str
    premise: str | None = None
    characters: list[CharacterOut] = []
    as_of: int | None = None
    turns: list[TurnOut]
    world: WorldOut
    beliefs: dict[str, BeliefsOut] = {}  # by character id: B[c]
    developments: list[Development]
    hypotheses: list[Hypothesis]


class LivedTurn(_Out):
    """One turn as a character lived it: the passages of what it witnessed, in order."""

    turn: int
    lines: list[str]


class LivedBelief(_Out):
    """One belief of a character, with the sentence of names it reads as."""

    id: str
    subject: str
    attribute: str
    value: str
    polarity: bool = True
    sentence: str


class LivedOut(_Out):
    """The story as one character lived it (``export --as C``): the turns it witnessed, in
    the words it saw or heard, and what it believes (as of a turn, or now)."""

    story: str
    branch: str
    character: str
    name: str
    title: str
    as_of: int | None = None
    turns: list[LivedTurn]
    beliefs: list[LivedBelief]


class UsageTotal(_Out):
    """Model usage summed: by role (calls, tokens, retries, model), tokens, cost."""

    roles: dict[str, dict[str, int | str]]
    input_tokens: int
    output_tokens: int
    cost_usd: float | None  # None when the price table lacks a model used


class TurnUsage(UsageTotal):
    """The model usage of one committed turn."""

    turn: int


class UsageOut(_Out):
    """The model usage of each committed turn of a branch, of its work outside the turns
    (``background``: the model-written summaries), and in all."""

    story: str
    branch: str
    turns: list[TurnUsage]
    background: UsageTotal
    total: UsageTotal


class ChatRecord(_Out):
    """One record a chat answer rests on, as the character holds it: one of its beliefs
    (``kind`` ``belief``), an episode it witnessed (``episode``) or an entry of its own lore
    (``lore``, ``id`` its book and name), with its line of text."""

    kind: str
    id: str
    text: str


class ChatOut(_Out):
    """A character's answer to a question, from only its own mind (its beliefs and the
    episodes it witnessed, read as its own Redis user). ``answered_by`` says how: the
    ``question-answerer`` (a question of its forms, read from the character's beliefs),
    ``recall`` (any other question: what the character recalls of it), or ``model`` (a
    model in the character's voice, given only those). Nothing of a chat is written."""

    story: str
    branch: str
    character: str
    name: str
    as_of: int | None
    question: str
    answer: str
    answered_by: Literal["question-answerer", "recall", "model"]
    records: list[ChatRecord]
