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

from fabula.errors import InvalidInput
from fabula.graph.cli.app import app, dump, out, run_with_app
from fabula.graph.service.handles import StoryRef

if TYPE_CHECKING:  # imported when a command runs: `fabula --help` stays quick
    from fabula.agents.contracts import Decision
    from fabula.graph.service import Fabula
    from fabula.graph.service.ticking import TickOut


@app.command()
def tick(
    story: str,
    ticks: int = typer.Option(1, "--ticks", "-n", min=1, help="How many ticks to run."),
    branch: str = typer.Option("main", "--branch", "-b"),
    review: bool = typer.Option(
        False, "--review", help="Play one tick and keep it for your decision (approve, ...)."
    ),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Run ticks: every place with characters plays its own scene at once, and each tick
    is committed whole (every scene's turn, or none); stops early when nobody anywhere
    has anything to do. With --review, one tick is played and kept for you: `fabula
    approve`, `edit --scene PLACE` or `reject` it."""
    if review and ticks != 1:
        raise InvalidInput("--review plays one tick for your decision: not with --ticks")

    async def go(fab: Fabula) -> list[dict[str, Any]]:
        if review:
            return tick_entries([await fab.draft_tick(StoryRef(story, branch))])
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
    """Each tick that ran as a table of its scenes, place by place; or why the town rests.
    A tick kept for a decision says so, with its id and what decides on it."""
    for entry in done:
        if "rest" in entry:
            out.print(f"at rest: {entry['rest']}")
            continue
        kept = entry.get("status") == "pending"
        where = f"{entry['story']} [{entry['branch']}] " if "story" in entry else ""
        title = f"{where}tick {entry['tick']}" + (
            f" awaits approval ({entry['id']})" if kept else ""
        )
        table = Table("place", "cast", "turn", "text", title=title)
        for s in entry["scenes"]:
            turn = s.get("turn")
            text = entry.get("texts", {}).get(str(turn), "(quiet)") if turn else "(quiet)"
            mark = " (approved)" if s["place"] in entry.get("approved", []) else ""
            table.add_row(s["place"] + mark, ", ".join(s["cast"]), str(turn or ""), text)
        out.print(table)
        for f in entry.get("findings", []):
            out.print(f"  {f.get('severity', 'error')} {f['kind']}: {f['message']}")
        if kept:
            story = entry.get("story", "STORY")
            out.print(
                f"approve with `fabula approve {story} --expect {entry['id']}`, edit a scene "
                f'with `fabula edit {story} --scene PLACE --text "..."`, or reject',
                markup=False,
            )


async def run_ticks(
    fab: Fabula,
    store: StoryRef,
    ticks: int,
    *,
    auto: bool,
    refused: Sequence[str],
    parts: Mapping[str, str],
) -> None:
    """``run`` of a story made in ticks mode: ``ticks`` ticks committed as they are
    played (``auto``), else one tick kept for a decision (as ``run`` stops at a turn to
    approve). ``parts``: played characters' parts (``--as``), played in the first tick's
    scenes; ``refused``: the options given that only a scene a turn can take."""
    if refused:
        raise InvalidInput(
            f"story {store.story!r} runs in ticks, which take no {', '.join(refused)}: "
            "leave it out, or make the story with `fabula new --mode narrative`",
            story=store.story,
        )
    if not auto:
        print_ticks(tick_entries([await fab.draft_tick(store, parts)]))
        return
    done = []
    if parts:  # the first tick with the parts given, then as the engine plays them
        kept = await fab.draft_tick(store, parts)
        done.append(await fab.approve_tick(store, kept.id) if kept.id else kept)
        ticks -= 1
    if ticks > 0 and not (done and done[-1].rest):
        done += await fab.tick(store, ticks)
    print_ticks(tick_entries(done))


async def decide_tick(
    fab: Fabula,
    store: StoryRef,
    decision: Decision,
    *,
    scene: str | None,
    force: bool,
    expect: str | None,
) -> None:
    """``approve`` (``--scene PLACE``: that scene alone), ``edit --scene PLACE``
    (``--now``: then approve) or ``reject`` of the tick that waits on the branch: each
    names the tick shown (``expect``), and is refused when another waits."""
    if decision.action == "approve":
        print_ticks(tick_entries([await fab.approve_tick(store, expect, scene)]))
    elif decision.action == "reject":
        dropped = await fab.reject_tick(store, expect)
        out.print(f"{store.story} [{store.branch}]: tick {dropped.tick} rejected; nothing written")
    else:
        if scene is None or decision.text is None:
            raise InvalidInput(
                "a tick waits: give the scene to edit (--scene PLACE) and its text",
                story=store.story,
            )
        edited = await fab.edit_tick(store, scene, decision.text, expect=expect, force=force)
        if decision.now:
            edited = await fab.approve_tick(store, edited.id)
        print_ticks(tick_entries([edited]))
