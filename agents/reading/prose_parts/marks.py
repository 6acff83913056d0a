"""The perception marks a sentence sets on its events, and how each applies.

A mark is ``(kind, who)``: ``seen`` (who saw the act), ``unseen`` (who did not; a doer always
sees its own act), ``unaware`` (the doer did not know it was watched: every other
perceiver was covert) or ``believed`` (``(holder, *others)``: the doer believes the others
saw it, and they did not). :func:`_marked` applies one mark to an action, :func:`_distinct`
keeps each mark once, and :func:`_believed` makes the ``believed`` marks of what was kept
from someone.
"""

from __future__ import annotations

from collections.abc import Sequence

from fabula.memory.actions import StoryAction


def _believed(
    marks: Sequence[tuple[str, tuple[str, ...]]], holders: tuple[str, ...]
) -> list[tuple[str, tuple[str, ...]]]:
    """For each of ``holders``, kept from others' not seeing, a ``believed`` mark: the
    holder, then the others ``marks`` say did not see (none if they name no other)."""
    out = []
    for holder in holders:
        blind = dict.fromkeys(c for kind, cs in marks if kind == "unseen" for c in cs)
        others = tuple(c for c in blind if c not in holders)
        if others:
            out.append(("believed", (holder, *others)))
    return out


def _distinct(
    marks: Sequence[tuple[str, tuple[str, ...]]],
) -> list[tuple[str, tuple[str, ...]]]:
    """``marks`` with each told once, at its last place: applying a mark again changes
    nothing that its last application does not decide (each character's seeing is the last
    mark's that names it; the rest are unions), and a sentence of *n* clauses that repeat a
    mark would otherwise apply *n* marks to each of its *n* events."""
    return list(reversed(dict.fromkeys(reversed(marks))))


def _marked(
    action: StoryAction, mark: tuple[str, tuple[str, ...]], everyone: Sequence[str]
) -> StoryAction:
    kind, who = mark
    if kind == "seen":
        seen = tuple(dict.fromkeys((*action.seen_by, *who)))
        unseen = tuple(u for u in action.unseen_by if u not in who)
        return action.model_copy(update={"seen_by": seen, "unseen_by": unseen})
    if kind == "unseen":
        who = tuple(w for w in who if w not in action.actors)  # a doer sees its own act
        if not who:
            return action
        seen = tuple(s for s in action.seen_by if s not in who)
        unseen = tuple(dict.fromkeys((*action.unseen_by, *who)))
        return action.model_copy(update={"seen_by": seen, "unseen_by": unseen})
    if kind == "believed":
        # the doer believes the others saw it; they did not (another's act: nothing more
        # than the "unseen" marks that came with this one)
        holder, blind = who[0], tuple(w for w in who[1:] if w not in action.actors)
        if holder not in action.actors or not blind:
            return action
        believed = tuple(dict.fromkeys((*action.believed_seen_by, *blind)))
        return _marked(action, ("unseen", blind), everyone).model_copy(
            update={"believed_seen_by": believed}
        )
    # the doer did not know it was watched: every other perceiver was covert
    if action.actors and set(who) & set(action.actors):
        others = tuple(c for c in everyone if c not in action.actors)
        return action.model_copy(update={"unaware_of": others})
    return action
