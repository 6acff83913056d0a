"""The spread of a piece of news through a story run in ticks, as the interfaces show it:
one row per tick (tick 0: before the first), read from the characters' own minds
(:func:`fabula.memory.spread.spread`)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from fabula.errors import InvalidInput
from fabula.memory.spread import spread
from fabula.memory.store.view import StoryReads

MAX_CLAUSE_CHARS = 200
"""The longest clause a spread follows (a piece of news is a few words)."""


class SpreadRow(BaseModel):
    """One tick: the turn it ends at, how many characters hold the clause, their share
    of the cast, and who."""

    model_config = ConfigDict(frozen=True)

    tick: int
    turn: int
    knowers: int
    characters: int
    share: float
    who: list[str]


class SpreadOut(BaseModel):
    """The clause, and its spread tick by tick."""

    model_config = ConfigDict(frozen=True)

    clause: str
    ticks: list[SpreadRow]


async def spread_view(store: StoryReads, clause: str | None) -> SpreadOut:
    """The spread of ``clause`` over the branch's ticks; :class:`InvalidInput` (one line)
    without a clause or for one over :data:`MAX_CLAUSE_CHARS`, or for a story never run
    in ticks."""
    if not clause or not clause.strip():
        raise InvalidInput(
            'a spread needs a clause to follow, e.g. "harvest party"',
            story=store.story,
        )
    if len(clause) > MAX_CLAUSE_CHARS:
        raise InvalidInput(
            f"a spread's clause is at most {MAX_CLAUSE_CHARS} characters, not {len(clause)}",
            story=store.story,
        )
    points = await spread(store, clause)
    if not points:
        raise InvalidInput(
            f"story {store.story!r} on branch {store.branch!r} has run no tick: its spread "
            "is read tick by tick",
            story=store.story,
        )
    rows = [
        SpreadRow(
            tick=p.tick,
            turn=p.turn,
            knowers=len(p.knowers),
            characters=p.characters,
            share=round(p.share, 4),
            who=list(p.knowers),
        )
        for p in points
    ]
    return SpreadOut(clause=clause, ticks=rows)
