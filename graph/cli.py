"""The ``fabula`` command line (typer + rich).

Settings are read once here, logging is configured once here, and every error Fabula
raises on purpose is printed as one line on stderr with a non-zero exit status.
"""

from __future__ import annotations

import asyncio
import functools
import json
import logging
import sys
from collections.abc import Awaitable, Callable, Coroutine
from enum import Enum
from pathlib import Path
from typing import Any, ParamSpec, TypeVar

import redis
import typer
from rich.console import Console
from rich.markup import escape
from rich.progress import Progress
from rich.table import Table

from fabula.agents.contracts import Decision
from fabula.agents.factory import make_roles
from fabula.graph.service import Fabula, Pending
from fabula.memory.errors import FabulaError, InvalidInput
from fabula.memory.jobs import enqueue_consolidation
from fabula.memory.logging import configure_logging
from fabula.memory.projections import (
    project_beliefs,
    project_developments,
    project_hypotheses,
    project_world,
)
from fabula.memory.server import EmbeddedRedis, redact, resolve_url
from fabula.memory.settings import Settings
from fabula.memory.store import StoryStore
from fabula.worlds.loader import load_world

app = typer.Typer(
    name="fabula",
    help="Collaborative fiction written by many agents at once: shared worlds, private minds.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
bench_app = typer.Typer(help="Benchmarks, each with its baselines in the same run.")
app.add_typer(bench_app, name="bench")
server_app = typer.Typer(help="The embedded Redis server.")
app.add_typer(server_app, name="server")

out = Console()
err = Console(stderr=True)
P = ParamSpec("P")
T = TypeVar("T")


class _State:
    settings: Settings | None = None
    verbose: bool = False


@app.callback()
def _main(
    verbose: bool = typer.Option(False, "--verbose", "-v", help="Log progress to stderr."),
) -> None:
    _State.settings = Settings.from_env()
    _State.verbose = verbose
    configure_logging(level=logging.INFO if verbose else logging.WARNING)


def _settings() -> Settings:
    if _State.settings is None:
        _State.settings = Settings.from_env()
    return _State.settings


def _url() -> str:
    s = _settings()
    return resolve_url(s.redis_url, s.home, allow_open_default=s.allow_open_redis)


def _consolidator(url: str, mode: str) -> Callable[[StoryStore, int], Awaitable[None]] | None:
    if mode == "off":
        return None
    if mode == "rq":

        async def enqueue(store: StoryStore, turn: int) -> None:
            enqueue_consolidation(url, store.story, store.branch, turn)

        return enqueue
    from fabula.memory.hierarchy import consolidate_turn

    async def inline(store: StoryStore, turn: int) -> None:
        await consolidate_turn(store, turn)

    return inline


def _run(coro_fn: Callable[[Fabula], Coroutine[Any, Any, T]]) -> T:
    """Run ``coro_fn(app)`` with a Fabula app; print FabulaErrors as one line, exit 1."""

    async def go() -> T:
        import os

        url = _url()
        mode = os.environ.get("FABULA_CONSOLIDATE", "inline")
        settings = _settings()
        roles = make_roles(settings)
        async with Fabula(url, settings, roles=roles, consolidate=_consolidator(url, mode)) as fab:
            return await coro_fn(fab)

    try:
        return asyncio.run(go())
    except FabulaError as exc:
        err.print(f"[red]error:[/red] {exc}", highlight=False)
        raise typer.Exit(1) from None
    except redis.RedisError as exc:
        err.print(f"[red]error:[/red] redis: {exc}", highlight=False)
        raise typer.Exit(1) from None


def _dump(data: Any) -> None:
    sys.stdout.write(json.dumps(data, indent=2, default=str) + "\n")


# -- stories --------------------------------------------------------------------------
@app.command()
def new(
    world: str = typer.Option(..., "--world", help="A built-in world's name or a pack's path."),
    story_id: str | None = typer.Option(None, "--id", help="Story id (default: the world's id)."),
) -> None:
    """Create a story from a world pack and commit its scripted opening."""

    async def go(fab: Fabula) -> None:
        pack = load_world(world)
        store = await fab.new_story(pack, story_id)
        for text in pack.opening.turns:
            await fab.commit_scripted(store, text)
        out.print(
            f"created story [bold]{store.story}[/bold] from {pack.id} "
            f"({len(pack.opening.turns)} opening turns)"
        )

    _run(go)


@app.command()
def stories() -> None:
    """List the stories on this server."""
    _run(lambda fab: _print_lines(fab.stories()))


async def _print_lines(coro: Awaitable[list[str]]) -> None:
    for line in await coro:
        out.print(line, highlight=False)


@app.command()
def delete(story: str) -> None:
    """Delete a story, its branches, its minds and their users."""

    async def go(fab: Fabula) -> None:
        await fab.store(story).require()
        await fab.delete_story(story)
        out.print(f"deleted {story}")

    _run(go)


@app.command()
def run(
    story: str,
    turns: int = typer.Option(1, "--turns", "-n", min=1, help="How many turns to write."),
    auto: bool = typer.Option(False, "--auto", help="Approve every turn without asking."),
    branch: str = typer.Option("main", "--branch", "-b"),
    direction: str | None = typer.Option(None, "--direction", help="A note for the planner."),
) -> None:
    """Write turns; without --auto, stop at the first turn awaiting approval."""

    async def go(fab: Fabula) -> None:
        store = fab.store(story, branch)
        await store.require()
        done = 0
        with Progress(console=err, transient=True) as progress:
            task = progress.add_task(f"writing {story}", total=turns)
            for _ in range(turns):
                outcome = await fab.run_turn(store, auto=auto, direction=direction)
                if outcome == "pending":
                    pending = await fab.pending_turn(store)
                    progress.stop()
                    _print_pending(pending)
                    out.print(f"approve with [bold]fabula approve {story}[/bold], edit or reject")
                    return
                done += 1
                progress.advance(task)
        out.print(f"{story}: {done} turn(s) written, now at turn {await store.head()}")

    _run(go)


def _print_pending(pending: Pending | None) -> None:
    if pending is None:
        return
    payload = pending.payload
    out.rule(f"{pending.story} [{pending.branch}] turn {pending.turn} awaits approval")
    out.print(payload.get("draft", {}).get("text", ""), highlight=False)
    for f in payload.get("findings", []):
        out.print(
            f"  [yellow]{f['severity']}[/yellow] {f['kind']}: {f['message']}", highlight=False
        )


@app.command()
def pending(as_json: bool = typer.Option(False, "--json")) -> None:
    """List the turns awaiting approval."""

    async def go(fab: Fabula) -> None:
        items = await fab.all_pending()
        if as_json:
            _dump([{"story": p.story, "branch": p.branch, "turn": p.turn} for p in items])
            return
        if not items:
            out.print("nothing awaits approval")
        for p in items:
            _print_pending(p)

    _run(go)


def _decide(story: str, branch: str, decision: Decision) -> None:
    async def go(fab: Fabula) -> None:
        outcome = await fab.decide(fab.store(story, branch), decision)
        out.print(f"{story} [{branch}]: {outcome}")

    _run(go)


@app.command()
def approve(story: str, branch: str = typer.Option("main", "--branch", "-b")) -> None:
    """Approve the pending turn: it is committed to memory."""
    _decide(story, branch, Decision(action="approve"))


@app.command()
def edit(
    story: str,
    text_file: Path = typer.Option(..., "--text-file", exists=True, dir_okay=False),
    branch: str = typer.Option("main", "--branch", "-b"),
) -> None:
    """Replace the pending turn's text with the file's and commit it."""
    text = text_file.read_text(encoding="utf-8").strip()
    if not text:
        err.print(f"[red]error:[/red] {text_file} is empty")
        raise typer.Exit(1)
    _decide(story, branch, Decision(action="edit", text=text))


@app.command()
def reject(
    story: str,
    note: str = typer.Option(..., "--note", help="Why: the planner sees it."),
    branch: str = typer.Option("main", "--branch", "-b"),
) -> None:
    """Reject the pending turn: nothing is committed; the turn is planned again."""
    _decide(story, branch, Decision(action="reject", note=note))


class ShowWhat(str, Enum):
    world = "world"
    beliefs = "beliefs"
    developments = "developments"
    hypotheses = "hypotheses"
    story = "story"
    branches = "branches"
    scenes = "scenes"


@app.command()
def show(
    story: str,
    what: ShowWhat,
    character: str | None = typer.Argument(
        None, help="For beliefs: the character (a>b for nested)."
    ),
    as_of: int | None = typer.Option(None, "--as-of", help="The view as of this turn."),
    branch: str = typer.Option("main", "--branch", "-b"),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Show one view of a story: world, beliefs CHAR, developments, hypotheses, story, branches."""

    async def go(fab: Fabula) -> None:
        store = fab.store(story, branch)
        await store.require()
        data = await _view_data(fab, store, what, character, as_of)
        if as_json:
            _dump(data)
        else:
            _render(what, data)

    _run(go)


async def _view_data(
    fab: Fabula, store: StoryStore, what: ShowWhat, character: str | None, as_of: int | None
) -> Any:
    if what is ShowWhat.world:
        w = await project_world(store, as_of=as_of)
        return {
            "story": store.story,
            "branch": store.branch,
            "as_of": as_of,
            "facts": [
                s.model_dump(exclude={"span"})
                for s in sorted(w.states.values(), key=lambda s: (s.subject, s.attribute))
            ],
        }
    if what is ShowWhat.beliefs:
        if not character:
            raise InvalidInput(
                "show beliefs needs a character, e.g. `fabula show demo beliefs leo`"
            )
        chain = character.split(">")
        b = await project_beliefs(store, chain, as_of=as_of)
        return {
            "story": store.story,
            "branch": store.branch,
            "holder": chain,
            "as_of": as_of,
            "beliefs": [
                x.model_dump(exclude={"span"})
                for x in sorted(b.beliefs.values(), key=lambda x: (x.subject, x.attribute))
            ],
        }
    if what is ShowWhat.developments:
        devs = await project_developments(store, as_of=as_of)
        return [d.model_dump() for d in devs.values()]
    if what is ShowWhat.hypotheses:
        hyps = await project_hypotheses(store, as_of=as_of)
        return [h.model_dump() for h in hyps.values()]
    if what is ShowWhat.story:
        last = as_of if as_of is not None else None
        texts = await store.turn_texts(1, last)
        return {
            "story": store.story,
            "branch": store.branch,
            "turns": [{"turn": t.turn, "text": t.text} for t in texts],
        }
    if what is ShowWhat.scenes:
        from fabula.memory.hierarchy import scenes

        return [n.model_dump() for n in await scenes(store)]
    return [
        {"branch": b.name, "parent": b.parent, "fork_turn": b.fork_turn, "pursue": b.pursue}
        for b in (await store.branches()).values()
    ]


def _render(what: ShowWhat, data: Any) -> None:
    if what is ShowWhat.story:
        for t in data["turns"]:
            out.print(f"[dim]{t['turn']:>3}[/dim]  {t['text']}", highlight=False)
        return
    if what is ShowWhat.world:
        table = Table("subject", "attribute", "value", "since", title="W: the world")
        for f in data["facts"]:
            value = f["value"] if f["polarity"] else f"not {f['value']}"
            table.add_row(f["subject"], f["attribute"], value, str(f["valid_from"]))
        out.print(table)
        return
    if what is ShowWhat.beliefs:
        holder = " → ".join(data["holder"])
        title = escape(f"B[{holder}]")
        table = Table("subject", "attribute", "value", "how", "since", title=title)
        for b in data["beliefs"]:
            value = b["value"] if b["polarity"] else f"not {b['value']}"
            how = b["mode"] + (f" by {b['speaker']}" if b.get("speaker") else "")
            table.add_row(b["subject"], b["attribute"], value, how, str(b["valid_from"]))
        out.print(table)
        return
    if what is ShowWhat.developments:
        table = Table("id", "kind", "title", "status", "history", title="D: developments")
        for d in data:
            hist = ", ".join(f"{h['status']}@{h['turn']}" for h in d["history"])
            table.add_row(d["id"], d["kind"], d["title"], d["history"][-1]["status"], hist)
        out.print(table)
        return
    if what is ShowWhat.hypotheses:
        table = Table("id", "development", "premise", "status", title="H: possible worlds")
        for h in data:
            table.add_row(h["id"], h["development"], h["premise"], h["status"])
        out.print(table)
        return
    _dump(data)


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
            f"branch [bold]{child.branch}[/bold] of {story} starts at turn {at}; "
            f"run it with: fabula run {story} --branch {child.branch}"
        )

    _run(go)


class ExportFormat(str, Enum):
    md = "md"
    json = "json"


@app.command()
def export(
    story: str,
    fmt: ExportFormat = typer.Option(ExportFormat.md, "--format"),
    branch: str = typer.Option("main", "--branch", "-b"),
) -> None:
    """Export a story's text (markdown) or its text and views (json)."""

    async def go(fab: Fabula) -> None:
        store = fab.store(story, branch)
        info = await store.info()
        texts = await store.turn_texts(1)
        if fmt is ExportFormat.md:
            sys.stdout.write(f"# {info.title}\n\n")
            for t in texts:
                sys.stdout.write(t.text + "\n\n")
            return
        _dump(
            {
                "story": story,
                "branch": branch,
                "title": info.title,
                "turns": [{"turn": t.turn, "text": t.text} for t in texts],
                "world": await _view_data(fab, store, ShowWhat.world, None, None),
                "developments": await _view_data(fab, store, ShowWhat.developments, None, None),
                "hypotheses": await _view_data(fab, store, ShowWhat.hypotheses, None, None),
            }
        )

    _run(go)


@app.command()
def demo(turns: int = typer.Option(6, "--turns", "-n", min=0, help="Autonomous turns.")) -> None:
    """Run the demo world (hollow_book) offline: story `demo`, recreated each time."""

    async def go(fab: Fabula) -> None:
        await fab.delete_story("demo")
        pack = load_world("hollow_book")
        store = await fab.new_story(pack, "demo")
        for text in pack.opening.turns:
            await fab.commit_scripted(store, text)
        for _ in range(turns):
            await fab.run_turn(store, auto=True)
        out.rule(f"[bold]{pack.title}[/bold]")
        _render(ShowWhat.story, await _view_data(fab, store, ShowWhat.story, None, None))
        _render(ShowWhat.world, await _view_data(fab, store, ShowWhat.world, None, None))
        for c in await store.characters():
            _render(ShowWhat.beliefs, await _view_data(fab, store, ShowWhat.beliefs, c, None))
        _render(
            ShowWhat.developments, await _view_data(fab, store, ShowWhat.developments, None, None)
        )
        _render(ShowWhat.hypotheses, await _view_data(fab, store, ShowWhat.hypotheses, None, None))

    _run(go)


# -- the embedded server ----------------------------------------------------------------
@server_app.command("start")
def server_start() -> None:
    """Start the embedded Redis (if it is not running) and print its URL."""
    try:
        out.print(redact(_url()), highlight=False)
    except FabulaError as exc:
        err.print(f"[red]error:[/red] {exc}", highlight=False)
        raise typer.Exit(1) from None


@server_app.command("stop")
def server_stop() -> None:
    """Stop the embedded Redis server that owns the data folder, or say why it could not."""
    try:
        stopped = EmbeddedRedis(_settings().home / "redis").stop()
    except FabulaError as exc:
        err.print(f"[red]error:[/red] {escape(str(exc))}", highlight=False)
        raise typer.Exit(1) from None
    out.print("stopped" if stopped else "no server was running")


# -- benchmarks -------------------------------------------------------------------------
def _ints(text: str) -> list[int]:
    try:
        return [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise typer.BadParameter(f"expected numbers separated by commas, got {text!r}") from None


def _bench(fn: Callable[P, T]) -> Callable[P, T]:
    @functools.wraps(fn)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> T:
        try:
            return fn(*args, **kwargs)
        except FabulaError as exc:
            err.print(f"[red]error:[/red] {exc}", highlight=False)
            raise typer.Exit(1) from None
        except redis.RedisError as exc:
            err.print(f"[red]error:[/red] redis: {exc}", highlight=False)
            raise typer.Exit(1) from None

    return wrapper


@bench_app.command("scale")
@_bench
def bench_scale(
    turns: str = typer.Option("100,1000,10000", "--turns"),
    characters: str = typer.Option("5,20", "--characters"),
    json_out: str | None = typer.Option(None, "--json"),
) -> None:
    """Commit and projection latency, round trips and memory as the story grows."""
    from fabula.bench.scale import run as run_scale

    run_scale(_url(), _ints(turns), _ints(characters), json_out)


@bench_app.command("loop")
@_bench
def bench_loop(
    turns: int = typer.Option(200, "--turns", min=1),
    characters: int = typer.Option(5, "--characters", min=1),
    json_out: str | None = typer.Option(None, "--json"),
) -> None:
    """Offline turns per second and the memory-builder's overhead per turn."""
    from fabula.bench.loop import run as run_loop

    run_loop(_url(), turns, characters, json_out)


def _dataset_bench(name: str, path: Path, json_out: str | None, answers: str | None) -> None:
    import importlib

    if not path.exists():
        err.print(f"[red]error:[/red] no such file: {path}", highlight=False)
        raise typer.Exit(1)
    module = importlib.import_module(f"fabula.bench.{name}")
    run_fn = getattr(module, f"run_{name}")
    # with FABULA_REDIS_URL unset the benchmark runs on a private, temporary Redis
    asyncio.run(
        run_fn(path, redis_url=_settings().redis_url, json_out=json_out, answers_out=answers)
    )


def _register_dataset_bench(name: str, path_help: str, per: str, summary: str) -> None:
    """One ``fabula bench NAME PATH [--json OUT] [--answers OUT.jsonl]`` command."""

    @bench_app.command(name, help=summary)
    @_bench
    def command(
        path: Path = typer.Argument(..., help=path_help),
        json_out: str | None = typer.Option(None, "--json"),
        answers: str | None = typer.Option(None, "--answers", help=f"One JSON line per {per}."),
    ) -> None:
        _dataset_bench(name, path, json_out, answers)


_register_dataset_bench(
    "tomi",
    "A ToMi .txt file (its .trace beside it).",
    "question",
    "ToMi false-belief questions, with the shared-memory baseline.",
)
_register_dataset_bench(
    "hitom",
    "Hi-ToM items as JSON Lines.",
    "question",
    "Hi-ToM higher-order beliefs, communication and deception, with the baseline.",
)
_register_dataset_bench(
    "longstory",
    "A long story as JSON Lines (turns and probes).",
    "probe",
    "Retention, knowledge boundaries, false belief and leakage over a long story.",
)


def main() -> None:
    """Console entry point."""
    app()


if __name__ == "__main__":  # pragma: no cover
    main()
