"""A story's lore: ``lore settings``, its World Info settings shown and set.

``fabula lore settings STORY`` lists every World Info setting the story holds (kept in its
pack: a SillyTavern ``settings.json`` imported with it, or a fresh SillyTavern install's
defaults), each with SillyTavern's name for it and whether Fabula applies it, and the lore
budget they give. ``fabula lore settings STORY depth=3 budget_cap=800`` sets them (either
name: ``world_info_depth=3`` is the same); a bad name or value is refused in one line and
nothing is changed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import typer

from fabula.errors import InvalidInput
from fabula.graph.cli.app import app, dump, out, run_with_app, settings
from fabula.graph.service.handles import StoryRef

if TYPE_CHECKING:
    from fabula.graph.service import Fabula
    from fabula.worlds.lore import WorldInfoSettings

lore_app = typer.Typer(help="A story's lore: its World Info settings.", rich_markup_mode=None)
app.add_typer(lore_app, name="lore")


def parse_changes(values: list[str]) -> list[tuple[str, str]]:
    """``NAME=VALUE`` arguments as pairs; InvalidInput (one line) for one without ``=``."""
    pairs = []
    for value in values:
        name, eq, setting = value.partition("=")
        if not eq or not name.strip():
            raise InvalidInput(f"{value!r}: give a setting as NAME=VALUE (e.g. depth=3)")
        pairs.append((name.strip(), setting))
    return pairs


def budget_line(found: WorldInfoSettings, default: int) -> str:
    """How the lore budget comes from ``found`` (``default``: FABULA_LORE_BUDGET), in the
    words the studio's Lore page uses too."""
    from fabula.worlds.lore import budget_from, lore_budget

    return f"lore budget: {lore_budget(found, default)} tokens ({budget_from(found, default)})"


@lore_app.command("settings")
def lore_settings(
    story: str,
    changes: list[str] = typer.Argument(
        None, help="Settings to change, as NAME=VALUE (Fabula's name or SillyTavern's)."
    ),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Show the story's World Info settings, or set them: `fabula lore settings demo
    depth=3 budget_cap=800` (`true`/`false` for a switch, a whole number for a number,
    `context=none` for no context). A bad name or value changes nothing."""
    pairs = parse_changes(changes or [])

    async def go(fab: Fabula) -> None:
        from fabula.worlds.lore import KEPT_SETTINGS, SETTINGS

        store = StoryRef(story)
        found = (
            await fab.set_world_info(store, pairs) if pairs else await fab.read(store).world_info()
        )
        default = settings().lore_budget
        if as_json:
            from fabula.worlds.lore import lore_budget

            dump(
                {
                    "story": story,
                    "world_info": found.model_dump(),
                    "lore_budget": lore_budget(found, default),
                }
            )
            return
        for name, st_name in SETTINGS.items():
            value = getattr(found, name)
            shown = "none" if value is None else str(value).lower()
            note = "  (kept, not applied)" if name in KEPT_SETTINGS else ""
            out.print(
                f"{name:<26} {shown:<8} {st_name}{note}",
                markup=False,
                highlight=False,
                soft_wrap=True,
            )
        out.print(budget_line(found, default), markup=False, highlight=False)

    run_with_app(go)
