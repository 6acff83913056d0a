"""A character agent's brief: who it is and what it wants, prepared on the author's side.

The brief is built from the author's view (the world pack's entry for the character, the
plan, the hypothesis a branch pursues) and handed to the character agent beside its own
mind; it carries nothing of what the character could not know.
"""

from __future__ import annotations

from fabula.agents.character.goals import parse_goal
from fabula.agents.contracts import CharacterBrief, TurnPlan
from fabula.agents.views import AuthorView

__all__ = ["brief_for"]


def brief_for(view: AuthorView, me: str, turn_plan: TurnPlan) -> CharacterBrief:
    """``me``'s brief for the planned turn: its name, goals (the ones the offline engine can
    pursue first, motives after), secrets and voice — never the plan's scene goal, beats
    or place, which the planner wrote from everything (where the character is, and who is
    with it, come from its own mind when its prompt is rendered).

    A branch pursuing "X ends up with the O" gives X the goal of getting the O first.
    """
    goals = view.goals_of(me)
    hypothesis = view.hypotheses.get(turn_plan.hypothesis) if turn_plan.hypothesis else None
    if hypothesis is not None:
        for fact in hypothesis.realises:
            if fact.attribute == "location" and fact.value == me:
                goals = [f"get the {view.name(fact.subject)}", *goals]
    spec = view.character_spec(me)
    return CharacterBrief(
        character=me,
        name=view.name(me),
        goals=tuple(g for g in goals if parse_goal(g).kind != "motive")
        + tuple(g for g in goals if parse_goal(g).kind == "motive"),
        secrets=tuple(spec.secrets) if spec else (),
        voice=spec.voice if spec else "",
    )
