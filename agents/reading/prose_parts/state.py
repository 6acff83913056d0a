"""The prose reader's records: a token, a mention, a verb, and its state across sentences.

A sentence is read as tokens (:class:`_Tok`, each with its span in the text); the reader
finds mentions of the story's entities in them (:class:`_Mention`) and verbs
(:class:`_Verb`). What it learns holds across one text's sentences in :class:`_State`:
pronouns learnt, the characters named latest, where each is and who keeps company, where
each object is and who put it there, the actions read so far, and the perception marks
still to apply.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from fabula.memory.actions import StoryAction


@dataclass(slots=True)
class _Tok:
    text: str
    low: str
    start: int
    end: int
    possessive: bool = False


@dataclass
class _Mention:
    """An entity (or entities) named at tokens ``first..last``."""

    ids: tuple[str, ...]
    kind: str  # character, object, place
    first: int
    last: int
    pronoun: str | None = None
    unsure: str | None = None
    possessive: bool = False
    of_object: str | None = None  # "the bottle of peas": the contents named


@dataclass
class _Verb:
    at: int
    end: int  # the last token of the phrase
    classes: tuple[str, ...]
    lemma: str
    negated: bool
    irrealis: bool = False  # under a modal or a condition: what may happen, not what did


@dataclass
class _State:
    """What the reader holds across one text's sentences."""

    pronoun: dict[str, dict[str, int]] = field(default_factory=dict)
    subjects: list[tuple[str, ...]] = field(default_factory=list)
    # the characters named or meant so far, the latest last (each once: a pronoun's
    # candidates are a few characters, never the whole text's mentions)
    mentioned: dict[str, None] = field(default_factory=dict)
    last_object: str | None = None
    inside: dict[str, str] = field(default_factory=dict)  # container -> the object it holds
    holding: dict[str, str] = field(default_factory=dict)  # character -> what it took
    last_objects: tuple[str, ...] = ()
    where: dict[str, str | None] = field(default_factory=dict)
    company: set[str] = field(default_factory=set)
    located: set[str] = field(default_factory=set)
    at: dict[str, str] = field(default_factory=dict)  # object -> where the reader has it
    left: dict[str, set[str]] = field(default_factory=dict)  # object -> where acts took it from
    out: list[StoryAction] = field(default_factory=list)
    last_event: int | None = None  # index in ``out`` of the latest object event
    # the object events of the latest sentence that had any ("took the key and put it in
    # the box": one act told in two verbs), and that sentence's number
    last_events: list[int] = field(default_factory=list)
    sentence: int = 0
    events_sentence: int = -1
    pending: list[tuple[str, tuple[str, ...]]] = field(default_factory=list)
    last_box: str | None = None  # the container the latest sentence that named one named
    # the characters the previous sentence named, and its first subject (its main clause's)
    named_before: tuple[str, ...] = ()
    placed_by: dict[str, str | None] = field(default_factory=dict)  # object -> who put it
    named_now: tuple[str, ...] = ()  # the characters named so far in this sentence
    barred: set[str | None] = field(default_factory=set)  # pronouns this sentence used early
    clause_subject: tuple[str, ...] = ()  # the latest clause's first subject
    centre: tuple[str, ...] | None = None
    # who is in a state of not perceiving ("Bob was asleep"), until it acts or it ends
    blind: dict[str, None] = field(default_factory=dict)
    # who did not perceive the acts of each clause read (its span), by the cues the clause
    # and the states before it tell: what another reader's events of the clause inherit
    unseen_at: list[tuple[int, int, tuple[str, ...]]] = field(default_factory=list)
    # who the text says does something, at the offset of each verb (or controlled sentence)
    doers: list[tuple[int, tuple[str, ...]]] = field(default_factory=list)


def _tok(m: re.Match[str]) -> _Tok:
    """A word of a clause: its text, its lower case (a curly apostrophe made straight), its
    span, and whether it is a possessive ("Ann's")."""
    word = m.group()
    low = word.lower().replace("’", "'")
    return _Tok(word, low, m.start(), m.end(), low.endswith("'s"))


def _mention(state: _State, ids: Sequence[str]) -> None:
    """Keep ``ids`` as the characters named latest, in their order."""
    for who in ids:
        state.mentioned.pop(who, None)
        state.mentioned[who] = None
