"""The service's answers about stories as wholes: the list of stories and worlds, a branch's
text, its export, the story as one character lived it, and its model usage."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from fabula.graph.service.responses.reading import BeliefsOut, WorldOut
from fabula.graph.service.summaries import StorySummary as StorySummary
from fabula.memory.records import Development, Hypothesis


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
