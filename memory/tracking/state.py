"""The tracker's state during one turn: the world, every mind, and their primitive changes.

A :class:`Tracker` starts from a :class:`~fabula.memory.tracking.prior.PriorView` and keeps
W (value and polarity by slot) and every character's own knowledge up to date as the turn's
actions are applied (by :mod:`fabula.memory.tracking.handlers`), writing each change into a
:class:`~fabula.memory.delta.DeltaBuilder`.

Cost, bounded: a first-order record is written when a holder's value changes, or when it
observes a fact again (its freshness moves). Nested chains are not written one by one: a
fact that reaches a group (the witnesses of an observation, a speaker and its listener) is
one :class:`~fabula.memory.records.SharedBelief`, from which every chain over the group is
read (:mod:`fabula.memory.tracking.nested`); it is left out when the group's last record on
that slot this turn already covers it. Facts about characters (where they are, what they
feel) are held first-order only. So an event costs at most one record per witness and one
shared record per fact it reveals: linear in the witnesses.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Literal

from fabula.memory.actions import StoryAction
from fabula.memory.delta import DeltaBuilder
from fabula.memory.places import place_of
from fabula.memory.records import (
    CONTAINER,
    EXTRA,
    FORCE,
    AcquisitionMode,
    Entity,
    EntityKind,
    Event,
    Fact,
    SharedBelief,
    event_position,
    slug,
)
from fabula.memory.rules import WorldRules
from fabula.memory.tracking.prior import Chain, Knowledge, PriorView, name_id


class Tracker:
    """W and every mind during one turn, and the primitive changes actions are made of."""

    def __init__(self, rules: WorldRules, prior: PriorView, builder: DeltaBuilder) -> None:
        self.rules = rules
        self.b = builder
        self.entities: dict[str, Entity] = dict(prior.entities)
        self.world: dict[str, tuple[str, bool]] = {
            slot: (s.value, s.polarity) for slot, s in prior.world.items()
        }
        # what each character holds itself (nested chains are read from shared records)
        self.minds: dict[Chain, dict[str, Knowledge]] = {
            chain: dict(slots) for chain, slots in prior.beliefs.items() if len(chain) == 1
        }
        # the last shared record of each slot this turn (what a new one may repeat)
        self.last_shared: dict[str, SharedBelief] = {}
        self.scene = prior.scene
        self.characters = sorted(i for i, e in self.entities.items() if e.kind == "character")

    # -- entities and places ----------------------------------------------------------
    def entity(self, kind: EntityKind, name: str, *, container: bool = False) -> str:
        """The id of the entity ``name``, introduced (as ``kind``) if the story lacks it."""
        sid = slug(name)
        if sid not in self.entities:
            attributes = {"role": CONTAINER} if container else {}
            self.entities[sid] = self.b.entity(kind, name, attributes=attributes)
            if kind == "character":
                self.characters = sorted({*self.characters, sid})
        return sid

    def doer(self, name: str, *, force: bool) -> str:
        """The id of the doer ``name`` of a change: an entity the story knows, else one
        introduced — a force (an object marked :data:`FORCE`), or a character marked
        :data:`EXTRA` (it perceives and believes, but is not of the cast)."""
        sid = slug(name)
        if sid not in self.entities:
            if force:
                self.entities[sid] = self.b.entity("object", name, attributes={"nature": FORCE})
            else:
                self.entities[sid] = self.b.entity("character", name, attributes={"role": EXTRA})
                self.characters = sorted({*self.characters, sid})
        return sid

    def known(self, name: str | None) -> str | None:
        """The id of an entity already in the story, else None (nothing is introduced)."""
        sid = name_id(name)
        return sid if sid is not None and sid in self.entities else None

    def is_container(self, sid: str) -> bool:
        """Whether things are put in ``sid``."""
        entity = self.entities.get(sid)
        return entity is not None and entity.is_container

    def kind(self, sid: str) -> EntityKind | None:
        """``sid``'s kind (None if unknown)."""
        entity = self.entities.get(sid)
        return None if entity is None else entity.kind

    def where(self, sid: str) -> str | None:
        """Where ``sid`` is in W (None: unknown, or only where it is not)."""
        value = self.world.get(f"{sid}|location")
        return value[0] if value is not None and value[1] else None

    def place_of(self, sid: str) -> str | None:
        """The place ``sid`` is in, through containers and holders (see :func:`place_of`)."""
        return place_of(sid, self.where, self._is_place)

    def _is_place(self, sid: str) -> bool:
        return self.kind(sid) == "place"

    def perceivers(
        self, action: StoryAction, base: Iterable[str], doers: Iterable[str] = ()
    ) -> list[str]:
        """Who perceives ``action``: those placed there (``base``) and its ``doers``, with
        whom the text says saw it (``seen_by``) and without whom it says did not
        (``unseen_by``; a doer always perceives its own act)."""
        doers = set(doers)
        seen = {self.entity("character", n) for n in action.seen_by if name_id(n) is not None}
        unseen = {self.known(n) for n in action.unseen_by} - doers
        return sorted(({*base, *doers} | seen) - {u for u in unseen if u is not None})

    def covert(self, action: StoryAction, witnesses: Iterable[str]) -> set[str]:
        """The ``witnesses`` that perceived ``action`` without its doer knowing."""
        found = {self.known(n) for n in action.unaware_of}
        return {w for w in witnesses if w in found}

    def believed_seen(self, action: StoryAction, witnesses: Iterable[str]) -> set[str]:
        """The characters ``action``'s doer believes perceived it, though they are not among
        its ``witnesses`` (``believed_seen_by``)."""
        found = {self.known(n) for n in action.believed_seen_by}
        return {c for c in found if c is not None and self.kind(c) == "character"} - set(witnesses)

    def present(self, place: str | None) -> list[str]:
        """The characters in ``place`` (none for no place)."""
        if place is None:
            return []
        return [c for c in self.characters if self.where(c) == place]

    def visible(self, place: str) -> list[tuple[str, str]]:
        """Objects whose location a newcomer to ``place`` sees (not the fixtures), each with
        that location, in id order."""
        out = []
        for slot, (value, polarity) in self.world.items():
            subject, _, attribute = slot.partition("|")
            if attribute != "location" or not polarity or self.kind(subject) != "object":
                continue
            if value == place:
                if not self.is_container(subject):
                    out.append((subject, value))
            elif self.where(value) == place and (
                self.rules.open_containers or self.kind(value) == "character"
            ):
                out.append((subject, value))
        return sorted(out)

    # -- records ----------------------------------------------------------------------
    def event(
        self,
        kind: str,
        action: StoryAction,
        *,
        actor: str | None = None,
        participants: Sequence[str] = (),
        place: str | None = None,
        content: Fact | None = None,
        witnesses: Iterable[str] = (),
        private_to: Sequence[str] = (),
        causes: Sequence[str] = (),
    ) -> Event:
        """Record an event at ``action``'s span (``place`` kept only if it is a place)."""
        return self.b.event(
            kind,
            self.b.span(action.start, action.end),
            actor=actor,
            participants=participants,
            place=place if place is not None and self.kind(place) == "place" else None,
            content=content,
            witnesses=sorted(set(witnesses)),
            private_to=private_to,
            causes=causes,
        )

    def set_world(
        self, subject: str, attribute: str, value: str, event: Event, polarity: bool = True
    ) -> None:
        """Make ``subject``'s ``attribute`` ``value`` in W (a state, if it changes)."""
        slot = f"{subject}|{attribute}"
        if self.world.get(slot) == (value, polarity):
            return
        self.world[slot] = (value, polarity)
        self.b.state(subject, attribute, value, event=event, polarity=polarity)

    def believe(
        self,
        chain: Chain,
        subject: str,
        attribute: str,
        value: str,
        *,
        mode: AcquisitionMode,
        event: Event,
        source: str | None,
        polarity: bool = True,
        speaker: str | None = None,
        refresh: bool = False,
    ) -> None:
        """Write a first-order belief when the holder's value changes, or (``refresh``) its
        freshness.

        ``source`` is the event as of which the information is current (None: no first-hand
        origin, e.g. a speaker who passes on what it never saw)."""
        assert len(chain) == 1, "nested chains are read from shared records (share)"
        slot = f"{subject}|{attribute}"
        mind = self.minds.setdefault(chain, {})
        held = mind.get(slot)
        changed = held is None or (held.value, held.polarity) != (value, polarity)
        if not changed and not refresh:
            return
        mind[slot] = Knowledge(value, polarity, source)
        self.b.belief(
            chain,
            subject,
            attribute,
            value,
            mode=mode,
            event=event,
            polarity=polarity,
            speaker=speaker,
        )

    def share(
        self,
        group: Iterable[str],
        subject: str,
        attribute: str,
        value: str,
        event: Event,
        *,
        mode: AcquisitionMode,
        actor: str | None = None,
        polarity: bool = True,
        speaker: str | None = None,
        retract: bool = False,
    ) -> None:
        """Every nested chain over ``group`` comes to hold the fact (one shared record; none
        when the group has one member or the rules keep no nested chains, or when the last
        shared record of the slot this turn covers the group with the same fact)."""
        members = tuple(sorted(set(group)))
        if len(members) < 2 or self.rules.belief_depth < 2:
            return
        slot = f"{subject}|{attribute}"
        last = self.last_shared.get(slot)
        if (
            last is not None
            and not retract
            and not last.retract
            and (last.value, last.polarity) == (value, polarity)
            and set(members).issubset(last.group)
        ):
            # every chain over the group holds it already (that record is the slot's latest)
            return
        self.last_shared[slot] = self.b.shared(
            members,
            subject,
            attribute,
            value,
            mode=mode,
            event=event,
            actor=actor,
            polarity=polarity,
            speaker=speaker,
            retract=retract,
            depth=self.rules.belief_depth,
        )

    # long (over 60 lines): its signature and docstring are half of it; the body is the
    # three steps in order (each witness, the shared chains, the covert and believed ones)
    def observe(
        self,
        witnesses: Sequence[str],
        subject: str,
        attribute: str,
        value: str,
        event: Event,
        *,
        actor: str | None = None,
        refresh: Iterable[str] | None = None,
        nested: bool = True,
        polarity: bool = True,
        covert: Iterable[str] = (),
        believed: Iterable[str] = (),
    ) -> None:
        """Every witness, and every chain over ``witnesses`` (unless not ``nested``), comes
        to hold the fact; first-order beliefs of ``refresh`` (default: all witnesses) are
        rewritten even when unchanged, since their freshness moves.

        A ``covert`` witness is left out of the chains of the others: it holds the fact,
        and holds that each other witness does, but no other witness's view of it changes.

        Each of ``believed``, no witness, is one the ``actor`` wrongly believes saw it: the
        actor's view of it (the chain ``actor > c``) holds the fact, in the actor's own
        records; nothing of ``c``'s changes.
        """
        holders = tuple(sorted(set(witnesses)))
        hidden = set(covert) & set(holders)
        renewed = set(holders if refresh is None else refresh)
        for holder in holders:
            self.believe(
                (holder,),
                subject,
                attribute,
                value,
                mode="participated" if holder == actor else "observed",
                event=event,
                source=event.id,
                polarity=polarity,
                refresh=holder in renewed,
            )
        if not nested:
            return
        overt = [h for h in holders if h not in hidden]
        self.share(
            overt, subject, attribute, value, event, mode="observed", actor=actor, polarity=polarity
        )
        if self.rules.belief_depth < 2:
            return
        direct: list[tuple[Chain, AcquisitionMode]] = [
            ((w, other), "observed") for w in sorted(hidden) for other in overt
        ]
        if actor is not None and actor in holders:
            direct += [((actor, c), "participated") for c in sorted(set(believed) - set(holders))]
        for chain, mode in direct:
            self.b.belief(
                chain, subject, attribute, value, mode=mode, event=event, polarity=polarity
            )
        if direct:
            # a chain record written beside the slot's shared one: a later shared record
            # of the same fact must be written again, or that chain would keep this one
            self.last_shared.pop(f"{subject}|{attribute}", None)

    # -- what is said -----------------------------------------------------------------
    def truth(self, fact: Fact) -> Literal["true", "false", "unknown"]:
        """Whether a claim is true in the world as the tracker knows it."""
        held = self.world.get(f"{fact.subject}|{fact.attribute}")
        if held is None:
            return "unknown"
        return "true" if held == (fact.value, True) else "false"

    def trusts(self, listener: str, speaker: str, slot: str, value: str) -> bool:
        """Whether ``listener`` adopts what ``speaker`` tells it: ``slot`` is ``value``."""
        if self.rules.trust != "fresher":
            return self.rules.trust == "always"
        own = self.minds.get((listener,), {}).get(slot)
        if own is None or (not own.polarity and own.value != value):
            # knowing only where it is not, the listener has no belief the claim contradicts
            return True
        theirs = self.minds.get((speaker,), {}).get(slot)
        if theirs is None:
            return False
        return event_position(theirs.source) > event_position(own.source)
