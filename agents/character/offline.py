"""The offline character agent: acts on its own beliefs toward its goals, deterministically.

It reads only its :class:`fabula.memory.acl.CharacterMind` (its beliefs and first-person memories,
on a Redis connection that cannot read anything else) and its brief. What it proposes
follows from what it *believes*, true or not: a character who believes the key is in the
drawer goes to the drawer.

Policy, in order:
1. A question put to it ("Leo asked Mara where the key is") that it has not answered: it
   answers from its own belief, or says it does not know.
2. Its goals, in order: ``find/get the O`` — go where it believes the O is and take it; if it
   learned the O is not where it thought, ask someone present, or go where someone is;
   ``keep/hide the O`` — while holding the O, put it in a container here.
3. Otherwise it thinks about what it wants.
"""

from __future__ import annotations

import re

from fabula.agents.character.goals import Goal, parse_goal
from fabula.agents.contracts import Action, CharacterBrief, Proposal
from fabula.memory.acl import CharacterMind
from fabula.memory.places import place_of
from fabula.memory.projections import BeliefView
from fabula.memory.records import Entity, Memory, slug

__all__ = ["OfflineCharacter"]

_NAME = r"[A-Z][\w'-]*"
_ASK = re.compile(
    r"^(?P<asker>[A-Z][\w'-]*) asked (?P<listener>[A-Z][\w'-]*) where the (?P<obj>.+?) is[.?]?$"
)
_TOLD = re.compile(rf"^(?P<speaker>{_NAME}) (?:privately )?told (?P<listener>{_NAME}) that ")


_TOPIC = re.compile(r"\b(?P<the>the )(?P<np>[a-z][a-z ]*)$")


class _Situation:
    """What the character believes about where things are, read from its own mind."""

    def __init__(self, me: str, beliefs: BeliefView, entities: dict[str, Entity]) -> None:
        self.me = me
        self.beliefs = beliefs
        self.entities = entities

    def kind(self, entity: str) -> str | None:
        e = self.entities.get(entity)
        return e.kind if e else None

    def is_container(self, entity: str) -> bool:
        e = self.entities.get(entity)
        return e is not None and e.is_container

    def place_of(self, entity: str) -> str | None:
        """Where the character believes ``entity`` is, through containers and holders."""
        return place_of(entity, self.beliefs.where, lambda e: self.kind(e) == "place")

    @property
    def here(self) -> str | None:
        return self.place_of(self.me)

    def others_here(self) -> list[str]:
        here = self.here
        return sorted(
            c
            for c, e in self.entities.items()
            if e.kind == "character" and c != self.me and here and self.place_of(c) == here
        )

    def others_elsewhere(self) -> list[tuple[str, str]]:
        out = []
        for c, e in sorted(self.entities.items()):
            if e.kind == "character" and c != self.me:
                place = self.place_of(c)
                if place and place != self.here:
                    out.append((c, place))
        return out


_REQUEST = re.compile(
    rf'^"Give me the (?P<obj>.+?), (?P<holder>{_NAME}),?" said (?P<asker>{_NAME})\.?$'
)
_REFUSAL = "I am keeping the"


def _pending_request(me: str, memories: list[Memory]) -> tuple[str, str] | None:
    """The latest "give me the O" put to ``me`` that ``me`` has not answered: (asker, O)."""
    for i in range(len(memories) - 1, -1, -1):
        m = _REQUEST.match(memories[i].quote)
        if m and slug(m["holder"]) == me:
            asker, obj = slug(m["asker"]), slug(m["obj"])
            for later in memories[i + 1 :]:
                if later.quote.startswith(f"{later.quote.split(' ')[0]} gave the") or (
                    _REFUSAL in later.quote
                ):
                    return None
            return asker, obj
    return None


def _refused(me: str, obj_name: str, memories: list[Memory]) -> bool:
    """Whether ``me`` was refused the object it asked for."""
    return any(_REFUSAL + " " + obj_name in m.quote for m in memories)


def _pending_question(me: str, memories: list[Memory]) -> tuple[str, str] | None:
    """The latest question put to ``me`` that ``me`` has not answered: (asker, object)."""
    for i in range(len(memories) - 1, -1, -1):
        m = _ASK.match(memories[i].quote)
        if m and slug(m["listener"]) == me:
            asker = slug(m["asker"])
            for later in memories[i + 1 :]:
                t = _TOLD.match(later.quote)
                if t and slug(t["speaker"]) == me and slug(t["listener"]) == asker:
                    return None
            if later_said_unknown(me, memories[i + 1 :]):
                return None
            return asker, slug(m["obj"])
    return None


def _ruled_out(sit: _Situation, obj: str, box: str, memories: list[Memory]) -> bool:
    """Whether the character knows ``obj`` is not in ``box``: it learned so, or it searched
    the box (a search shows everything inside) and does not believe the object is there."""
    belief = sit.beliefs.get(obj, "location")
    if belief is not None and belief.value == box:
        return not belief.polarity
    name = sit.entities[box].name if box in sit.entities else box
    me = sit.entities[sit.me].name if sit.me in sit.entities else sit.me
    return any(
        m.kind == "search" and m.quote.startswith(f"{me} searched the {name}") for m in memories
    )


def later_said_unknown(me: str, memories: list[Memory]) -> bool:
    """Whether ``me`` already said it does not know, in ``memories``."""
    return any(m.kind == "say" and "I do not know where" in m.quote for m in memories)


def _asked_recently(me: str, obj: str, memories: list[Memory]) -> bool:
    """Whether ``me`` asked about ``obj`` and has heard no answer since."""
    for i in range(len(memories) - 1, -1, -1):
        m = _ASK.match(memories[i].quote)
        if m and slug(m["asker"]) == me and slug(m["obj"]) == obj:
            answered = any(
                (t := _TOLD.match(later.quote)) and slug(t["listener"]) == me
                for later in memories[i + 1 :]
            )
            return not answered and not later_said_unknown(me, memories[i + 1 :])
    return False


def _asked_before(me: str, other: str, obj: str, memories: list[Memory]) -> bool:
    """Whether ``me`` has already asked ``other`` about ``obj`` (no point asking twice)."""
    for memory in memories:
        m = _ASK.match(memory.quote)
        if m and slug(m["asker"]) == me and slug(m["listener"]) == other and slug(m["obj"]) == obj:
            return True
    return False


class OfflineCharacter:
    """Deterministic character agent (see module docstring)."""

    async def propose(self, mind: CharacterMind, brief: CharacterBrief) -> Proposal:
        """The character's proposal from its own beliefs and memories (policy in the module
        docstring)."""
        me = mind.character
        beliefs = await mind.beliefs()
        memories = await mind.memories(last=30)
        entities = await mind.entities()
        sit = _Situation(me, beliefs, entities)
        question = _pending_question(me, memories)
        if question is not None:
            return Proposal(character=me, actions=(self._answer(sit, *question),), intent="answer")
        request = _pending_request(me, memories)
        if request is not None:
            asker, obj = request
            wanted = {parse_goal(g).object for g in brief.goals}
            if sit.beliefs.where(obj) == me and obj not in wanted:
                action = Action(kind="give", object=obj, listener=asker, reason="asked for it")
            else:
                action = Action(
                    kind="say",
                    listener=asker,
                    about=obj,
                    line=f"{_REFUSAL} {_name(sit, obj)}",
                    reason="wants it",
                )
            return Proposal(character=me, actions=(action,), intent="answer a request")
        for goal in (parse_goal(g) for g in brief.goals):
            step = self._pursue(sit, goal, memories)
            if step is not None:
                return Proposal(character=me, actions=(step,), intent=goal.text)
        topic, phrase = self._topic(brief, entities)
        return Proposal(
            character=me,
            actions=(Action(kind="wait", object=topic, line=phrase, reason="nothing to do"),),
            intent="wait",
        )

    def _answer(self, sit: _Situation, asker: str, obj: str) -> Action:
        where = sit.beliefs.where(obj)
        if where is None:
            return Action(
                kind="say",
                listener=asker,
                about=obj,
                line=f"I do not know where the {_name(sit, obj)} is",
                reason="asked, and does not know",
            )
        return Action(
            kind="tell",
            listener=asker,
            about=obj,
            claim=where,
            reason="asked, and answers from what it believes",
        )

    def _pursue(self, sit: _Situation, goal: Goal, memories: list[Memory]) -> Action | None:
        obj = goal.object
        if obj is None or obj not in sit.entities:
            return None
        belief = sit.beliefs.get(obj, "location")
        if goal.kind == "hide":
            if belief is not None and belief.polarity and belief.value == sit.me:
                containers = [
                    e
                    for e in sorted(sit.entities)
                    if sit.is_container(e) and sit.place_of(e) == sit.here
                ]
                if containers:
                    return Action(
                        kind="put",
                        object=obj,
                        target=containers[0],
                        reason="holds it and wants it safe",
                    )
            return None
        if goal.kind != "find":
            return None
        if belief is not None and belief.polarity:
            if belief.value == sit.me:
                return None  # done: holding it
            holder = belief.value
            if _refused(sit.me, _name(sit, obj), memories):
                return Action(kind="wait", object=obj, reason="was refused")
            if sit.kind(holder) == "character" and sit.place_of(holder) == sit.here:
                name = _name(sit, obj)
                return Action(
                    kind="say",
                    listener=holder,
                    about=obj,
                    line=f"Give me the {name}, {_name(sit, holder)}",
                    reason=f"believes {holder} has the {obj}",
                )
            place = sit.place_of(belief.value)
            if place is None:
                return self._explore(sit, obj, memories)
            if place != sit.here:
                return Action(
                    kind="go",
                    target=place,
                    about=obj,
                    reason=f"believes the {obj} is in the {belief.value}",
                )
            return Action(
                kind="take",
                object=obj,
                target=belief.value,
                reason=f"believes the {obj} is in the {belief.value}",
            )
        # it does not know where the object is (or learned it is not where it thought)
        if _asked_recently(sit.me, obj, memories):
            return Action(kind="wait", object=obj, reason="waiting for an answer")
        others = [o for o in sit.others_here() if not _asked_before(sit.me, o, obj, memories)]
        if others:
            return Action(
                kind="ask", listener=others[0], about=obj, reason="does not know where it is"
            )
        elsewhere = sit.others_elsewhere()
        if elsewhere:
            return Action(
                kind="go",
                target=elsewhere[0][1],
                reason=f"looks for someone who may know where the {obj} is",
            )
        return self._explore(sit, obj, memories)

    def _explore(self, sit: _Situation, obj: str, memories: list[Memory]) -> Action | None:
        """Search a container here not yet ruled out, else move on to the next place."""
        for box in sorted(e for e in sit.entities if sit.is_container(e)):
            if sit.place_of(box) == sit.here and not _ruled_out(sit, obj, box, memories):
                return Action(kind="search", target=box, about=obj, reason=f"looks for the {obj}")
        places = sorted(e for e, ent in sit.entities.items() if ent.kind == "place")
        if sit.here in places and len(places) > 1:
            after = places[(places.index(sit.here) + 1) % len(places)]
            return Action(kind="go", target=after, reason=f"looks for the {obj} elsewhere")
        return None

    def _topic(
        self, brief: CharacterBrief, entities: dict[str, Entity]
    ) -> tuple[str | None, str | None]:
        """What it thinks about when idle: the last thing its first goal names."""
        for goal in brief.goals:
            parsed = parse_goal(goal)
            if parsed.object and parsed.object in entities:
                return parsed.object, None
            m = _TOPIC.search(goal.strip().rstrip("."))
            if m:
                ident = slug(m["np"])
                return (ident, None) if ident in entities else (None, "the " + m["np"])
        return None, None


def _name(sit: _Situation, entity: str) -> str:
    e = sit.entities.get(entity)
    return e.name if e else entity.replace("_", " ")
