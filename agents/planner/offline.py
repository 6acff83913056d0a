"""The offline planner: picks the next beat from what the characters want and believe.

The anchor of a turn is a character with something to do, in this order:

1. anyone a question or a request was just put to (so questions get answers): asked where
   a thing is, for a thing or a secret, or asked anything aloud by name (or, naming no
   one, as the one other character with the asker);
2. the character a direction names ("Cora gets the logbook": Cora, with that goal), or the
   one a branch's hypothesis is about ("Cora ends up with the logbook") and those it
   steers toward it (whoever holds the logbook, to give it to Cora; else whoever knows
   where it is, to tell her); a rejection note that reads as a direction steers the
   re-plan the same way;
3. characters with a step to take toward their goals (judged from their beliefs by
   :func:`fabula.agents.shared.goals.step`), in rotation.

The focal characters are the anchor and whoever in the same place also has something to
do (at most three). A rejected plan is re-planned with the next anchor. When no character
has anything to do — every goal done, waiting or blocked — there is no turn to plan:
:class:`~fabula.errors.StoryAtRest` says so, character by character. A direction the
planner cannot read is one :class:`~fabula.errors.InvalidInput` line.
"""

from __future__ import annotations

import re

from fabula.agents.contracts import MAX_FOCAL, PlanRequest, TurnPlan
from fabula.agents.shared.brief import (
    directed,
    goals_for,
    helping_goals,
    pursued_goal,
    readable,
    steering,
)
from fabula.agents.shared.goals import (
    DIRECTION_FORMS,
    SECRET_QUESTION,
    Situation,
    read_goal,
    step,
)
from fabula.agents.shared.replies import said_to
from fabula.agents.views import AuthorView
from fabula.errors import InvalidInput, StoryAtRest
from fabula.memory.records import slug
from fabula.worlds.goals import Goal

_NAME = r"[A-Z][\w'-]*"
_ASKED = re.compile(rf"(?P<asker>{_NAME}) asked (?P<listener>{_NAME}) where the")
_REQUESTED = re.compile(
    rf'"(?:Give me the [^"]+?|{SECRET_QUESTION}), (?P<listener>{_NAME})[,?]?" '
    rf"said (?P<asker>{_NAME})"
)


class OfflinePlanner:
    """Deterministic planner (see module docstring)."""

    async def plan(self, request: PlanRequest) -> TurnPlan:
        """Plan the next turn; a re-plan after rejection (``attempt`` > 0, with the
        approver's ``notes``) anchors on the next character in line, or on the character
        the last note directs; once every character has anchored a turn, the next round
        puts each anchor alone in the scene (the same attempt plans the same turn: the
        drafts of ``fabula run --alternatives`` are these plans).

        Raises InvalidInput for a direction it cannot read, StoryAtRest when no character
        has anything to do.
        """
        view, direction, attempt, notes = (
            request.view,
            request.direction,
            request.attempt,
            request.notes,
        )
        characters = view.cast()  # an extra (a doer met in the text) takes no turn
        if not characters:
            raise ValueError("the story has no characters")
        why = self.unread(view, direction) if direction else None
        if why is not None:
            raise InvalidInput(why, story=view.story)
        steer = steering(view, direction, notes)
        hypothesis = view.hypotheses.get(view.pursue) if view.pursue else None
        pursued = hypothesis.id if hypothesis is not None and hypothesis.status == "open" else None
        asked = _asked(view, characters)
        order, busy = self._order(view, characters, steer, pursued, asked)
        steered = directed(view, steer)
        anchor = steered[0] if steered is not None else order[attempt % len(order)]
        place = view.place_of(anchor)
        # each round of attempts through the anchors changes the cast: with the others in
        # the place, then the anchor alone (a re-plan, or another draft, tries another turn)
        alone = steered is None and (attempt // len(order)) % 2 == 1
        focal = (anchor,) if alone else _focal(view, characters, anchor, place, asked, busy)
        scene_goal = steer or self._scene_goal(view, anchor, steer, pursued)
        if hypothesis is not None and pursued is not None:
            scene_goal = f"pursue: {hypothesis.premise}"
        developments = tuple(
            d.id for d in view.open_developments() if set(d.participants) & set(focal)
        )
        beats = tuple(f"{view.name(c)}: {self._beat(view, c, steer, pursued)}" for c in focal)
        return TurnPlan(
            scene_goal=scene_goal,
            place=place,
            focal=focal,
            beats=beats,
            memory_needs=tuple(f"beliefs of {c}" for c in focal),
            developments=developments,
            hypothesis=pursued,
        )

    def _order(
        self,
        view: AuthorView,
        characters: list[str],
        steer: str | None,
        pursued: str | None,
        asked: list[str],
    ) -> tuple[list[str], list[str]]:
        """The characters in the order they may anchor the turn (those just ``asked``,
        those a direction or the pursued hypothesis leads, those with something to do in
        rotation, then the rest), and those with something to do. Raises StoryAtRest when
        none is asked, led or has anything to do."""
        led = [
            found[0]
            for found in (
                directed(view, steer),
                pursued_goal(view, pursued),
                *helping_goals(view, pursued),
            )
            if found is not None
        ]
        turn = view.turn + 1
        rotation = characters[turn % len(characters) :] + characters[: turn % len(characters)]
        states = {c: self._state(view, c, steer, view.pursue) for c in characters}
        busy = [c for c in rotation if states[c] == "act"]
        order = list(dict.fromkeys([*asked, *led, *busy]))
        if not order:
            raise StoryAtRest(
                "every character is done, waiting or blocked: "
                + "; ".join(f"{view.name(c)}: {states[c]}" for c in characters),
                story=view.story,
                branch=view.branch,
            )
        order += [c for c in rotation if c not in order]
        return order, busy

    def unread(self, view: AuthorView, text: str, kind: str = "direction") -> str | None:
        """Why ``text`` (a ``kind``: "direction" or "note") steers nothing here: the offline
        planner reads one only as a character and a goal of the goal language."""
        if readable(view, text) is not None:
            return None
        return (
            f"the offline planner cannot read the {kind} {text!r}: it reads {DIRECTION_FORMS} "
            "(a goal of the goal language)"
        )

    def _goals(
        self, view: AuthorView, character: str, steer: str | None, pursued: str | None
    ) -> list[Goal]:
        texts = goals_for(view, character, direction=steer, hypothesis=pursued)
        return [read_goal(view.entities, g) for g in texts]

    def _state(
        self, view: AuthorView, character: str, steer: str | None, pursued: str | None
    ) -> str:
        """ "act" when ``character`` has a step to take (judged from its beliefs, without its
        memories: an estimate), else what its goals are ("done: …; blocked: …")."""
        beliefs = view.beliefs.get(character)
        if beliefs is None:
            return "no mind"
        sit = Situation(character, beliefs, view.entities)
        found = [(g, step(sit, g)) for g in self._goals(view, character, steer, pursued)]
        if any(s.status == "act" for _, s in found):
            return "act"
        return ", ".join(f"{s.status} ({g.text})" for g, s in found) or "no goals"

    def _beat(
        self, view: AuthorView, character: str, steer: str | None, pursued: str | None
    ) -> str:
        goals = goals_for(view, character, direction=steer, hypothesis=pursued)
        return goals[0] if goals else "reacts"

    def _scene_goal(
        self, view: AuthorView, anchor: str, steer: str | None, pursued: str | None
    ) -> str:
        goals = goals_for(view, anchor, direction=steer, hypothesis=pursued)
        return f"{view.name(anchor)} pursues: {goals[0]}" if goals else f"{view.name(anchor)} acts"


def _asked(view: AuthorView, characters: list[str]) -> list[str]:
    """The characters the last turn asked something of (where a thing is, to give it,
    their secret, any question said aloud to them), in order, once each."""
    if not view.recent:
        return []
    last = view.recent[-1].text
    asked = [slug(m["listener"]) for p in (_ASKED, _REQUESTED) for m in p.finditer(last)]
    asked += said_to(view, characters, last)
    return [c for c in dict.fromkeys(asked) if c in characters]


def _focal(
    view: AuthorView,
    characters: list[str],
    anchor: str,
    place: str | None,
    asked: list[str],
    busy: list[str],
) -> tuple[str, ...]:
    """The anchor and, up to ``MAX_FOCAL``, the others in its place who were asked
    something (first) or have something to do."""
    others = [
        c
        for c in characters
        if c != anchor and place and view.place_of(c) == place and (c in asked or c in busy)
    ]
    others.sort(key=lambda c: (c not in asked, c))
    return (anchor, *others[: MAX_FOCAL - 1])
