"""``fabula write``: steer a story in one terminal session, turn after turn.

The loop shows the turn awaiting a decision — the draft, the critic's findings, what it
would change — and reads one key a line: ``a`` approve, ``e`` edit in ``$EDITOR`` (read and
checked by the critic again), ``r`` reject with a note, ``d`` a direction for the next turn,
``n`` N alternative drafts to choose from, ``q`` quit. It resumes the turn already pending
(from any process); a refused decision is one line and the loop goes on. A direction or a
rejection's note the planner cannot read (the offline planner reads a character and a
goal: "Mara goes to the study") is refused when it is typed, in one line.

Ctrl-C while the loop waits for a key ends it and leaves the pending turn as it is (``fabula
write`` resumes it); Ctrl-C while a decision is applied is held until the decision is done,
so no decision is half-taken or lost.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import sys
import threading
from collections.abc import Iterator
from types import FrameType
from typing import TYPE_CHECKING

import typer
from rich.text import Text

from fabula.errors import FabulaError, InvalidInput
from fabula.graph.cli.app import app, err, out, run_with_app
from fabula.graph.cli.play import ask_parts, play_more
from fabula.graph.cli.remedies import error_line
from fabula.graph.cli.turns import in_editor, moved_note, print_drafts, prose_printer
from fabula.graph.service.handles import StoryRef

if TYPE_CHECKING:
    from fabula.agents.contracts import Decision
    from fabula.graph.service import Fabula
    from fabula.graph.service.responses.turns import PendingTurn

KEYS = "[a]pprove [e]dit [r]eject [d]irection [n] drafts [q]uit"


class _Quit(Exception):
    """The person ended the session (q, end of input, or Ctrl-C at the prompt)."""


@contextlib.contextmanager
def _held_interrupt() -> Iterator[list[int]]:
    """Hold Ctrl-C while the body runs (a decision being applied); re-raised after it."""
    caught: list[int] = []

    def hold(signum: int, frame: FrameType | None) -> None:
        caught.append(signum)
        err.print("(finishing the decision first)")

    previous = signal.signal(signal.SIGINT, hold)
    try:
        yield caught
    finally:
        signal.signal(signal.SIGINT, previous)
    if caught:
        raise KeyboardInterrupt


async def _ask(prompt: str) -> str:
    """One line of input (stripped); end of input ends the session.

    The line is read by a daemon thread of its own, awaited here: Ctrl-C cancels the wait
    (the loop's task) at once, and a thread still blocked on the terminal keeps no one
    from exiting. (A reader running all the time would take the keys meant for $EDITOR.)
    """
    out.print(prompt, end="")
    sys.stdout.flush()
    loop = asyncio.get_running_loop()
    line: asyncio.Future[str] = loop.create_future()

    def deliver(text: str) -> None:
        if not line.done():
            line.set_result(text)

    def read() -> None:
        try:
            text = sys.stdin.readline()
        except (OSError, ValueError):
            text = ""
        loop.call_soon_threadsafe(deliver, text)

    threading.Thread(target=read, name="fabula-write-input", daemon=True).start()
    text = await line
    if not text:  # end of input
        raise _Quit
    return text.strip()


def _show(details: PendingTurn) -> None:
    """The pending turn: its draft, the critic's findings, what it would change."""
    out.rule(Text(f"{details.story} [{details.branch}] turn {details.turn} (draft {details.id})"))
    out.print(details.draft)
    for f in details.findings:
        out.print(Text.assemble("  ", (f.severity, "yellow"), f" {f.kind}: {f.message}"))
    changes = details.changes
    for line in changes.events[:6]:
        out.print(f"  happens: {line}")
    for change in [*changes.world, *changes.beliefs][:10]:
        who = " → ".join(change.holder)
        value = f"{change.before or '?'} → {change.after or '(no longer)'}"
        out.print(
            f"  {who + ' believes: ' if who else 'world: '}{change.subject}'s "
            f"{change.attribute}: {value}"
        )


def _decision(**fields: str | bool | None) -> Decision:
    from fabula.agents.contracts import Decision

    return Decision.model_validate(fields)


async def _decide(fab: Fabula, store: StoryRef, decision: Decision, expect: str) -> str:
    """Apply ``decision`` to draft ``expect``, Ctrl-C held until it is done; its outcome."""
    with _held_interrupt():
        done = await fab.decide(store, decision, expect=expect, listener=prose_printer())
    return done.outcome if done.moved_to is None else moved_note(done)


# long (over 60 lines): the write loop's one state machine (draft, decide, steer, play);
# its states share the direction and the pending turn
async def _session(fab: Fabula, store: StoryRef) -> None:
    """The loop (see the module docstring)."""
    await fab.read(store).require()
    direction: str | None = None
    while True:
        if await fab.read(store).pending() is None:
            # a played character's part, asked beside its own view (fabula.graph.cli.play)
            parts = await ask_parts(fab, store, _ask)
            with _held_interrupt():
                try:
                    done = await fab.run(
                        store,
                        auto=False,
                        direction=direction,
                        listener=prose_printer(),
                        parts=parts,
                    )
                except FabulaError as exc:
                    if direction is None:
                        raise
                    # read when it was given, no longer (the story moved on): one line,
                    # and the turn is written without it
                    _refused(exc)
                    out.print("next turn: no direction")
                    direction = None
                    continue
            direction = None
            if done.rest is not None:
                out.print(f"{store.story}: at rest at turn {done.head}: {done.rest}")
                return
            if done.outcome == "part":
                continue  # the turn stopped for a played character's part: asked above
        details = await fab.pending_details(store)
        _show(details)
        key = (await _ask(f"{KEYS} > ")).lower()[:1]
        try:
            if key == "q":
                raise _Quit
            if key == "a":
                outcome = await _decide(fab, store, _decision(action="approve"), details.id)
                out.print(f"turn {details.turn}: {outcome}")
            elif key == "e":
                text = in_editor(details.draft, fab.settings.limits)
                if text is None or text == details.draft.strip():
                    out.print("the draft is unchanged")
                    continue
                await _decide(fab, store, _decision(action="edit", text=text), details.id)
            elif key == "r":
                note = await _ask("note for the planner (optional) > ")
                if note:  # a note the planner cannot read is refused, not ignored
                    await fab.check_steering(store, note, "note")
                await _decide(fab, store, _decision(action="reject", note=note), details.id)
            elif key == "d":
                asked = await _ask("direction for the next turn > ") or None
                if asked is not None:
                    await fab.check_steering(store, asked)
                direction = asked
                out.print(f"next turn: {direction or 'no direction'}")
            elif key == "n":
                raw = await _ask("how many drafts [3] > ") or "3"
                if not raw.isdigit():
                    raise InvalidInput(f"a number of drafts, not {raw!r}")
                with _held_interrupt():
                    drafts = await fab.alternatives(store, int(raw), listener=prose_printer())
                print_drafts(drafts)
                pick = await _ask(f"choose 1..{len(drafts.drafts)} (enter: back) > ")
                if pick:
                    choice = _decision(action="approve", choice=pick)
                    outcome = await _decide(fab, store, choice, drafts.pending_id or details.id)
                    out.print(f"turn {details.turn}: {outcome} (draft {pick})")
            else:
                out.print(f"keys: {KEYS}")
        except FabulaError as exc:  # refused: one line, and the turn waits as it was
            _refused(exc)


def _refused(exc: FabulaError) -> None:
    """A refusal's one line on stderr (the loop goes on)."""
    err.print(Text.assemble(("error:", "red"), " ", error_line(exc)), soft_wrap=True)


@app.command()
def write(
    story: str,
    branch: str = typer.Option("main", "--branch", "-b"),
    play: list[str] = typer.Option(None, "--play", help="Play this character (see `play`)."),
) -> None:
    """Write a story in one session: each turn's draft, findings and changes, then a key:
    a approve, e edit ($EDITOR), r reject with a note, d a direction for the next turn,
    n alternative drafts, q quit. Resumes a pending turn; Ctrl-C loses no decision. A
    played character's part is asked for first, beside what it believes."""

    async def go(fab: Fabula) -> None:
        store = StoryRef(story, branch)
        await play_more(fab, store, play or [])
        with contextlib.suppress(_Quit):
            await _session(fab, store)

    try:
        run_with_app(go)
    except KeyboardInterrupt:
        out.print(
            f"\nstopped; a pending turn waits as it was: `fabula write {story}"
            f"{'' if branch == 'main' else ' --branch ' + branch}` resumes it"
        )
        raise typer.Exit(130) from None
    out.print(f"{story}: the session ended; `fabula write {story}` goes on from here")
