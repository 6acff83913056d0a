"""The prose reader's mentions: the story's entities a sentence names, and where.

A character is named by its full name or its first name ("Ann", "Ann Lee's"); a thing by
its head word with its modifiers nearby, the one its words fit best ("the donation bin",
"a different drawer", "her own wardrobe" by its owner), or by a definite general noun
("the fruit"). A container named with ``of`` names its contents too ("the bottle of
peas"). Characters joined by "and" ("Ann and Ben", "A, B and C") are one group mention.
Each mention is kept by token (``by_token``) and each character by where it was named
(``named_at``), for the other parts to look up.
"""

from __future__ import annotations

from fabula.agents.reading.prose_parts.base import _Base
from fabula.agents.reading.prose_parts.lexicon import _singular, _terms_of, _Thing
from fabula.agents.reading.prose_parts.state import _Mention
from fabula.agents.reading.prose_parts.words import _DEFINITE, _OTHER, _POSSESSIVES


class _Mentions(_Base):
    """Who and what a sentence names: characters, things, places, groups."""

    # -- mentions ---------------------------------------------------------------------
    def _find_mentions(self) -> None:
        toks = self.toks
        i = 0
        while i < len(toks):
            tok = toks[i]
            base = tok.low[:-2] if tok.possessive else tok.low
            sid = self.lex.characters.get(base) if tok.text[0].isupper() else None
            two = f"{tok.low} {toks[i + 1].low}" if i + 1 < len(toks) else ""
            if tok.text[0].isupper() and two in self.lex.characters:
                self._add(_Mention((self.lex.characters[two],), "character", i, i + 1))
                i += 2
                continue
            if sid is not None:
                self._add(_Mention((sid,), "character", i, i, possessive=tok.possessive))
                i += 1
                continue
            thing = self._thing_at(i)
            if thing is not None:
                self._add(thing)
                i = thing.last + 1
                continue
            i += 1
        self._groups()

    def _thing_at(self, i: int) -> _Mention | None:
        tok = self.toks[i]
        if tok.text[0].isupper() and i > 0 and tok.low not in self.lex.things:
            return None
        word = _singular(tok.low)
        candidates = self.lex.things.get(word)
        if not candidates:
            return self._general_at(i)
        if i + 1 < len(self.toks) and _singular(self.toks[i + 1].low) in self.lex.things:
            nxt = _singular(self.toks[i + 1].low)
            if any(word in t.words for t in self.lex.things[nxt]):
                return None  # a modifier of the next word's thing ("fridge container")
        near = {_singular(t.low) for t in self.toks[max(0, i - 3) : i]}
        after = [_singular(t.low) for t in self.toks[i + 1 : i + 5]]
        if after[:1] == ["of"]:
            near |= set(after[1:])
        owner = self._owner_before(i)
        best: tuple[int, _Thing] | None = None
        for thing in candidates:
            score = sum(1 for w in thing.words[:-1] if w in near) * 2
            if set(thing.words[:-1]) & _OTHER and near & _OTHER:
                score += 2  # "a different drawer" for "another drawer"
            if len(thing.words) == 1:
                score += 1
            if thing.owner is not None and owner == thing.owner:
                score += 3
            if best is None or score > best[0]:
                best = (score, thing)
        assert best is not None
        thing = best[1]
        first = i
        while first > 0 and _singular(self.toks[first - 1].low) in thing.words[:-1]:
            first -= 1
        last = i
        if after[:1] == ["of"] and set(thing.words[:-1]) & set(after[1:]):
            last = i + 1 + next(k for k, w in enumerate(after[1:], 1) if w in thing.words[:-1])
        kind = "place" if thing.kind == "place" else "object"
        mention = _Mention((thing.id,), kind, first, last)
        if thing.container and after[:1] == ["of"]:
            inner = self._plain_thing(i + 2, i + 5)
            if (
                inner is not None
                and inner.id != thing.id
                and not inner.container
                and inner.kind == "object"
            ):
                mention.of_object = inner.id
                mention.last = self._token_of(inner, i + 2)
        return mention

    def _general_at(self, i: int) -> _Mention | None:
        """A definite general noun for the one object it is a kind of ("the fruit", "this
        tasty vegetable", "her beloved garments"): a determiner or owner before it, at most
        two modifiers between."""
        tok = self.toks[i]
        found = [self.lex.general[t] for t in _terms_of(tok.low) if t in self.lex.general]
        if not found or self._next_is_noun(i):
            return None
        for j in range(i - 1, max(-1, i - 4), -1):
            low = self.toks[j].low
            if low in _DEFINITE or self.toks[j].possessive:
                return _Mention((found[0].id,), "object", i, i)
            if j in self.by_token or not low.isalpha():
                return None
        return None

    def _next_is_noun(self, i: int) -> bool:
        """Whether the word after ``i`` names a thing ("the fruit bowl": a modifier)."""
        return i + 1 < len(self.toks) and _singular(self.toks[i + 1].low) in self.lex.things

    def _plain_thing(self, lo: int, hi: int) -> _Thing | None:
        for k in range(lo, min(hi, len(self.toks))):
            for thing in self.lex.things.get(_singular(self.toks[k].low), []):
                return thing
        return None

    def _token_of(self, thing: _Thing, lo: int) -> int:
        for k in range(lo, len(self.toks)):
            if _singular(self.toks[k].low) == thing.words[-1]:
                return k
        return lo

    def _owner_before(self, i: int) -> str | None:
        for k in range(i - 1, max(-1, i - 4), -1):
            tok = self.toks[k]
            if tok.low in _POSSESSIVES:
                return self._resolve(_POSSESSIVES[tok.low], k)[0]
            if tok.possessive:
                return self.lex.characters.get(tok.low[:-2])
        return None

    def _add(self, mention: _Mention) -> None:
        """Keep ``mention``, found after every mention kept before it."""
        self.mentions.append(mention)
        for k in range(mention.first, mention.last + 1):
            self.by_token[k] = mention
        if mention.kind == "character":
            for place, who in enumerate(mention.ids):
                self.named_at.setdefault(who, []).append((mention.last, place))

    def _groups(self) -> None:
        """``A and B``, ``A, B and C``, ``both A and B``: one mention of the group."""
        merged: list[_Mention] = []
        for m in reversed(self.mentions):  # from the end: "A, B and C" joins at "and" first
            nxt = merged[-1] if merged else None
            joiner = self.toks[m.last + 1].low if m.last + 1 < len(self.toks) else ""
            if (
                nxt is not None
                and m.kind == nxt.kind == "character"
                and not m.possessive
                and nxt.first - m.last == 2
                and (joiner in ("and", "nor") or (joiner == "," and len(nxt.ids) > 1))
            ):
                nxt.ids = (*m.ids, *nxt.ids)
                nxt.first = m.first
                continue
            merged.append(m)
        merged.reverse()
        self.mentions = []
        self.by_token = {}
        self.named_at = {}
        for m in merged:
            self._add(m)
