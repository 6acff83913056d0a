"""The commit payload: what :meth:`StoryStore.commit` sends to the ``fabula_commit`` function.

This module is the one place that writes it; ``commit`` in ``memory/fabula.lua`` is the one
place that reads it. A turn travels in one ``FCALL`` (one round trip)::

    FCALL fabula_commit 1 <head key> <layout> <turn> <digest> <header> <turn key> <at> <records>
          <attempt>

=============  ====================================================================
argument       meaning
=============  ====================================================================
``layout``     JSON ``{name: key}`` from :func:`fabula.memory.keys.commit_layout`; the
               per-mind keys hold ``<C>`` (character) and ``<H>`` (holder chain)
``turn``       the turn number
``digest``     sha256 of the turn's content (:func:`encode_commit`); a committed turn
               re-sent with the same digest is a duplicate, with another a conflict
``header``     JSON :class:`CommitHeader`: the turn's small metadata, by column
``turn key``   the turns hash of the branch that holds this turn
               (:func:`fabula.memory.lineage.branch_for`)
``at``         write time, Unix seconds
``records``    the records' JSON, one a line (JSON has no raw newline), in header order:
               entities, events, states, beliefs, shared beliefs, developments,
               hypotheses, realised hypotheses
``attempt``    a random id of this call, not part of the digest: a call re-sent as it is
               (after ``BUSY``) keeps it, each :func:`encode_commit` draws a new one. The
               function refuses (``FABULA_FENCED``, nothing written) an attempt that
               ``fabula_fence`` marked dead in ``keys.fence(story, branch, turn)`` — a
               commit whose lost reply was settled as "not committed" (see
               :mod:`fabula.memory.settle`) — and clears that turn's marks when it commits
=============  ====================================================================

The header is columnar — each group is an object of equal-length lists, read by name
(``P.beliefs.chain[i]``), never by position — so the function decodes one small object and
no record. The function stores whole records and edits none: a development's status change
carries the development as the change leaves it, a realised hypothesis its realised record
(both computed from the records of the turn's basis, which the function checks is the
head: a turn that does not follow is refused), and each event reference names the events
hash that holds it (the branch that holds its turn). Stored records follow these rules,
which the function relies on and ``tests/memory/test_store.py`` checks:

* states, beliefs and events are stored without their default values (:func:`stored`), so
  an open state or belief has no ``valid_to``; it is closed by appending
  ``,"valid_to":<turn>`` before its final ``}``;
* a state's or belief's current record lives only in its current hash (by slot); the
  history hash holds the closed ones, each written when it is closed (so a new record is
  written once), and the ``from`` index holds every record's id by its ``valid_from``;
* a stored state or belief starts with ``{"id":"<id>"`` (``id`` is its first field), which
  is how the function finds the id of the record a new one replaces without decoding it;
  a stored entity starts with ``{"id":"<id>","kind":"<kind>"`` (how a reference's kind is
  checked); identifiers hold no quotation mark.
"""

from __future__ import annotations

import hashlib
import json
import secrets
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TypedDict

from fabula.memory.delta import DevelopmentUpdate, TurnDelta
from fabula.memory.recollection import render_event
from fabula.memory.records import Belief, Event, Memory, State, event_turn
from fabula.memory.tracking.nested import group_id, group_json, stored_shared
from fabula.memory.validate import Ref


class EntityColumns(TypedDict):
    """The new entities."""

    id: list[str]
    kind: list[str]  # checked against references to the entity in the same delta


class EventColumns(TypedDict):
    """The turn's events."""

    id: list[str]
    witnesses: list[list[str]]  # each witness keeps a first-person memory of the event
    memory: list[str]  # that memory's JSON (a Memory), as all its witnesses may keep it
    own: list[dict[str, str]]  # witness -> its own memory's JSON, where it differs


class StateColumns(TypedDict):
    """The new states of W."""

    id: list[str]
    slot: list[str]  # "subject|attribute": the slot of W it becomes current in


class BeliefColumns(TypedDict):
    """The new beliefs."""

    id: list[str]
    root: list[str]  # the holder chain's first member: whose mind it is in
    chain: list[str]  # the holder chain, "a>b"
    slot: list[str]


class SharedColumns(TypedDict):
    """The new shared beliefs: each record is appended to every member's shared log, and its
    group put in every member's table of groups (see fabula.memory.tracking.nested)."""

    id: list[str]
    gid: list[str]  # the group's id in the members' tables
    group: list[str]  # the group's members as stored in those tables (JSON)
    members: list[list[str]]


class KnownColumns(TypedDict):
    """What each character comes to know of this turn: the entities its new beliefs and
    the events it witnessed name (at turn 0, also the pack's places and cast, which are
    common knowledge). Each is copied into its own mind (``known``), the only place its
    roster is read from; a name that is no entity is skipped."""

    who: list[str]
    ids: list[list[str]]


class DevelopmentColumns(TypedDict):
    """New developments and status changes (each record: the development as it leaves it)."""

    id: list[str]
    new: list[bool]  # a new development or a status change of a stored one


class HypothesisColumns(TypedDict):
    """The new hypotheses."""

    id: list[str]


class RefColumns(TypedDict):
    """The references to resolve."""

    field: list[str]  # where in the delta the reference first appears (for the error)
    kind: list[str]  # entity, event, development, hypothesis, new_entity, new_development
    id: list[str]
    want: list[str]  # for an entity: the kind it must be ("" for any)
    where: list[str]  # for an event: the events hash of the branch holding its turn ("": none)


class CommitHeader(TypedDict):
    """The header argument of ``fabula_commit`` (see the module docstring)."""

    text: str
    scene: str | None  # the place the turn ends in
    clock: str | None  # the story's date or time of day at this turn, as written
    usage: str | None  # the model usage that made the turn (JSON), kept with it
    realised: list[str]  # hypotheses this turn realises (their records after the new ones)
    refs: RefColumns  # every reference to resolve before the first write
    entities: EntityColumns
    events: EventColumns
    states: StateColumns
    beliefs: BeliefColumns
    shared: SharedColumns
    known: KnownColumns
    devs: DevelopmentColumns
    hyps: HypothesisColumns


@dataclass(frozen=True)
class CommitCall:
    """One ``fabula_commit`` call: its keys, its arguments, and the turn's digest; ``header``
    and ``records`` are the two large arguments (what a size limit counts). ``turn``,
    ``attempt`` and ``fence`` (the keys of ``fabula_fence``: the turns hash that holds the
    turn, the turn's fence set) are what settling a lost reply needs."""

    keys: list[str]
    args: list[str | int]
    digest: str
    header: str
    records: str
    turn: int
    attempt: str
    fence: list[str]


def stored(record: State | Belief | Event) -> str:
    """A state's, belief's or event's stored JSON: without default values (a third smaller;
    an open record has no ``valid_to``), ``id`` first."""
    return record.model_dump_json(exclude_defaults=True)


def _json(value: object) -> str:
    return json.dumps(value, separators=(",", ":"))


def _known(delta: TurnDelta) -> KnownColumns:
    """By character, the entities this turn makes it know of (see :class:`KnownColumns`)."""
    known: dict[str, set[str]] = {}
    for belief in delta.beliefs:
        known.setdefault(belief.holder[0], set()).update(
            (*belief.holder, belief.subject, belief.value)
        )
    for shared in delta.shared:  # held together: each member knows of the others too
        for member in shared.group:
            known.setdefault(member, set()).update((*shared.group, shared.subject, shared.value))
    for event in delta.events:
        named = {event.actor, *event.participants, event.place}
        if event.content is not None:
            named |= {event.content.subject, event.content.value}
        for who in event.witnesses:
            known.setdefault(who, set()).update((who, *(n for n in named if n)))
    if delta.turn == 0:  # a pack's setup: its places and its cast are common knowledge
        common = {e.id for e in delta.entities if e.kind in ("place", "character")}
        for character in (e.id for e in delta.entities if e.kind == "character"):
            known.setdefault(character, set()).update((character, *common))
    holders = sorted(known)
    return {"who": holders, "ids": [sorted(x for x in known[h] if x) for h in holders]}


def encode_commit(
    delta: TurnDelta,
    refs: Sequence[Ref],
    *,
    layout: str,
    head_key: str,
    turn_key: str,
    fence_key: str,
    events_of: Callable[[int], str],
    committed_at: float,
    usage: Mapping[str, object] | None = None,
) -> CommitCall:
    """The ``fabula_commit`` call that commits ``delta`` (validated, with its ``refs``), as a
    new attempt (a fresh random ``attempt`` id); ``fence_key`` is the turn's fence set.

    ``events_of(turn)`` is the events hash of the branch that holds ``turn`` (where an event
    reference is looked up). ``usage`` (the model usage that made the turn, by role) is
    written with the turn, in the same call. The digest covers the text, scene, clock, the
    witnesses' memories and every record — the whole content of the turn, and not where it
    is committed (a branch re-sending a turn it inherited sends the same digest) nor what
    making it cost; it is taken in one pass over the header's content and the records.
    """
    shared, own = _memories(delta)
    body = _json(_header(delta, refs, events_of, usage, shared, own))
    blob = _records(delta)
    digest = _digest(delta, shared, own, blob)
    attempt = secrets.token_hex(8)  # 64 random bits: no two attempts share one
    args: list[str | int] = [
        layout,
        delta.turn,
        digest,
        body,
        turn_key,
        f"{committed_at:.3f}",
        blob,
        attempt,
    ]
    return CommitCall(
        keys=[head_key],
        args=args,
        digest=digest,
        header=body,
        records=blob,
        turn=delta.turn,
        attempt=attempt,
        fence=[turn_key, fence_key],
    )


def _header(
    delta: TurnDelta,
    refs: Sequence[Ref],
    events_of: Callable[[int], str],
    usage: Mapping[str, object] | None,
    shared: list[str],
    own: list[dict[str, str]],
) -> CommitHeader:
    """The call's header: the turn's text and columns (``shared``, ``own``: the witnesses'
    memories, from :func:`_memories`)."""
    return {
        "text": delta.text,
        "scene": delta.scene,
        "clock": delta.clock,
        "usage": None if usage is None else _json(usage),
        "realised": [h.id for h in delta.realised],
        "refs": {
            "field": [r.field for r in refs],
            "kind": [r.kind for r in refs],
            "id": [r.id for r in refs],
            "want": [r.entity_kind for r in refs],
            "where": [_events_hash(r, events_of) for r in refs],
        },
        "entities": {
            "id": [e.id for e in delta.entities],
            "kind": [e.kind for e in delta.entities],
        },
        "events": {
            "id": [ev.id for ev in delta.events],
            "witnesses": [list(ev.witnesses) for ev in delta.events],
            "memory": shared,
            "own": own,
        },
        "states": {"id": [s.id for s in delta.states], "slot": [s.slot for s in delta.states]},
        "beliefs": {
            "id": [b.id for b in delta.beliefs],
            "root": [b.holder[0] for b in delta.beliefs],
            "chain": [b.chain for b in delta.beliefs],
            "slot": [b.slot for b in delta.beliefs],
        },
        "shared": {
            "id": [s.id for s in delta.shared],
            "gid": [group_id(s.group) for s in delta.shared],
            "group": [group_json(s.group) for s in delta.shared],
            "members": [list(s.group) for s in delta.shared],
        },
        "known": _known(delta),
        "devs": {
            "id": [d.id for d in delta.developments],
            "new": [d.is_new for d in delta.developments],
        },
        "hyps": {"id": [h.id for h in delta.hypotheses]},
    }


def _records(delta: TurnDelta) -> str:
    """Every record the turn writes, one stored JSON a line, in the header's order."""
    records: list[str] = [e.model_dump_json() for e in delta.entities]
    records += [stored(ev) for ev in delta.events]
    records += [stored(s) for s in delta.states]
    records += [stored(b) for b in delta.beliefs]
    records += [stored_shared(s) for s in delta.shared]
    records += [_development_json(d) for d in delta.developments]
    records += [h.model_dump_json() for h in delta.hypotheses]
    records += [h.model_dump_json() for h in delta.realised]
    return "\n".join(records)


def _digest(delta: TurnDelta, shared: list[str], own: list[dict[str, str]], blob: str) -> str:
    """The turn's digest: its text, scene, clock, memories and records, in one pass."""
    content = [delta.text, delta.scene, delta.clock, shared, own]
    sha = hashlib.sha256(_json(content).encode())
    sha.update(b"\x00" + blob.encode())
    return sha.hexdigest()


def _events_hash(ref: Ref, events_of: Callable[[int], str]) -> str:
    if ref.kind != "event":
        return ""
    try:
        return events_of(event_turn(ref.id))
    except ValueError:  # not an event id: the function reports it unknown
        return ""


def _memories(delta: TurnDelta) -> tuple[list[str], list[dict[str, str]]]:
    """The first-person memory each event's witnesses keep, by event: what they all
    witnessed, and what a witness alone witnessed where that is more — never a raw span.
    The delta's recollections were read from the text when it was built
    (:meth:`~fabula.memory.delta.DeltaBuilder.build`), before the commit; an event they do
    not cover is remembered as its plain rendering."""
    entities = {e.id: e for e in delta.entities}
    quotes, own_quotes = delta.recollections, delta.own_recollections

    def memory(ev: Event, quote: str) -> str:
        return Memory(turn=ev.turn, event=ev.id, kind=ev.kind, quote=quote).model_dump_json()

    shared = [memory(ev, quotes.get(ev.id) or render_event(ev, entities)) for ev in delta.events]
    own = [
        {w: memory(ev, q) for w, q in own_quotes.get(ev.id, {}).items() if w in ev.witnesses}
        for ev in delta.events
    ]
    return shared, own


def _development_json(update: DevelopmentUpdate) -> str:
    """The development as ``update`` leaves it (validation made sure there is one)."""
    record = update.record
    if record is None:  # pragma: no cover - validate_delta refuses it first
        raise ValueError(f"development update {update.id!r} carries no development")
    return record.model_dump_json()
