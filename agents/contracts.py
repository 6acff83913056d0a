"""The typed inputs and outputs of every role (pydantic), shared by both back ends.

The offline engine and a chat model fill the same types, so the graph never knows which
one ran. Model output is validated into these types; anything else is refused.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from fabula.agents.views import AuthorView

# the summariser's contract is memory's own (consolidation calls it, and memory never
# imports the roles); re-exported here with the others
from fabula.memory.summarise import NodeSummary as NodeSummary
from fabula.memory.summarise import SummaryRequest as SummaryRequest


class _Contract(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


# what a character may mean to do (not to be confused with the story actions read from
# accepted text, fabula.memory.actions.ActionKind)
IntentKind = Literal["go", "search", "take", "put", "give", "ask", "tell", "say", "wait"]


# what a field of an intent holds: the id of an entity of that kind the character knows
# of, an attribute name, a claim (an entity's id for a location, else a value in words), or
# words (a line of speech, a thought)
IntentTakes = Literal["place", "object", "character", "attribute", "claim", "words"]


@dataclass(frozen=True)
class IntentField:
    """One field an intent of some kind uses: its :class:`Action` field, what it takes, and
    whether the kind needs it (a field it may leave out is null on the wire)."""

    name: str
    takes: tuple[IntentTakes, ...]
    required: bool = True


_ANYTHING: tuple[IntentTakes, ...] = ("object", "place", "character")
# The one table of which fields each kind of intent uses (every kind also has a ``reason``).
# The character's structured-output schema is built from it (an action is a union by kind,
# each with only these fields), and so is the check of its reply; a new kind is added here.
INTENT_FIELDS: dict[IntentKind, tuple[IntentField, ...]] = {
    "go": (IntentField("target", ("place",)),),
    "search": (IntentField("target", ("object", "place")),),
    # where it believes the object is (left out: wherever it is)
    "take": (IntentField("object", ("object",)), IntentField("target", _ANYTHING, False)),
    "put": (IntentField("object", ("object",)), IntentField("target", ("object", "place"))),
    "give": (IntentField("object", ("object",)), IntentField("listener", ("character",))),
    "ask": (IntentField("listener", ("character",)), IntentField("about", ("object",))),
    "tell": (
        IntentField("listener", ("character",)),
        IntentField("about", _ANYTHING),
        IntentField("attribute", ("attribute",)),
        IntentField("claim", ("claim",)),
    ),
    "say": (IntentField("line", ("words",)), IntentField("listener", ("character",), False)),
    # what it thinks about, if anything
    "wait": (IntentField("object", ("object",), False), IntentField("line", ("words",), False)),
}
MAX_ACTIONS = 3  # the most actions one proposal holds (the prompt asks for 1 to 3)
LINE_CHARS = 160  # a line, a reason, an intent, a goal or a beat: a sentence, not a page


class Action(_Contract):
    """One thing a character means to do this turn.

    ``object`` is an object's id, ``target`` a place or container id, ``listener`` a
    character id; ``about`` with ``claim`` carry what is asked or told (``claim`` is the
    value the speaker states, e.g. where the object is); ``line`` is free speech.
    """

    kind: IntentKind
    object: str | None = None
    target: str | None = None
    listener: str | None = None
    about: str | None = None
    attribute: str = "location"
    claim: str | None = None
    line: str | None = None
    reason: str = ""
    # what it does as it says ``line``, one sentence of the story ("Seraphina smiled
    # softly."): an imported card's example reply, its *action* kept as an action
    gesture: str | None = None


class Proposal(_Contract):
    """What one focal character proposes to say and do, from its own beliefs only."""

    character: str
    actions: tuple[Action, ...] = ()
    intent: str = ""
    # a played character's part: the person's own words (an action in controlled English,
    # or a line it says), which the writer writes in; None for a character agent's proposal
    words: str | None = None


MAX_FOCAL = 3  # the most focal characters a plan may have
MAX_BEATS = 4  # the most beats (and memory needs) a plan lists


class TurnPlan(_Contract):
    """The planner's plan for one turn: a scene goal, a place, the focal characters (the
    planner picks at most :data:`MAX_FOCAL`), beats, what memory the writer will need."""

    scene_goal: str
    place: str | None = None
    focal: tuple[str, ...] = Field(min_length=1)
    beats: tuple[str, ...] = ()
    memory_needs: tuple[str, ...] = ()
    developments: tuple[str, ...] = ()
    hypothesis: str | None = None  # the hypothesis this turn pursues, if any


class CharacterBrief(_Contract):
    """What a character agent is given besides its own mind: who it is, what it wants.

    Only the character's own: never the planner's scene goal, beats or place (the planner
    sees everything; a character must act on its beliefs). Where it is and who is with it
    come from its own mind, when its prompt is rendered.
    """

    character: str
    name: str
    goals: tuple[str, ...] = ()
    secrets: tuple[str, ...] = ()
    voice: str = ""
    # which of the goals it can act on to take a step toward (0: the first): a re-plan or
    # another draft of the turn (`fabula run --alternatives`) tries another
    variant: int = Field(0, ge=0)


class Draft(_Contract):
    """The writer's passage for one turn; ``left_out``: the characters whose proposed
    action the writer left out on purpose (a line for someone not there, a move held while
    a question put to them is heard out), who are not said to "do nothing"."""

    text: str = Field(min_length=1)
    revision: int = 0
    left_out: tuple[str, ...] = ()


FindingKind = Literal[
    "contradiction", "knowledge", "future", "referent", "plan", "unparsed", "reading", "markup"
]


class Finding(_Contract):
    """One problem the critic found in a draft, with the sentence it is about."""

    kind: FindingKind
    message: str
    quote: str = ""
    severity: Literal["error", "warning"] = "error"


class WriteRequest(_Contract):
    """Everything the writer is given for one draft: the plan, the characters' proposals,
    the memory context, the approver's notes and, on a revision, the critic's findings."""

    plan: TurnPlan
    proposals: tuple[Proposal, ...]
    context: str = ""
    notes: tuple[str, ...] = ()
    findings: tuple[Finding, ...] = ()
    revision: int = 0


@dataclass(frozen=True)
class PlanRequest:
    """What the planner is given to plan one turn: the author's ``view``, the user's
    ``direction`` (None: none), which ``attempt`` at the turn this is (0 the first; a re-plan
    after a rejection 1, 2, …) and the ``notes`` of the plans rejected before it; ``said``
    the branch's turns' text up to the view's turn, oldest first, for the lore's chat scan
    (None: the view's recent turns only)."""

    view: AuthorView
    direction: str | None = None
    attempt: int = 0
    notes: tuple[str, ...] = ()
    said: tuple[str, ...] | None = None


CHAT_MEMORY = 6
"""The exchanges of a conversation with a character that its next answer reads (the
latest ones): enough for a follow-up to find what it refers to, bounded whatever the
conversation's length."""
CHAT_EXCHANGE_CHARS = 4000
"""The most characters of one question or answer of a conversation that are read."""


class ChatExchange(_Contract):
    """One exchange of a person's conversation with a character: the person's question
    and the character's answer. A conversation is the person's with that one character,
    outside the story: never a belief, never read by another character."""

    question: str = Field(max_length=CHAT_EXCHANGE_CHARS)
    answer: str = Field(max_length=CHAT_EXCHANGE_CHARS)


class ChatRequest(_Contract):
    """Everything a character's voice is given to answer one question, all of it the
    character's own: its brief, what its own mind recalls for the question (``known``),
    the question-answerer's answer from its beliefs (``plain``; None: the question is not
    one of its forms), the entries of its own lore the question activates (``lore``) and
    exemplars of its voice nearest it (``voice``), and the conversation so far
    (``conversation``: this person's with this character only, oldest first, at most
    :data:`CHAT_MEMORY` exchanges); ``question`` is the question as asked, ``reading`` the
    question it stands for when it refers back ("Where is it?" → "Where is the brass
    key?"), else None."""

    brief: CharacterBrief
    question: str
    reading: str | None = None
    conversation: tuple[ChatExchange, ...] = Field(default=(), max_length=CHAT_MEMORY)
    known: str = ""
    plain: str | None = None
    lore: tuple[str, ...] = ()
    voice: tuple[str, ...] = ()


class Decision(_Contract):
    """The approver's answer: approve, edit (with new text) or reject (with a note).

    An edit is read and shown for approval again, unless ``now``: then it is committed as
    soon as it is read, if the critic finds no error in it. ``force`` commits an edit at
    once whatever the critic finds (the human takes responsibility).
    """

    action: Literal["approve", "edit", "reject"]
    text: str | None = None
    note: str = ""
    now: bool = False
    force: bool = False
    # approve: which of the turn's alternative drafts (its id, ``<turn>.d<k>``, see
    # fabula.memory.drafts) to commit, exactly as it was shown; None: the pending draft
    choice: str | None = None
