"""Access tracking: who is where, who witnessed what, who was told what, and what every mind
(and every mind's model of other minds) comes to believe.

The tracker is independent of how a turn's text was read: it takes typed
:class:`StoryAction` values (from the controlled-English extractor, or later from a model),
the prior view read from the store (W, the relevant part of B, the entities), and writes
entities, events with their witnesses, world states and belief records into a
:class:`~fabula.memory.delta.DeltaBuilder`. Story time inside a turn is the event order:
``e<turn>.<seq>`` compares as ``(turn, seq)``.

The rules of knowledge (a world setting, :class:`WorldRules`, stored with the story):

* Whoever is in a place witnesses what is done there while they are in it: entries, exits,
  placements and moves of objects, public claims, utterances.
* A bare statement (``The O is in the C.``) is made in the current scene: the place of the
  most recent entry.
* ``open_containers``: entering a place reveals where every object in it is (to the
  newcomer, and every one present sees that the newcomer has seen it). Closed containers
  (the default) reveal only what lies in the open; what is inside is learned by witnessing
  it being put there, or by being told.
* ``A saw that <clause>``: the clause is true in the world, and only the named see it.
* A private telling reaches only its listener; a public claim (or an utterance that is a
  clause) reaches everyone present. What a speaker says never changes the speaker's own
  belief.
* Whether a listener adopts what it is told is the ``trust`` policy: ``always``, ``never``,
  or ``fresher`` (the default): the listener adopts it when it has no belief of its own on
  that slot (knowing only where a thing is *not* counts as none, unless the claim is that
  very place), or when the speaker's information is fresher than its own. A belief's
  *freshness* is the moment its holder last had first-hand access to the slot: the event it
  was observed at, refreshed when the holder leaves the place where it could see the object
  (open containers only); a told belief inherits the speaker's freshness, which the telling
  event records in its ``causes``. Comparisons use the true moments (the exit order is
  known to all, as Hi-ToM states it).
* Nested beliefs: a chain ``(a, b, …)`` ("a thinks b thinks …") changes only through what
  its holders witnessed together or communicated. For an observation (an entry, a move, a
  bare statement, a sight) every chain over the witnesses adopts the fact. A communication
  is a relation between the speaker and each listener: when a listener adopts the claim
  (trust policy), every chain made of those two adopts it (the listener takes the claim as
  the speaker's belief, the speaker expects the uptake: the policy's inputs are public),
  except the speaker's own belief. Whether a listener believed what it heard cannot be
  witnessed, so a bystander's model of another listener does not change with a claim.

Cost, bounded: chains are the sequences of distinct-adjacent holders over an event's
witnesses up to ``belief_depth`` ``d``; with ``n`` witnesses that is ``n·Σ(n−1)^k`` for
``k < d`` (n=2: 2d; n=3, d=4: 45; n=5, d=4: 425). Nested chains are materialised only for
facts about objects (where they are, their attributes), and a nested record is written only
when the chain's value changes; first-order records are also written when a holder observes
a fact again (its freshness moves). Facts about characters (where they are, what they feel)
are held first-order only. So an event costs at most ``chains(n)`` writes per fact it
reveals, and usually far fewer.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from fabula.memory.delta import DeltaBuilder
from fabula.memory.records import AcquisitionMode, Entity, EntityKind, Event, Fact, State, slug
from fabula.memory.validate import MAX_CHAIN

__all__ = [
    "ActionKind",
    "Chain",
    "Clause",
    "Knowledge",
    "PriorView",
    "StoryAction",
    "TrustPolicy",
    "WorldRules",
    "chains_over",
    "event_time",
    "initial_scene",
    "touched_slots",
    "track",
]

TrustPolicy = Literal["fresher", "always", "never"]
Chain = tuple[str, ...]
ActionKind = Literal[
    "enter", "exit", "go", "locate", "stay", "move", "put", "take", "give", "drop", "state",
    "perceive", "see", "tell", "claim", "say", "feel", "think", "narration",
    "search", "ask", "inform",
]  # fmt: skip
CONTAINER = "container"  # Entity.attributes["role"] of an entity things are put in


class WorldRules(BaseModel):
    """A world's rules of knowledge, kept in the story's meta (``StoryStore.create(rules=…)``)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    open_containers: bool = False
    trust: TrustPolicy = "fresher"
    belief_depth: int = Field(default=4, ge=1, le=MAX_CHAIN)

    @classmethod
    def load(cls, stored: Mapping[str, object]) -> WorldRules:
        """The rules from ``store.rules()`` (``{}`` gives the defaults)."""
        return cls.model_validate(dict(stored))


class Clause(BaseModel):
    """A proposition as written: ``subject``'s ``attribute`` is ``value``.

    ``attribute == "location"`` means ``subject`` is in ``value`` (a container or place).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    subject: str
    attribute: str
    value: str


class StoryAction(BaseModel):
    """One extracted action, names as written, with its span in the turn's text.

    ``actors`` do it; ``place`` for entries, exits and stays; ``obj`` the object acted on;
    ``target`` the container (put, move) or the recipient (give); ``listeners`` of a private
    telling; ``clause`` what is stated, seen, told or claimed; ``utterance`` the words of a
    dialogue line (or what was seen, for ``see``); ``verb`` for feelings.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: ActionKind
    start: int = Field(ge=0)
    end: int = Field(ge=0)
    actors: tuple[str, ...] = ()
    place: str | None = None
    obj: str | None = None
    target: str | None = None
    listeners: tuple[str, ...] = ()
    clause: Clause | None = None
    utterance: str | None = None
    verb: str | None = None


@dataclass(frozen=True)
class Knowledge:
    """What one holder chain holds about one slot; ``source`` is the event id as of which the
    information is current (its freshness), None when it has no first-hand origin."""

    value: str
    polarity: bool = True
    source: str | None = None


@dataclass
class PriorView:
    """What the tracker needs from the store before a turn: entities, W, the relevant B."""

    entities: dict[str, Entity]
    world: dict[str, State]
    beliefs: dict[Chain, dict[str, Knowledge]] = field(default_factory=dict)
    scene: str | None = None


def event_time(event_id: str | None) -> tuple[int, int]:
    """``"e12.3"`` → ``(12, 3)``; None (no source) is earlier than every event."""
    if not event_id:
        return (-1, -1)
    turn, _, seq = event_id[1:].partition(".")
    return (int(turn), int(seq))


@lru_cache(maxsize=256)
def chains_over(holders: tuple[str, ...], depth: int) -> tuple[Chain, ...]:
    """Every chain of ``holders`` with distinct adjacent members, length 1..``depth``."""
    out: list[Chain] = [(h,) for h in holders]
    frontier = list(out)
    for _ in range(depth - 1):
        frontier = [(*c, h) for c in frontier for h in holders if h != c[-1]]
        out.extend(frontier)
    return tuple(out)


def initial_scene(world: Mapping[str, State], entities: Mapping[str, Entity]) -> str | None:
    """A fallback scene from W alone: the place of the latest entry still standing."""
    best: tuple[tuple[int, int], str] | None = None
    for state in world.values():
        if state.attribute != "location" or not state.polarity or state.event is None:
            continue
        subject = entities.get(state.subject)
        place = entities.get(state.value)
        if subject is None or subject.kind != "character" or place is None:
            continue
        if place.kind == "place" and (best is None or event_time(state.event) > best[0]):
            best = (event_time(state.event), state.value)
    return None if best is None else best[1]


def _sid(name: str | None) -> str | None:
    try:
        return slug(name) if name else None
    except ValueError:
        return None


def touched_slots(actions: Sequence[StoryAction], prior: PriorView) -> set[str]:
    """Object slots this turn's actions may change in some mind (what the builder reads of B).

    A superset is harmless (a read too many); a slot missed only costs a redundant write.
    """
    slots: set[str] = set()
    places: set[str] = set()
    for action in actions:
        for name in (action.obj, action.target):
            sid = _sid(name)
            if sid:
                slots.add(f"{sid}|location")
        if action.kind == "search" and action.target:
            box = _sid(action.target)
            slots.update(
                s.slot for s in prior.world.values() if s.attribute == "location" and s.value == box
            )
        if action.clause is not None:
            sid = _sid(action.clause.subject)
            attr = action.clause.attribute
            if sid:
                slots.add(f"{sid}|{attr}")
        pid = _sid(action.place)
        if pid:
            places.add(pid)
    if places:
        located = {
            s.subject: s.value
            for s in prior.world.values()
            if s.attribute == "location" and s.polarity
        }
        for subject, where in located.items():
            if where in places or located.get(where) in places:
                slots.add(f"{subject}|location")
    return slots


def track(
    rules: WorldRules,
    prior: PriorView,
    actions: Iterable[StoryAction],
    builder: DeltaBuilder,
) -> None:
    """Apply ``actions`` in order: entities, events, states and beliefs into ``builder``.

    The scene the turn ends in (the place of the latest entry) is recorded with the delta,
    so the next turn starts there without reading back through the event log.
    """
    tracker = _Tracker(rules, prior, builder)
    for action in actions:
        tracker.apply(action)
    builder.scene = tracker.scene


class _Tracker:
    def __init__(self, rules: WorldRules, prior: PriorView, builder: DeltaBuilder) -> None:
        self.rules = rules
        self.b = builder
        self.entities: dict[str, Entity] = dict(prior.entities)
        self.world: dict[str, tuple[str, bool]] = {
            slot: (s.value, s.polarity) for slot, s in prior.world.items()
        }
        self.minds: dict[Chain, dict[str, Knowledge]] = {
            chain: dict(slots) for chain, slots in prior.beliefs.items()
        }
        self.scene = prior.scene
        self.characters = sorted(i for i, e in self.entities.items() if e.kind == "character")

    # -- entities and places ----------------------------------------------------------
    def entity(self, kind: EntityKind, name: str, *, container: bool = False) -> str:
        sid = slug(name)
        if sid not in self.entities:
            attributes = {"role": CONTAINER} if container else {}
            self.entities[sid] = self.b.entity(kind, name, attributes=attributes)
            if kind == "character":
                self.characters = sorted({*self.characters, sid})
        return sid

    def is_container(self, sid: str) -> bool:
        entity = self.entities.get(sid)
        return entity is not None and entity.attributes.get("role") == CONTAINER

    def kind(self, sid: str) -> EntityKind | None:
        entity = self.entities.get(sid)
        return None if entity is None else entity.kind

    def where(self, sid: str) -> str | None:
        value = self.world.get(f"{sid}|location")
        return value[0] if value is not None and value[1] else None

    def place_of(self, sid: str) -> str | None:
        """Where ``sid`` ultimately is: its location chain followed (through containers and
        holders) to an entity that is not itself located."""
        current = self.where(sid)
        for _ in range(MAX_CHAIN):
            if current is None:
                return None
            above = self.where(current)
            if above is None or self.kind(current) == "place":
                return current
            current = above
        return current

    def present(self, place: str | None) -> list[str]:
        if place is None:
            return []
        return [c for c in self.characters if self.where(c) == place]

    def visible(self, place: str) -> list[str]:
        """Objects whose location a newcomer to ``place`` sees (not the fixtures)."""
        out = []
        for slot, (value, polarity) in self.world.items():
            subject, _, attribute = slot.partition("|")
            if attribute != "location" or not polarity or self.kind(subject) != "object":
                continue
            if value == place:
                if not self.is_container(subject):
                    out.append(subject)
            elif self.where(value) == place and (
                self.rules.open_containers or self.kind(value) == "character"
            ):
                out.append(subject)
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
        """Write a belief when the chain's value changes, or (``refresh``) its freshness.

        ``source`` is the event as of which the information is current (None: no first-hand
        origin, e.g. a speaker who passes on what it never saw)."""
        slot = f"{subject}|{attribute}"
        mind = self.minds.setdefault(chain, {})
        held = mind.get(slot)
        changed = held is None or (held.value, held.polarity) != (value, polarity)
        if not changed and not (refresh and len(chain) == 1):
            return
        mind[slot] = Knowledge(value, polarity, source)
        self.b.belief(
            chain, subject, attribute, value, mode=mode, event=event, polarity=polarity,
            speaker=speaker,
        )  # fmt: skip

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
    ) -> None:
        """Every chain over ``witnesses`` comes to hold the fact (first order only if not
        ``nested``); first-order beliefs of ``refresh`` (default: all witnesses) are
        rewritten even when unchanged, since their freshness moves."""
        holders = tuple(sorted(set(witnesses)))
        renewed = set(holders if refresh is None else refresh)
        depth = self.rules.belief_depth if nested else 1
        for chain in chains_over(holders, depth):
            self.believe(
                chain, subject, attribute, value,
                mode="participated" if chain[0] == actor else "observed",
                event=event, source=event.id, polarity=polarity, refresh=chain[0] in renewed,
            )  # fmt: skip

    # -- actions ----------------------------------------------------------------------
    def apply(self, action: StoryAction) -> None:
        names = [*action.actors, *action.listeners, action.place, action.obj, action.target]
        if action.clause is not None:
            names.append(action.clause.subject)
        if any(n is not None and _sid(n) is None for n in names):
            # a name that makes no identifier: the sentence is kept as narration
            self._on_narration(action)
            return
        getattr(self, f"_on_{action.kind}")(action)

    def _on_narration(self, action: StoryAction) -> None:
        self.event("narration", action)

    def _enter(self, action: StoryAction, actors: Sequence[str], place: str, kind: str) -> None:
        witnesses = sorted({*self.present(place), *actors})
        ev = self.event(kind, action, actor=_one(actors), participants=actors, place=place,
                        witnesses=witnesses)  # fmt: skip
        for who in actors:
            self.set_world(who, "location", place, ev)
        self.scene = place
        for w in witnesses:
            for who in actors:
                self.believe((w,), who, "location", place, event=ev, source=ev.id, refresh=True,
                             mode="participated" if w == who else "observed")  # fmt: skip
        # a newcomer sees who is already there
        for who in actors:
            for other in witnesses:
                if other not in actors:
                    self.believe((who,), other, "location", place, event=ev, source=ev.id,
                                 mode="observed")  # fmt: skip
        for obj in self.visible(place):
            where = self.where(obj)
            assert where is not None
            self.observe(witnesses, obj, "location", where, ev, refresh=actors)

    def _on_enter(self, action: StoryAction) -> None:
        actors = [self.entity("character", a) for a in action.actors]
        place = self.entity("place", action.place or "somewhere")
        self._enter(action, actors, place, "enter")

    def _on_locate(self, action: StoryAction) -> None:
        actors = [self.entity("character", a) for a in action.actors]
        place = self.entity("place", action.place or "somewhere")
        self._enter(action, actors, place, "locate")

    def _exit(self, action: StoryAction, who: str, place: str) -> None:
        witnesses = sorted({*self.present(place), who})
        ev = self.event("exit", action, actor=who, participants=(who,), place=place,
                        witnesses=witnesses)  # fmt: skip
        if self.rules.open_containers:
            # the leaver's access to what it could see ends now: its freshness moves here
            for obj in self.visible(place):
                where = self.where(obj)
                assert where is not None
                self.believe((who,), obj, "location", where, mode="observed", event=ev,
                             source=ev.id, refresh=True)  # fmt: skip
        self.set_world(who, "location", place, ev, polarity=False)
        for w in witnesses:
            self.believe((w,), who, "location", place, polarity=False, event=ev, source=ev.id,
                         refresh=True,
                         mode="participated" if w == who else "observed")  # fmt: skip

    def _on_exit(self, action: StoryAction) -> None:
        who = self.entity("character", action.actors[0])
        place = self.entity("place", action.place or "somewhere")
        self._exit(action, who, place)

    def _on_go(self, action: StoryAction) -> None:
        who = self.entity("character", action.actors[0])
        place = self.entity("place", action.place or "somewhere")
        old = self.where(who)
        if old is not None and old != place and self.kind(old) == "place":
            self._exit(action, who, old)
        self._enter(action, [who], place, "enter")

    def _on_stay(self, action: StoryAction) -> None:
        who = self.entity("character", action.actors[0])
        place = self.entity("place", action.place or "somewhere")
        if self.where(who) != place:
            self._enter(action, [who], place, "enter")
            return
        self.event("stay", action, actor=who, participants=(who,), place=place,
                   witnesses=self.present(place))  # fmt: skip

    def _place_object(self, action: StoryAction, kind: str, who: str, obj: str, to: str) -> None:
        place = self.place_of(who)
        witnesses = sorted({*self.present(place), who})
        content = Fact(subject=obj, attribute="location", value=to, truth="true")
        ev = self.event(kind, action, actor=who, participants=_unique(who, obj, to), place=place,
                        content=content, witnesses=witnesses)  # fmt: skip
        if place is not None and self.where(to) is None and self.kind(to) == "object":
            self.set_world(to, "location", place, ev)
        self.set_world(obj, "location", to, ev)
        self.observe(witnesses, obj, "location", to, ev, actor=who)

    def _on_move(self, action: StoryAction) -> None:
        who = self.entity("character", action.actors[0])
        obj = self.entity("object", action.obj or "thing")
        to = self.entity("object", action.target or "container", container=True)
        self._place_object(action, action.kind, who, obj, to)

    _on_put = _on_move

    def _on_take(self, action: StoryAction) -> None:
        who = self.entity("character", action.actors[0])
        obj = self.entity("object", action.obj or "thing")
        self._place_object(action, "take", who, obj, who)

    def _on_give(self, action: StoryAction) -> None:
        who = self.entity("character", action.actors[0])
        obj = self.entity("object", action.obj or "thing")
        to = self.entity("character", action.target or "someone")
        self._place_object(action, "give", who, obj, to)

    def _on_drop(self, action: StoryAction) -> None:
        who = self.entity("character", action.actors[0])
        obj = self.entity("object", action.obj or "thing")
        place = self.place_of(who)
        if place is None:
            self.event("drop", action, actor=who, participants=(who, obj), witnesses=(who,))
            return
        self._place_object(action, "drop", who, obj, place)

    def _fact(self, clause: Clause, place: str | None) -> Fact:
        """The clause as a fact over identifiers (a location's container is introduced)."""
        subject = self.entity("object", clause.subject)
        if clause.attribute != "location":
            return Fact(subject=subject, attribute=clause.attribute, value=clause.value)
        target = slug(clause.value)
        if target not in self.entities:
            target = self.entity("object", clause.value, container=True)
        return Fact(subject=subject, attribute="location", value=target)

    def _settle(self, fact: Fact, place: str | None, ev: Event) -> None:
        """Make a stated or seen fact true in W (placing an unplaced container in ``place``)."""
        if (
            fact.attribute == "location"
            and place is not None
            and self.where(fact.value) is None
            and self.kind(fact.value) == "object"
        ):
            self.set_world(fact.value, "location", place, ev)
        self.set_world(fact.subject, fact.attribute, fact.value, ev)

    def _on_state(self, action: StoryAction) -> None:
        assert action.clause is not None
        place = self.scene
        fact = self._fact(action.clause, place).model_copy(update={"truth": "true"})
        witnesses = self.present(place)
        ev = self.event("state", action, participants=(fact.subject,), place=place,
                        content=fact, witnesses=witnesses)  # fmt: skip
        self._settle(fact, place, ev)
        self.observe(witnesses, fact.subject, fact.attribute, fact.value, ev)

    def _on_perceive(self, action: StoryAction) -> None:
        assert action.clause is not None
        seers = [self.entity("character", a) for a in action.actors]
        place = self.place_of(seers[0])
        fact = self._fact(action.clause, place).model_copy(update={"truth": "true"})
        ev = self.event("observe", action, actor=_one(seers), participants=seers, place=place,
                        content=fact, witnesses=seers)  # fmt: skip
        self._settle(fact, place, ev)
        self.observe(seers, fact.subject, fact.attribute, fact.value, ev)

    def _on_see(self, action: StoryAction) -> None:
        who = self.entity("character", action.actors[0])
        place = self.place_of(who)
        self.event("see", action, actor=who, participants=(who,), place=place,
                   witnesses={*self.present(place), who})  # fmt: skip

    def known(self, name: str | None) -> str | None:
        """The id of an entity already in the story, else None (nothing is introduced)."""
        sid = _sid(name)
        return sid if sid is not None and sid in self.entities else None

    def _on_feel(self, action: StoryAction) -> None:
        # what a feeling is about may be a place, a container or an object: it is not
        # introduced here, so that a later, more telling mention decides its kind
        who = self.entity("character", action.actors[0])
        obj = self.known(action.obj) or _sid(action.obj) or "thing"
        verb = action.verb or "likes"
        attribute = f"feeling about {obj}"
        content = Fact(subject=who, attribute=attribute, value=verb, truth="true")
        witnesses = sorted({*self.present(self.scene), who})
        ev = self.event("feel", action, actor=who, participants=_unique(who, *self._known(obj)),
                        place=self.scene,
                        content=content, witnesses=witnesses)  # fmt: skip
        self.set_world(who, attribute, verb, ev)
        self.observe(witnesses, who, attribute, verb, ev, actor=who, nested=False)

    def _known(self, sid: str | None) -> tuple[str, ...]:
        return (sid,) if sid is not None and sid in self.entities else ()

    def _on_think(self, action: StoryAction) -> None:
        who = self.entity("character", action.actors[0])
        topic = self.known(action.obj)
        self.event("think", action, actor=who, participants=_unique(who, *self._known(topic)),
                   place=self.place_of(who), witnesses=(who,))  # fmt: skip

    def _on_search(self, action: StoryAction) -> None:
        """Searching a container shows everyone present what is in it — and what is not:
        a witness who believed an object was there learns it is not."""
        who = self.entity("character", action.actors[0])
        box = self.known(action.target) or self.entity(
            "object", action.target or "container", container=True
        )
        place = self.place_of(who)
        witnesses = sorted({*self.present(place), who})
        inside = sorted(
            slot.partition("|")[0]
            for slot, (value, polarity) in self.world.items()
            if slot.endswith("|location") and polarity and value == box
        )
        missing = sorted(
            {
                slot.partition("|")[0]
                for chain, held in self.minds.items()
                if len(chain) == 1 and chain[0] in witnesses
                for slot, k in held.items()
                if slot.endswith("|location") and k.polarity and k.value == box
            }
            - set(inside)
        )
        ev = self.event("search", action, actor=who, participants=_unique(who, box, *inside),
                        place=place, witnesses=witnesses)  # fmt: skip
        for obj in inside:
            self.observe(witnesses, obj, "location", box, ev, actor=who)
        slots = [f"{obj}|location" for obj in missing]
        for chain in chains_over(tuple(witnesses), self.rules.belief_depth):
            for obj, slot in zip(missing, slots, strict=True):
                held = self.minds.get(chain, {}).get(slot)
                # only a chain that had it there (or had nothing) learns it is not there;
                # one that believes it is elsewhere keeps that belief
                if held is None or (held.value == box and held.polarity):
                    self.believe(chain, obj, "location", box, polarity=False, event=ev,
                                 mode="participated" if chain[0] == who else "observed",
                                 source=ev.id)  # fmt: skip

    def _on_ask(self, action: StoryAction) -> None:
        """A question is heard by everyone present; it changes no belief."""
        who = self.entity("character", action.actors[0])
        listener = self.entity("character", action.listeners[0])
        obj = self.known(action.obj) or self.entity("object", action.obj or "thing")
        place = self.place_of(who)
        self.event("ask", action, actor=who, participants=_unique(who, listener, obj),
                   place=place, witnesses={*self.present(place), who, listener})  # fmt: skip

    def _on_inform(self, action: StoryAction) -> None:
        """``A told B that …`` out loud: a telling everyone present hears."""
        speaker = self.entity("character", action.actors[0])
        self._communicate(action, "inform", speaker, (), private=False)

    def _on_tell(self, action: StoryAction) -> None:
        speaker = self.entity("character", action.actors[0])
        listeners = [self.entity("character", n) for n in action.listeners]
        self._communicate(action, "tell", speaker, listeners, private=True)

    def _on_claim(self, action: StoryAction) -> None:
        speaker = self.entity("character", action.actors[0])
        self._communicate(action, "claim", speaker, (), private=False)

    def _on_say(self, action: StoryAction) -> None:
        speaker = self.entity("character", action.actors[0])
        if action.clause is not None:
            self._communicate(action, "say", speaker, (), private=False)
            return
        place = self.place_of(speaker)
        self.event("say", action, actor=speaker, participants=(speaker,), place=place,
                   witnesses={*self.present(place), speaker})  # fmt: skip

    # -- communication ----------------------------------------------------------------
    def _truth(self, fact: Fact) -> Literal["true", "false", "unknown"]:
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
        return event_time(theirs.source) > event_time(own.source)

    def _communicate(
        self, action: StoryAction, kind: str, speaker: str, listeners: Sequence[str], *,
        private: bool,
    ) -> None:  # fmt: skip
        assert action.clause is not None
        place = self.place_of(speaker)
        fact = self._fact(action.clause, place)
        fact = fact.model_copy(update={"truth": self._truth(fact)})
        if private:
            audience = sorted({speaker, *listeners})
        else:
            audience = sorted({*self.present(place), speaker})
            listeners = [h for h in audience if h != speaker]
        listeners = sorted(set(listeners) - {speaker})
        slot = f"{fact.subject}|{fact.attribute}"
        spoken = self.minds.get((speaker,), {}).get(slot)
        source = spoken.source if spoken is not None else None
        ev = self.event(
            kind, action, actor=speaker, participants=_unique(speaker, *listeners, fact.subject),
            place=place, content=fact, witnesses=audience,
            private_to=listeners if private else (), causes=(source,) if source else (),
        )  # fmt: skip
        told: AcquisitionMode = "told_private" if private else "told_public"
        for listener in listeners:
            if not self.trusts(listener, speaker, slot, fact.value):
                continue
            # the listener adopts the claim and takes it as the speaker's own belief; the
            # speaker expects that uptake (the trust rule's inputs are public)
            for chain in chains_over((speaker, listener), self.rules.belief_depth):
                if chain == (speaker,):
                    continue  # what a speaker says never changes its own belief
                self.believe(
                    chain, fact.subject, fact.attribute, fact.value, event=ev, speaker=speaker,
                    mode="participated" if chain[0] == speaker else told,
                    source=source if len(chain) == 1 else None, refresh=True,
                )  # fmt: skip


def _one(items: Sequence[str]) -> str | None:
    return items[0] if len(items) == 1 else None


def _unique(*items: str) -> tuple[str, ...]:
    return tuple(dict.fromkeys(items))
