"""Running a story in ticks: ``fabula tick STORY`` (:mod:`fabula.graph.ticks`).

Each tick, every place with characters plays its own scene, concurrently, and the tick is
committed whole (every scene's turn, or none). A story advances by ``run`` (one scene a
turn, where the planner looks) or by ``tick`` (the whole town at once); ``fabula show
STORY spread "CLAUSE"`` then reads how a piece of news went round, tick by tick.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import typer
from rich.table import Table

from fabula.errors import StoryAtRest
from fabula.graph.cli.app import app, dump, out, run_with_app

if TYPE_CHECKING:  # imported when a command runs: `fabula --help` stays quick
    from fabula.graph.service import Fabula


@app.command()
def tick(
    story: str,
    ticks: int = typer.Option(1, "--ticks", "-n", min=1, help="How many ticks to run."),
    branch: str = typer.Option("main", "--branch", "-b"),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Run ticks: every place with characters plays its own scene at once, and each tick
    is committed whole (every scene's turn, or none); stops early when nobody anywhere
    has anything to do."""

    async def go(fab: Fabula) -> list[dict[str, Any]]:
        from fabula.graph.ticks import ScenePlayer, run_tick, scenes_here

        player: ScenePlayer = scenes_here
        if fab.settings.scenes == "rq":  # FABULA_SCENES=rq: on the queue's workers
            from fabula.graph.scene_jobs import scenes_on_rq

            player = scenes_on_rq(fab.settings.rq_url or fab.url)
        store = fab.store(story, branch)
        await store.require()
        done: list[dict[str, Any]] = []
        for _ in range(ticks):
            try:
                result = await run_tick(fab.context(auto=True), store, player)
            except StoryAtRest as rest:
                done.append({"rest": rest.message})
                break
            done.append(
                {
                    "tick": result.plan.tick,
                    "status": result.status,
                    "scenes": [
                        {"place": s.place, "cast": list(s.cast), "turn": s.turn}
                        for s in result.plan.scenes
                    ],
                    "texts": {d.turn: d.text for d in result.deltas},
                }
            )
        return done

    done = run_with_app(go)
    if as_json:
        dump(done)
        return
    for entry in done:
        if "rest" in entry:
            out.print(f"at rest: {entry['rest']}")
            continue
        table = Table("place", "cast", "turn", "text", title=f"tick {entry['tick']}")
        for s in entry["scenes"]:
            text = entry["texts"].get(s["turn"], "(quiet)") if s["turn"] is not None else "(quiet)"
            table.add_row(s["place"], ", ".join(s["cast"]), str(s["turn"] or ""), text)
        out.print(table)
