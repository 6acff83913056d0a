"""A character agent's brief: who it is and what it wants, prepared on the author's side.

The brief is built from the author's view (the world pack's entry for the character, the
plan, the hypothesis a branch pursues) and handed to the character agent beside its own
mind; it carries nothing of what the character could not know.
"""

from __future__ import annotations

from collections.abc import Sequence

from fabula.agents.contracts import CharacterBrief, TurnPlan
from fabula.agents.shared.goals import directed_goal
from fabula.agents.views import AuthorView
from fabula.worlds.goals import parse_goal


def pursued_goal(view: AuthorView, hypothesis: str | None) -> tuple[str, str] | None:
    """(character, goal text) a branch pursuing ``hypothesis`` gives: "X ends up with the
    O" gives X the goal "get the O" — and keeps it once realised (X *ends up* with it)."""
    found = view.hypotheses.get(hypothesis) if hypothesis else None
    if found is None or found.status not in ("open", "realised"):
        return None
    for fact in found.realises:
        if fact.attribute == "location" and view.kind(fact.value) == "character":
            return fact.value, f"get the {view.name(fact.subject)}"
    return None


def helping_goals(view: AuthorView, hypothesis: str | None) -> list[tuple[str, str]]:
    """(character, goal text) for the others a branch pursuing "X ends up with the O" steers
    toward its premise, each from what it believes: whoever believes it holds the O, "give
    the O to X"; else whoever believes where the O is, "tell X where the O is"."""
    found = pursued_goal(view, hypothesis)
    premise = view.hypotheses.get(hypothesis) if hypothesis else None
    if found is None or premise is None or premise.status != "open":
        return []
    me = found[0]
    obj = next(f.subject for f in premise.realises if f.value == me)
    where = view.world.where(obj)
    others = [c for c in view.characters() if c != me and c in view.beliefs]
    holders = [c for c in others if view.beliefs[c].where(obj) == c]
    if holders:
        return [(holders[0], f"give the {view.name(obj)} to {view.name(me)}")]
    knowers = [c for c in others if where is not None and view.beliefs[c].where(obj) == where]
    return [(c, f"tell {view.name(me)} where the {view.name(obj)} is") for c in knowers]


def goals_for(
    view: AuthorView, character: str, *, direction: str | None, hypothesis: str | None
) -> list[str]:
    """``character``'s goals for this turn: a direction's and a pursued hypothesis's first
    (the one the hypothesis is about, and those :func:`helping_goals` steers), then its own
    (the world pack's)."""
    goals = view.goals_of(character)
    extras = [
        directed(view, direction),
        pursued_goal(view, hypothesis),
        *helping_goals(view, hypothesis),
    ]
    for extra in extras:
        if extra is not None and extra[0] == character and extra[1] not in goals:
            goals = [extra[1], *goals]
    return goals


def directed(view: AuthorView, direction: str | None) -> tuple[str, str] | None:
    """(character, goal text) a direction in controlled form gives (None: none, or one
    that does not read as a character and a goal)."""
    if not direction:
        return None
    found = directed_goal(direction, view.entities)
    return (found[0], found[1].text) if found is not None else None


def readable(view: AuthorView, text: str | None) -> str | None:
    """``text`` if it reads as a direction, else None."""
    return text if text and directed_goal(text, view.entities) is not None else None


def steering(view: AuthorView, direction: str | None, notes: Sequence[str]) -> str | None:
    """What steers the turn: the direction, else the last rejection note that reads as one."""
    return direction or (readable(view, notes[-1]) if notes else None)


def brief_for(
    view: AuthorView, me: str, turn_plan: TurnPlan, *, steer: str | None = None, variant: int = 0
) -> CharacterBrief:
    """``me``'s brief for the planned turn: its name, goals (the ones the offline engine can
    pursue first, motives after), secrets and voice — never the plan's scene goal, beats
    or place, which the planner wrote from everything (where the character is, and who is
    with it, come from its own mind when its prompt is rendered).

    A branch pursuing "X ends up with the O" gives X the goal of getting the O first; a
    direction in controlled form (``steer``: "X gets the O") gives X that goal first.
    ``variant`` asks for a step toward another of its goals (see ``CharacterBrief``).
    """
    goals = goals_for(view, me, direction=steer, hypothesis=turn_plan.hypothesis or view.pursue)
    spec = view.character_spec(me)
    return CharacterBrief(
        character=me,
        name=view.name(me),
        goals=tuple(g for g in goals if parse_goal(g).kind != "motive")
        + tuple(g for g in goals if parse_goal(g).kind == "motive"),
        secrets=tuple(spec.secrets) if spec else (),
        voice=spec.voice if spec else "",
        variant=variant,
    )
