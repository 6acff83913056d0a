"""The service's answers to a request of memory: a recalled context with the record behind
every line and the lore it activated, and a character's chat answer with the records it
rests on."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict


class _Out(BaseModel):
    model_config = ConfigDict(frozen=True)


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


class RecallPlanOut(_Out):
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


class RecallVoice(_Out):
    """An exemplar of a character's voice near the request: its text, where it came from
    (``example``: its card's dialogues or role lines; ``said``: the story), its tokens."""

    text: str
    source: str
    tokens: int


class RecallBelief(_Out):
    """One of a character's beliefs, as its prompt lists it: the ``attribute`` of
    ``subject`` is (``polarity`` False: is not) ``value``, come by as ``mode`` (told by
    ``speaker``) at ``turn``."""

    subject: str
    attribute: str
    value: str
    polarity: bool
    mode: str
    speaker: str | None = None
    turn: int


class RecallMemory(_Out):
    """One of a character's first-person memories, as its prompt lists it: the ``turn``,
    the ``event`` and the words (``quote``)."""

    turn: int
    event: str
    quote: str


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
    plan: RecallPlanOut | None
    lore: list[RecallLore] = []  # the lore the request activated (the holder's own only)
    voice: list[RecallVoice] = []  # with a holder: the exemplars of its voice nearest it
    # the lore's own budget, beside the memory's ``budget``, and what it could not hold:
    # entries the request activated that did not fit (each with its size in ``tokens``)
    lore_budget: int = 0
    lore_left_out: list[RecallLore] = []
    # with a holder: what its prompt lists beside its recalled context — all its beliefs
    # (by subject and attribute) and its last memories, as of the same turn
    beliefs: list[RecallBelief] = []
    memories: list[RecallMemory] = []


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
    reading: str | None = None
    """The question as it was read, when it referred back to the conversation ("And where
    is it now?" → "Where is the brass key?"); None when it was read as asked."""
    answer: str
    answered_by: Literal["question-answerer", "recall", "model"]
    records: list[ChatRecord]
