"""The prose reader's acts of motion and on objects: going, entering, leaving, taking,
putting, giving.

A verb of motion with a place ("strolled into the garden", "made his way out of it") moves
its subject there, or out; one that carries what its subject took to a container puts the
thing there. A verb of placing, taking or giving reads its object (a thing named, or "it"
and "them" for the thing meant), where it is taken from and where it ends ("dropped the
scarf into the bin", "handed it to Bo"); with no destination it is a take, marked unsure,
which a second verb may complete ("picked it up and put it in the box"). The reader's
state keeps where each object is, who put it there and what each character holds.
"""

from __future__ import annotations

from fabula.agents.reading.prose_parts.base import _Base
from fabula.agents.reading.prose_parts.lexicon import _singular
from fabula.agents.reading.prose_parts.state import _Mention, _Verb
from fabula.agents.reading.prose_parts.words import (
    _AWAY,
    _DEFINITE,
    _LOCATIVE,
    _OBLIQUE,
    _PHRASE_DETERMINERS,
    _REFLEXIVES,
    _TO,
    _wordlike,
)
from fabula.agents.reading.verbs import PARTICLES
from fabula.memory.actions import StoryAction
from fabula.memory.index.terms import terms


class _Objects(_Base):
    """Going, entering and leaving; taking, putting and giving objects."""

    def _motion(
        self, cls: str, verb: _Verb, who: tuple[str, ...], why: str | None, lo: int, hi: int
    ) -> bool:
        if verb.negated or verb.irrealis:
            return False
        place = self._first(lo, hi, ("place",)) or self._general_place(lo, hi)
        box = self._first(lo, hi, ("object",))
        if place is not None and box is not None and box.first < place.first:
            return False  # something else moves to the place
        if (
            cls == "go"
            and box is not None
            and box.first == lo + 1
            and self.toks[lo].low in _PHRASE_DETERMINERS
        ):
            return False  # "moved the crate to ...": a thing moved, not its mover
        if box is not None and cls == "go" and self._is_container(box.ids[0]) and len(who) == 1:
            held = self.state.holding.get(who[0])
            if held is None or held == box.ids[0]:
                return False
            # carrying what it took to a container: it ends there
            target = box.of_object or box.ids[0]
            self._event(self._action("move", actors=who, obj=held, target=target, unsure=why))
            self.state.holding.pop(who[0], None)
            self.state.at[held] = target
            self.state.placed_by[held] = who[0]
            return True
        if cls == "leave" and self._thing_object(lo, hi):
            return False  # "leaving a note in the attic": something left behind
        outward = cls == "leave" or any(
            self.toks[k].low in _AWAY for k in range(lo, place.first if place else hi)
        )
        if place is None:
            if cls != "leave" or self._first(lo, hi, ("character", "object")) is not None:
                return False
            for c in who:
                left = self.state.where.get(c)
                if left:
                    self.actions.append(self._action("exit", actors=(c,), place=left))
                self.state.where[c] = None
                self.state.company.discard(c)
            return bool(who)
        pid = place.ids[0]
        if outward:
            for c in who:
                if c in self.state.where and self.state.where[c] is None:
                    continue  # it has left already
                self.actions.append(self._action("exit", actors=(c,), place=pid, unsure=why))
                self.state.where[c] = None
                self.state.company.discard(c)
            return True
        if len(who) > 1 or cls == "enter":
            self.actions.append(self._action("enter", actors=who, place=pid, unsure=why))
        else:
            self.actions.append(self._action("go", actors=who, place=pid, unsure=why))
        for c in who:
            self.state.where[c] = pid
        self.state.company = {c for c, p in self.state.where.items() if p == pid}
        return True

    def _general_place(self, lo: int, hi: int) -> _Mention | None:
        """ "entered the room": a definite general word right after the verb (or its
        preposition) for the one place of the story it is a kind of."""
        for k in range(lo, min(hi, lo + 3)):
            low = self.toks[k].low
            if k in self.by_token or low not in _DEFINITE:
                continue
            if k + 1 < hi and (k + 1) not in self.by_token:
                word = _singular(self.toks[k + 1].low)
                found = [
                    self.lex.place_general[t] for t in terms(word) if t in self.lex.place_general
                ]
                if found:
                    return _Mention((found[0],), "place", k + 1, k + 1)
            return None
        return None

    def _thing_object(self, lo: int, hi: int) -> bool:
        """Whether a noun phrase that names no place or character follows the verb as its
        object ("leaving a sense of calm", not "leaving the garden" or "leaving Bo")."""
        if lo >= hi or self.toks[lo].low not in _PHRASE_DETERMINERS:
            return False
        for k in range(lo, min(hi, lo + 4)):
            m = self.by_token.get(k)
            if m is not None:
                return m.kind == "object"
            low = self.toks[k].low
            if any(t in self.lex.place_words for t in terms(_singular(low))):
                return False  # "left the room": a general word for a place
            if low in _OBLIQUE or not _wordlike(low):
                return True
        return True

    def _object_mention(self, lo: int, hi: int) -> tuple[str | None, int, str | None]:
        """The object acted on in tokens ``lo..hi``: its id, where it is named, and why the
        reading is unsure."""
        for k in range(lo, hi):
            tok = self.toks[k]
            m = self.by_token.get(k)
            if m is None and tok.low in _OBLIQUE:
                # the thing acted on follows its verb with no preposition between: after
                # one, a noun phrase is an oblique ("shared a fondness for plums")
                return None, hi, None
            if m is not None and m.kind == "object":
                if m.of_object is not None:
                    return m.of_object, m.last, None
                held = self.state.inside.get(m.ids[0])
                if held is not None:
                    return held, m.last, None  # "moved the basket": what it holds goes too
                return m.ids[0], m.last, None
            if m is not None and m.kind in ("character", "place"):
                continue
            if tok.low in ("it", "them") and (k == lo or self.toks[k - 1].low != "of"):
                before = self._object_before(k, plural=tok.low == "them")
                if before is not None:
                    return before, k, None
                if self.state.last_object is None:
                    return None, k, None
                return self.state.last_object, k, None
        return None, hi, None

    def _object_before(self, k: int, plural: bool = False) -> str | None:
        """What ``it`` (``them``: ``plural``) at token ``k`` stands for when this sentence
        named an object before it ("reached for the plum, picking it up"): the nearest
        named in the same number ("picked up the socks and moved them to the bin, to
        discard them"), else the nearest; or what a container named there holds."""
        found: list[_Mention] = []
        for j in range(k - 1, -1, -1):
            m = self.by_token.get(j)
            if m is not None and m.kind == "object" and (not found or found[-1] is not m):
                found.append(m)
        if not found:
            return None
        agreeing = [m for m in found if self._plural(m) == plural]
        m = agreeing[0] if agreeing else found[0]
        if m.of_object is not None:
            return m.of_object
        return self.state.inside.get(m.ids[0], m.ids[0])

    def _plural(self, m: _Mention) -> bool:
        low = self.toks[m.last].low
        return _singular(low) != low.replace("’", "'")

    def _source(self, lo: int, hi: int) -> str | None:
        """The container an object is taken ``from`` in tokens ``lo..hi``."""
        for k in range(lo, hi):
            if self.toks[k].low in ("from", "out"):
                m = self._first(k + 1, min(hi, k + 5), ("object",))
                if m is not None and self._is_container(m.ids[0]):
                    return m.ids[0]
        return None

    def _destination(self, lo: int, hi: int) -> _Mention | None:
        k = lo
        while k < hi:
            tok = self.toks[k]
            if tok.low == "from":
                m = self._first(k + 1, min(hi, k + 5), ("object", "place"))
                k = (m.last + 1) if m is not None else k + 1
                # "from the crate in the attic": a place phrase right after the source
                # tells where the source is, not where the thing goes
                if m is not None and k < hi and self.toks[k].low in _LOCATIVE:
                    after = self._first(k + 1, min(hi, k + 5), ("object", "place"))
                    k = (after.last + 1) if after is not None else k
                continue
            if tok.low in _TO or tok.low == "back":
                for j in range(k + 1, min(hi, k + 7)):
                    m = self.by_token.get(j)
                    # "into Kason's basket": an owner's name is not where it goes
                    if m is not None and m.first >= k + 1 and not m.possessive:
                        return m
            k += 1
        return None

    # long (over 60 lines): one decision list over a clause's words, tried in order; each
    # branch is a few lines and returns, so a split would only hide the order
    def _object(
        self, cls: str, verb: _Verb, who: tuple[str, ...], why: str | None, lo: int, hi: int
    ) -> bool:
        if verb.negated or verb.irrealis or len(who) != 1:
            return False
        if lo < hi and self.toks[lo].low in _TO | {"towards", "toward", "over", "across"}:
            return False  # no object: the subject itself moves ("moved towards the bin")
        if (
            verb.lemma == "take"
            and hi - lo > 2
            and self.toks[lo].low == "it"
            and self.toks[lo + 1].low in ("upon", "on")
            and self.toks[lo + 2].low in _REFLEXIVES
        ):
            return True  # "took it upon himself to ...": an idiom, nothing taken
        if verb.lemma == "take" and self._light_noun(verb.end + 1, hi):
            return True  # "took care of it", "take part in": a light verb, nothing taken
        obj, at, obj_why = self._object_mention(lo, hi)
        if obj is None:
            return False
        actor = who[0]
        source = self._source(at + 1, hi)
        if source is not None and obj not in self.state.located:
            self._state((obj, source), [])
        dest = self._destination(at + 1, hi)
        unsure = why or obj_why
        if dest is not None and dest.kind == "character":
            if dest.ids[0] == actor:
                return False
            self._event(
                self._action("give", actors=who, obj=obj, target=dest.ids[0], unsure=unsure)
            )
        elif dest is not None and dest.ids[0] != obj and cls in ("put", "take", "discard"):
            target = dest.of_object if dest.of_object is not None else dest.ids[0]
            self._event(self._action("move", actors=who, obj=obj, target=target, unsure=unsure))
        elif cls == "give":
            recipient = self._first(lo, hi, ("character",))
            if recipient is None or recipient.ids[0] == actor:
                return False
            self._event(
                self._action("give", actors=who, obj=obj, target=recipient.ids[0], unsure=unsure)
            )
        elif self.state.placed_by.get(obj) == actor and (
            cls != "take"
            or verb.lemma.split()[-1] in ("away", "off")
            or self.toks[verb.at].low.endswith("ing")  # ", removing it from sight"
        ):
            # its own doer already put it somewhere: an act with no destination on it
            # ("relocated it", "disposed of it", "whisked it away") tells that act again
            return True
        elif cls == "take":
            self._event(self._action("take", actors=who, obj=obj, unsure=unsure))
        elif verb.lemma == "leave" or verb.lemma.split()[-1] == "over":
            # left where it is; knocked or tipped over: it falls where it was, in nobody's
            # hands (a change of its condition, the phases')
            return False
        else:
            particle = next((t.low for t in self.toks[at + 1 : hi] if t.low in PARTICLES), None)
            where = f" ({verb.lemma} {particle})" if particle else f" ({verb.lemma})"
            took = self._action(
                "take", actors=who, obj=obj, unsure=unsure or f"a move with no destination{where}"
            )
            self.undirected.add(id(took))
            self._event(took)
        self.state.last_object = obj
        self.state.located.add(obj)
        last = self.actions[self.events[-1]] if self.events else None
        if last is not None and last.obj == obj:
            if obj in self.state.at:
                self.state.left.setdefault(obj, set()).add(self.state.at[obj])
            self.state.at[obj] = last.target or actor
            self.state.placed_by[obj] = actor if last.target else None
            if last.kind == "take":
                self.state.holding[actor] = obj
            else:
                self.state.holding.pop(actor, None)
        return True

    def _event(self, action: StoryAction) -> None:
        if action.kind in ("move", "give") and self.events:
            last = self.events[-1]
            before = self.actions[last]
            if (
                before.kind == "take"
                and before.unsure is not None
                and before.unsure.startswith("a move with no destination")
                and (before.actors, before.obj) == (action.actors, action.obj)
            ):
                # a second verb says where the first one's object went
                self.actions[last] = action
                return
        self.events.append(len(self.actions))
        self.actions.append(action)
