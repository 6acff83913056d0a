"""Episodes: the narrative half of memory.

Every committed event — an utterance (who spoke, to whom, the words), a telling, a move, a
line of narration — is an :class:`Episode` with its story time (turn and order, and the
story's clock where it gives one), place, participants, witnesses and the entities it
mentions. Episodes are derived from the committed events and the turn's clock, so they
can always be rebuilt from the store; :mod:`fabula.memory.index.build` keeps them, with
their indexes, in Redis.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from functools import lru_cache

from pydantic import Field

from fabula.memory.records import Entity, Event, Record
from fabula.memory.timeref import parse_clock

UTTERANCE_KINDS = frozenset({"say", "tell", "claim", "inform", "ask"})
_SEQ = 10_000  # story time as one number: turn * _SEQ + seq


def time_score(turn: int, seq: int) -> int:
    """Story time as one sortable number."""
    return turn * _SEQ + seq


class Episode(Record):
    """One event as it is remembered: what happened or was said, when, where, by and to whom.

    ``text`` is the event's exact source span; ``speaker`` and ``listeners`` are set for
    utterances and tellings; ``clock`` is the story's date at that turn as written and
    ``day`` its day number (both None when the story gives none).
    """

    id: str
    turn: int = Field(ge=0)
    seq: int = Field(ge=0)
    kind: str
    text: str
    start: int = Field(default=0, ge=0)
    end: int = Field(default=0, ge=0)
    speaker: str | None = None
    listeners: tuple[str, ...] = ()
    place: str | None = None
    participants: tuple[str, ...] = ()
    witnesses: tuple[str, ...] = ()
    entities: tuple[str, ...] = ()
    clock: str | None = None
    day: int | None = None

    @property
    def time(self) -> int:
        return time_score(self.turn, self.seq)


class EntityMatcher:
    """Finds the entities a text names, by whole words of their names (case ignored)."""

    def __init__(self, entities: Mapping[str, Entity]) -> None:
        self._pattern = _name_pattern(tuple(sorted((e.name, e.id) for e in entities.values())))
        self.ids = frozenset(entities)

    def find(self, text: str) -> list[str]:
        """Entity ids named in ``text``, in order of first mention, each once."""
        if self._pattern is None:
            return []
        pattern, by_name = self._pattern
        return list(dict.fromkeys(by_name[m.group(0).lower()] for m in pattern.finditer(text)))


@lru_cache(maxsize=64)
def _name_pattern(
    names: tuple[tuple[str, str], ...],
) -> tuple[re.Pattern[str], dict[str, str]] | None:
    by_name = {name.lower(): entity_id for name, entity_id in names if name.strip()}
    if not by_name:
        return None
    alternatives = "|".join(re.escape(n) for n in sorted(by_name, key=len, reverse=True))
    return re.compile(rf"(?<!\w)(?:{alternatives})(?!\w)", re.IGNORECASE), by_name


def _unique(items: Iterable[str | None]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(i for i in items if i))


def episode_of(event: Event, clock: str | None, matcher: EntityMatcher) -> Episode:
    """The episode of one committed event (``clock``: the story's date at its turn)."""
    speaker = event.actor if event.kind in UTTERANCE_KINDS else None
    listeners: Sequence[str] = ()
    if speaker is not None:
        listeners = event.private_to or tuple(w for w in event.witnesses if w != speaker)
    mentioned = [event.actor, *event.participants, event.place]
    if event.content is not None:
        mentioned += [event.content.subject, event.content.value]
    known = matcher.find(event.span.quote)
    parsed = parse_clock(clock) if clock else None
    return Episode(
        id=event.id,
        turn=event.turn,
        seq=event.seq,
        kind=event.kind,
        text=event.span.quote,
        start=event.span.start,
        end=event.span.end,
        speaker=speaker,
        listeners=tuple(listeners),
        place=event.place,
        participants=event.participants,
        witnesses=event.witnesses,
        entities=_unique([*known, *(m for m in mentioned if m in matcher.ids)]),
        clock=clock,
        day=parsed.day if parsed else None,
    )


_EPISODE_MEMO = 50_000
_parsed: dict[str, Episode] = {}


def parse_episodes(values: list[str | None]) -> list[Episode]:
    """Episodes from their stored JSON (missing ones skipped); a stored episode never
    changes, so each is parsed once per process."""
    out = []
    for raw in values:
        if not raw:
            continue
        episode = _parsed.get(raw)
        if episode is None:
            if len(_parsed) >= _EPISODE_MEMO:
                _parsed.clear()
            episode = _parsed[raw] = Episode.model_validate_json(raw)
        out.append(episode)
    return out
