"""Talking to a character: ``chat``."""

from __future__ import annotations

import asyncio
import sys
from typing import TYPE_CHECKING, TextIO

import typer
from rich.text import Text

from fabula.errors import InvalidInput
from fabula.graph.cli.app import app, dump, err, out, run_with_app

if TYPE_CHECKING:
    from fabula.graph.service import Fabula
    from fabula.graph.service.responses.recall import ChatOut

_QUIT = frozenset({"q", "quit", "exit"})
LINE_BOUND = 64 * 1024
"""The most of one line of stdin held at once: longer than any question the service reads
(it refuses one past its own bound, in one line), so a line without end (``< /dev/zero``)
is read in bounded memory."""


def read_line(stream: TextIO, bound: int = LINE_BOUND) -> str:
    """The next line of ``stream`` ("" at its end), cut at ``bound`` characters; the rest
    of a longer line is read and dropped, so the next call starts at the next line."""
    line = stream.readline(bound)
    if len(line) < bound or line.endswith("\n"):
        return line
    while (rest := stream.readline(bound)) and not rest.endswith("\n"):
        pass
    return line


@app.command()
def chat(
    story: str,
    character: str = typer.Argument(..., help="The character to talk to (id or name)."),
    ask: str | None = typer.Option(None, "--ask", help="Ask one question, print the answer."),
    as_of: int | None = typer.Option(None, "--as-of", help="Talk to it as it was at this turn."),
    branch: str = typer.Option("main", "--branch", "-b"),
    as_json: bool = typer.Option(
        False, "--json", help="The answer with the records it rests on (one object a line)."
    ),
) -> None:
    """Ask a character questions: it answers from only its own mind (its beliefs and what it
    witnessed), e.g. `fabula chat demo leo --ask "Where is the brass key?"`. Without --ask,
    questions are read from stdin until EOF or `q`, as one conversation: a follow-up
    ("And where is it now?", "Why?") is answered knowing the last exchanges. A line refused
    (too long) is said and the chat goes on (the exit status says one was). Nothing said in
    a chat enters the story."""

    async def go(fab: Fabula) -> None:
        from fabula.agents.contracts import CHAT_MEMORY, ChatExchange

        reader = fab.read(story, branch)
        if ask is not None:
            show(await reader.chat(character, ask, as_of=as_of), as_json)
            return
        me = await reader.resolve(character, "character")  # an unknown one: said at once
        await reader.require()
        interactive = sys.stdin.isatty()
        if interactive:
            when = "" if as_of is None else f" as of turn {as_of}"
            err.print(f"talking to {me.name}{when}; q or Ctrl-D ends", style="dim")
        refused: InvalidInput | None = None
        talked: list[ChatExchange] = []  # this session's conversation, the last few kept
        while True:
            if interactive:
                err.print("you> ", end="")
            line = await asyncio.to_thread(read_line, sys.stdin)
            question = line.strip()
            if not line or question.casefold() in _QUIT:
                break
            if not question:
                continue
            try:
                answer = await reader.chat(me.id, question, as_of=as_of, conversation=talked)
            except InvalidInput as exc:  # this line is refused (too long): the chat goes on
                err.print(Text.assemble(("error:", "red"), " ", str(exc)), soft_wrap=True)
                refused = exc
                continue
            show(answer, as_json)
            talked.append(ChatExchange(question=question, answer=answer.answer))
            del talked[:-CHAT_MEMORY]
        if refused is not None:  # answered what it could; the status says a line was not
            raise typer.Exit(refused.exit_code)

    run_with_app(go)


def show(answer: ChatOut, as_json: bool) -> None:
    """Print a chat answer: the character's words, then what they rest on (dim); or JSON."""
    if as_json:
        dump(answer)
        return
    out.print(Text.assemble((f"{answer.name}:", "bold"), " ", answer.answer), soft_wrap=True)
    if answer.records:
        ids = ", ".join(r.id for r in answer.records)
        out.print(Text(f"  ({answer.answered_by}; rests on {ids})", style="dim"))
    else:
        out.print(Text(f"  ({answer.answered_by})", style="dim"))
