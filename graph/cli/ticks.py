"""Running a story in ticks: ``fabula tick STORY`` (:mod:`fabula.graph.ticks`).

Each tick, every place with characters plays its own scene, concurrently, and the tick is
committed whole (every scene's turn, or none). A story advances by ``run`` (one scene a
turn, where the planner looks; or, for a story made in ``ticks`` mode, ticks) or by
``tick`` (the whole town at once); ``fabula show
STORY spread "CLAUSE"`` then reads how a piece of news went round, tick by tick.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import typer
from rich.table import Table

from fabula.graph.cli.app import app, dump, out, run_with_app
from fabula.graph.service.handles import StoryRef

if TYPE_CHECKING:  # imported when a command runs: `fabula --help` stays quick
    from fabula.graph.service import Fabula
    from fabula.graph.service.ticking import TickOut


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
        return tick_entries(await fab.tick(StoryRef(story, branch), ticks))

    done = run_with_app(go)
    if as_json:
        dump(done)
        return
    print_ticks(done)


def tick_entries(done: Sequence[TickOut]) -> list[dict[str, Any]]:
    """The ticks that ran, as ``--json`` prints them."""
    return [t.model_dump(mode="json", exclude_defaults=True) for t in done]


def print_ticks(done: Sequence[Mapping[str, Any]]) -> None:
    """Each tick that ran as a table of its scenes, place by place; or why the town rests."""
    for entry in done:
        if "rest" in entry:
            out.print(f"at rest: {entry['rest']}")
            continue
        table = Table("place", "cast", "turn", "text", title=f"tick {entry['tick']}")
        for s in entry["scenes"]:
            turn = s.get("turn")
            text = entry.get("texts", {}).get(str(turn), "(quiet)") if turn else "(quiet)"
            table.add_row(s["place"], ", ".join(s["cast"]), str(turn or ""), text)
        out.print(table)
