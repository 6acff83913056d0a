"""Running a story in ticks, for every interface: :class:`Ticking` (``fab.tick``).

A tick is :func:`fabula.graph.ticks.run_tick`: every place with characters plays its own
scene at once, and the tick commits whole (every scene's turn, or none). Its scenes are
played where the settings say (``FABULA_SCENES``): in this process, or on the RQ queue's
workers. The command line (``fabula tick``) and the studio's Town page both run ticks
here, so both play them the same way.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict

from fabula.agents.contracts import Finding
from fabula.errors import InvalidInput, StoryAtRest
from fabula.memory.store import StoryStore
from fabula.memory.store.view import StoryReads
from fabula.memory.ticks import PendingTick, pending_tick

if TYPE_CHECKING:
    from fabula.graph.service.core import Core
    from fabula.graph.ticks import ScenePlayer

MAX_TICKS_AT_ONCE = 20
"""The most ticks the studio runs for one request, which waits for them (the shipped town
of 25 ticks in about 1.5 s offline; a model takes far longer). The command line has no
such bound."""


class TickScene(BaseModel):
    """One place's scene of a tick: its cast, and the turn of its text (None: quiet)."""

    model_config = ConfigDict(frozen=True)

    place: str
    cast: list[str]
    turn: int | None


class TickOut(BaseModel):
    """A tick that ran (its number, its commit's status, its scenes and their texts by
    turn), or, with ``rest``, why the town stopped before it: nobody had anything to do.
    A tick kept for a decision has the status ``pending`` and its ``id`` (what approve,
    edit and reject name), and the critic's ``findings`` on a scene edited."""

    model_config = ConfigDict(frozen=True)

    tick: int | None = None
    status: str | None = None
    id: str | None = None
    story: str | None = None  # in a list of the ticks that wait, every story's
    branch: str | None = None
    scenes: list[TickScene] = []
    texts: dict[int, str] = {}
    findings: list[Finding] = []
    approved: list[str] = []  # the places whose scenes were approved one by one
    rest: str | None = None


async def _check_parts(store: StoryStore, parts: Mapping[str, str]) -> None:
    """Each part is a played character's, with words."""
    if not parts:
        return
    played = await store.played()
    for character, words in parts.items():
        if character not in played:
            listed = ", ".join(played) or "none"
            raise InvalidInput(
                f"{character!r} is not played in story {store.story!r} (played: {listed}): "
                "play it first, then give its part",
                story=store.story,
            )
        if not words.strip():
            raise InvalidInput(f"{character}'s part has no words", story=store.story)


async def waiting_tick(store: StoryReads) -> TickOut | None:
    """The tick that waits for a decision on the branch (None: none waits)."""
    kept = await pending_tick(store)
    return None if kept is None else _kept(store, kept)


def _kept(store: StoryReads, kept: PendingTick, findings: Sequence[Finding] = ()) -> TickOut:
    """A tick kept for a decision on ``store``'s branch, as the interfaces show it."""
    return TickOut(
        story=store.story,
        branch=store.branch,
        tick=kept.record.tick,
        status="pending",
        id=kept.id,
        scenes=[
            TickScene(place=s.place, cast=list(s.cast), turn=s.turn) for s in kept.record.scenes
        ],
        texts={d.turn: d.text for d in kept.deltas},
        findings=list(findings),
        approved=list(kept.approved),
    )


class Ticking:
    """Run a branch's next ticks (see the module)."""

    def __init__(self, core: Core) -> None:
        self.core = core

    def _player(self) -> ScenePlayer:
        from fabula.graph.ticks import scenes_here

        settings = self.core.settings
        if settings.scenes == "rq":  # FABULA_SCENES=rq: on the queue's workers
            from fabula.graph.scene_jobs import scenes_on_rq

            return scenes_on_rq(settings.rq_url or self.core.url)
        return scenes_here

    async def tick(self, store: StoryStore, ticks: int = 1) -> list[TickOut]:
        """Run up to ``ticks`` ticks of ``store``'s branch, each committed whole; stops
        early (its last entry saying why) when nobody anywhere has anything to do.

        Raises :class:`InvalidInput` for ``ticks`` below 1,
        :class:`~fabula.errors.NotFound` for a missing story or branch,
        :class:`~fabula.errors.SceneFailed` (one line naming the scene) when a scene fails
        :class:`~fabula.errors.TurnConflict` when another writer moved the branch, and
        :class:`~fabula.errors.Conflict` while a tick waits for a person's decision; the
        tick that failed commits nothing (those before it stay).
        """
        from fabula.graph.tick_review import none_waiting
        from fabula.graph.ticks import run_tick

        if ticks < 1:
            raise InvalidInput(f"ticks: at least 1, not {ticks}", story=store.story)
        await store.require()
        await none_waiting(store)
        player = self._player()
        done: list[TickOut] = []
        for _ in range(ticks):
            try:
                result = await run_tick(self.core.context(auto=True), store, player)
            except StoryAtRest as rest:
                done.append(TickOut(rest=rest.message))
                break
            done.append(
                TickOut(
                    tick=result.plan.tick,
                    status=result.status,
                    scenes=[
                        TickScene(place=s.place, cast=list(s.cast), turn=s.turn)
                        for s in result.plan.scenes
                    ],
                    texts={d.turn: d.text for d in result.deltas},
                )
            )
        return done

    async def all_waiting(self) -> list[TickOut]:
        """Every tick that waits for a decision, on every branch of every story."""
        from fabula.memory.store import list_stories

        found = []
        for story in await list_stories(self.core.admin):
            store = self.core.store(story)
            for branch in await store.branches():
                waiting = await waiting_tick(store.on_branch(branch))
                if waiting is not None:
                    found.append(waiting)
        return found

    # -- a tick at a person's pace (:mod:`fabula.graph.tick_review`) ------------------------
    async def draft(self, store: StoryStore, parts: Mapping[str, str] | None = None) -> TickOut:
        """Play the branch's next tick and keep it for a decision (status ``pending``);
        or, with ``rest``, why the town stays at rest. ``parts``: played characters' parts
        (character id -> words), each played in its character's scene. Raises
        :class:`~fabula.errors.Conflict` when a tick already waits, and
        :class:`~fabula.errors.InvalidInput` for a part of a character not played."""
        from fabula.graph.tick_review import draft_tick

        await store.require()
        await _check_parts(store, parts or {})
        try:
            kept = await draft_tick(
                self.core.context(auto=False), store, self._player(), parts or {}
            )
        except StoryAtRest as rest:
            return TickOut(rest=rest.message)
        return _kept(store, kept)

    async def approve(
        self, store: StoryStore, expect: str | None = None, place: str | None = None
    ) -> TickOut:
        """Commit the waiting tick exactly as shown (see
        :func:`~fabula.graph.tick_review.approve_tick`); with ``place``, approve that
        scene alone (status ``pending`` until the last scene is approved, then as the
        commit says: :func:`~fabula.graph.tick_review.approve_scene`)."""
        from fabula.graph.tick_review import approve_scene, commit_tick, waiting

        if place is not None:
            marked, done = await approve_scene(self.core.context(auto=False), store, place, expect)
            out = _kept(store, marked)
            return (
                out if done is None else out.model_copy(update={"status": done.status, "id": None})
            )
        kept = await waiting(store, expect)  # read once: shown, then committed as shown
        done = await commit_tick(self.core.context(auto=False), store, kept)
        return _kept(store, kept).model_copy(update={"status": done.status, "id": None})

    async def edit(
        self, store: StoryStore, place: str, text: str, *, expect: str | None, force: bool
    ) -> TickOut:
        """The waiting tick with ``place``'s scene made of ``text`` (see
        :func:`~fabula.graph.tick_review.edit_scene`), kept under a new id."""
        from fabula.graph.tick_review import edit_scene

        kept, findings = await edit_scene(
            self.core.context(auto=False), store, place, text, expect=expect, force=force
        )
        return _kept(store, kept, findings)

    async def reject(self, store: StoryStore, expect: str | None = None) -> TickOut:
        """Drop the waiting tick: nothing of it is committed (status ``rejected``)."""
        from fabula.graph.tick_review import reject_tick

        dropped = await reject_tick(store, expect)
        return _kept(store, dropped).model_copy(update={"status": "rejected", "id": None})
