"""The prose reader's telling and feeling: where a thing is, told to another; a thing liked.

A verb of telling with a listener, a thing and where it is ("Ann whispered to Ben that the
scarf is in the box") is an ``inform`` (a ``tell`` when said privately). A verb of liking
or disliking with a thing ("adored the plum", "hated it") is a ``feel``; so is a feeling
said as a noun ("Bo had a fondness for plums", "Ann's deep dislike of the scarf"), whose
holder is its owner or the clause's subject.
"""

from __future__ import annotations

from collections.abc import Sequence

from fabula.agents.reading.prose_parts.base import _Base
from fabula.agents.reading.prose_parts.state import _Verb
from fabula.agents.reading.prose_parts.words import _ABOUT, _DETERMINERS, _POSSESSIVES, _feeling
from fabula.memory.actions import Clause


class _Feelings(_Base):
    """Telling where a thing is, and liking or disliking it."""

    def _tell(self, verb: _Verb, who: tuple[str, ...], why: str | None, lo: int, hi: int) -> bool:
        if verb.negated or len(who) != 1:
            return False
        listener = self._first(lo, min(hi, lo + 3), ("character",))
        rest = range(lo, len(self.toks))
        objs = [self.by_token[k] for k in rest if k in self.by_token]
        thing = next(
            (m for m in objs if m.kind == "object" and not self._is_container(m.ids[0])), None
        )
        box = next(
            (
                m
                for m in objs
                if m.kind in ("object", "place")
                and m is not thing
                and m.ids[0] != (thing.ids[0] if thing else None)
            ),
            None,
        )
        if listener is None or thing is None or box is None or listener.ids[0] == who[0]:
            return False
        clause = Clause(subject=thing.ids[0], attribute="location", value=box.ids[0])
        private = verb.lemma in ("whisper", "confide") or any(
            t.low in ("privately", "secretly", "quietly") for t in self.toks
        )
        self.actions.append(
            self._action(
                "tell" if private else "inform",
                actors=who,
                listeners=listener.ids[:1],
                clause=clause,
                unsure=why,
            )
        )
        return True

    def _feel(
        self, cls: str, verb: _Verb, who: tuple[str, ...], why: str | None, lo: int, hi: int
    ) -> bool:
        if verb.irrealis:
            return True  # "hoping they would like it": no feeling the story states
        thing = self._first(lo, min(hi, lo + 4), ("object", "place"))
        target = thing.of_object or thing.ids[0] if thing is not None else None
        if target is None and lo < hi and self.toks[lo].low in ("it", "them"):
            target = self.state.last_object  # "adored it": the thing last named
        if target is None:
            return False
        liked = (cls == "like") != verb.negated
        strong = verb.lemma in ("love", "adore", "hate", "despise", "detest", "loathe", "abhor")
        word = ("loves" if strong else "likes") if liked else ("hates" if strong else "dislikes")
        for c in who:
            self.actions.append(
                self._action("feel", actors=(c,), obj=target, verb=word, unsure=why)
            )
        return True

    def _feeling_nouns(self, verbs: Sequence[_Verb]) -> None:
        """A feeling said as a noun about a thing ("Bo had a fondness for plums", "Ann's
        deep dislike of the scarf"): a noun WordNet has as a kind of liking (disliking),
        then for / of / towards / to the thing; its holder the owner before it ("Ann's",
        "his") or the clause's subject. Not under a verb of believing ("assuming that Bo
        had a fondness for it": the believer's view) nor negated."""
        toks = self.toks
        felt = {(a.actors, a.obj) for a in self.actions if a.kind == "feel"}
        for i, tok in enumerate(toks):
            if i + 1 >= len(toks) or toks[i + 1].low not in _ABOUT:
                continue
            if not any(
                t.low in _DETERMINERS or t.low.endswith("'s") for t in toks[max(0, i - 3) : i]
            ):
                continue  # a noun's determiner or owner first ("took care of": no feeling)
            if toks[i + 1].low == "of" and toks[i - 1].low == "the":
                continue  # "the taste of pineapple": a property of the thing, no one's feeling
            sign = _feeling(tok.low)
            if sign is None:
                continue
            if any("believe" in v.classes[:1] and v.at < i for v in verbs):
                return
            if self._negated(i) or any(v.at < i and v.irrealis and v.end >= i - 3 for v in verbs):
                continue
            thing = self._first(i + 2, min(len(toks), i + 6), ("object",))
            target = thing.of_object or thing.ids[0] if thing is not None else None
            if target is None and toks[i + 2 : i + 3] and toks[i + 2].low in ("it", "them"):
                target = self.state.last_object
            if target is None or self._is_container(target):
                continue
            who = self._feeler(i)
            if not who:
                continue
            word = "likes" if sign else "dislikes"
            self.state.last_object = target  # "It was in a box." next: the thing liked
            for c in who:
                if ((c,), target) not in felt:
                    self.actions.append(self._action("feel", actors=(c,), obj=target, verb=word))

    def _feeler(self, i: int) -> tuple[str, ...]:
        """Whose is the feeling noun at token ``i``: the owner right before it ("Bo's",
        "his deep"), else the nearest character named as a subject before it."""
        for j in range(i - 1, max(-1, i - 4), -1):
            low = self.toks[j].low
            m = self.by_token.get(j)
            if m is not None and m.kind == "character" and m.possessive:
                return m.ids
            if low in ("his", "her"):
                who, _ = self._resolve(_POSSESSIVES[low], j)
                return (who,) if who else ()
            if low in ("their", "its", "a", "an", "the", ",", "for", "with"):
                break
        best: tuple[str, ...] = ()
        for j in range(i):
            m = self.by_token.get(j)
            if m is not None and m.kind == "character" and not m.possessive and m.first == j:
                best = m.ids
            elif self.toks[j].low in ("he", "she"):
                who, _ = self._resolve(self.toks[j].low, j)
                best = (who,) if who else best
        return best
