"""Validation of a turn's delta before anything is written.

Pure checks (spans quote the turn's text exactly, identifiers are the system's, intervals
start at the turn) run here; the references that need the store (does this entity, event or
development exist?) are listed as :class:`Ref` values and checked inside the commit function,
before its first write. Either way an invalid delta is refused whole, naming the field.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from fabula.errors import InvalidDelta
from fabula.memory.delta import TurnDelta
from fabula.memory.keys import check_id
from fabula.memory.records import EntityKind, SourceSpan, event_id, slug

MAX_CHAIN = 8
RefKind = Literal["entity", "event", "development", "hypothesis", "new_entity", "new_development"]


@dataclass(frozen=True)
class Ref:
    """A reference the store must resolve: ``field`` names where it appears in the delta."""

    field: str
    kind: RefKind
    id: str
    entity_kind: EntityKind | Literal[""] = ""

    def as_list(self) -> list[str]:
        return [self.field, self.kind, self.id, self.entity_kind]


class _Refs:
    """Distinct references in the order first met; a delta repeats the same few many times
    (a holder, a subject, an event), and each is checked once, naming its first field."""

    def __init__(self) -> None:
        self._first: dict[tuple[str, str, str], str] = {}

    def add(self, field: str, kind: RefKind, ref_id: str, entity_kind: str = "") -> None:
        self._first.setdefault((kind, ref_id, entity_kind), field)

    def new(self, kind: RefKind, ref_id: str, entity_kind: str = "") -> bool:
        """Whether this reference is not yet recorded (so its field name is worth making:
        a commit's hot loops skip formatting names of references already met)."""
        return (kind, ref_id, entity_kind) not in self._first

    def refs(self) -> list[Ref]:
        return [
            Ref(field, kind, ref_id, entity_kind)  # type: ignore[arg-type]
            for (kind, ref_id, entity_kind), field in self._first.items()
        ]


def _fail(field: str, message: str, turn: int) -> InvalidDelta:
    return InvalidDelta(f"{field}: {message}", field=field, turn=turn)


def _check_span(span: SourceSpan | None, field: str, delta: TurnDelta) -> None:
    if span is None:
        return
    if span.turn != delta.turn:
        raise _fail(field, f"span is from turn {span.turn}, not turn {delta.turn}", delta.turn)
    if not span.start <= span.end <= len(delta.text):
        raise _fail(
            field,
            f"span {span.start}:{span.end} lies outside the turn's text (length {len(delta.text)})",
            delta.turn,
        )
    actual = delta.text[span.start : span.end]
    if actual != span.quote:
        raise _fail(
            field, f"span quotes {span.quote!r} but the text there is {actual!r}", delta.turn
        )


def validate_delta(delta: TurnDelta) -> list[Ref]:
    """Check everything that needs no store; return the references the store must resolve.

    Raises :class:`InvalidDelta` naming the first offending field.
    """
    check = _Check(delta)
    check.entities()
    check.events()
    check.states()
    check.beliefs()
    check.shared()
    check.developments()
    check.hypotheses()
    return check.found.refs()


class _Check:
    """One delta's validation, record kind by record kind (in this order, so the first
    offending field and each reference's first field are named as the delta lists them)."""

    def __init__(self, delta: TurnDelta) -> None:
        self.delta = delta
        self.turn = delta.turn
        self.found = _Refs()
        self.seen: set[str] = set()

    def fail(self, field: str, message: str) -> InvalidDelta:
        return _fail(field, message, self.turn)

    def unique(self, record_id: str, field: str) -> None:
        if record_id in self.seen:
            raise self.fail(field, f"identifier {record_id!r} is used twice")
        self.seen.add(record_id)

    def entities(self) -> None:
        turn, found = self.turn, self.found
        for i, entity in enumerate(self.delta.entities):
            field = f"entities[{i}]"
            try:
                check_id(entity.id, "entity id")
            except ValueError as exc:
                raise self.fail(field + ".id", str(exc)) from None
            if entity.id != slug(entity.name):
                raise self.fail(
                    field + ".id", f"{entity.id!r} is not the system id of {entity.name!r}"
                )
            if entity.introduced != turn:
                raise self.fail(field + ".introduced", f"must be {turn}")
            self.unique(entity.id, field)
            found.add(field, "new_entity", entity.id)
            for j, member in enumerate(entity.members):
                found.add(f"{field}.members[{j}]", "entity", member)

    def events(self) -> None:
        """The events, then their effects (each a state of this delta)."""
        delta, turn, found = self.delta, self.turn, self.found
        for i, event in enumerate(delta.events):
            field = f"events[{i}]"
            if event.turn != turn or event.seq != i or event.id != event_id(turn, i):
                raise self.fail(field + ".id", f"expected e{turn}.{i}, got {event.id!r}")
            self.unique(event.id, field)
            _check_span(event.span, field + ".span", delta)
            if event.actor:
                found.add(field + ".actor", "entity", event.actor)
            for j, p in enumerate(event.participants):
                found.add(f"{field}.participants[{j}]", "entity", p)
            for j, w in enumerate(event.witnesses):
                if found.new("entity", w, "character"):
                    found.add(f"{field}.witnesses[{j}]", "entity", w, "character")
            for j, w in enumerate(event.private_to):
                found.add(f"{field}.private_to[{j}]", "entity", w, "character")
            if event.place:
                found.add(field + ".place", "entity", event.place, "place")
            for j, cause in enumerate(event.causes):
                found.add(f"{field}.causes[{j}]", "event", cause)
            for j, dev_id in enumerate(event.developments):
                found.add(f"{field}.developments[{j}]", "development", dev_id)
            if event.content is not None:
                found.add(field + ".content.subject", "entity", event.content.subject)
        state_ids = {s.id for s in delta.states}
        for i, event in enumerate(delta.events):
            for j, effect in enumerate(event.effects):
                if effect not in state_ids:
                    raise self.fail(f"events[{i}].effects[{j}]", f"unknown state {effect!r}")

    def states(self) -> None:
        turn, found = self.turn, self.found
        for i, state in enumerate(self.delta.states):
            field = f"states[{i}]"
            if state.id != f"s{turn}.{i}":
                raise self.fail(field + ".id", f"expected s{turn}.{i}, got {state.id!r}")
            self.unique(state.id, field)
            if state.valid_from != turn or state.valid_to is not None:
                raise self.fail(
                    field + ".valid_from", f"a new state is valid from turn {turn}, open"
                )
            if state.span is not None:
                _check_span(state.span, field + ".span", self.delta)
            if found.new("entity", state.subject):
                found.add(field + ".subject", "entity", state.subject)
            if state.event and found.new("event", state.event):
                found.add(field + ".event", "event", state.event)

    def beliefs(self) -> None:
        turn, found = self.turn, self.found
        for i, belief in enumerate(self.delta.beliefs):
            field = f"beliefs[{i}]"
            if belief.id != f"b{turn}.{i}":
                raise self.fail(field + ".id", f"expected b{turn}.{i}, got {belief.id!r}")
            self.unique(belief.id, field)
            if belief.valid_from != turn or belief.valid_to is not None:
                raise self.fail(
                    field + ".valid_from", f"a new belief is valid from turn {turn}, open"
                )
            if len(belief.holder) > MAX_CHAIN:
                raise self.fail(field + ".holder", f"chains are at most {MAX_CHAIN} deep")
            for j in range(1, len(belief.holder)):
                if belief.holder[j] == belief.holder[j - 1]:
                    raise self.fail(f"{field}.holder[{j}]", "a holder chain repeats a holder")
            if belief.span is not None:
                _check_span(belief.span, field + ".span", self.delta)
            for j, holder in enumerate(belief.holder):
                if found.new("entity", holder, "character"):
                    found.add(f"{field}.holder[{j}]", "entity", holder, "character")
            self.told(field, belief.subject, belief.event, belief.speaker)

    def shared(self) -> None:
        turn, found = self.turn, self.found
        for i, shared in enumerate(self.delta.shared):
            field = f"shared[{i}]"
            if shared.id != f"g{turn}.{i}":
                raise self.fail(field + ".id", f"expected g{turn}.{i}, got {shared.id!r}")
            self.unique(shared.id, field)
            if shared.valid_from != turn:
                raise self.fail(field + ".valid_from", f"a new shared belief is from turn {turn}")
            if list(shared.group) != sorted(set(shared.group)):
                raise self.fail(field + ".group", "a group lists its members once each, sorted")
            if shared.depth > MAX_CHAIN:
                raise self.fail(field + ".depth", f"chains are at most {MAX_CHAIN} deep")
            if shared.actor is not None and shared.actor not in shared.group:
                raise self.fail(field + ".actor", "the actor is a member of the group")
            for j, member in enumerate(shared.group):
                if found.new("entity", member, "character"):
                    found.add(f"{field}.group[{j}]", "entity", member, "character")
            self.told(field, shared.subject, shared.event, shared.speaker)

    def told(self, field: str, subject: str, event: str, speaker: str | None) -> None:
        """A belief's (or a shared belief's) subject, event and speaker, as references."""
        found = self.found
        if found.new("entity", subject):
            found.add(field + ".subject", "entity", subject)
        if found.new("event", event):
            found.add(field + ".event", "event", event)
        if speaker and found.new("entity", speaker, "character"):
            found.add(field + ".speaker", "entity", speaker, "character")

    def developments(self) -> None:
        turn, found = self.turn, self.found
        for i, dev in enumerate(self.delta.developments):
            field = f"developments[{i}]"
            if dev.change.turn != turn:
                raise self.fail(field + ".change.turn", f"must be {turn}")
            _check_span(dev.change.span, field + ".change.span", self.delta)
            if dev.is_new:
                if dev.change.status != "opened":
                    raise self.fail(field + ".change.status", "a new development starts 'opened'")
                found.add(field + ".id", "new_development", dev.id)
                for j, p in enumerate(dev.participants):
                    found.add(f"{field}.participants[{j}]", "entity", p)
            else:
                found.add(field + ".id", "development", dev.id)
                after = dev.development
                if after is None or after.id != dev.id or after.history[-1] != dev.change:
                    raise self.fail(
                        field + ".development",
                        "a status change carries its development, its history ending with it",
                    )
            if dev.change.event:
                found.add(field + ".change.event", "event", dev.change.event)

    def hypotheses(self) -> None:
        """The hypotheses proposed, those realised, and the scene's place."""
        delta, turn, found = self.delta, self.turn, self.found
        for i, hyp in enumerate(delta.hypotheses):
            field = f"hypotheses[{i}]"
            if hyp.id != f"h{turn}.{i}" or hyp.proposed != turn or hyp.status != "open":
                raise self.fail(field + ".id", f"expected open hypothesis h{turn}.{i}")
            self.unique(hyp.id, field)
            found.add(field + ".development", "development", hyp.development)
        for i, hyp in enumerate(delta.realised):
            if hyp.status != "realised" or hyp.realised_turn != turn:
                raise self.fail(f"realised[{i}]", f"must be realised at turn {turn}")
            found.add(f"realised[{i}]", "hypothesis", hyp.id)
        if delta.scene is not None:
            found.add("scene", "entity", delta.scene, "place")
