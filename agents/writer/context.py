"""The writer's memory context, assembled from the projections within a token budget.

Sections, most important first: the plan; the world facts about the scene's place and what
is in it; each focal character's beliefs, labelled by holder (a false belief is marked, so
the writer can show it without correcting it); the open developments; the recent text.
The result never counts more than the budget (see :func:`fabula.memory.tokens.fit`).
"""

from __future__ import annotations

from fabula.agents.contracts import TurnPlan
from fabula.agents.views import AuthorView
from fabula.memory.tokens import TokenCounter, fit

__all__ = ["writer_context"]


def _world_lines(view: AuthorView, plan: TurnPlan) -> list[str]:
    place = plan.place
    lines = []
    for state in sorted(view.world.states.values(), key=lambda s: (s.subject, s.attribute)):
        if not state.polarity:
            continue
        in_scene = place is None or view.place_of(state.subject) == place
        if in_scene or state.subject in plan.focal:
            lines.append(
                f"- the {state.attribute} of {view.name(state.subject)} is "
                f"{view.name(state.value)} (since turn {state.valid_from})"
            )
    return lines


def _belief_lines(view: AuthorView, character: str) -> list[str]:
    beliefs = view.beliefs.get(character)
    if beliefs is None:
        return []
    lines = []
    for belief in sorted(beliefs.beliefs.values(), key=lambda b: (b.subject, b.attribute)):
        truth = view.world.value(belief.subject, belief.attribute)
        verb = "is" if belief.polarity else "is not"
        mark = " [FALSE]" if belief.polarity and truth is not None and truth != belief.value else ""
        lines.append(
            f"- {view.name(character)} believes: the {belief.attribute} of "
            f"{view.name(belief.subject)} {verb} {view.name(belief.value)} "
            f"({belief.mode}, turn {belief.valid_from}){mark}"
        )
    return lines


def writer_context(view: AuthorView, plan: TurnPlan, budget: int, counter: TokenCounter) -> str:
    """Render the writer's context for ``plan`` in at most ``budget`` tokens."""
    sections: list[tuple[str, str]] = [
        (
            "Plan",
            "\n".join(
                [f"scene goal: {plan.scene_goal}"]
                + [f"focal: {', '.join(view.name(c) for c in plan.focal)}"]
                + [f"beat: {b}" for b in plan.beats]
            ),
        ),
        ("W: the world", "\n".join(_world_lines(view, plan))),
    ]
    for character in plan.focal:
        sections.append((f"B[{view.name(character)}]", "\n".join(_belief_lines(view, character))))
    sections.append(
        (
            "D: open developments",
            "\n".join(f"- {d.title} ({d.kind}, {d.status})" for d in view.open_developments()),
        )
    )
    sections.append(("Recent text", "\n".join(t.text for t in view.recent)))
    return fit(sections, budget, counter)
