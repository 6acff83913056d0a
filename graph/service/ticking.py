"""Running a story in ticks, for every interface: :class:`Ticking` (``fab.tick``).

A tick is :func:`fabula.graph.ticks.run_tick`: every place with characters plays its own
scene at once, and the tick commits whole (every scene's turn, or none). Its scenes are
played where the settings say (``FABULA_SCENES``): in this process, or on the RQ queue's
workers. The command line (``fabula tick``) and the studio's Town page both run ticks
here, so both play them the same way.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict

from fabula.errors import InvalidInput, StoryAtRest
from fabula.memory.store import StoryStore

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
    turn), or, with ``rest``, why the town stopped before it: nobody had anything to do."""

    model_config = ConfigDict(frozen=True)

    tick: int | None = None
    status: str | None = None
    scenes: list[TickScene] = []
    texts: dict[int, str] = {}
    rest: str | None = None


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
        and :class:`~fabula.errors.TurnConflict` when another writer moved the branch; the
        tick that failed commits nothing (those before it stay).
        """
        from fabula.graph.ticks import run_tick

        if ticks < 1:
            raise InvalidInput(f"ticks: at least 1, not {ticks}", story=store.story)
        await store.require()
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
