"""Bringing worlds in: ``fabula import PATH... [--id STORY] [--pack DIR] [--json]`` (what
``fabula export --format card|charx|lorebook`` writes is :mod:`fabula.graph.service.cards`).

Cards (V1/V2/V3 as JSON, PNG or CHARX), lorebooks and a BookWorld preset become one world
pack (:mod:`fabula.worlds.imports`): written as a folder with ``--pack``, made a story with
``--id`` (both at once is allowed). Bad input is one line naming the file and the field,
and nothing is written.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from fabula.errors import InvalidInput
from fabula.graph.cli.app import app, dump, out, run_with_app

if TYPE_CHECKING:  # the rest is imported when a command runs: `fabula --help` stays quick
    from fabula.graph.service import Fabula
    from fabula.worlds.imports import Imported


def summary(imported: Imported) -> dict[str, Any]:
    """What an import made, as plain data (``--json``)."""
    pack = imported.pack
    return {
        "id": pack.id,
        "title": pack.title,
        "sources": [{"path": s.path, "read_as": s.kind} for s in imported.sources],
        "characters": [{"name": c.name, "aliases": list(c.aliases)} for c in pack.characters],
        "places": [p.name for p in pack.places],
        "greetings": [
            {"character": g.character, "group_only": g.group_only} for g in pack.opening.greetings
        ],
        "books": [
            {"name": b.name, "owner": b.owner, "format": b.format, "entries": len(b.entries)}
            for b in pack.lore.books
        ],
        "assets": sorted(imported.assets),
        "motives": pack.goal_warnings,
        "findings": list(imported.findings),
        "idle": pack.idle_warning,
    }


@app.command(name="import")
def import_cmd(
    paths: list[Path] = typer.Argument(..., help="Cards, lorebooks, a BookWorld preset."),
    story_id: str | None = typer.Option(None, "--id", help="Make a story with this id."),
    pack_dir: Path | None = typer.Option(None, "--pack", help="Write a world pack folder here."),
    user: str = typer.Option("User", "--user", help="The name {{user}} stands for."),
    greeting: int | None = typer.Option(
        None,
        "--greeting",
        help="With --id: start with this greeting (default: the first, where there is one).",
    ),
    as_json: bool = typer.Option(False, "--json", help="Say what was made as JSON."),
) -> None:
    """Import character cards (V1/V2/V3: JSON, PNG, CHARX), lorebooks (V3, SillyTavern,
    NovelAI, Agnai, KoboldAI) and a BookWorld preset as one world: a pack folder (--pack
    DIR) a user can read and edit, or a story (--id STORY)."""
    from fabula.worlds.imports import import_paths, write_pack

    if story_id is None and pack_dir is None:
        raise InvalidInput("fabula import: say where it goes: --pack DIR, --id STORY, or both")
    if greeting is not None and story_id is None:
        raise InvalidInput("--greeting chooses how a story starts: it needs --id")
    imported = import_paths(list(paths), story_id=story_id, user=user)
    if greeting is not None and not 0 <= greeting < len(imported.pack.opening.greetings):
        count = len(imported.pack.opening.greetings)
        raise InvalidInput(f"--greeting {greeting}: the world has {count} greetings")
    result = summary(imported)
    if pack_dir is not None:
        result["pack"] = str(write_pack(imported.pack, imported.assets, pack_dir))
    if story_id is not None:

        async def go(fab: Fabula) -> str:
            # the story starts with its first greeting unless --greeting chose another
            made = await fab.import_story(imported, story_id, greeting=greeting)
            return made.story

        result["story"] = run_with_app(go)
    if as_json:
        dump(result)
        return
    for source in imported.sources:
        out.print(f"{source.path}: {source.kind}")
    for line in result["motives"]:  # said once, here; the planner shows them as motives
        out.print(line)
    for line in result["findings"]:  # an entry imported disabled, and why
        out.print(line, markup=False, highlight=False, soft_wrap=True)  # one line each
    if result["idle"]:
        out.print(result["idle"], markup=False)
    entries = sum(b["entries"] for b in result["books"])
    made = [
        f"pack {result['pack']}" if "pack" in result else "",
        f"story {result['story']}" if "story" in result else "",
    ]
    out.print(
        f"imported {imported.pack.title!r}: {len(result['characters'])} characters, "
        f"{len(result['places'])} places, {len(result['books'])} lorebooks ({entries} entries), "
        f"{len(result['greetings'])} greetings -> {' and '.join(m for m in made if m)}"
    )
