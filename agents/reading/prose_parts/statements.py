"""The prose reader's statements: where things are, as a sentence states it.

An object's first placement stated in prose ("a bottle of peas on the counter", "the peas
were in the bottle", "in the bucket there was a skirt", "the crate held a skirt", and,
after a sentence naming a container, "Inside was a radish") is a ``state`` action, seen by
the company present, or a ``perceive`` of the sentence's perceivers. A placement before an
act that moves the thing is stated before it; one the reader already has is news only to
those who see it now.
"""

from __future__ import annotations

from collections.abc import Sequence

from fabula.agents.reading.prose_parts.base import _Base
from fabula.agents.reading.prose_parts.state import _Mention
from fabula.agents.reading.prose_parts.words import (
    _CLAUSE_EDGE,
    _HOLDING,
    _LOCATIVE,
    _NEGATIONS,
    _wordlike,
)
from fabula.memory.actions import Clause


class _Statements(_Base):
    """Where things are, as a sentence states it."""

    # long (over 60 lines): the forms of a stated first placement, tried in order on the
    # same mentions; the docstring lists them
    def _statements(self, perceivers: list[str]) -> None:
        """An object's first placement, stated: ``a bottle of peas``, ``the peas were in the
        bottle``, ``a tangerine resting inside a small box``, ``in the bucket there was a
        skirt``, ``the crate held a skirt``, and, after a sentence that names a container,
        ``Inside was a radish`` / ``there lay a skirt`` / ``it contained a skirt``."""
        objects = [m for m in self.mentions if m.kind == "object"]
        for m in objects:
            if m.of_object is not None:
                self._state((m.of_object, m.ids[0]), perceivers)
        containers = [m for m in objects if self._is_container(m.ids[0]) and m.of_object is None]
        plain = [m for m in objects if not self._is_container(m.ids[0])]
        for box in containers:
            if not self._locative_before(box.first):
                continue
            if any(a.target == box.ids[0] for a in self.actions):
                continue
            near = [o for o in plain if abs(o.first - box.first) <= 16]
            if (
                len(near) == 1
                and not any(a.obj == near[0].ids[0] for a in self.actions)
                and not self._denied(near[0], box)
            ):
                self._state((near[0].ids[0], box.ids[0]), perceivers)
        for box in containers:
            held = self._held_in(box, plain)
            if held is not None:
                self._state((held, box.ids[0]), perceivers)
        for m in plain:
            # "a plum resting inside", "found a pear nestled within": the container is the
            # one named last, before it in this sentence or in the one before
            box_id = next(
                (b.ids[0] for b in reversed(containers) if b.last < m.first), self.state.last_box
            )
            if box_id is not None and self._inside_after(m) and not self._acted_on(m.ids[0]):
                self._state((m.ids[0], box_id), perceivers)
        thing = self.state.last_object
        if (
            not plain
            and not self.actions
            and self.toks
            and self.toks[0].low == "it"
            and thing is not None
            and thing not in self.state.located
            and not self._is_container(thing)
        ):
            # "It was tucked inside a box": the object the story named last
            for box in containers:
                if self._locative_before(box.first):
                    self._state((thing, box.ids[0]), perceivers)
                    break
        box_id = self.state.last_box
        if containers or box_id is None or self.actions:
            return
        words = [t.low for t in self.toks]
        if len(plain) != 1 or plain[0].ids[0] in self.state.located:
            return
        bridged = any(w in ("inside", "within", "therein", "there") for w in words)
        for k, w in enumerate(words[:-1]):
            if w in ("it", "which") and any(v in _HOLDING for v in words[k + 1 : k + 4]):
                bridged = True  # "it was filled with", "which held"
        if bridged:
            self._state((plain[0].ids[0], box_id), perceivers)

    def _seen_where_it_is(self) -> None:
        """A thing seen, its place unsaid, is seen where the reader has it ("Bo spotted the
        plum", "his eyes fell on the tin" that holds it), unless the sentence says where."""
        state = self.state
        for who, sid in self.looked:
            obj = state.inside.get(sid) if self._is_container(sid) else sid
            box = state.at.get(obj) if obj is not None else None
            if obj is None or box is None or box in self.lex.characters.values():
                continue
            if self._is_container(sid) and box != sid:
                continue  # what the container held once is elsewhere now
            if any(a.obj == obj or (a.clause and a.clause.subject == obj) for a in self.actions):
                continue
            clause = Clause(subject=obj, attribute="location", value=box)
            self.actions.append(self._action("perceive", actors=who, clause=clause))

    def _inside_after(self, m: _Mention) -> bool:
        """Whether ``inside`` (``within``) follows the object ``m`` as an adverb, with at
        most one word between and no noun phrase after it ("a plum resting inside.")."""
        toks = self.toks
        for k in range(m.last + 1, min(len(toks), m.last + 3)):
            if toks[k].low in ("inside", "within"):
                nxt = toks[k + 1].low if k + 1 < len(toks) else ","
                return not _wordlike(nxt) or nxt in _CLAUSE_EDGE
            if not _wordlike(toks[k].low) or k in self.by_token:
                return False
        return False

    def _acted_on(self, obj: str) -> bool:
        return any(a.obj == obj for a in self.actions)

    def _denied(self, a: _Mention, b: _Mention) -> bool:
        """Whether a negation comes between two mentions ("the plum was no longer in the
        tin", "was not in the tin"): a placement denied, not stated."""
        lo, hi = min(a.last, b.last), max(a.first, b.first)
        return any(t.low in _NEGATIONS or t.low == "no" for t in self.toks[lo:hi])

    def _held_in(self, box: _Mention, plain: Sequence[_Mention]) -> str | None:
        """The object a container is said to hold right after it is named: "the crate held
        a skirt", "the crate was filled with skirts", "a box that contained a plum", "a
        basket filled to the brim with peas", "a jar, sitting on a shelf, holding a plum",
        "an envelope with a plum inside" (``with`` right after the container)."""
        toks = self.toks
        for k in range(box.last + 1, min(len(toks), box.last + 9)):
            if k in self.by_token:
                return None  # another entity named first: the holder is that one
            low = toks[k].low
            if low == "where" and k <= box.last + 2:
                # "the pantry, where a pear sat": the relative clause says what it holds
                inner = [o for o in plain if k < o.first <= k + 6]
                return inner[0].ids[0] if inner else None
            if low in _HOLDING or (low == "with" and k == box.last + 1):
                # "filled to the brim with": the contents follow the holding word's "with"
                inner = [o for o in plain if k < o.first <= k + 10]
                return inner[0].ids[0] if inner else None
        return None

    def _locative_before(self, at: int) -> bool:
        """Whether a locative preposition comes before token ``at`` with at most three
        modifiers between ("in the bucket", "inside a small wooden box"), or a part of it
        named by ``of`` ("in the corner of the bathtub", "on top of the old box")."""
        allowed = 4
        j = at - 1
        while j >= 0 and allowed > 0:
            tok = self.toks[j]
            if tok.low in _LOCATIVE:
                return True
            if j in self.by_token or not _wordlike(tok.low) or tok.low in ("and", "or"):
                return False
            allowed = 4 if tok.low == "of" else allowed - 1
            j -= 1
        return False

    def _is_container(self, sid: str) -> bool:
        return any(t.id == sid and t.container for ts in self.lex.things.values() for t in ts)

    def _state(self, placed: tuple[str, str], perceivers: list[str]) -> None:
        obj, box = placed
        if box in self.state.left.get(obj, ()):
            return  # where it was before an act moved it ("the story of the boots in the
            # tub", after they were moved): no news
        if self.state.at.get(obj) == box:
            # where it is: news only to those who see it there now ("Bo came in and saw
            # the plum in the box too")
            told = any(a.clause is not None and a.clause.subject == obj for a in self.actions)
            if perceivers and not told:
                clause = Clause(subject=obj, attribute="location", value=box)
                seers = tuple(dict.fromkeys(perceivers))
                self.actions.append(self._action("perceive", actors=seers, clause=clause))
            return
        moved = next((i for i in self.events if self.actions[i].obj == obj), None)
        if moved is not None:
            # "moved the bottle of peas to the fridge": where it was is before the move
            if obj not in self.known_before:
                self._state_before(moved, obj, box, perceivers)
            return
        first = obj not in self.state.located
        self.state.located.add(obj)
        self.state.at[obj] = box
        if self._is_container(box):
            self.state.inside[box] = obj
        self.state.last_object = obj
        clause = Clause(subject=obj, attribute="location", value=box)
        if perceivers:
            seers = tuple(dict.fromkeys(perceivers))
            self.actions.append(self._action("perceive", actors=seers, clause=clause))
            return
        company = tuple(sorted(self.state.company)) if first and not self._placed() else ()
        self.actions.append(self._action("state", clause=clause, seen_by=company))

    def _state_before(self, at: int, obj: str, box: str, perceivers: list[str]) -> None:
        """``obj`` stated in ``box`` before this sentence's event ``at`` that moves it."""
        clause = Clause(subject=obj, attribute="location", value=box)
        company = () if self._placed() else tuple(sorted(self.state.company))
        action = (
            self._action("perceive", actors=tuple(dict.fromkeys(perceivers)), clause=clause)
            if perceivers
            else self._action("state", clause=clause, seen_by=company)
        )
        self.actions.insert(at, action)
        self.events = [i + 1 if i >= at else i for i in self.events]
        self.known_before.add(obj)

    def _placed(self) -> bool:
        return any(p for p in self.state.where.values())
