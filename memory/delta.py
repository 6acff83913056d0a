"""One turn's delta, and the builder that assigns its identifiers.

A :class:`TurnDelta` is everything one accepted passage adds to memory. It is built with a
:class:`DeltaBuilder`, which numbers events (``e<turn>.<seq>``), states (``s<turn>.<n>``),
beliefs (``b<turn>.<n>``) and hypotheses (``h<turn>.<n>``) so identifiers are always the
system's, deterministic, and the same when a turn is rebuilt (which makes commits idempotent).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence

from pydantic import BaseModel, ConfigDict, Field

from fabula.memory.recollection import recollect_each
from fabula.memory.records import (
    AcquisitionMode,
    Attitude,
    Belief,
    Development,
    DevelopmentKind,
    DevelopmentStatus,
    Entity,
    EntityKind,
    Event,
    Fact,
    Hypothesis,
    SourceSpan,
    State,
    StatusChange,
    event_id,
    slug,
)

__all__ = ["DeltaBuilder", "DevelopmentUpdate", "TurnDelta", "development_from", "realised"]


class DevelopmentUpdate(BaseModel):
    """A new development (``kind`` and ``title`` set) or a status change of an existing one
    (``development``: the development as it stands after the change, its history ending
    with ``change`` — what the commit stores)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str
    change: StatusChange
    kind: DevelopmentKind | None = None
    title: str | None = None
    participants: tuple[str, ...] = ()
    description: str = ""
    development: Development | None = None

    @property
    def is_new(self) -> bool:
        """Whether this opens a development (else it changes one's status)."""
        return self.kind is not None

    @property
    def record(self) -> Development | None:
        """The development as it stands after this update (None for a status change that
        does not carry it, which validation refuses)."""
        return development_from(self) if self.is_new else self.development

    @classmethod
    def status_change(cls, development: Development, change: StatusChange) -> DevelopmentUpdate:
        """``development``'s status changed by ``change``, with the record it makes."""
        after = development.model_copy(update={"history": (*development.history, change)})
        return cls(id=development.id, change=change, development=after)


class TurnDelta(BaseModel):
    """Everything one turn adds to memory; committed atomically or not at all."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    turn: int = Field(ge=0)
    text: str
    entities: tuple[Entity, ...] = ()
    events: tuple[Event, ...] = ()
    states: tuple[State, ...] = ()
    beliefs: tuple[Belief, ...] = ()
    developments: tuple[DevelopmentUpdate, ...] = ()
    hypotheses: tuple[Hypothesis, ...] = ()
    # the hypotheses this turn's text made true, as they stand after it (status realised,
    # realised_turn this turn): the records the commit stores
    realised: tuple[Hypothesis, ...] = ()
    scene: str | None = None  # the place the turn ends in (its latest entry), if known
    # what the witnesses of each witnessed event remember of it, by event id: a quote safe
    # for all of them, or the event rendered (memory.recollection); filled by build()
    recollections: dict[str, str] = Field(default_factory=dict)
    # by event id and witness: what that witness remembers where it may be told more than
    # the shared text above (it witnessed every event its quote tells); filled by build()
    own_recollections: dict[str, dict[str, str]] = Field(default_factory=dict)
    clock: str | None = None  # the story's date or time of day at this turn, as written

    def digest(self) -> str:
        """A content hash: the same turn sent twice has the same digest."""
        return hashlib.sha256(self.model_dump_json().encode()).hexdigest()


class DeltaBuilder:
    """Builds a :class:`TurnDelta`, assigning every identifier."""

    def __init__(self, turn: int, text: str) -> None:
        self.turn = turn
        self.text = text
        self._entities: list[Entity] = []
        self._events: list[Event] = []
        self._states: list[State] = []
        self._beliefs: list[Belief] = []
        self._developments: list[DevelopmentUpdate] = []
        self._hypotheses: list[Hypothesis] = []
        self._realised: list[Hypothesis] = []
        self.scene: str | None = None
        # every entity the story knows (the tracker sets it): the names a memory may quote
        self.known: dict[str, Entity] = {}
        self.clock: str | None = None

    # -- spans --------------------------------------------------------------------------
    def span(self, start: int, end: int) -> SourceSpan:
        """The span ``text[start:end]`` of this turn."""
        return SourceSpan(turn=self.turn, start=start, end=end, quote=self.text[start:end])

    def span_of(self, quote: str, after: int = 0) -> SourceSpan:
        """The first occurrence of ``quote`` at or after ``after``; ValueError if absent."""
        start = self.text.index(quote, after)
        return self.span(start, start + len(quote))

    # -- records ------------------------------------------------------------------------
    def entity(
        self,
        kind: EntityKind,
        name: str,
        *,
        description: str = "",
        attributes: dict[str, str] | None = None,
        members: Sequence[str] = (),
    ) -> Entity:
        """Introduce an entity (its id is the slug of ``name``) in this turn."""
        entity = Entity(
            id=slug(name),
            kind=kind,
            name=name,
            description=description,
            attributes=dict(attributes or {}),
            members=tuple(members),
            introduced=self.turn,
        )
        self._entities.append(entity)
        return entity

    def event(
        self,
        kind: str,
        span: SourceSpan,
        *,
        actor: str | None = None,
        participants: Iterable[str] = (),
        place: str | None = None,
        content: Fact | None = None,
        causes: Iterable[str] = (),
        witnesses: Iterable[str] = (),
        private_to: Iterable[str] = (),
        developments: Iterable[str] = (),
    ) -> Event:
        """Record an event at ``span``, numbered ``e<turn>.<seq>`` in story order."""
        event = Event(
            id=event_id(self.turn, len(self._events)),
            turn=self.turn,
            seq=len(self._events),
            kind=kind,
            actor=actor,
            participants=tuple(participants),
            place=place,
            content=content,
            causes=tuple(causes),
            witnesses=tuple(witnesses),
            private_to=tuple(private_to),
            developments=tuple(developments),
            span=span,
        )
        self._events.append(event)
        return event

    def replace_event(self, event: Event) -> None:
        """Put back an event with fields filled in later (witnesses, effects)."""
        self._events[event.seq] = event

    def state(
        self,
        subject: str,
        attribute: str,
        value: str,
        *,
        event: Event | None = None,
        polarity: bool = True,
        span: SourceSpan | None = None,
    ) -> State:
        """Make ``subject``'s ``attribute`` ``value`` in W from this turn (closing the current
        state of that slot when committed)."""
        state = State(
            id=f"s{self.turn}.{len(self._states)}",
            subject=subject,
            attribute=attribute,
            value=value,
            polarity=polarity,
            valid_from=self.turn,
            event=event.id if event else None,
            span=span,
        )
        self._states.append(state)
        if event is not None:
            updated = self._events[event.seq]
            self._events[event.seq] = updated.model_copy(
                update={"effects": (*updated.effects, state.id)}
            )
        return state

    def belief(
        self,
        holder: Sequence[str],
        subject: str,
        attribute: str,
        value: str,
        *,
        mode: AcquisitionMode,
        event: Event | str,
        polarity: bool = True,
        attitude: Attitude = "believes",
        speaker: str | None = None,
        span: SourceSpan | None = None,
    ) -> Belief:
        """Make ``holder`` (a chain) believe ``subject``'s ``attribute`` is ``value``, acquired by
        ``mode`` at ``event``."""
        source = event if isinstance(event, str) else event.id
        belief = Belief(
            id=f"b{self.turn}.{len(self._beliefs)}",
            holder=tuple(holder),
            subject=subject,
            attribute=attribute,
            value=value,
            polarity=polarity,
            attitude=attitude,
            mode=mode,
            event=source,
            speaker=speaker,
            valid_from=self.turn,
            span=span,
        )
        self._beliefs.append(belief)
        return belief

    def open_development(
        self,
        kind: DevelopmentKind,
        title: str,
        *,
        participants: Sequence[str] = (),
        description: str = "",
        event: Event | None = None,
        note: str = "",
    ) -> str:
        """Open a development; returns its id (``d_`` and the slug of its title)."""
        dev_id = "d_" + slug(title)
        change = StatusChange(
            turn=self.turn,
            status="opened",
            event=event.id if event else None,
            note=note,
            span=event.span if event else None,
        )
        self._developments.append(
            DevelopmentUpdate(
                id=dev_id,
                change=change,
                kind=kind,
                title=title,
                participants=tuple(participants),
                description=description,
            )
        )
        return dev_id

    def update_development(
        self,
        development: Development,
        status: DevelopmentStatus,
        *,
        event: Event | None = None,
        note: str = "",
    ) -> None:
        """Record a status change of an existing development (``development`` as it stood
        before this turn; a change this turn already made to it is kept)."""
        change = StatusChange(
            turn=self.turn,
            status=status,
            event=event.id if event else None,
            note=note,
            span=event.span if event else None,
        )
        current = self.latest(development.id) or development
        self._developments.append(DevelopmentUpdate.status_change(current, change))

    def latest(self, dev_id: str) -> Development | None:
        """Development ``dev_id`` as this turn has left it so far (None if it has not
        touched it)."""
        for update in reversed(self._developments):
            if update.id == dev_id:
                return update.record
        return None

    def hypothesis(
        self,
        development: str,
        premise: str,
        *,
        possible_events: Sequence[str] = (),
        constraints: Sequence[str] = (),
        uncertainty: float = 0.5,
        realises: Sequence[Fact] = (),
    ) -> Hypothesis:
        """Propose a possible continuation of a development (never a fact)."""
        hyp = Hypothesis(
            id=f"h{self.turn}.{len(self._hypotheses)}",
            development=development,
            premise=premise,
            possible_events=tuple(possible_events),
            constraints=tuple(constraints),
            uncertainty=uncertainty,
            proposed=self.turn,
            realises=tuple(realises),
        )
        self._hypotheses.append(hyp)
        return hyp

    def realise(self, hypothesis: Hypothesis) -> None:
        """Mark ``hypothesis`` (as it stood before this turn) realised by this turn's text."""
        self._realised.append(realised(hypothesis, self.turn))

    @property
    def events(self) -> list[Event]:
        """The events recorded so far, in order."""
        return list(self._events)

    def build(self) -> TurnDelta:
        """The delta, with what every witnessed event's witnesses remember of it."""
        known = self.known | {e.id: e for e in self._entities}
        remembered = recollect_each(self.text, self._events, known)
        return TurnDelta(
            recollections=remembered.shared,
            own_recollections=remembered.own,
            turn=self.turn,
            text=self.text,
            entities=tuple(self._entities),
            events=tuple(self._events),
            states=tuple(self._states),
            beliefs=tuple(self._beliefs),
            developments=tuple(self._developments),
            hypotheses=tuple(self._hypotheses),
            realised=tuple(self._realised),
            scene=self.scene,
            clock=self.clock,
        )


def realised(hypothesis: Hypothesis, turn: int) -> Hypothesis:
    """``hypothesis`` as it stands once realised at ``turn``."""
    return hypothesis.model_copy(update={"status": "realised", "realised_turn": turn})


def development_from(update: DevelopmentUpdate) -> Development:
    """The development a new-development update creates."""
    assert update.kind is not None and update.title is not None
    return Development(
        id=update.id,
        kind=update.kind,
        title=update.title,
        participants=update.participants,
        description=update.description,
        history=(update.change,),
    )
