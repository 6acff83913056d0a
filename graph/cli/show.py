"""Showing a story: ``show`` (one view: world, beliefs, developments, ...), ``export``, ``demo``."""

from __future__ import annotations

import sys
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer
from rich.table import Table
from rich.text import Text

from fabula.errors import InvalidInput
from fabula.graph.cli.app import app, dump, out, plain, run_with_app, run_with_stores
from fabula.graph.cli.app import settings as fab_settings
from fabula.graph.service.reader import RECALL_BUDGET

if TYPE_CHECKING:  # imported when a command runs: `fabula --help` stays quick
    from fabula.graph.service import Fabula
    from fabula.graph.service.light import Stores
    from fabula.graph.service.reader import Reader


class ShowWhat(str, Enum):
    """The views ``fabula show`` shows."""

    world = "world"
    beliefs = "beliefs"
    developments = "developments"
    hypotheses = "hypotheses"
    story = "story"
    branches = "branches"
    scenes = "scenes"
    plot = "plot"
    usage = "usage"
    spread = "spread"


# views of the branch as it is now only: its branches, its hierarchy, its usage so far
_NOW_ONLY = frozenset(
    {ShowWhat.branches, ShowWhat.scenes, ShowWhat.plot, ShowWhat.usage, ShowWhat.spread}
)


@app.command()
def show(
    story: str,
    what: ShowWhat,
    character: str | None = typer.Argument(
        None, help="For beliefs: the character (a>b for nested); for spread: the clause."
    ),
    as_of: int | None = typer.Option(None, "--as-of", help="The view as of this turn."),
    branch: str = typer.Option("main", "--branch", "-b"),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Show one view of a story: world, beliefs CHAR, developments, hypotheses, story,
    branches, scenes, plot (the plot and its plotlines), usage (model tokens and cost per
    turn and role), spread "CLAUSE" (the share of characters holding it, tick by tick)."""

    async def go(stores: Stores) -> None:  # a read: Redis only, no service (quick to start)
        reader = stores.read(story, branch)
        await reader.require()
        data = await view_data(reader, what, character, as_of)
        if as_json:
            dump(data)
        else:
            render(what, data)

    run_with_stores(go)


async def view_data(
    reader: Reader,
    what: ShowWhat,
    character: str | None,
    as_of: int | None,
) -> Any:
    """One view of ``reader``'s branch (``as_of``: as it stood then), as the service's
    response models: the API answers with the same.

    Raises :class:`InvalidInput` for an ``as_of`` outside the branch's turns, and
    :class:`NotFound` for a character the story does not have (named by id or name, in any
    case).
    """
    if as_of is not None and what in _NOW_ONLY:
        raise InvalidInput(
            f"show {what.value} has no --as-of: it shows the branch as it is now",
            story=reader.story,
        )
    if as_of is not None:
        head = await reader.head()
        if not 0 <= as_of <= head:
            raise InvalidInput(
                f"--as-of {as_of} is outside story {reader.story!r} on branch "
                f"{reader.branch!r}, which has turns 0 to {head}",
                story=reader.story,
            )
    if what is ShowWhat.world:
        return await reader.world(as_of)
    if what is ShowWhat.beliefs:
        if not character:
            raise InvalidInput(
                "show beliefs needs a character, e.g. `fabula show demo beliefs leo`"
            )
        return await reader.beliefs(character.split(">"), as_of)
    if what is ShowWhat.developments:
        return (await reader.minds(as_of)).developments
    if what is ShowWhat.hypotheses:
        return (await reader.minds(as_of)).hypotheses
    if what is ShowWhat.story:
        return await reader.text(as_of)
    if what is ShowWhat.usage:
        return (await reader.usage()).model_dump(mode="json")
    if what is ShowWhat.scenes:
        return await reader.scenes()
    if what is ShowWhat.spread:
        return await reader.spread(character)
    if what is ShowWhat.plot:
        return await reader.plot()
    return await reader.branches()


def _turns(node: dict[str, Any]) -> str:
    first, last = node["first_turn"], node["last_turn"]
    return str(first) if first == last else f"{first}-{last}"


def _nodes_table(title: str, rows: list[dict[str, Any]], members: str) -> Table:
    table = Table("id", "turns", "title", members, "summary", "by", title=title)
    for n in rows:
        table.add_row(
            n["id"], _turns(n), n["title"], str(len(n["children"])), n["summary"], n["summary_by"]
        )
    return table


def _spread_table(data: dict[str, Any]) -> None:
    table = Table("tick", "turn", "know", "share", "who", title=f"spread: {data['clause']}")
    for row in data["ticks"]:
        share = f"{row['knowers']}/{row['characters']} ({row['share']:.0%})"
        table.add_row(
            str(row["tick"]), str(row["turn"]), str(row["knowers"]), share, ", ".join(row["who"])
        )
    out.print(table)


# long (over 60 lines): one short branch per view of `fabula show`, a dispatch table
# written as code
def render(what: ShowWhat, data: Any) -> None:
    """Print a view's data as a table (or text, or JSON)."""
    data = plain(data)
    if what is ShowWhat.story:
        for t in data["turns"]:
            out.print(Text.assemble((f"{t['turn']:>3}", "dim"), "  ", t["text"]))
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
        title = f"B[{holder}]"
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
    if what is ShowWhat.usage:
        table = Table("turn", "role", "model", "calls", "in", "out", "retries", title="usage")
        rows = [*data["turns"], {"turn": "background", **data["background"]}]
        for t in [*rows, {"turn": "all", **data["total"]}]:
            for role, u in t["roles"].items():
                counts = (u["calls"], u["input_tokens"], u["output_tokens"], u["retries"])
                table.add_row(str(t["turn"]), role, str(u.get("model", "")), *map(str, counts))
        out.print(table)
        cost = data["total"]["cost_usd"]
        out.print("cost: " + (f"${cost:.4f}" if cost is not None else "no price for a model"))
        return
    if what is ShowWhat.spread:
        _spread_table(data)
        return
    if what is ShowWhat.scenes:
        out.print(_nodes_table("scenes", data, "events"))
        if not data:
            out.print("no scene yet: scenes are made by consolidation after each committed turn")
        return
    if what is ShowWhat.plot:
        plot = data["plot"]
        if plot is None:
            out.print(
                "no plot yet: a plotline joins two scenes by a development or a state's changes"
            )
            return
        out.print(
            Text.assemble(
                ("the plot", "bold"),
                f" (turns {_turns(plot)}, {plot['summary_by']}): ",
                plot["summary"],
            )
        )
        out.print(_nodes_table("plotlines", data["plotlines"], "scenes"))
        return
    if what is ShowWhat.hypotheses:
        table = Table("id", "development", "premise", "status", title="H: possible worlds")
        for h in data:
            table.add_row(h["id"], h["development"], h["premise"], h["status"])
        out.print(table)
        return
    if what is ShowWhat.branches:
        table = Table("branch", "from", "at turn", "turns", "pursues", title="branches")
        for b in data:
            fork = "" if b["fork_turn"] is None else str(b["fork_turn"])
            table.add_row(b["branch"], b["parent"] or "", fork, str(b["head"]), b["pursue"] or "")
        out.print(table)
        return
    dump(data)


@app.command()
def recall(
    story: str,
    request: str = typer.Argument(..., help="A question, or what a turn is about."),
    character: str | None = typer.Option(
        None, "--as", help="Recall as this character: only what it lived (id or name)."
    ),
    budget: int | None = typer.Option(
        None,
        "--budget",
        help=f"The most tokens the context may hold (default {RECALL_BUDGET}; with --as, "
        "what the character's prompt is given).",
    ),
    as_of: int | None = typer.Option(None, "--as-of", help="Recall as of this turn."),
    branch: str = typer.Option("main", "--branch", "-b"),
    as_json: bool = typer.Option(False, "--json", help="With the record behind every line."),
) -> None:
    """Ask the story's memory: the context the writer (or, with --as, a character) would be
    given for REQUEST, within --budget tokens, e.g. `fabula recall demo "where is the key?"`."""

    async def go(fab: Fabula) -> None:
        found = await fab.read(story, branch).recall(
            request, budget=budget, character=character, as_of=as_of
        )
        if as_json:
            dump(found)
            return
        who = found.holder or "the writer"
        when = "" if found.as_of is None else f" as of turn {found.as_of}"
        out.rule(Text(f"what {who} recalls{when}: {found.request}", style="bold"))
        if found.plan is not None:
            out.print(Text("read as: " + found.plan.describe(), style="dim"))
        out.print(found.text or "(nothing: the memory holds nothing for this request)")
        for lore in found.lore:
            why = lore.fired + (f" {lore.key!r}" if lore.key else "")
            out.print(Text.assemble((f"lore ({lore.book}: {lore.name}; {why}) ", "dim"), lore.text))
        for lore in found.lore_left_out:
            why = lore.fired + (f" {lore.key!r}" if lore.key else "")
            out.print(
                Text(
                    f"lore left out ({lore.book}: {lore.name}; {why}): {lore.tokens} tokens, "
                    f"over the lore budget of {found.lore_budget} (FABULA_LORE_BUDGET)",
                    style="yellow",
                )
            )
        for ex in found.voice:
            out.print(Text.assemble((f"voice ({ex.source}) ", "dim"), ex.text))
        for b in found.beliefs:
            value = ("" if b.polarity else "not ") + b.value
            how = b.mode + (f" by {b.speaker}" if b.speaker else "")
            out.print(
                Text.assemble(
                    ("belief ", "dim"),
                    f"the {b.attribute} of {b.subject} is {value} ({how}, turn {b.turn})",
                )
            )
        for m in found.memories:
            out.print(Text.assemble((f"memory (turn {m.turn}) ", "dim"), m.quote))
        records = len({(line.kind, line.id) for line in found.lines})
        lore_tokens = sum(x.tokens for x in found.lore)
        out.print(
            Text(
                f"{found.tokens} of {found.budget} tokens, {len(found.lines)} lines "
                f"from {records} records; lore {lore_tokens} of {found.lore_budget} tokens "
                "(--json: the record behind each line)",
                style="dim",
            )
        )

    run_with_app(go)


class ExportFormat(str, Enum):
    """The formats of ``fabula export``."""

    md = "md"
    json = "json"
    card = "card"
    charx = "charx"
    lorebook = "lorebook"  # SillyTavern's World Info format
    lorebook_v3 = "lorebook_v3"
    epub = "epub"


@app.command()
def export(
    story: str,
    fmt: ExportFormat = typer.Option(ExportFormat.md, "--format"),
    branch: str = typer.Option("main", "--branch", "-b"),
    character: str | None = typer.Option(None, "--character", help="For card, charx: whose."),
    as_character: str | None = typer.Option(
        None, "--as", help="The story as this character lived it (md, json, epub)."
    ),
    as_of: int | None = typer.Option(
        None, "--as-of", help="As of a turn: the text to it, the views as they stood then."
    ),
    out_file: Path | None = typer.Option(None, "--out", help="Write here, not to stdout."),
) -> None:
    """Export a story's text (markdown, or an EPUB book), its text and views (json), a
    character as a V3 card holding what it believes (card --character C; PNG if it has a
    picture), the same as a CHARX zip with its assets (charx --character C), or the world
    as SillyTavern's World Info (lorebook: its import takes it) or a V3 lorebook
    (lorebook_v3). With --as C (md, json, epub): the story as C lived it,
    what it witnessed in the words it saw or heard and what it believes, read from its own
    mind only."""
    if as_character is not None and fmt not in (
        ExportFormat.md,
        ExportFormat.json,
        ExportFormat.epub,
    ):
        raise InvalidInput(f"export --as takes --format md, json or epub, not {fmt.value}")

    async def go(fab: Fabula) -> None:
        reader = fab.read(story, branch)
        if fmt in (
            ExportFormat.card,
            ExportFormat.charx,
            ExportFormat.lorebook,
            ExportFormat.lorebook_v3,
        ):
            await write_export(reader, fmt, character, as_of, out_file)
            return
        if as_character is not None:
            from fabula.graph.service.lived import lived_markdown

            found = await reader.lived(as_character, as_of=as_of)
            if fmt is ExportFormat.md:
                _emit(lived_markdown(found).encode(), out_file)
            elif fmt is ExportFormat.epub:
                from fabula.graph.service.epub import lived_epub

                _emit(lived_epub(found), out_file)
            else:
                _emit(_json_bytes(found), out_file)
            return
        if fmt is ExportFormat.md:
            _emit((await reader.markdown(as_of)).encode(), out_file)
        elif fmt is ExportFormat.epub:
            _emit(await reader.epub(as_of), out_file)
        else:
            _emit(_json_bytes(await reader.export(as_of)), out_file)

    run_with_app(go)


def _emit(data: bytes, out_file: Path | None) -> None:
    if out_file is None:
        sys.stdout.buffer.write(data)
        sys.stdout.buffer.flush()
    else:
        out_file.write_bytes(data)


def _json_bytes(data: Any) -> bytes:
    import json

    return (json.dumps(plain(data), indent=2, default=str) + "\n").encode()


async def write_export(
    reader: Reader,
    fmt: ExportFormat,
    character: str | None,
    as_of: int | None,
    out_file: Path | None,
) -> None:
    """Write a card, CHARX or lorebook export (see :mod:`fabula.graph.service.cards`) to
    ``out_file`` or stdout."""
    if fmt in (ExportFormat.card, ExportFormat.charx):
        if not character:
            raise InvalidInput(f"export --format {fmt.value} needs --character C")
        if fmt is ExportFormat.charx:
            data = await reader.charx(character, as_of)
        else:
            data, _ = await reader.card(character, as_of)
    elif fmt is ExportFormat.lorebook_v3:
        data = await reader.lorebook(as_of, "lorebook_v3")
    else:
        data = await reader.lorebook(as_of)
    if out_file is None:
        sys.stdout.buffer.write(data)
    else:
        out_file.write_bytes(data)


@app.command()
def demo(
    turns: int = typer.Option(12, "--turns", "-n", min=0, help="Autonomous turns (at most)."),
) -> None:
    """Run the demo world (hollow_book) offline: story `demo`, recreated each time (a story
    of yours named `demo` is left alone). Prints the story, the moment it is about (where
    the world and a character's beliefs part, and where they meet again), then the views."""

    async def go(fab: Fabula) -> None:
        existing = fab.read("demo")
        if await existing.exists():
            if (await existing.info()).origin != "demo":
                raise InvalidInput(
                    "a story named 'demo' exists that `fabula demo` did not make; it is left "
                    "alone: delete it (`fabula delete demo`) to run the demo",
                    story="demo",
                )
            await fab.delete_story("demo")
        from fabula.worlds.loader import load_world

        pack = load_world("hollow_book")
        demo = await fab.create_story(pack, "demo", origin="demo")
        rest = (await fab.run(demo, turns, auto=True)).rest if turns else None
        reader = fab.read(demo)
        out.rule(Text(pack.title, style="bold"))
        render(ShowWhat.story, await view_data(reader, ShowWhat.story, None, None))
        if rest:
            out.print(Text(f"at rest: {rest}", style="dim"))
        out.rule(Text("the moment it is about", style="bold"))
        for line in await reader.moment():
            out.print(line)
        render(ShowWhat.world, await view_data(reader, ShowWhat.world, None, None))
        for c in await reader.characters():
            render(ShowWhat.beliefs, await view_data(reader, ShowWhat.beliefs, c, None))
        render(ShowWhat.developments, await view_data(reader, ShowWhat.developments, None, None))
        render(ShowWhat.hypotheses, await view_data(reader, ShowWhat.hypotheses, None, None))

    run_with_app(go)
    if fab_settings().redis_url is None:  # the embedded server: started, and left running
        out.print(
            "the embedded Redis keeps running, with the story (`fabula show demo world`); "
            "`fabula server stop` stops it"
        )
