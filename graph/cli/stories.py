"""Stories as a whole: ``new``, ``stories``, ``delete``, ``fork``."""

from __future__ import annotations

from collections.abc import Awaitable

import typer

from fabula.graph.cli.app import app, out, run_with_app
from fabula.graph.service import Fabula
from fabula.worlds.loader import load_world

__all__ = ["delete", "fork_cmd", "new", "stories"]


@app.command()
def new(
    world: str = typer.Option(..., "--world", help="A built-in world's name or a pack's path."),
    story_id: str | None = typer.Option(None, "--id", help="Story id (default: the world's id)."),
) -> None:
    """Create a story from a world pack and commit its scripted opening."""

    async def go(fab: Fabula) -> None:
        pack = load_world(world)
        store = await fab.create_story(pack, story_id)
        out.print(
            f"created story {store.story} from {pack.id} ({len(pack.opening.turns)} opening turns)"
        )

    run_with_app(go)


@app.command()
def stories() -> None:
    """List the stories on this server."""
    run_with_app(lambda fab: print_lines(fab.stories()))


async def print_lines(coro: Awaitable[list[str]]) -> None:
    """Print each line ``coro`` returns."""
    for line in await coro:
        out.print(line)


@app.command()
def delete(story: str) -> None:
    """Delete a story, its branches, its minds and their users."""

    async def go(fab: Fabula) -> None:
        await fab.store(story).require()
        await fab.delete_story(story)
        out.print(f"deleted {story}")

    run_with_app(go)


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
        child = await fab.fork(fab.store(story, branch), at, name, realise)
        out.print(
            f"branch {child.branch} of {story} starts at turn {at}; "
            f"run it with: fabula run {story} --branch {child.branch}"
        )

    run_with_app(go)
