"""Nested beliefs, kept by group: what a chain "a thinks b thinks …" holds, read on demand.

The rules (:mod:`fabula.memory.rules`) change a nested chain only through what all of its
holders witnessed together or communicated: an observation reaches every chain over its
witnesses, a telling every chain over its speaker and listener. A chain of two or more
holders therefore changes exactly when a fact reaches a *group* that contains all of its
holders, and what it holds depends on the set of its holders alone. Writing every chain
over the witnesses, as Fabula once did, cost N·(N−1)^(depth−1) records per fact for N
witnesses (a 20-character pack: a 47 MB turn; 100: 23 GB).

So a fact that reaches a group is written once, as a :class:`SharedBelief` naming the group
(one record per fact, whatever the group's size), and the commit appends it to each
member's own keyspace — the member's *shared log* (a list, in story order) and its table of
groups (group id → members, each group stored once per member however often it recurs).
A chain's view is computed on read from its first holder's log alone
(:func:`fold`): every record whose group holds all of the chain's holders, in order, each
taken unless the chain already holds that value (a retraction only where the chain held
the value or nothing) — the very updates the tracker used to write chain by chain, with
the same result, record for record: value, polarity, mode, event, speaker, turn. A
character's own nested chains are read through its own Redis user, from its own keyspace.

The cost of a fact is now one record in the delta and, in Redis, one entry per member:
linear in the witnesses. A chain's read is linear in its first holder's log.

Nested beliefs written directly as chain records (a delta may still carry them; stories
made before this layout hold them) are read too: a chain's view merges its own records
with what its groups give it, the later record of a slot winning (:func:`merged`).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping, Sequence

from pydantic import TypeAdapter

from fabula.memory.records import Belief, SharedBelief

_ADAPTER = TypeAdapter(list[SharedBelief])
_CACHE: dict[str, SharedBelief] = {}
_CACHE_LIMIT = 200_000


def group_id(group: Sequence[str]) -> str:
    """The id a group is stored under in each member's table: a digest of its members."""
    return hashlib.sha1(",".join(group).encode()).hexdigest()[:16]


def group_json(group: Sequence[str]) -> str:
    """A group's members as stored in a member's table of groups."""
    return json.dumps(list(group), separators=(",", ":"))


def stored_shared(record: SharedBelief) -> str:
    """A shared belief as stored in a member's log: without defaults and without its members,
    which the log's table of groups holds under ``gid``; ``id`` first."""
    body = record.model_dump_json(exclude_defaults=True, exclude={"group"})
    return body[:-1] + f',"gid":"{group_id(record.group)}"}}'


def parse_shared(lines: Sequence[str], groups: Mapping[str, str]) -> list[SharedBelief]:
    """A shared log's entries as records, their groups from the log's table of groups.

    Each distinct entry is validated once (entries are immutable, and a group id names
    one group of members). An entry whose group is missing is skipped.
    """
    missing: list[str] = []
    rows: list[dict[str, object]] = []
    for line in lines:
        if line in _CACHE:
            continue
        row = json.loads(line)
        members = groups.get(str(row.pop("gid", "")))
        if members is None:
            continue
        row["group"] = json.loads(members)
        missing.append(line)
        rows.append(row)
    if rows:
        if len(_CACHE) + len(rows) > _CACHE_LIMIT:
            _CACHE.clear()
        _CACHE.update(zip(missing, _ADAPTER.validate_python(rows), strict=True))
    return [_CACHE[line] for line in lines if line in _CACHE]


def held_chain(chain: Sequence[str]) -> bool:
    """Whether ``chain`` is a nested chain a group can reach: two or more holders, no holder
    twice in a row (the rules' chains; a longer one than a record's depth is not held)."""
    return len(chain) >= 2 and all(chain[i] != chain[i - 1] for i in range(1, len(chain)))


def _as_belief(record: SharedBelief, chain: tuple[str, ...], valid_to: int | None = None) -> Belief:
    return Belief(
        id=record.id,
        holder=chain,
        subject=record.subject,
        attribute=record.attribute,
        value=record.value,
        polarity=record.polarity,
        mode="participated" if chain[0] == record.actor else record.mode,
        event=record.event,
        speaker=record.speaker,
        valid_from=record.valid_from,
        valid_to=valid_to,
    )


_KEEP = -1
"""A held entry's ``valid_to`` when nothing closed it: a direct record keeps its own."""


def fold(
    chain: Sequence[str],
    records: Iterable[SharedBelief | Belief],
    as_of: int | None = None,
    *,
    history: bool = False,
) -> dict[str, list[Belief]]:
    """What ``chain`` holds by slot, from its first holder's shared log (``records``, in
    story order), as of turn ``as_of`` (None: now).

    ``records`` may also hold the chain's own :class:`Belief` records (written directly),
    in their place in story order: each is taken as it is. Each slot maps to the chain's
    record current at ``as_of`` (its ``valid_to`` the turn a later record replaced it, if
    one did), or, with ``history``, to every record the chain held on it, oldest first.

    The walk keeps each slot's records as they are, with the turn that closed each, and
    builds a :class:`Belief` only for what it returns: a long log read for many chains
    (the minds page reads every chain of every character) validates a record per slot,
    not one per record taken.
    """
    holder = tuple(chain)
    members = set(holder)
    # slot -> [(record, the turn that closed it or _KEEP)], oldest first
    out: dict[str, list[tuple[SharedBelief | Belief, int]]] = {}
    # past as_of a record only closes what the slot held at as_of (the first that would
    # change it: until then the slot holds that): the slots whose closing turn is known
    closed: set[str] = set()
    for record in records:
        slot = record.slot
        if not _taken(record, holder, members, out.get(slot)):
            continue
        if as_of is not None and record.valid_from > as_of:
            held = out.get(slot)
            if held and slot not in closed:
                held[-1] = (held[-1][0], record.valid_from)
                closed.add(slot)
            continue
        held = out.setdefault(slot, [])
        if held and not history:
            held[-1] = (record, _KEEP)
        else:
            if held:
                held[-1] = (held[-1][0], record.valid_from)
            held.append((record, _KEEP))
    return {
        slot: [_held(record, holder, valid_to) for record, valid_to in entries]
        for slot, entries in out.items()
    }


def _taken(
    record: SharedBelief | Belief,
    holder: tuple[str, ...],
    members: set[str],
    held: list[tuple[SharedBelief | Belief, int]] | None,
) -> bool:
    """Whether the chain ``holder`` takes ``record`` on a slot that so far ``held`` those
    records: its own direct record; a shared one its group reaches that changes what the
    slot holds (a retraction only of the value it holds)."""
    if isinstance(record, Belief):
        return record.holder == holder
    if len(holder) > record.depth or not members.issubset(record.group):
        return False
    now = held[-1][0] if held else None
    if record.retract:
        return now is None or (now.value == record.value and now.polarity)
    return now is None or (now.value, now.polarity) != (record.value, record.polarity)


def _held(record: SharedBelief | Belief, holder: tuple[str, ...], valid_to: int) -> Belief:
    if isinstance(record, Belief):
        return record if valid_to == _KEEP else record.model_copy(update={"valid_to": valid_to})
    return _as_belief(record, holder, None if valid_to == _KEEP else valid_to)


def merged(
    chain: Sequence[str],
    shared: Sequence[SharedBelief],
    own: Sequence[Belief],
    as_of: int | None = None,
    *,
    history: bool = False,
) -> dict[str, list[Belief]]:
    """:func:`fold` over a chain's shared log and its own records, in story order (by turn;
    within a turn by the event each was acquired at, then a chain's own records first): what
    its projection returns."""
    if not own:
        return fold(chain, shared, as_of, history=history)
    stream: list[tuple[tuple[int, int, int, int], SharedBelief | Belief]] = [
        ((b.valid_from, _moment(b.event), 0, _number(b.id)), b) for b in own
    ]
    stream += [((s.valid_from, _moment(s.event), 1, _number(s.id)), s) for s in shared]
    stream.sort(key=lambda item: item[0])
    return fold(chain, [r for _, r in stream], as_of, history=history)


def _moment(event: str) -> int:
    """An event's place in its turn (``"e3.7"`` → 7; 0 for an id of another shape)."""
    try:
        return int(event.partition(".")[2])
    except ValueError:
        return 0


def _number(record_id: str) -> int:
    try:
        return int(record_id.partition(".")[2])
    except ValueError:
        return 0
