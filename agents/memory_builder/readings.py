"""What the memory-builder was unsure of while reading a turn, for the critic and approver.

A reader never guesses in silence: an ambiguous pronoun, a move with no destination, a
perception it could not decide, a sentence left unread past the reader's bounds — each
action it marks ``unsure`` — and, in model mode, a
sentence the model read otherwise than the offline reader, become ``reading`` findings
(warnings) beside their sentence. The graph opens :func:`collect` around the
memory-builder and gives what it gathered to the critic's findings; outside such a block
nothing is kept.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from contextvars import ContextVar

from fabula.agents.contracts import Finding
from fabula.memory.actions import StoryAction

_open: ContextVar[tuple[list[Finding], ...]] = ContextVar("fabula_readings", default=())


@contextlib.contextmanager
def collect() -> Iterator[list[Finding]]:
    """Collect, into the list it yields, every reading finding reported during the block."""
    found: list[Finding] = []
    token = _open.set((*_open.get(), found))
    try:
        yield found
    finally:
        _open.reset(token)


def report(finding: Finding) -> None:
    """Give ``finding`` to every open :func:`collect` block (none open: it is dropped)."""
    for found in _open.get():
        found.append(finding)


def report_unsure(text: str, actions: Sequence[StoryAction]) -> None:
    """A ``reading`` warning for each action of ``text`` its reader marked unsure."""
    for action in actions:
        if action.unsure:
            said = (
                f"kept as narration, {action.unsure}"
                if action.kind == "narration"
                else f"read as {action.kind}, unsure: {action.unsure}"
            )
            report(
                Finding(
                    kind="reading",
                    severity="warning",
                    quote=_excerpt(text[action.start : action.end].strip()),
                    message=said,
                )
            )


def _excerpt(quote: str, width: int = 200) -> str:
    """``quote``, cut to ``width`` characters with an ellipsis: a finding names its
    sentence, it does not carry a 60 KB one."""
    return quote if len(quote) <= width else quote[: width - 1].rstrip() + "…"
