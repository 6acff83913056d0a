"""The atomic records of memory (pydantic v2).

Story time is the turn number: turn 0 is the world's setup, turn ``n`` the n-th accepted
passage. Intervals are half-open, ``[valid_from, valid_to)``, in story time; ``valid_to`` is
``None`` while a record is current. Write time (``committed_at``) is kept apart from story time.

Every record is grounded in the text: an event cites its exact source span, and a state or
belief cites the event that brought it about (and a span of its own only where it was read
from a narrower part of the text), so evidence is one lookup away without storing the same
quote many times.

Identifiers are assigned by the system (see :mod:`fabula.memory.delta`), never by a model:
entities are slugs of their names, everything else is numbered by turn and order.
"""

from __future__ import annotations

import re
import unicodedata
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

EntityKind = Literal["character", "place", "object", "group"]
TruthStatus = Literal["true", "false", "unknown"]
AcquisitionMode = Literal[
    "participated", "observed", "told_private", "told_public", "inferred", "common"
]
ACQUISITION_MODES: tuple[AcquisitionMode, ...] = (
    "participated",
    "observed",
    "told_private",
    "told_public",
    "inferred",
    "common",
)
Attitude = Literal["knows", "believes", "suspects"]
DevelopmentKind = Literal["goal", "conflict", "promise", "plan", "mystery", "relationship"]
DevelopmentStatus = Literal["opened", "advanced", "blocked", "resolved", "abandoned"]
HypothesisStatus = Literal["open", "realised", "discarded"]
HierarchyLevel = Literal["event", "scene", "plotline", "plot"]
# who wrote a node's summary: consolidation (extractive), the model, or consolidation's kept
# for good because the model gave no usable one (see fabula.memory.summarise)
SummaryBy = Literal["extractive", "model", "kept"]

_SLUG_RE = re.compile(r"[^a-z0-9]+")
CONTAINER = "container"  # Entity.attributes["role"] of an entity things are put in
EXTRA = "extra"
"""``Entity.attributes["role"]`` of a character the story met only as a doer ("a stray cat
knocked over the basket", "her colleague Ahmed emptied it"): it perceives and holds
beliefs like any character, and is named in recall and in the minds, but it is not of the
cast — no planner gives it a turn."""
FORCE = "force"
"""``Entity.attributes["nature"]`` of a force that changed something ("the wind", "a
flood"): an object with no mind, the actor of its changes, perceiving nothing."""
SECRET = "secret"
"""The attribute of a character's (first) secret: a pack's secret is the fact
``(character, "secret", <the proposition as written>)``, true in W and held, at the start,
by its character alone; told, overheard and lied about as any other fact."""
_SECRET_RE = re.compile(r"secret(?: [2-9]| [1-9][0-9])?")


def secret_attribute(index: int) -> str:
    """The attribute of a character's ``index``-th secret (0-based): ``secret``,
    ``secret 2``, ``secret 3``, ..."""
    return SECRET if index == 0 else f"{SECRET} {index + 1}"


def is_secret(attribute: str) -> bool:
    """Whether ``attribute`` is the attribute of a character's secret."""
    return _SECRET_RE.fullmatch(attribute) is not None


def secret_text(text: str) -> str:
    """A secret's proposition as it is kept: single spaces, no closing punctuation."""
    return " ".join(text.split()).rstrip(".!?,;: ")


# Cyrillic and Greek letters in ASCII (the common romanisations, simplified), so that a
# name in those alphabets keeps its letters in its id; accented forms (ё, й, ά) are
# decomposed before (е, и, α)
_ROMAN_PAIRS = (
    "а=a б=b в=v г=g д=d е=e ж=zh з=z и=i к=k л=l м=m н=n о=o п=p р=r с=s т=t у=u "
    "ф=f х=kh ц=ts ч=ch ш=sh щ=shch ъ= ы=y ь= э=e ю=yu я=ya є=ye і=i ґ=g ў=u "
    "α=a β=b γ=g δ=d ε=e ζ=z η=e θ=th ι=i κ=k λ=l μ=m ν=n ξ=x ο=o π=p ρ=r σ=s "
    "ς=s τ=t υ=y φ=f χ=ch ψ=ps ω=o"
)
_ROMAN = str.maketrans(dict(pair.split("=") for pair in _ROMAN_PAIRS.split()))


def _ascii_letters(text: str) -> str:
    """``text`` (lower case) in ASCII letters: accents dropped (``ë`` → ``e``, ``ß`` →
    ``ss``), Cyrillic and Greek romanised, any other letter or digit as its code point
    (``王`` → ``u738b``); everything else is left as it is (a separator, to a slug)."""
    folded = unicodedata.normalize("NFKD", text.casefold())
    plain = "".join(c for c in folded if not unicodedata.combining(c)).translate(_ROMAN)
    return "".join(c if c.isascii() or not c.isalnum() else f"u{ord(c):x}" for c in plain)


def slug(name: str) -> str:
    """The system identifier for a name: lower case, ``[a-z0-9_]`` only. A letter outside
    ASCII is written in ASCII, never dropped (see :func:`_ascii_letters`); an ASCII name's
    slug is its words, lower case, joined by ``_``.

    >>> slug("The Brass Key")
    'the_brass_key'
    >>> slug("Zoë Аnna")
    'zoe_anna'
    """
    text = name.strip().lower()
    if not text.isascii():
        text = _ascii_letters(text)
    out = _SLUG_RE.sub("_", text).strip("_")
    if not out:
        raise ValueError(f"cannot make an identifier from {name!r}")
    return out


def event_id(turn: int, seq: int) -> str:
    """The id of the ``seq``-th event of ``turn``: ``e<turn>.<seq>``."""
    return f"e{turn}.{seq}"


def event_position(event: str | None) -> tuple[int, int]:
    """Where an event id falls in story time: ``"e12.3"`` → ``(12, 3)``.

    Story time inside a turn is the event order, so positions compare as story moments.
    None (no event) is earlier than every event. Raises ValueError for a malformed id.
    """
    if not event:
        return (-1, -1)
    turn, dot, seq = event[1:].partition(".")
    if event[0] != "e" or not dot:
        raise ValueError(f"{event!r} is not an event id (e<turn>.<seq>)")
    return (int(turn), int(seq))


def event_turn(event: str) -> int:
    """The turn an event id belongs to: ``"e12.3"`` → 12."""
    return event_position(event)[0]


class Record(BaseModel):
    """Base of every stored record: immutable fields, unknown fields refused."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class SourceSpan(Record):
    """The exact text a record was read from: ``text[start:end] == quote`` in ``turn``."""

    turn: int = Field(ge=0)
    start: int = Field(ge=0)
    end: int = Field(ge=0)
    quote: str


class Entity(Record):
    """A character, place, object or group. ``id`` is ``slug(name)``."""

    id: str
    kind: EntityKind
    name: str
    description: str = ""
    attributes: dict[str, str] = Field(default_factory=dict)
    members: tuple[str, ...] = ()  # for groups: member entity ids
    introduced: int = Field(default=0, ge=0)  # the turn it entered the story

    @property
    def is_container(self) -> bool:
        """Whether things are put in it (``attributes["role"] == CONTAINER``)."""
        return self.attributes.get("role") == CONTAINER

    @property
    def is_extra(self) -> bool:
        """Whether it is a character met only as a doer, not of the cast (:data:`EXTRA`)."""
        return self.kind == "character" and self.attributes.get("role") == EXTRA

    @property
    def is_force(self) -> bool:
        """Whether it is a force that changes things, with no mind (:data:`FORCE`)."""
        return self.attributes.get("nature") == FORCE


class Fact(Record):
    """A proposition: ``subject``'s ``attribute`` is ``value`` (or is not, with polarity False).

    ``attribute`` is a property ("colour") or a predicate ("location", "likes").
    ``truth`` is the proposition's status in the world as far as the system knows.
    """

    subject: str
    attribute: str
    value: str
    polarity: bool = True
    truth: TruthStatus = "unknown"

    @property
    def slot(self) -> str:
        """``subject|attribute``: the key of what this is about."""
        return f"{self.subject}|{self.attribute}"


class Event(Record):
    """Something that happened at one moment of a turn.

    ``kind`` is a verb of the controlled vocabulary (enter, exit, move, put, take, give, drop,
    tell, claim, say, observe, state, search, narration, setup, ...); ``content`` holds the
    proposition of a telling, claim, utterance or observation; ``witnesses`` are the
    characters who perceived it (derived by access tracking).
    """

    id: str
    turn: int = Field(ge=0)
    seq: int = Field(ge=0)
    kind: str
    actor: str | None = None
    participants: tuple[str, ...] = ()
    place: str | None = None
    content: Fact | None = None
    effects: tuple[str, ...] = ()  # ids of State records this event brought about
    causes: tuple[str, ...] = ()  # ids of earlier events
    witnesses: tuple[str, ...] = ()
    private_to: tuple[str, ...] = ()  # for a private telling: the listeners
    developments: tuple[str, ...] = ()  # developments this event moves
    span: SourceSpan


class Memory(Record):
    """A character's first-person memory of an event it witnessed: when, what, the words."""

    turn: int = Field(ge=0)
    event: str
    kind: str
    quote: str


class State(Record):
    """A world fact valid over ``[valid_from, valid_to)``; a change closes it and opens another."""

    id: str
    subject: str
    attribute: str
    value: str
    polarity: bool = True
    valid_from: int = Field(ge=0)
    valid_to: int | None = None
    event: str | None = None
    span: SourceSpan | None = None

    @property
    def slot(self) -> str:
        """``subject|attribute``: the key of what this is about."""
        return f"{self.subject}|{self.attribute}"


class Belief(Record):
    """What ``holder`` (a chain: ``("leo",)`` or ``("ava", "ben")`` = Ava thinks Ben thinks)
    holds about a slot, and how it came to: the access link.

    ``mode`` is how it was acquired, ``event`` the acquiring event, ``speaker`` who told it.
    """

    id: str
    holder: tuple[str, ...] = Field(min_length=1)
    subject: str
    attribute: str
    value: str
    polarity: bool = True
    attitude: Attitude = "believes"
    mode: AcquisitionMode
    event: str
    speaker: str | None = None
    valid_from: int = Field(ge=0)
    valid_to: int | None = None
    span: SourceSpan | None = None

    @property
    def slot(self) -> str:
        """``subject|attribute``: the key of what this is about."""
        return f"{self.subject}|{self.attribute}"

    @property
    def chain(self) -> str:
        """The holder chain as stored: ``a>b``."""
        return ">".join(self.holder)


class SharedBelief(Record):
    """What the members of ``group`` came to hold together about a slot, and how: one record
    for every nested chain over the group (see :mod:`fabula.memory.tracking.nested`).

    A chain ``(a, b, …)`` of at most ``depth`` holders, all in ``group``, takes it (as a
    :class:`Belief` of that chain) unless it already holds that value; ``retract`` (a
    search that shows the thing is not there) applies only to a chain that held the value
    or nothing. ``mode`` is how the members came to hold it, except ``actor``'s chains,
    which hold it as ``participated``.
    """

    id: str
    group: tuple[str, ...] = Field(min_length=2)
    subject: str
    attribute: str
    value: str
    polarity: bool = True
    mode: AcquisitionMode
    actor: str | None = None
    event: str
    speaker: str | None = None
    retract: bool = False
    depth: int = Field(ge=2)
    valid_from: int = Field(ge=0)

    @property
    def slot(self) -> str:
        """``subject|attribute``: the key of what this is about."""
        return f"{self.subject}|{self.attribute}"


class StatusChange(Record):
    """One step of a development's status history."""

    turn: int = Field(ge=0)
    status: DevelopmentStatus
    event: str | None = None
    note: str = ""
    span: SourceSpan | None = None


class Development(Record):
    """A goal, conflict, promise, plan, mystery or relationship, with its status history."""

    id: str
    kind: DevelopmentKind
    title: str
    participants: tuple[str, ...] = ()
    description: str = ""
    history: tuple[StatusChange, ...] = Field(min_length=1)

    @property
    def status(self) -> DevelopmentStatus:
        """The latest status."""
        return self.history[-1].status

    @property
    def opened(self) -> int:
        """The turn it was opened in."""
        return self.history[0].turn

    def as_of(self, turn: int) -> Development | None:
        """This development as it stood at ``turn``, or None if not yet opened."""
        kept = tuple(h for h in self.history if h.turn <= turn)
        if not kept:
            return None
        return self.model_copy(update={"history": kept})


class Hypothesis(Record):
    """A possible continuation of an open development; never written back as a fact."""

    id: str
    development: str
    premise: str
    possible_events: tuple[str, ...] = ()
    constraints: tuple[str, ...] = ()
    uncertainty: float = Field(default=0.5, ge=0.0, le=1.0)
    status: HypothesisStatus = "open"
    proposed: int = Field(ge=0)
    realised_turn: int | None = None
    realises: tuple[Fact, ...] = ()  # what accepted text must make true to realise it

    def as_of(self, turn: int) -> Hypothesis | None:
        """This hypothesis as it stood at ``turn``, or None if not yet proposed."""
        if self.proposed > turn:
            return None
        if self.realised_turn is not None and self.realised_turn > turn:
            return self.model_copy(update={"status": "open", "realised_turn": None})
        return self


class Closure(Record):
    """The atomic evidence a hierarchy node was built from."""

    events: tuple[str, ...] = ()
    records: tuple[str, ...] = ()
    spans: tuple[SourceSpan, ...] = ()


class HierarchyNode(Record):
    """An event, scene, plotline or plot, with its atomic closure."""

    id: str
    level: HierarchyLevel
    title: str
    summary: str = ""
    summary_by: SummaryBy = "extractive"
    children: tuple[str, ...] = ()
    first_turn: int = Field(ge=0)
    last_turn: int = Field(ge=0)
    closure: Closure = Field(default_factory=Closure)
