"""Ticks at a person's pace: a tick played, kept, and decided on, whole or scene by scene.

An autonomous tick is played and committed in one step (:func:`fabula.graph.ticks.run_tick`).
A tick for a person is played the same way (:func:`~fabula.graph.ticks.play_tick`: every
place's scene at once, each through the characters, the writer and the critic) and then
*kept* (:class:`~fabula.memory.ticks.PendingTick`, under an id) instead of committed. Then,
each decision naming the id it was shown (refused when another tick stands there now):

- :func:`approve_tick` commits it as it was shown: every scene's turn, or none, exactly
  once (:func:`~fabula.graph.ticks.commit_scenes`); or scene by scene,
  :func:`approve_scene`, the tick committed when the last of its scenes is approved;
- :func:`edit_scene` gives one place's scene the person's text instead: read against the
  world as the tick began (where only its cast is at its place, as a played scene is),
  checked by the critic (an error refuses it, unless forced), and kept under a new id;
- :func:`reject_tick` drops it: nothing is committed, and the next tick is played again.

A tick kept while the branch moved on (another writer) cannot be committed: approving it
drops it and says so.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping

from fabula.agents.contracts import Finding
from fabula.agents.views import AuthorView, author_view
from fabula.errors import Conflict, InvalidInput, NotFound, TurnConflict
from fabula.graph.commit import CommitPath, read_text
from fabula.graph.runtime import TurnContext
from fabula.graph.ticks import ScenePlayer, commit_scenes, play_tick, scenes_here
from fabula.logs import get_logger
from fabula.memory.delta import TurnDelta
from fabula.memory.store import CommitResult, StoryStore
from fabula.memory.ticks import (
    PendingTick,
    SceneRecord,
    confine,
    drop_pending_tick,
    keep_pending_tick,
    pending_tick,
)

log = get_logger(__name__)


async def draft_tick(
    ctx: TurnContext,
    store: StoryStore,
    player: ScenePlayer = scenes_here,
    parts: Mapping[str, str] | None = None,
) -> PendingTick:
    """Play the branch's next tick and keep it for a decision; nothing is committed.
    ``parts``: played characters' parts, each played in its character's scene.

    Raises :class:`Conflict` when a tick already waits (decide on it first),
    :class:`~fabula.errors.SceneFailed` naming a scene that failed and
    :class:`~fabula.errors.StoryAtRest` when nobody anywhere has anything to do.
    """
    await none_waiting(store)
    plan, deltas = await play_tick(ctx, store, player, parts)
    kept = PendingTick(
        id=f"{plan.tick}.{uuid.uuid4().hex[:12]}",
        head=plan.head,
        record=plan.record(),
        deltas=tuple(deltas),
    )
    await keep_pending_tick(store, kept)
    log.info("tick_kept", story=store.story, tick=plan.tick, id=kept.id, scenes=len(deltas))
    return kept


async def none_waiting(store: StoryStore) -> None:
    """Raise :class:`Conflict` when a tick waits for a decision on the branch: no tick is
    played past it, kept or autonomous."""
    kept = await pending_tick(store)
    if kept is not None:
        raise Conflict(
            f"tick {kept.record.tick} ({kept.id}) waits for a decision: approve, edit or "
            "reject it first",
            story=store.story,
            branch=store.branch,
        )


async def waiting(store: StoryStore, expect: str | None) -> PendingTick:
    """The tick that waits, checked against the id its decider was shown (``expect``)."""
    kept = await pending_tick(store)
    if kept is None:
        raise NotFound("no tick waits for a decision", story=store.story, branch=store.branch)
    if expect is not None and expect != kept.id:
        raise Conflict(
            f"the tick shown ({expect}) no longer waits: {kept.id} does now",
            story=store.story,
            branch=store.branch,
        )
    return kept


async def approve_tick(ctx: TurnContext, store: StoryStore, expect: str | None) -> CommitResult:
    """Commit the waiting tick exactly as it was shown, every scene or none.

    Raises :class:`NotFound` when none waits, :class:`Conflict` when another than
    ``expect`` does, and :class:`TurnConflict` when the branch moved on since it was played
    (the tick is dropped then: it can never be committed)."""
    return await commit_tick(ctx, store, await waiting(store, expect))


async def commit_tick(ctx: TurnContext, store: StoryStore, kept: PendingTick) -> CommitResult:
    """Commit ``kept``, the waiting tick just read (:func:`waiting`), every scene or none;
    it is dropped after, committed or not (see :func:`approve_tick`)."""
    try:
        done = await commit_scenes(ctx, store, kept.record, kept.deltas)
    except TurnConflict:
        await drop_pending_tick(store, kept.id)
        raise
    await drop_pending_tick(store, kept.id)  # a repeat of the commit is a duplicate
    log.info("tick_approved", story=store.story, tick=kept.record.tick, status=done.status)
    return done


async def approve_scene(
    ctx: TurnContext, store: StoryStore, place: str, expect: str | None
) -> tuple[PendingTick, CommitResult | None]:
    """Approve one place's scene of the waiting tick; when that was the last played scene
    not yet approved, the tick is committed (:func:`approve_tick`). Returns the tick as it
    waits (or was committed) and the commit, if it was. The tick keeps its id: an approval
    changes no text."""
    kept = await waiting(store, expect)
    _scene(kept, place, store)  # a played scene of this tick, or InvalidInput
    approved = tuple(dict.fromkeys((*kept.approved, place)))
    marked = kept.model_copy(update={"approved": approved})
    played = {s.place for s in kept.record.scenes if s.turn is not None}
    if played <= set(approved):
        return marked, await commit_tick(ctx, store, kept)
    await keep_pending_tick(store, marked, replacing=kept.id)
    return marked, None


async def reject_tick(store: StoryStore, expect: str | None) -> PendingTick:
    """Drop the waiting tick; nothing of it is committed. Returns what was dropped."""
    kept = await waiting(store, expect)
    if not await drop_pending_tick(store, kept.id):
        raise Conflict(
            f"the tick shown ({kept.id}) was decided meanwhile",
            story=store.story,
            branch=store.branch,
        )
    return kept


async def edit_scene(
    ctx: TurnContext,
    store: StoryStore,
    place: str,
    text: str,
    *,
    expect: str | None = None,
    force: bool = False,
) -> tuple[PendingTick, list[Finding]]:
    """The waiting tick with ``place``'s scene made of ``text``, kept under a new id, and
    the critic's findings on it.

    The text is read as the scene's turn against the world as the tick began, and kept to
    the scene's cast as a played scene is. Raises :class:`InvalidInput` for a place with no
    scene this tick (or a quiet one: it has no turn to hold a text) and, unless ``force``,
    for a text the critic finds an error in (its first, one line); the tick waits as it
    was then."""
    kept = await waiting(store, expect)
    scene = _scene(kept, place, store)
    assert scene.turn is not None  # _scene refuses a quiet one
    if await store.head() != kept.head:
        raise TurnConflict(
            f"the branch moved on since tick {kept.record.tick} was played: reject it",
            story=store.story,
            branch=store.branch,
        )
    view = await author_view(store)
    delta, _ = await read_text(CommitPath.of(ctx), store, scene.turn, text, view)
    delta = confine(delta, scene.cast)
    findings = [*_outsiders(delta, scene, view), *ctx.roles.critic.critique(view, delta, None)]
    errors = [f for f in findings if f.severity == "error"]
    if errors and not force:
        first = errors[0]
        raise InvalidInput(
            f"the scene at {place}: {first.kind}: {first.message}"
            + (f" ({first.quote!r})" if first.quote else "")
            + "; nothing was changed (force it to keep it anyway)",
            story=store.story,
            branch=store.branch,
        )
    deltas = tuple(delta if d.turn == scene.turn else d for d in kept.deltas)
    edited = kept.model_copy(
        update={
            "id": f"{kept.record.tick}.{uuid.uuid4().hex[:12]}",
            "deltas": deltas,
            "approved": tuple(p for p in kept.approved if p != place),  # to be read again
        }
    )
    await keep_pending_tick(store, edited, replacing=kept.id)
    return edited, findings


def _scene(kept: PendingTick, place: str, store: StoryStore) -> SceneRecord:
    """The played scene of ``place`` in ``kept``; :class:`InvalidInput` naming the places
    that have one, otherwise."""
    played = [s for s in kept.record.scenes if s.turn is not None]
    for scene in played:
        if scene.place == place:
            return scene
    quiet = any(s.place == place for s in kept.record.scenes)
    raise InvalidInput(
        f"tick {kept.record.tick} has no played scene at {place!r}"
        + (" (it was quiet)" if quiet else "")
        + f": its scenes are at {', '.join(s.place for s in played)}",
        story=store.story,
        branch=store.branch,
    )


def _outsiders(delta: TurnDelta, scene: SceneRecord, view: AuthorView) -> list[Finding]:
    """An error for each character who acts in a scene it is not in: a scene's cast is
    everyone at its place as the tick began, and nobody else is there to act."""
    cast = set(scene.cast)
    found: dict[str, Finding] = {}
    for event in delta.events:
        for who in (event.actor, *event.participants):
            if who and who not in cast and who not in found and view.kind(who) == "character":
                found[who] = Finding(
                    kind="contradiction",
                    severity="error",
                    quote=event.span.quote,
                    message=f"{view.name(who)} is not in the scene at {scene.place} (its cast: "
                    f"{', '.join(view.name(c) for c in scene.cast)})",
                )
    return list(found.values())
