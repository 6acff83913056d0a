"""The offline planner: picks the next beat from the characters' goals and open developments.

The anchor of a turn is a character with something to do: first anyone a question was just
put to (so questions get answers), then characters whose goals are unfinished (in the world
as it is), then everyone in turn. The focal characters are the anchor and whoever is in the
same place (at most three). A branch that pursues a hypothesis gives its development's
first participant the hypothesis as the scene's goal. A rejected plan is re-planned with
the next anchor.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from fabula.agents.character.goals import parse_goal
from fabula.agents.contracts import MAX_FOCAL, TurnPlan
from fabula.agents.views import AuthorView
from fabula.memory.records import slug

__all__ = ["OfflinePlanner"]

_ASKED = re.compile(r"(?P<asker>[A-Z][\w'-]*) asked (?P<listener>[A-Z][\w'-]*) where the")


def _unfinished(view: AuthorView, character: str) -> bool:
    for text in view.goals_of(character):
        goal = parse_goal(text)
        if goal.kind == "find" and goal.object and view.world.where(goal.object) != character:
            return True
        if goal.kind == "hide" and goal.object and view.world.where(goal.object) == character:
            return True
    return False


class OfflinePlanner:
    """Deterministic planner (see module docstring)."""

    async def plan(
        self,
        view: AuthorView,
        *,
        direction: str | None = None,
        attempt: int = 0,
        notes: Sequence[str] = (),
    ) -> TurnPlan:
        """Plan the next turn; a re-plan after rejection (``attempt`` > 0, with the
        approver's ``notes``) anchors on the next character in line."""
        characters = view.characters()
        if not characters:
            raise ValueError("the story has no characters")
        turn = view.turn + 1
        asked: list[str] = []
        if view.recent:
            for m in _ASKED.finditer(view.recent[-1].text):
                asked.append(slug(m["listener"]))
        rotation = characters[turn % len(characters) :] + characters[: turn % len(characters)]
        busy = [c for c in rotation if _unfinished(view, c)]
        order = list(dict.fromkeys([*asked, *busy, *rotation]))
        anchor = order[attempt % len(order)]
        place = view.place_of(anchor)
        others = [c for c in characters if c != anchor and place and view.place_of(c) == place]
        others.sort(key=lambda c: (c not in asked, c))
        focal = (anchor, *others[: MAX_FOCAL - 1])
        hypothesis = view.hypotheses.get(view.pursue) if view.pursue else None
        scene_goal = direction or self._scene_goal(view, anchor)
        if hypothesis is not None and hypothesis.status == "open":
            scene_goal = f"pursue: {hypothesis.premise}"
        developments = tuple(
            d.id for d in view.open_developments() if set(d.participants) & set(focal)
        )
        beats = tuple(
            f"{view.name(c)}: {view.goals_of(c)[0] if view.goals_of(c) else 'reacts'}"
            for c in focal
        )
        return TurnPlan(
            scene_goal=scene_goal,
            place=place,
            focal=focal,
            beats=beats,
            memory_needs=tuple(f"beliefs of {c}" for c in focal),
            developments=developments,
            hypothesis=hypothesis.id if hypothesis is not None else None,
        )

    def _scene_goal(self, view: AuthorView, anchor: str) -> str:
        goals = view.goals_of(anchor)
        return f"{view.name(anchor)} pursues: {goals[0]}" if goals else f"{view.name(anchor)} acts"
