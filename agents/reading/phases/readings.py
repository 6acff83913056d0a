"""The records the phases pass on: a :class:`Frame` per clause, with the
:class:`StateReading` s it says are so (:mod:`.frames` makes them, :mod:`.events` turns
them into story actions)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from fabula.agents.reading.phases.mentions import Mention

FrameKind = Literal["perceive", "believe", "goal", "occupied", "event", "feel", "tell"]


@dataclass(frozen=True)
class StateReading:
    """``subject``'s ``attribute`` is ``value`` (see :mod:`.values`); ``act``: the clause's
    doer did it to the subject ("knocked over the jar"), not a state said or undergone."""

    subject: Mention
    attribute: str
    value: str
    negated: bool = False
    act: bool = False


@dataclass(frozen=True)
class Feeling:
    """A feeling of ``holders`` about ``thing``; ``word`` is its verb ("loves", "dislikes")."""

    holders: tuple[Mention, ...]
    thing: Mention
    word: str


@dataclass
class Frame:
    kind: FrameKind
    sentence: int  # its sentence's index in the turn
    start: int
    end: int
    holder: Mention | None = None  # the character perceiving, believing, intending
    doer: Mention | None = None
    negated: bool = False
    subordinate: bool = False
    states: list[StateReading] = field(default_factory=list)
    roots: frozenset[str] = frozenset()
    doubt: str | None = None  # a pronoun of its clause that may name another character
    retold: Frame | None = None  # the event an act this perception tells repeats
    # how a thing seems to someone ("the jar looks empty", seen by the character the
    # sentence before was about, or "to Bo"): what it says is seen, but it names no event
    inferred: bool = False
    # a modal before its verb, or a condition ("would love it", "could break it", "if it
    # breaks"): no feeling, no event is stated
    modal: bool = False
    felt: Feeling | None = None  # a character's liking or disliking of a thing
    listeners: tuple[Mention, ...] = ()  # whom a telling is told to
    private: bool = False  # a telling only its listeners hear ("whispered to Bo")
