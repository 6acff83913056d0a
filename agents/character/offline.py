"""The offline character agent: acts on its own beliefs toward its goals, deterministically.

It reads only its :class:`fabula.memory.acl.CharacterMind` (its beliefs and first-person
memories, on a Redis connection that cannot read anything else) and its brief. What it
proposes follows from what it *believes*, true or not: a character who believes the key is
in the drawer goes to the drawer.

Policy, in order:
1. A question put to it ("Leo asked Mara where the key is") that it has not answered, by
   someone it believes is still in the same place (one who has left is not answered): it
   answers from its own belief — or, when it wants the thing kept from the asker (a goal to
   keep it hidden, or hide it from the asker), with a lie: a container it believes the
   thing is not in and has not seen the asker search, or, with no such lie to tell, "I do
   not know" — or says it does not know. Asked for its secret, it keeps it: with a goal
   to keep it (``keep my secret``), by a lie ("X's secret is that X has nothing to hide"),
   else by refusing.
2. A request put to it ("Give me the key, Mara"): it gives the thing unless the first goal
   of its own that names the thing is not to give it to the asker (then it refuses, in
   words).
3. Its goals, in order (:func:`fabula.agents.character.goals.step`): the first with a step
   to take gives the turn's action — unless it is a move it has made twice already (going
   to one place, searching one container): what it believes is sending it round in
   circles, and that goal counts as blocked.
4. Nothing to do (every goal done, waiting or blocked): it proposes no action and stays out
   of the turn; its intent says why, goal by goal (``done: …``, ``blocked: … (why)``).
"""

from __future__ import annotations

import re
from dataclasses import replace

from fabula.agents.character.goals import (
    ASK,
    REFUSAL,
    SECRET_QUESTION,
    SECRET_REFUSAL,
    Situation,
    answered,
    read_goal,
    step,
)
from fabula.agents.contracts import Action, CharacterBrief, Proposal
from fabula.memory.acl import CharacterMind
from fabula.memory.records import SECRET, Memory, slug
from fabula.worlds.goals import Goal

_NAME = r"[A-Z][\w'-]*"
_REQUEST = re.compile(
    rf'^"Give me the (?P<obj>.+?), (?P<holder>{_NAME}),?" said (?P<asker>{_NAME})\.?$'
)
_SECRET = re.compile(rf'^"{SECRET_QUESTION}, (?P<holder>{_NAME}),?" said (?P<asker>{_NAME})\.?$')


def _pending_request(me: str, memories: list[Memory]) -> tuple[str, str] | None:
    """The latest "give me the O" put to ``me`` that ``me`` has not answered: (asker, O)."""
    for i in range(len(memories) - 1, -1, -1):
        m = _REQUEST.match(memories[i].quote)
        if m and slug(m["holder"]) == me:
            asker, obj = slug(m["asker"]), slug(m["obj"])
            for later in memories[i + 1 :]:
                if later.quote.startswith(f"{later.quote.split(' ')[0]} gave the") or (
                    REFUSAL in later.quote
                ):
                    return None
            return asker, obj
    return None


def _pending_secret(sit: Situation) -> str | None:
    """Who asked ``me`` for its secret and has had no answer."""
    for i in range(len(sit.memories) - 1, -1, -1):
        m = _SECRET.match(sit.memories[i].quote)
        if m and slug(m["holder"]) == sit.me:
            asker, me = m["asker"], sit.name(sit.me)
            answers = (
                f'"{SECRET_REFUSAL}, {asker},"',
                f"{me} privately told {asker} that {me}'s secret",
            )
            if not any(later.quote.startswith(answers) for later in sit.memories[i + 1 :]):
                return slug(asker)
            return None
    return None


def _pending_question(me: str, memories: list[Memory]) -> tuple[str, str] | None:
    """The latest question put to ``me`` that ``me`` has not answered: (asker, object)."""
    for i in range(len(memories) - 1, -1, -1):
        m = ASK.match(memories[i].quote)
        if m and slug(m["listener"]) == me:
            if any(
                answered(later.quote, m["listener"], m["asker"], m["obj"])
                for later in memories[i + 1 :]
            ):
                return None
            return slug(m["asker"]), slug(m["obj"])
    return None


CIRCLING = 2
"""How often a character may remember making the same move (going to one place,
searching one container) since it last got anything done (gave, took, put away, told)
before a goal that asks for it again counts as blocked: what it believes keeps sending it
round in circles."""


RECENT_DEEDS = 5
"""How many of its own latest deeds a character remembers before taking or putting away
the same thing again is no longer going round (see :func:`_circling`)."""


def _circling(sit: Situation, action: Action, goal: Goal) -> bool:
    """Whether ``action`` goes round: a search it has made :data:`CIRCLING` times since it
    last got anything done, a place it went to since then, or taking or putting away what
    it took or put away among its last :data:`RECENT_DEEDS` deeds (each of these wrote the
    same turn again and again)."""
    me = sit.name(sit.me)
    if action.kind == "go" and action.target:
        done = f"{me} went to the {sit.name(action.target)}"
        # going back where it went since it last got anything done is going round: two
        # places, one after the other, were the same turn written again and again (a
        # chase, or a goal to meet someone beside one to avoid them); a goal (or a
        # direction) to be in that very place may go back once
        limit = CIRCLING if goal.place == action.target else 1
    elif action.kind == "search" and action.target:
        done = f"{me} searched the {sit.name(action.target)}"
        limit = CIRCLING
    elif action.kind in ("take", "put") and action.object:
        # taking up what it put away, and putting it away again (a goal to hand it on
        # beside one to keep it hidden): a deed among its last few undone and done again
        verb = "took" if action.kind == "take" else "put"
        deed = f"{me} {verb} the {sit.name(action.object)}"
        own = [m.quote for m in sit.memories if m.quote.startswith(f"{me} ")]
        return any(q.startswith(deed) for q in own[-RECENT_DEEDS:])
    else:
        return False
    progress = tuple(f"{me} {verb} " for verb in ("gave", "took", "put", "told", "moved"))
    count = 0
    for memory in reversed(sit.memories):
        if memory.quote.startswith(progress):
            break  # it got somewhere since: moving on is no circle
        count += memory.quote.startswith(done)
    return count >= limit


def _here(sit: Situation, other: str) -> bool:
    """Whether ``other`` is, as far as the character believes, where it is itself: one
    answers, refuses or tells only someone in the same place (unknown: it may be)."""
    mine = sit.beliefs.where(sit.me)
    theirs = sit.beliefs.get(other, "location")
    if mine is None or theirs is None:
        return True
    # "not in the study": it saw the other leave the place it is in
    return theirs.value == mine if theirs.polarity else theirs.value != mine


def _keep_secret(sit: Situation, goals: list[Goal], asker: str) -> Action:
    """Asked for its own secret: with a goal to keep it (from anyone, or from the asker), a
    lie the asker may believe; otherwise a refusal, in words."""
    lies = any(
        g.kind == "keep_secret" and g.owner in (None, sit.me) and g.character in (None, asker)
        for g in goals
    )
    if lies and sit.beliefs.get(sit.me, SECRET) is not None:
        return Action(
            kind="tell",
            listener=asker,
            about=sit.me,
            attribute=SECRET,
            claim=f"{sit.name(sit.me)} has nothing to hide",
            reason="asked, and lies to keep its secret",
        )
    line = f"{SECRET_REFUSAL}, {sit.name(asker)}"
    return Action(kind="say", listener=asker, line=line, reason="keeps its secret")


class OfflineCharacter:
    """Deterministic character agent (see module docstring)."""

    async def propose(self, mind: CharacterMind, brief: CharacterBrief) -> Proposal:
        """The character's proposal from its own beliefs and memories (policy in the module
        docstring)."""
        me = mind.character
        beliefs = await mind.beliefs()
        memories = await mind.memories(last=30)
        entities = await mind.entities()
        sit = Situation(me, beliefs, entities, memories)
        goals = [read_goal(entities, g) for g in brief.goals]
        question = _pending_question(me, memories)
        if question is not None and _here(sit, question[0]):
            action = self._answer(sit, goals, *question)
            return Proposal(character=me, actions=(action,), intent="answer")
        secret = _pending_secret(sit)
        if secret is not None and _here(sit, secret):
            return Proposal(
                character=me, actions=(_keep_secret(sit, goals, secret),), intent="keep a secret"
            )
        request = _pending_request(me, memories)
        if request is not None and _here(sit, request[0]):
            asker, obj = request
            # the first of its goals that names the thing decides: giving it to the asker,
            # or keeping it (no goal naming it: it gives)
            first = next((g for g in goals if g.object == obj), None)
            gives = first is None or (first.kind == "give" and first.character == asker)
            if sit.beliefs.where(obj) == me and gives:
                action = Action(kind="give", object=obj, listener=asker, reason="asked for it")
            else:
                action = Action(
                    kind="say",
                    listener=asker,
                    about=obj,
                    line=f"{REFUSAL} {sit.name(obj)}",
                    reason="wants it",
                )
            return Proposal(character=me, actions=(action,), intent="answer a request")
        states: list[str] = []
        steps: list[Proposal] = []  # one per goal it can act on, in the brief's order
        for goal in goals:
            found = step(sit, goal)
            if found.status == "act" and found.action is not None:
                if not _circling(sit, found.action, goal):
                    steps.append(Proposal(character=me, actions=(found.action,), intent=goal.text))
                    continue
                found = replace(found, status="blocked", why="it is going round in circles")
            states.append(f"{found.status}: {goal.text} ({found.why})")
        if steps:  # the first, or for another draft of the turn another (brief.variant)
            return steps[brief.variant % len(steps)]
        return Proposal(character=me, actions=(), intent="; ".join(states) or "no goals")

    def _answer(self, sit: Situation, goals: list[Goal], asker: str, obj: str) -> Action:
        where = sit.beliefs.where(obj)
        if where is None:
            return Action(
                kind="say",
                listener=asker,
                about=obj,
                line=f"I do not know where the {sit.name(obj)} is",
                reason="asked, and does not know",
            )
        protects = any(
            g.object == obj
            and (g.kind == "keep_hidden" or (g.kind == "hide_from" and g.character == asker))
            for g in goals
        )
        if protects:
            # a lie the asker could believe: a container it has not been seen to search
            decoys = [
                b
                for b in sorted(sit.entities)
                if sit.is_container(b)
                and b != where
                and not sit.said(f"{sit.name(asker)} searched the {sit.name(b)}")
            ]
            if decoys:
                return Action(
                    kind="tell",
                    listener=asker,
                    about=obj,
                    claim=decoys[0],
                    reason="asked, and lies to keep it hidden",
                )
            return Action(
                kind="say",
                listener=asker,
                about=obj,
                line=f"I do not know where the {sit.name(obj)} is",
                reason="asked, and keeps what it knows to itself",
            )
        return Action(
            kind="tell",
            listener=asker,
            about=obj,
            claim=where,
            reason="asked, and answers from what it believes",
        )
