"""Writing turns and deciding on them: ``run``, ``pending``, ``approve``, ``edit``, ``reject``."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

import typer
from rich.progress import Progress
from rich.text import Text

from fabula.errors import Conflict, InvalidInput
from fabula.graph.cli.app import app, dump, err, fail, out, run_with_app, settings
from fabula.graph.service.handles import StoryRef
from fabula.graph.service.pending import MAX_RUN_TURNS, Pending, check_bounds
from fabula.limits import read_bounded

if TYPE_CHECKING:  # imported when a command runs: `fabula --help` stays quick
    from fabula.agents.contracts import Decision
    from fabula.graph.service import Fabula
    from fabula.graph.service.pending import Listener, TurnEvent
    from fabula.graph.service.responses.turns import DecisionOut, DraftsOut, PendingListed
    from fabula.limits import Limits


@app.command()
# long (over 60 lines): a typer command's options are its signature (most of its lines);
# the body is short
def run(
    story: str,
    turns: int = typer.Option(
        1, "--turns", "-n", min=1, max=MAX_RUN_TURNS, help="How many turns to write."
    ),
    auto: bool = typer.Option(False, "--auto", help="Approve every turn without asking."),
    branch: str = typer.Option("main", "--branch", "-b"),
    direction: str | None = typer.Option(None, "--direction", help="A note for the planner."),
    alternatives: int | None = typer.Option(
        None, "--alternatives", min=1, help="Write N drafts of the next turn, side by side."
    ),
    as_json: bool = typer.Option(False, "--json", help="With --alternatives: the drafts."),
    play: list[str] = typer.Option(None, "--play", help="Play this character (see `play`)."),
    parts: list[str] = typer.Option(
        None, "--as", help='A played character\'s part of the next turn: "NAME: words".'
    ),
) -> None:
    """Write turns; without --auto, stop at the first turn awaiting approval. With
    --alternatives N, N drafts of the next turn, each with its findings and changes:
    approve one with `fabula approve STORY --choose K`. A turn stops for a played
    character's part unless --as gives it; --auto plays it (see `fabula play`). A story
    made in ticks mode (`new --mode ticks`, or a town's pack) runs N ticks instead, as
    `fabula tick` does."""
    check_bounds(turns=turns, direction=direction)
    if alternatives is not None and (auto or turns != 1):
        raise InvalidInput(
            "--alternatives writes drafts of one turn for you to choose: not with --auto or --turns"
        )

    async def go(fab: Fabula) -> None:
        from fabula.graph.cli.play import given_parts, play_more, print_parts

        store = StoryRef(story, branch)
        reader = fab.read(store)
        await reader.require()
        await play_more(fab, store, play or [])
        given = await given_parts(reader, parts or [])
        if (await reader.info()).mode == "ticks":
            from fabula.graph.cli.ticks import run_ticks

            options = {"--alternatives": alternatives, "--direction": direction}
            words = {c: p.words for c, p in given.items() if p.words}
            refused = [k for k, v in options.items() if v]
            await run_ticks(fab, store, turns, auto=auto, refused=refused, parts=words)
            return
        if alternatives is not None:
            drafts = await fab.alternatives(
                store, alternatives, direction=direction, listener=prose_printer()
            )
            if as_json:
                dump(drafts)
                return
            print_drafts(drafts)
            return
        done = 0
        with Progress(console=err, transient=True) as progress:
            task = progress.add_task(f"writing {story}", total=turns)
            for _ in range(turns):
                ran = await fab.run(
                    store, auto=auto, direction=direction, listener=prose_printer(), parts=given
                )
                used, given = given, {}  # the parts given are the first turn's
                if ran.outcome == "abandoned":
                    progress.stop()
                    raise _abandoned(story, done, await reader.head(), used)
                if ran.rest is not None:
                    progress.stop()
                    out.print(
                        f"{story}: {_turns(done)} written, now at turn {ran.head}; at rest: "
                        f"{ran.rest}"
                    )
                    return
                outcome = ran.outcome
                if outcome == "pending":
                    waiting = await fab.read(store).pending()
                    progress.stop()
                    if waiting is None:  # decided by another process since the run stopped
                        out.print(
                            f"{story}: {_turns(done)} written; the waiting draft was decided "
                            f"meanwhile, now at turn {await reader.head()}"
                        )
                        return
                    print_pending(waiting)
                    out.print(
                        f"approve with `fabula approve {story} --expect {waiting.id}`, edit or "
                        "reject",
                        markup=False,
                    )
                    return
                if outcome == "part":
                    progress.stop()
                    print_parts(await fab.read(store).waiting_parts())
                    out.print(
                        f"{story}: {_turns(done)} written; turn {await reader.head() + 1} waits "
                        f"for a played character's part: `fabula run {story} --as \"NAME: "
                        f'words"` gives it, `fabula write {story}` asks for it',
                        markup=False,
                    )
                    return
                done += 1
                progress.advance(task)
        out.print(f"{story}: {_turns(done)} written, now at turn {await reader.head()}")

    run_with_app(go)


def _abandoned(story: str, done: int, head: int, parts: Mapping[str, object]) -> typer.Exit:
    """The one error line for a turn given up (every draft rejected: the critic refused each
    one, in an autonomous run), after the turns written before it, and its exit status: a
    conflict. It used to be counted as written (exit 0), the part given for it dropped
    without a word."""
    dropped = f"; the part given for {', '.join(sorted(parts))} was not used" if parts else ""
    out.print(f"{story}: {_turns(done)} written, now at turn {head}")
    return fail(
        f"turn {head + 1} of {story} was given up: every draft of it was rejected (the critic "
        f"found errors in each); nothing of it was written{dropped}",
        Conflict.exit_code,
    )


def _turns(n: int) -> str:
    """``n`` turns, the noun agreeing ("1 turn", "0 turns")."""
    return f"{n} turn" if n == 1 else f"{n} turns"


def prose_printer() -> Listener | None:
    """On a terminal, a listener printing a model writer's prose as it streams (through
    LangGraph's "messages" stream), each passage ending its line; elsewhere None."""
    if not out.is_terminal:
        return None

    async def show(event: TurnEvent) -> None:
        if event.kind == "prose":
            out.print(event.text, end="", markup=False, highlight=False)
        elif event.kind == "step" and event.node == "write":
            out.print()

    return show


def print_drafts(drafts: DraftsOut) -> None:
    """A turn's alternative drafts, one after another: text, findings, changes."""
    for option in drafts.drafts:
        mark = " (chosen)" if option.id == drafts.chosen else ""
        out.rule(
            Text(
                f"{drafts.story} [{drafts.branch}] turn {drafts.turn}: draft "
                f"{option.id.rpartition('.d')[2]} ({option.id}){mark}"
            )
        )
        out.print(option.draft)
        for f in option.findings:
            out.print(Text.assemble("  ", (f.severity, "yellow"), f" {f.kind}: {f.message}"))
        for line in option.changes.events[:6]:
            out.print(f"  happens: {line}")
        for change in [*option.changes.world, *option.changes.beliefs][:10]:
            who = " → ".join(change.holder)
            value = f"{change.before or '?'} → {change.after or '(no longer)'}"
            out.print(
                f"  {who + ' believes: ' if who else 'world: '}{change.subject}'s "
                f"{change.attribute}: {value}"
            )
    if drafts.note:
        out.print(drafts.note)
    if drafts.pending_id is not None:
        out.print(
            f"choose one with `fabula approve {drafts.story} --choose K` "
            f"(K: 1..{len(drafts.drafts)}), or edit or reject the turn"
        )


def print_pending(pending: Pending | PendingListed | None) -> None:
    """A turn awaiting approval: its draft and the critic's findings."""
    if pending is None:
        return
    if isinstance(pending, Pending):
        text, findings, ident = pending.request.draft.text, pending.request.findings, pending.id
    else:
        text, findings, ident = pending.draft, pending.findings, pending.pending_id
    out.rule(
        Text(
            f"{pending.story} [{pending.branch}] turn {pending.turn} awaits approval "
            f"(draft {ident})"
        )
    )
    out.print(text)
    for f in findings:
        out.print(Text.assemble("  ", (f.severity, "yellow"), f" {f.kind}: {f.message}"))


@app.command()
def pending(as_json: bool = typer.Option(False, "--json")) -> None:
    """List the turns awaiting approval (--json: each with its draft, findings and
    changes, as the API's pending gives them)."""

    async def go(fab: Fabula) -> None:
        from fabula.graph.cli.ticks import print_ticks, tick_entries

        items, ticks = await fab.all_pending(), await fab.all_pending_ticks()
        if as_json:
            dump([*items, *ticks] if ticks else items)
            return
        if not items and not ticks:
            out.print("nothing awaits approval")
        for p in items:
            print_pending(p)
        print_ticks(tick_entries(ticks))

    run_with_app(go)


def moved_note(done: DecisionOut) -> str:
    """What a commit that a rewind took off its branch the moment it was made says."""
    return (
        f"committed, but branch {done.branch!r} was rewound meanwhile (now at turn "
        f"{done.head}): turn {done.turn} is on branch {done.moved_to!r}"
    )


EXPECT_HELP = (
    "The id of the draft you read (shown by `fabula pending`): if another draft waits "
    "(yours was decided, or rejected and written again), nothing is changed."
)


def _decide(
    story: str,
    branch: str,
    decision: Decision,
    *,
    force: bool = False,
    expect: str | None,
    scene: str | None = None,
) -> None:
    async def go(fab: Fabula) -> None:
        store = StoryRef(story, branch)
        if scene is not None or await fab.read(store).pending_tick() is not None:
            from fabula.graph.cli.ticks import decide_tick

            await decide_tick(fab, store, decision, scene=scene, force=force, expect=expect)
            return
        done = await fab.decide(store, decision, force=force, expect=expect)
        if done.outcome == "pending":
            print_pending(await fab.read(store).pending())
        if done.moved_to is not None:
            out.print(f"{story} [{branch}]: {moved_note(done)}")
        elif done.durable is False:
            # committed (exit 0: the story has the turn), but not known to be on disk
            out.print(f"{story} [{branch}]: committed (not confirmed on disk: {done.unsynced})")
        else:
            out.print(f"{story} [{branch}]: {done.outcome}")

    run_with_app(go)


@app.command()
def approve(
    story: str,
    branch: str = typer.Option("main", "--branch", "-b"),
    expect: str | None = typer.Option(None, "--expect", help=EXPECT_HELP),
    choose: str | None = typer.Option(
        None, "--choose", help="Which of the turn's drafts (K, or its id) to commit."
    ),
    scene: str | None = typer.Option(None, "--scene", help="The waiting tick's scene (place)."),
) -> None:
    """Approve the pending turn: it is committed to memory (with --choose, the draft
    chosen among those `run --alternatives` wrote, exactly as shown). A waiting tick is
    committed whole; with --scene PLACE, that scene alone is approved, and the tick is
    committed when its last scene is."""
    approval = _decision(action="approve", choice=choose)
    _decide(story, branch, approval, expect=expect, scene=scene)


@app.command()
def edit(
    story: str,
    text_file: Path | None = typer.Option(None, "--text-file", exists=True, dir_okay=False),
    text: str | None = typer.Option(None, "--text", help="The new text itself."),
    turn: int | None = typer.Option(
        None, "--turn", help="A committed turn to edit: a new branch from the turn before it."
    ),
    name: str | None = typer.Option(None, "--name", help="With --turn: the new branch's name."),
    branch: str = typer.Option("main", "--branch", "-b"),
    now: bool = typer.Option(False, "--now", help="Commit the edit as soon as it is read."),
    force: bool = typer.Option(
        False, "--force", help="Commit it at once, even if the critic finds errors in it."
    ),
    expect: str | None = typer.Option(None, "--expect", help=EXPECT_HELP),
    scene: str | None = typer.Option(None, "--scene", help="The waiting tick's scene (place)."),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Replace the pending turn's text (from --text, --text-file, or $EDITOR on the draft).
    It is read and checked by the critic, then shown for approval again; with --now it is
    committed at once. The critic's errors refuse the edit (the turn stays as it was),
    unless --force. With --turn T, a committed turn is edited: a new branch forks the
    branch at T-1 and commits the new text as its turn T (the branch is not touched).
    With --scene PLACE, the text of that place's scene in the tick that waits."""
    limits = settings().limits
    if text is not None and text_file is not None:
        raise InvalidInput("give the new text with --text or --text-file, not both")
    if text_file is not None:
        text = _read_turn_text(text_file, limits)
    elif text is not None:
        text = text.strip()
        if not text:
            raise InvalidInput("--text is empty")
        limits.check_text(text, option="--text")
    if turn is not None:
        if now or expect is not None:
            raise InvalidInput("--now and --expect are for the pending turn, not --turn")
        _retcon(story, branch, turn, text, name=name, force=force, as_json=as_json)
        return
    if scene is not None and text is None:
        raise InvalidInput("--scene: give the scene's new text with --text or --text-file")
    if text is None:
        text = _edited_pending(story, branch, limits)
        if text is None:
            out.print(f"{story} [{branch}]: the draft is unchanged; nothing was decided")
            return
    edit = _decision(action="edit", text=text, now=now)
    _decide(story, branch, edit, force=force, expect=expect, scene=scene)


def _edited_pending(story: str, branch: str, limits: Limits) -> str | None:
    """The pending draft as the user left it in ``$EDITOR`` (None: unchanged or emptied)."""

    async def draft(fab: Fabula) -> str:
        waiting = await fab.pending_details(StoryRef(story, branch))
        return waiting.draft

    current = run_with_app(draft)
    edited = in_editor(current, limits)
    return None if edited is None or edited == current.strip() else edited


def in_editor(text: str, limits: Limits) -> str | None:
    """``text`` as the user leaves it in ``$EDITOR`` (``$VISUAL``, else ``vi``); None when
    it is emptied. Refuses text over the limit."""
    import click

    edited: str | None = click.edit(text, extension=".txt", require_save=False)
    if edited is None:
        return None
    edited = edited.strip()
    if not edited:
        return None
    limits.check_text(edited, option="$EDITOR")
    return edited


def _retcon(
    story: str,
    branch: str,
    turn: int,
    text: str | None,
    *,
    name: str | None,
    force: bool,
    as_json: bool,
) -> None:
    """``edit --turn``: the committed turn's text (from the caller, or ``$EDITOR`` on it) as
    the turn of a new branch."""

    async def go(fab: Fabula) -> None:
        store = StoryRef(story, branch)
        new = text
        if new is None:
            reader = fab.read(store)
            await reader.require()
            done = await reader.turns(turn, turn) if turn >= 1 else []
            if not done or turn > await reader.head():
                raise InvalidInput(
                    f"cannot edit turn {turn} of branch {branch!r}: it is not committed",
                    story=story,
                    branch=branch,
                    turn=turn,
                )
            new = in_editor(done[0].text, fab.settings.limits)
            if new is None or new == done[0].text.strip():
                out.print(f"{story} [{branch}]: turn {turn} is unchanged; nothing was written")
                return
        made = await fab.retcon(store, turn, new, branch=name, force=force)
        if as_json:
            dump(made)
            return
        out.print(
            f"{story}: branch {made.branch} forks {branch} at turn {turn - 1} and has "
            f"the new turn {turn}; go on with: fabula run {story} --branch {made.branch}"
        )
        for f in made.findings:
            out.print(Text.assemble("  ", (f.severity, "yellow"), f" {f.kind}: {f.message}"))

    run_with_app(go)


@app.command()
def rewind(
    story: str,
    to: int = typer.Option(..., "--to", help="The turn that becomes the branch's head."),
    branch: str = typer.Option("main", "--branch", "-b"),
    keep: str | None = typer.Option(
        None, "--keep", help="The name of the branch that keeps the later turns."
    ),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Make turn --to the head of the branch; the turns after it are kept as a branch of
    their own (nothing is deleted). Refused while a turn awaits approval."""

    async def go(fab: Fabula) -> None:
        done = await fab.rewind(StoryRef(story, branch), to, keep)
        if as_json:
            dump(done)
            return
        out.print(
            f"{story} [{branch}]: now at turn {done.head}; turns {done.head + 1}.."
            f"{done.kept_head} are kept on branch {done.kept} "
            f"(fabula show {story} story --branch {done.kept})"
        )

    run_with_app(go)


def _decision(**fields: str | bool | None) -> Decision:
    """A human decision (imported here, when a command decides: not for `--help`)."""
    from fabula.agents.contracts import Decision

    return Decision.model_validate(fields)


def _read_turn_text(path: Path, limits: Limits) -> str:
    """A turn's text from a file: UTF-8 text within the size limit, not empty; a file (or
    a device: ``/dev/zero``) past the limit is refused having read one byte more."""
    bound = limits.turn_text_bytes + 4096  # room for surrounding blanks
    raw = read_bounded(path, bound, "a turn's text", "FABULA_MAX_TURN_TEXT")
    try:
        text = raw.decode("utf-8").strip()
    except UnicodeDecodeError:
        raise InvalidInput(f"{path} is not UTF-8 text") from None
    if "\x00" in text:
        raise InvalidInput(f"{path} is a binary file, not text")
    if not text:
        raise InvalidInput(f"{path} is empty")
    limits.check_text(text, file=str(path))
    return text


@app.command()
def reject(
    story: str,
    note: str = typer.Option("", "--note", help="Why (optional): the planner sees it."),
    branch: str = typer.Option("main", "--branch", "-b"),
    expect: str | None = typer.Option(None, "--expect", help=EXPECT_HELP),
) -> None:
    """Reject the pending turn: nothing is committed; the turn is planned again."""
    _decide(story, branch, _decision(action="reject", note=note), expect=expect)
