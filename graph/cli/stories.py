"""Stories as a whole: ``new``, ``stories``, ``delete``, ``fork``."""

from __future__ import annotations

from enum import Enum
from typing import TYPE_CHECKING

import typer
from rich.table import Table

from fabula.errors import StoryExists
from fabula.graph.cli.app import app, dump, err, out, run_with_app, run_with_stores
from fabula.graph.service.handles import StoryRef

if TYPE_CHECKING:
    from fabula.graph.service import Fabula
    from fabula.graph.service.light import Stores


class Mode(str, Enum):
    """How a story advances (``new --mode``)."""

    narrative = "narrative"
    ticks = "ticks"


@app.command()
def new(
    world: str = typer.Option(..., "--world", help="A built-in world's name or a pack's path."),
    story_id: str | None = typer.Option(None, "--id", help="Story id (default: the world's id)."),
    mode: Mode | None = typer.Option(
        None,
        "--mode",
        help="How `run` advances it: narrative (a scene a turn) or ticks (every place at "
        "once). Default: the pack's.",
    ),
) -> None:
    """Create a story from a world pack and commit its scripted opening."""
    from fabula.worlds.loader import load_world

    pack = load_world(world)  # a bad pack is refused before anything starts
    for line in pack.goal_warnings:
        err.print(f"warning: {line}", markup=False, highlight=False)
    wanted = story_id or pack.id

    async def taken(stores: Stores) -> bool:
        return await stores.read(wanted).exists()

    if run_with_stores(taken):  # said at once, before the service starts
        raise StoryExists(
            f"story {wanted!r} already exists: choose another --id, or `fabula delete {wanted}`",
            story=wanted,
        )

    async def go(fab: Fabula) -> None:
        made = await fab.create_story(pack, story_id, mode=mode.value if mode else None)
        n = len(pack.opening.turns)
        out.print(
            f"created story {made.story} from {pack.id} ({n} opening turn{'' if n == 1 else 's'})"
        )

    run_with_app(go)


@app.command()
def stories(as_json: bool = typer.Option(False, "--json")) -> None:
    """List the stories on this server: id, title, world, turns, and the turns awaiting
    approval (branch:turn)."""

    async def go(stores: Stores) -> None:
        # read from the keys, every story at once: no service or graph is loaded
        found = await stores.summaries()
        if as_json:
            dump(found)
            return
        if not found:
            err.print("no stories yet: `fabula new --world hollow_book` makes one")
            return
        table = Table("id", "title", "world", "turns", "branches", "pending", title="stories")
        for s in found:
            waiting = ", ".join(f"{p.branch}:{p.turn}" for p in s.pending)
            table.add_row(s.id, s.title, s.world, str(s.head), str(s.branches), waiting or "-")
        out.print(table)

    run_with_stores(go)


@app.command()
def delete(
    story: str,
    yes: bool = typer.Option(False, "--yes", "-y", help="Delete without asking."),
) -> None:
    """Delete a story, its branches, its minds and their users (asks first, unless --yes)."""

    async def exists(stores: Stores) -> None:
        await stores.read(story).require(any_version=True)

    run_with_stores(exists)  # an unknown story is said before asking
    if not yes and not _confirmed(
        f"delete story {story!r} with every branch and mind? This cannot be undone"
    ):
        err.print("nothing deleted")
        raise typer.Exit(1)

    async def go(fab: Fabula) -> None:
        await fab.read(story).require(any_version=True)
        await fab.delete_story(story)
        out.print(f"deleted {story}")

    run_with_app(go)


def _confirmed(question: str) -> bool:
    """The person's yes to ``question`` on the terminal; no answer (EOF) is a no."""
    try:
        return typer.confirm(question, err=True)
    except typer.Abort:
        err.print()
        return False


@app.command(name="fork")
def fork_cmd(
    story: str,
    at: int = typer.Option(..., "--at", help="The turn to fork at."),
    realise: str | None = typer.Option(None, "--realise", help="A hypothesis to pursue."),
    name: str | None = typer.Option(None, "--name", help="The new branch's name."),
    branch: str = typer.Option("main", "--branch", "-b", help="The branch to fork from."),
) -> None:
    """Start a branch from a turn; its next turns may pursue a hypothesis."""

    async def go(fab: Fabula) -> None:
        child = await fab.fork(StoryRef(story, branch), at, name, realise)
        out.print(
            f"branch {child.branch} of {story} starts at turn {at}; "
            f"run it with: fabula run {story} --branch {child.branch}"
        )

    run_with_app(go)
