"""One turn's delta, and the builder that assigns its identifiers.

A :class:`TurnDelta` is everything one accepted passage adds to memory. It is built with a
:class:`DeltaBuilder`, which numbers events (``e<turn>.<seq>``), states (``s<turn>.<n>``),
beliefs (``b<turn>.<n>``), shared beliefs (``g<turn>.<n>``) and hypotheses (``h<turn>.<n>``)
so identifiers are always the system's, deterministic, and the same when a turn is rebuilt
(which makes commits idempotent).

A builder given a ``limit`` (the largest payload a commit may send) keeps a running estimate
of the delta's size as records are added — a lower bound of what they will weigh in the
payload — and refuses, in one line naming the record and the text it comes from, the first
record that takes it past the limit: a turn too large for a commit is refused while it is
being built, before the rest of it is made (:class:`~fabula.errors.LimitExceeded`).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping, Sequence

from pydantic import BaseModel, ConfigDict, Field

from fabula.errors import LimitExceeded
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
    SharedBelief,
    SourceSpan,
    State,
    StatusChange,
    event_id,
    slug,
)


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
    # what groups of witnesses came to hold together: every nested chain over a group
    # (memory.tracking.nested); committed into each member's own keyspace
    shared: tuple[SharedBelief, ...] = ()
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

    def __init__(
        self,
        turn: int,
        text: str,
        *,
        limit: int | None = None,
        context: Mapping[str, object] | None = None,
    ) -> None:
        self.turn = turn
        self.text = text
        self.limit = limit  # the largest payload a commit may send (None: no estimate)
        self.context = dict(context or {})  # where, for the error (story, branch, turn)
        self.estimate = len(text.encode("utf-8"))  # bytes, a lower bound (see the module)
        self._shared: list[SharedBelief] = []
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
        self._reserve(_EVENT_BYTES + len(span.quote.encode("utf-8")), span)
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
        self._reserve(_STATE_BYTES + _size(subject, attribute, value), span or event)
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
        where = span or (event if isinstance(event, Event) else None)
        self._reserve(_BELIEF_BYTES + _size(subject, attribute, value, *holder), where)
        self._beliefs.append(belief)
        return belief

    def shared(
        self,
        group: Sequence[str],
        subject: str,
        attribute: str,
        value: str,
        *,
        mode: AcquisitionMode,
        event: Event,
        depth: int,
        actor: str | None = None,
        polarity: bool = True,
        speaker: str | None = None,
        retract: bool = False,
    ) -> SharedBelief:
        """Make every nested chain over ``group`` (at most ``depth`` long) hold ``subject``'s
        ``attribute`` as ``value`` (see :class:`~fabula.memory.records.SharedBelief`)."""
        members = tuple(sorted(set(group)))
        self._reserve(_SHARED_BYTES + _size(subject, attribute, value, *members), event)
        record = SharedBelief(
            id=f"g{self.turn}.{len(self._shared)}",
            group=members,
            subject=subject,
            attribute=attribute,
            value=value,
            polarity=polarity,
            mode=mode,
            actor=actor if actor in members else None,
            event=event.id,
            speaker=speaker,
            retract=retract,
            depth=depth,
            valid_from=self.turn,
        )
        self._shared.append(record)
        return record

    def _reserve(self, size: int, where: Event | SourceSpan | str | None) -> None:
        """Count ``size`` more bytes; past the limit, refuse the turn (nothing is written)."""
        self.estimate += size
        if self.limit is None or self.estimate <= self.limit:
            return
        if isinstance(where, Event):
            where = where.span
        quote = where.quote if isinstance(where, SourceSpan) else None
        at = f" at {_excerpt(quote)!r}" if quote else ""
        raise LimitExceeded(
            f"turn {self.turn}'s delta would be more than the {self.limit:,} bytes a commit "
            f"may send{at} ({len(self._events)} events, {len(self._beliefs):,} beliefs, "
            f"{len(self._shared):,} shared so far; FABULA_MAX_DELTA_BYTES); nothing was "
            "written",
            **self.context,
        )

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
            shared=tuple(self._shared),
            developments=tuple(self._developments),
            hypotheses=tuple(self._hypotheses),
            realised=tuple(self._realised),
            scene=self.scene,
            clock=self.clock,
        )


# the smallest a record weighs in the payload, besides its strings (its JSON's keys and
# punctuation, its id and event, its header columns): lower bounds, so an estimate past the
# limit is a payload past it
_BELIEF_BYTES = 110
_SHARED_BYTES = 120
_EVENT_BYTES = 120
_STATE_BYTES = 80


def _size(*parts: str) -> int:
    return sum(len(p) + 3 for p in parts)


def _excerpt(quote: str, width: int = 60) -> str:
    line = " ".join(quote.split())
    return line if len(line) <= width else line[: width - 1] + "…"


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
