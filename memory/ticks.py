"""A tick's commit: its scenes, consecutive turns of a branch, written all or none.

In a story run in ticks (:mod:`fabula.graph.ticks`), every place with characters plays its
own scene in the same span of story time, and each scene's accepted text is one turn of the
branch (scene ``k`` of a tick that starts after turn ``h`` is turn ``h + 1 + k``). The
tick is committed by one call of the ``fabula_commit_tick`` function: each scene's turn is
checked (turn order, fences, every reference, as if the scenes before it were in) before
the first write, then every turn is written as ``fabula_commit`` writes one, and the tick's
record (:class:`TickRecord`) with them. So a tick is in whole or not at all, and sending
the same tick again is a ``duplicate``, never a second write.

A tick played for a person to decide on is kept as it was played (:class:`PendingTick`:
its record and its scenes' deltas, under an id) until it is approved (committed as
above), edited (a scene's delta replaced, under a new id) or rejected (dropped): each of
those names the id it was shown, and is refused when another stands there now.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict
from redis.exceptions import ResponseError
from redis.lock import Lock as SyncLock

from fabula.errors import Conflict, InvalidInput
from fabula.memory import keys
from fabula.memory.delta import TurnDelta
from fabula.memory.lua import fcall
from fabula.memory.settle import Status
from fabula.memory.store import CommitResult, StoryStore
from fabula.memory.store.view import StoryReads


class SceneRecord(BaseModel):
    """One scene of a tick: its place, its cast (everyone there as the tick began), and the
    turn that holds its text (None for a place where nobody acted: a quiet scene)."""

    model_config = ConfigDict(frozen=True)

    place: str
    cast: tuple[str, ...]
    turn: int | None = None


class TickRecord(BaseModel):
    """A committed tick: its number, the turns it spans and its scenes."""

    model_config = ConfigDict(frozen=True)

    tick: int
    first: int
    last: int
    scenes: tuple[SceneRecord, ...]
    digest: str = ""


def confine(delta: TurnDelta, cast: Sequence[str]) -> TurnDelta:
    """``delta`` as its scene's cast perceives it: nobody outside ``cast`` witnesses its
    events, remembers them, or gains a belief from them (someone who sees a character
    arrive from another place's scene sees it at the next tick, from its own scene).
    A group of shared belief keeps its members in the cast (dropped below two); the
    beliefs and shared beliefs kept are numbered again, in order."""
    inside = set(cast)
    events = tuple(
        e.model_copy(update={"witnesses": tuple(w for w in e.witnesses if w in inside)})
        for e in delta.events
    )
    shared = []
    for g in delta.shared:
        members = tuple(m for m in g.group if m in inside)
        if len(members) >= 2:
            actor = g.actor if g.actor in members else None
            shared.append(g.model_copy(update={"group": members, "actor": actor}))
    own = {
        event: {w: text for w, text in by_witness.items() if w in inside}
        for event, by_witness in delta.own_recollections.items()
    }
    return delta.model_copy(
        update={
            "events": events,
            "beliefs": tuple(
                b.model_copy(update={"id": f"b{delta.turn}.{i}"})
                for i, b in enumerate(b for b in delta.beliefs if b.holder[0] in inside)
            ),
            "shared": tuple(
                g.model_copy(update={"id": f"g{delta.turn}.{i}"}) for i, g in enumerate(shared)
            ),
            "own_recollections": {e: by for e, by in own.items() if by},
        }
    )


def tick_digest(deltas: Sequence[TurnDelta]) -> str:
    """A hash of a tick's content: its scenes' digests, in order."""
    return hashlib.sha256("|".join(d.digest() for d in deltas).encode()).hexdigest()


async def commit_tick(
    store: StoryStore,
    record: TickRecord,
    deltas: Sequence[TurnDelta],
    usage: Mapping[str, Mapping[str, object]] | None = None,
) -> CommitResult:
    """Commit ``deltas`` (the tick's scenes, consecutive turns after the head) and
    ``record`` in one atomic call: all or none.

    The status is ``committed``, or ``duplicate`` when the same tick is in already.
    Raises :class:`~fabula.errors.TurnConflict` when the branch moved on (another writer)
    or the tick's turns hold other text, :class:`~fabula.errors.InvalidDelta` for a scene
    whose delta is refused (naming the scene), :class:`InvalidInput` for a tick with no
    scene or whose turns do not follow each other; nothing is written then.
    """
    where = {"story": store.story, "branch": store.branch}
    if not deltas:
        raise InvalidInput(f"tick {record.tick} has no scene to commit", **where)
    turns = [d.turn for d in deltas]
    if turns != list(range(turns[0], turns[0] + len(turns))):
        raise InvalidInput(f"tick {record.tick}'s scenes are not consecutive turns: {turns}")
    record = record.model_copy(update={"digest": tick_digest(deltas)})
    calls = [
        await store.prepare_commit(d, usage=usage if i == 0 else None) for i, d in enumerate(deltas)
    ]
    args: list[object] = [len(calls), record.tick, record.model_dump_json()]
    for call in calls:
        args += call.args
    head_key = calls[0].keys[0]
    try:
        reply = await fcall(
            store.client,
            "fabula_commit_tick",
            [head_key, keys.ticks(store.story, store.branch)],
            args,
        )
    except ResponseError as exc:
        raise store.translate_refusal(exc, deltas[0].turn) from None
    return CommitResult(turn=deltas[-1].turn, status=_status(reply))


def _status(reply: object) -> Status:
    return "duplicate" if reply in ("duplicate", b"duplicate") else "committed"


def scene_lease(
    client: Any, story: str, branch: str, tick: int, place: str, timeout_s: float, run: str = ""
) -> SyncLock:
    """The lease a worker holds while it plays ``place``'s scene of ``tick``, on the
    synchronous ``client``: renewed by a thread of its own
    (:func:`~fabula.memory.leases.renewed_in_thread`), so it lasts while the worker lives,
    however long the scene holds the worker's event loop, and expires within ``timeout_s``
    of its death. ``run``: the coordination run the scene is played for
    (:func:`~fabula.memory.keys.scene_lease`)."""
    lock: SyncLock = client.lock(
        keys.scene_lease(story, branch, tick, place, run), timeout=timeout_s, thread_local=False
    )
    return lock


async def scene_leased(store: StoryStore, tick: int, place: str, run: str = "") -> bool:
    """Whether some worker holds the lease of ``place``'s scene of ``tick``."""
    key = keys.scene_lease(store.story, store.branch, tick, place, run)
    return bool(await store.client.exists(key))


async def tick_records(store: StoryReads) -> list[TickRecord]:
    """Every committed tick of the store's branch, in order."""
    raw = await store.client.hgetall(keys.ticks(store.story, store.branch))
    records = [TickRecord.model_validate(json.loads(v)) for v in raw.values()]
    return sorted(records, key=lambda r: r.tick)


async def last_tick(store: StoryReads) -> TickRecord | None:
    """The branch's last committed tick (None before the first)."""
    records = await tick_records(store)
    return records[-1] if records else None


class PendingTick(BaseModel):
    """A tick played and kept for a decision: its id (``TICK.UUID``), the head it was
    played on, its record, each played scene's delta in turn order, and the scenes
    approved so far."""

    model_config = ConfigDict(frozen=True)

    id: str
    head: int
    record: TickRecord
    deltas: tuple[TurnDelta, ...]
    approved: tuple[str, ...] = ()
    """The places whose scenes a person approved one by one (the tick commits when every
    played scene is; an edit of a scene takes its approval back)."""


async def pending_tick(store: StoryReads) -> PendingTick | None:
    """The tick that waits for a decision on the store's branch (None: none waits)."""
    raw = await store.client.get(keys.pending_tick(store.story, store.branch))
    return None if raw is None else PendingTick.model_validate_json(raw)


async def keep_pending_tick(
    store: StoryStore, pending: PendingTick, *, replacing: str | None = None
) -> None:
    """Keep ``pending`` for a decision: where no tick waits, or (``replacing``) in place of
    the one with that id. Raises :class:`Conflict` when another tick waits; nothing is
    written then."""
    key = keys.pending_tick(store.story, store.branch)
    document = pending.model_dump_json()
    if replacing is None:
        if not await store.client.set(key, document, nx=True):
            raise Conflict(
                "a tick already waits for a decision: approve, edit or reject it first",
                story=store.story,
                branch=store.branch,
            )
        return
    if not await fcall(store.client, "fabula_swap_pending", [key], [replacing, document]):
        raise _moved(store, replacing)


async def drop_pending_tick(store: StoryStore, expect: str) -> bool:
    """Drop the waiting tick with id ``expect``; whether it was there (another, or none:
    nothing is dropped)."""
    key = keys.pending_tick(store.story, store.branch)
    return bool(await fcall(store.client, "fabula_swap_pending", [key], [expect, ""]))


def _moved(store: StoryStore, expected: str) -> Conflict:
    return Conflict(
        f"the tick shown ({expected}) no longer waits: another was played or decided since",
        story=store.story,
        branch=store.branch,
    )
