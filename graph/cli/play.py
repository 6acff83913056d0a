"""Playing a character: ``fabula play``, and the parts ``run`` and ``write`` take.

A story's played characters (``fabula play STORY CHARACTER``, or ``--play NAME`` on ``run``
and ``write``; an imported card's ``{{user}}`` is one) have their part of each turn written
by a person; the others propose theirs as before. A turn stops before its draft until every
played character's part is given: ``write`` asks for it at the prompt, showing that
character's own view (what it believes, from its own mind only) and its agent's proposal
(enter takes it); ``run`` takes it from ``--as "NAME: words"`` (the name may be left out
when one character is played) and otherwise stops, saying how to give it; ``run --auto``
is played by nobody (the engine plays each part not given).
``--as`` parts are the first turn's: a run of several turns stops again at the next.

A part is what the character does, in controlled English naming it ("Leo went to the
hallway."), or else a line it says ("Where is my key?").
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

import typer
from rich.text import Text

from fabula.errors import InvalidInput, NotFound
from fabula.graph.cli.app import app, dump, out, run_with_app
from fabula.graph.service.handles import StoryRef

if TYPE_CHECKING:  # imported when a command runs: `fabula --help` stays quick
    from fabula.graph.service import Fabula
    from fabula.graph.service.reader import Reader
    from fabula.graph.state import Part, PartRequest


@app.command()
def play(
    story: str,
    characters: list[str] = typer.Argument(None, help="Characters a person plays."),
    stop: bool = typer.Option(False, "--stop", help="Stop playing the characters named."),
    none: bool = typer.Option(False, "--none", help="Play no character: the engine plays all."),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Choose the characters a person plays in STORY (each turn, their part is yours; the
    others answer from their own minds), or list them. --stop NAME stops playing one."""
    names = characters or []
    if none and names:
        raise InvalidInput("--none plays no character: name none with it")

    async def go(fab: Fabula) -> None:
        store = StoryRef(story)
        reader = fab.read(store)
        await reader.require()
        played = await reader.played()
        if none:
            played = []
        elif names:
            ids = [(await reader.resolve(n, "character")).id for n in names]
            played = [c for c in played if c not in ids] if stop else [*played, *ids]
        if none or names:
            played = await fab.set_played(store, played)
        if as_json:
            dump({"story": story, "played": played})
            return
        out.print(f"{story}: {'played: ' + ', '.join(played) if played else 'no character played'}")

    run_with_app(go)


async def play_more(fab: Fabula, store: StoryRef, names: list[str]) -> None:
    """``--play NAME``: add ``names`` to the story's played characters."""
    if names:
        reader = fab.read(store)
        await reader.require()
        ids = [(await reader.resolve(n, "character")).id for n in names]
        await fab.set_played(store, [*await reader.played(), *ids])


async def given_parts(reader: Reader, values: list[str]) -> dict[str, Part]:
    """``--as`` values ("NAME: words", or "words" when one character is played) as parts by
    character id, for ``reader``'s story; InvalidInput (one line) for one that names no
    played character."""
    from fabula.graph.state import typed_part

    played = await reader.played()
    parts: dict[str, Part] = {}
    for value in values:
        who, colon, words = value.partition(":")
        ident = None
        if colon and who.strip():
            try:
                ident = (await reader.resolve(who.strip(), "character")).id
            except NotFound:
                ident = None
        if ident is None:  # no name before it: the one played character's
            if len(played) != 1:
                listed = ", ".join(played) or "none"
                raise InvalidInput(
                    f"--as {value!r}: say whose part it is, as NAME: words (played: {listed})",
                    story=reader.story,
                )
            ident, words = played[0], value
        if not words.strip():
            raise InvalidInput(f"--as {value!r}: the part has no words", story=reader.story)
        parts[ident] = typed_part(words, story=reader.story)
    return parts


def print_parts(requests: list[PartRequest]) -> None:
    """Each played character's question: its own view (what it believes) and its agent's
    proposal."""
    for r in requests:
        v = r.view
        out.rule(Text(f"{r.story} [{r.branch}] turn {r.turn}: {v.name}'s part (you play {v.name})"))
        if v.place:
            company = f" (with {', '.join(v.company)})" if v.company else " (alone)"
            out.print(f"  where: {v.place}{company}", markup=False)
        for line in v.beliefs:
            out.print(f"  believes: {line}", markup=False)
        for line in v.memories:
            out.print(f"  remembers: {line}", markup=False)
        for goal in v.goals:
            out.print(f"  wants: {goal}", markup=False)
        if v.suggestion:
            out.print(f"  {v.name}'s own idea: {v.suggestion}", markup=False)


async def ask_parts(
    fab: Fabula, store: StoryRef, ask: Callable[[str], Awaitable[str]]
) -> dict[str, Part] | None:
    """The parts the next turn waits for, asked one by one with ``ask`` (``write``'s
    prompt), each character's view shown first; an empty answer takes its agent's
    proposal. None when the turn waits for no part."""
    from fabula.graph.state import typed_part

    requests = await fab.read(store).waiting_parts()
    if not requests:
        return None
    print_parts(requests)
    parts: dict[str, Part] = {}
    for r in requests:
        words = await ask(f"{r.view.name}'s part (enter: their own idea) > ")
        parts[r.character] = typed_part(words, story=store.story)
    return parts
