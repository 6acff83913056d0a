"""The reader of ordinary narrative English (issue 33): prose → typed story actions.

:func:`read_prose` is a :data:`~fabula.agents.memory_builder.offline.Reader`. Each sentence
goes first through the controlled grammar (:func:`.extract.parse_sentence`): a sentence it
reads is kept exactly as it reads it, so controlled English reads as it always has. Any
other sentence is read as prose, anchored on the story's entities:

- **Mentions.** A character by its full name or its first name; a thing (object, container,
  place) by its name's last word with the others nearby ("the donation bin", "the bin";
  "the center of the table" for ``table center``), singular or plural, with its owner where
  the name has one ("her own wardrobe" for ``Zoe's own wardrobe``); ``he``/``she``/``they``/
  ``it``/``them`` by the last fitting entity of the right kind. A character's pronoun is
  learnt from a sentence that names that character alone; where two characters fit a
  pronoun, the reading is marked ``unsure``.
- **Verbs** are classed by WordNet's hierarchy (:mod:`.verbs`), never listed here; the
  sentence's frame picks the class: a verb of motion with a place ("strolled into the
  garden", "made his way out of the garden"), of placing with an object and where it ends
  ("dropped the scarf into the bin", "moved them to the top shelf"), of taking, giving,
  perceiving, telling, liking. Each verb reads the words up to the next verb; its subject
  is the nearest character before it (a sentence-initial participle's is the main
  clause's).
- **Perception.** A perception verb whose complement is an event ("watched as she moved
  it", "witnessed his action", or nothing: "Ben watched, puzzled") marks the event it is
  about as seen by its subject: an event of its own sentence, else the latest one read,
  else the next one. Its absence ("did not notice", "was absent", "had already left",
  "unaware", "oblivious", "unbeknownst to", "behind his back", "without her noticing")
  marks it unseen; a doer "unaware that it had not gone unnoticed" did not know of its
  watchers (``unaware_of``), and one from whom another's not seeing was kept ("Unbeknownst
  to Ann, Bo was nowhere in sight", "Little did she know, Bo never saw it", "Ann was
  unaware that Bo had not seen it") believes they saw (``believed_seen_by``).
- **Where things are.** An object's first placement stated in prose ("a bottle of peas on
  the counter", "the peas were in the bottle", "in the bucket there was a skirt") is a
  statement, or what its sentence's perceivers saw.
- **Co-presence.** Where the text names no place, characters that act together (a
  sentence's group subject: "Ann and Ben", "both", "they") are in one scene until one of
  them leaves; an event whose doer the reader cannot place is seen by the rest of that
  company (``seen_by``). Where places are named, the tracker decides.

Whatever it does not read stays ``narration`` with its sentence's span. Deterministic, no
model, linear in the text.
"""

from __future__ import annotations

import bisect
import re
import time
from collections.abc import Callable, Mapping, Sequence

from fabula.agents.reading import unseen
from fabula.agents.reading.extract import parse_sentence
from fabula.agents.reading.prose_parts.lexicon import _Lexicon, _singular, _terms_of, _Thing
from fabula.agents.reading.prose_parts.marks import _believed, _distinct, _marked
from fabula.agents.reading.prose_parts.state import _Mention, _mention, _State, _Tok, _tok, _Verb
from fabula.agents.reading.prose_parts.words import (
    _ABOUT,
    _ABSENT,
    _ACTION_NOUNS,
    _ADVERBISH,
    _AWAY,
    _BASE_BEFORE,
    _BEHIND_BACK,
    _CLAUSE_EDGE,
    _DEFINITE,
    _DETERMINERS,
    _EVENT_KINDS,
    _EVENTISH,
    _HOLDING,
    _LITTLE_DID,
    _LOCATIVE,
    _MODALS,
    _NEGATIONS,
    _NOT_SEEN,
    _NOUN_DETERMINERS,
    _OBJECT_PRONOUNS,
    _OBLIQUE,
    _OPENERS,
    _OTHER,
    _PHRASE_DETERMINERS,
    _POSSESSIVES,
    _PREPOSITIONS,
    _REFLEXIVES,
    _SPEECH,
    _SUBJECTS,
    _TO,
    _UNAWARE,
    _UNBEKNOWNST,
    _WATCHED,
    _WITHOUT,
    _WORD,
    _feeling,
    _gender,
    _wordlike,
)
from fabula.agents.reading.verbs import PARTICLES, longest_from, longest_phrase, verb_classes
from fabula.limits import Limits
from fabula.memory.actions import Clause, StoryAction
from fabula.memory.index.terms import terms
from fabula.memory.records import Entity, slug
from fabula.memory.text import split_clauses, split_sentences


def read_prose(
    text: str,
    entities: Mapping[str, Entity],
    limits: Limits | None = None,
    *,
    clock: Callable[[], float] = time.monotonic,
) -> list[StoryAction]:
    """``text`` as story actions anchored on ``entities`` (a :data:`.builder.Reader`).

    ``limits`` (the defaults of :class:`~fabula.limits.Limits` if none) bound the reading:
    of a sentence longer than ``sentence_words`` words and marks, only its first words are
    read; once ``reading_seconds`` have passed on ``clock``, the sentences left are not
    read. What is not read stays ``narration`` whose ``unsure`` says why (a ``reading``
    finding for the approver): a long text costs time and records in proportion to its
    length, never more."""
    state, controlled_at = _read(text, entities, limits or Limits(), clock)
    return _taken_from(state.out, controlled_at, entities)


def read_with_unseen(
    text: str, entities: Mapping[str, Entity], limits: Limits | None = None
) -> tuple[list[StoryAction], list[tuple[int, int, tuple[str, ...]]]]:
    """:func:`read_prose`'s actions, and who did not perceive what happens in each clause
    of ``text`` as the reader reads its cues ("Unbeknownst to Ben", "while Ann slept",
    "Ann was asleep." before it): each such clause's span with the character ids. What
    another reader finds happening there (a change of state) is unseen by them too."""
    state, controlled_at = _read(text, entities, limits or Limits(), time.monotonic)
    return _taken_from(state.out, controlled_at, entities), state.unseen_at


def read_doers(
    text: str, entities: Mapping[str, Entity], limits: Limits | None = None
) -> list[tuple[int, tuple[str, ...]]]:
    """Who ``text`` says does something, as the prose reader reads it: for each verb with a
    subject (a name, or a pronoun resolved as the reader resolves it) and each controlled
    sentence, its offset in ``text`` and the characters doing it, in order. What a
    character only believes another did is not there ("Ann thought Bo took it")."""
    return _read(text, entities, limits or Limits(), time.monotonic)[0].doers


def _read(
    text: str, entities: Mapping[str, Entity], limits: Limits, clock: Callable[[], float]
) -> tuple[_State, set[int]]:
    """Read ``text`` sentence by sentence within ``limits``: the reader's state after it,
    and the indices in its ``out`` the controlled grammar read."""
    deadline = clock() + limits.reading_seconds
    lexicon = _Lexicon(entities)
    state = _State()
    controlled_at: set[int] = set()  # the indices in ``state.out`` the grammar read
    for start, end in split_sentences(text):
        if clock() > deadline:
            state.out.append(_unread(start, end, _LATE.format(limits.reading_seconds)))
            continue
        cut = _cut(text, start, end, limits.sentence_words)
        _read_sentence(text, start, cut, entities, lexicon, state, controlled_at)
        if cut < end:
            state.out.append(_unread(cut, end, _LONG.format(limits.sentence_words)))
    return state, controlled_at


_LATE = "not read: the turn's reading passed its deadline of {:g} s (FABULA_READING_DEADLINE)"
_LONG = (
    "not read: the sentence is longer than the {:,} words and marks the reader reads of one "
    "sentence (FABULA_MAX_SENTENCE_WORDS)"
)


def _unread(start: int, end: int, why: str) -> StoryAction:
    """The span ``start..end`` kept as narration, unread for the reason ``why``."""
    return StoryAction(kind="narration", start=start, end=end, unsure=why)


def _cut(text: str, start: int, end: int, words: int) -> int:
    """Where the reading of the sentence ``text[start:end]`` stops: its end, or, past
    ``words`` words and marks, the start of the first word after them (one scan)."""
    for k, match in enumerate(_WORD.finditer(text, start, end)):
        if k == words:
            return match.start()
    return end


def _read_sentence(
    text: str,
    start: int,
    end: int,
    entities: Mapping[str, Entity],
    lexicon: _Lexicon,
    state: _State,
    controlled_at: set[int],
) -> None:
    """Read the sentence ``text[start:end]`` into ``state.out``: the grammar's reading if it
    has one in the story's names, else its clauses' as prose, else narration."""
    state.sentence += 1
    sentence = text[start:end]
    controlled = parse_sentence(sentence, start, lexicon.cast)
    if controlled.kind != "narration" and _own_names(controlled, entities):
        _follow(state, controlled, entities)
        controlled_at.add(len(state.out))
        state.out.append(controlled)
        if controlled.actors:
            state.doers.append((start, tuple(slug(a) for a in controlled.actors)))
        return
    before = len(state.out)
    clauses = split_clauses(text, start, end)
    for k, (a, b) in enumerate(clauses if len(clauses) > 1 else [(start, end)]):
        # each clause read alone, so that a clause's place phrase never attaches to
        # another clause's verb ("Ann took the key, and Bo waited in the hall")
        state.out.extend(_Sentence(text[a:b], a, lexicon, state, first=k == 0).read())
    if len(state.out) == before and len(clauses) > 1:
        # a placement stated across clauses ("There, in a box, was a plum")
        whole = _Sentence(sentence, start, lexicon, state)
        state.out.extend(whole.placements())
    state.named_before = state.named_now
    state.named_now = ()
    state.barred = set()
    if len(state.out) > before:
        return
    if controlled.kind != "narration":
        _follow(state, controlled, entities)
        controlled_at.add(len(state.out))
        state.out.append(controlled)
        if controlled.actors:
            state.doers.append((start, tuple(slug(a) for a in controlled.actors)))
        return
    state.out.append(StoryAction(kind="narration", start=start, end=end))


def _taken_from(
    actions: list[StoryAction], controlled_at: set[int], entities: Mapping[str, Entity]
) -> list[StoryAction]:
    """Each prose act on an object seen by its doer where the object was: one who takes a
    thing out of a container, or moves it from there, sees it there first (the place the
    reader last had it, from what another did or the text stated) — unless the text says
    the doer did not see it put there: what it did not perceive it never learns."""
    out: list[StoryAction] = []
    # object -> where it is, who put it or saw it there, who the text says did not see that
    where: dict[str, tuple[str, tuple[str, ...], tuple[str, ...]]] = {}
    doers: dict[int, list[str]] = {}  # the actors of the actions that start at an offset
    for a in actions:
        doers.setdefault(a.start, []).extend(a.actors)
    for i, action in enumerate(actions):
        obj = action.obj
        if (
            i not in controlled_at
            and action.kind in ("move", "take", "put")
            and obj is not None
            and action.actors
            and obj in where
        ):
            box, by, blind = where[obj]
            known = entities.get(box)
            if (
                not set(action.actors) & {*by, *blind}
                and known is not None
                and known.kind != "character"
            ):
                seen = Clause(subject=obj, attribute="location", value=box)
                out.append(
                    StoryAction(
                        kind="perceive",
                        start=action.start,
                        end=action.end,
                        actors=action.actors[:1],
                        clause=seen,
                    )
                )
        clause = action.clause
        if action.kind in ("move", "put") and obj is not None and action.target:
            where[obj] = (slug(action.target), action.actors, action.unseen_by)
        elif action.kind in ("take", "give", "drop") and obj is not None:
            where.pop(obj, None)
        elif (
            action.kind in ("state", "perceive")
            and clause is not None
            and clause.attribute == "location"
        ):
            # who saw it there already: its seers, and whoever acts in the same sentence
            seers = (*action.seen_by, *(action.actors if action.kind == "perceive" else ()))
            same = tuple(doers.get(action.start, ()))
            where[slug(clause.subject)] = (slug(clause.value), (*seers, *same), action.unseen_by)
        out.append(action)
    return out


def _own_names(action: StoryAction, entities: Mapping[str, Entity]) -> bool:
    """Whether every name a controlled reading uses is the story's own, or the story knows
    nothing it could be a part of (a new entity, as controlled English introduces them)."""
    names = [*action.actors, *action.listeners, action.place, action.obj, action.target]
    words = {w for e in entities.values() for w in e.name.lower().replace("_", " ").split()}
    for name in names:
        if name is None:
            continue
        sid = slug(name)
        if sid not in entities and set(name.lower().split()) & words:
            return False
    return True


def _follow(state: _State, action: StoryAction, entities: Mapping[str, Entity]) -> None:
    """Keep the reader's places and referents up to date with a controlled sentence."""
    ids = [slug(a) for a in action.actors if a]
    if action.kind in ("enter", "go", "locate", "stay") and action.place:
        for who in ids:
            state.where[who] = slug(action.place)
    elif action.kind == "exit":
        for who in ids:
            state.where[who] = None
            state.company.discard(who)
    if ids:
        state.subjects.append(tuple(ids))
        _mention(state, ids)
    if action.obj:
        state.last_object = slug(action.obj)
    if action.kind in ("move", "put", "take", "give", "drop"):
        state.last_event = len(state.out)
        state.last_events, state.events_sentence = [len(state.out)], state.sentence
        if action.obj:
            state.located.add(slug(action.obj))
    if action.clause is not None and action.clause.attribute == "location":
        state.located.add(slug(action.clause.subject))


class _Sentence:
    """One prose sentence's reading."""

    def __init__(
        self, text: str, start: int, lexicon: _Lexicon, state: _State, first: bool = True
    ) -> None:
        self.first_clause = first  # the sentence's first clause (else one after it)
        self.text = text
        self.start = start
        self.end = start + len(text)
        self.lex = lexicon
        self.state = state
        self.toks = [_tok(m) for m in _WORD.finditer(text)]
        self.mentions: list[_Mention] = []
        # each character's mentions so far, in order: (last token, place among the ids)
        self.named_at: dict[str, list[tuple[int, int]]] = {}
        self.by_token: dict[int, _Mention] = {}
        self.unsure: str | None = None
        self.actions: list[StoryAction] = []
        self.events: list[int] = []  # indexes in self.actions of object events
        self.known_before = set(state.located)  # objects placed before this sentence
        self.undirected: set[int] = set()  # ids of the takes a move verb with no destination made
        self.looked: list[tuple[tuple[str, ...], str]] = []  # who saw which thing
        self._latest: list[tuple[int, int]] | None = None  # see :func:`_latest_marks`

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

    # -- pronouns ---------------------------------------------------------------------
    def _learn_pronouns(self) -> None:
        """A character's pronoun from a sentence that names it alone and uses one of "he"
        or "she", or from a sentence that names no one right after one that named it alone
        ("Elliot detested spinach. The mere thought made him cringe.")."""
        named = {i for m in self.mentions if m.kind == "character" for i in m.ids}
        adjacent = not named and self.first_clause and len(self.state.named_before) == 1
        after = 0  # a pronoun points back: only those after the name count
        if adjacent:
            named = set(self.state.named_before)
            if self._pronoun_of(next(iter(named))) is not None:
                return  # known already from a sentence that names it
            if self.state.centre is not None and set(self.state.centre) != named:
                return  # named there, but not its subject ("Knowing Bo was out, she ...")
        elif not named and len(self.state.named_now) == 1:
            named = set(self.state.named_now)  # a later clause of a sentence naming one
        elif len(named) == 1:
            after = min(m.first for m in self.mentions if m.kind == "character")
            lead = self._lead_end()
            # "In her mind, Bo ..., and so she ...": a pronoun used before the name stands
            # for another in the sentence's later clauses too
            self.state.barred |= {_gender(t.low) for t in self.toks[:after]} - {None}
            if lead > 0 and after < lead and self.toks[0].low not in _OPENERS:
                return  # "Knowing Bo hated it, she ...": the pronoun is another's
            if self._after_that(after):
                return  # "Sure that Bo hated it, she ...": a that-clause's subject
        if len(named) != 1:
            return
        [who] = named
        seen = {_gender(t.low) for t in self.toks[after:]} & {"he", "she"}
        # "She waved when Bo joined her": a pronoun the sentence used before the name
        # stands for someone else, and so does the same pronoun after it
        seen -= {_gender(t.low) for t in self.toks[:after]}
        seen -= self.state.barred
        found = [p for p in seen if p is not None]
        if adjacent and any(self._pronoun_of(c) in found for c in self.lex.characters.values()):
            return  # by adjacency only a pronoun no character is known by yet
        if len(found) == 1:
            counts = self.state.pronoun.setdefault(who, {})
            counts[found[0]] = counts.get(found[0], 0) + 1

    def _named_subject(self, at: int) -> bool:
        """Whether the verb at ``at`` has its subject by name (not by a pronoun)."""
        for j in range(at - 1, -1, -1):
            m = self.by_token.get(j)
            if m is not None and m.kind == "character" and not m.possessive:
                return True
            if self.toks[j].low in _SUBJECTS or self.toks[j].low in (";", "who"):
                return False
        return False

    def _learn_bound(self, who: str, lo: int, hi: int) -> None:
        """A reflexive or ``own`` in a verb's phrase is its subject's ("Ann decided to
        take matters into her own hands", "Bo excused himself"): the subject's pronoun."""
        for k in range(lo, hi):
            low = self.toks[k].low
            own = k + 1 < hi and self.toks[k + 1].low == "own" and low in _POSSESSIVES
            if low in _REFLEXIVES or own:
                gender = _gender(low)
                if gender in ("he", "she"):
                    counts = self.state.pronoun.setdefault(who, {})
                    counts[gender] = counts.get(gender, 0) + 1
                return
            if k in self.by_token and self.by_token[k].kind == "character":
                return  # another character named first: it may be the binder

    def _pronoun_of(self, who: str) -> str | None:
        counts = self.state.pronoun.get(who)
        if not counts:
            return None
        return max(counts, key=lambda p: counts[p])  # a tie: the one learnt first

    def _lead_end(self) -> int:
        """Where the main clause starts after a leading adjunct ending at a comma ("As Bo
        watched, ...", "Aware of Bo's plan, ...", "Unbeknownst to Bo, ..."): the token
        after the comma; 0 where the sentence opens with its subject."""
        toks = self.toks
        if not toks or not self.first_clause:
            return 0
        head = toks[0].low
        if 0 in self.by_token or head in _SUBJECTS or head in _DEFINITE | {"a", "an"}:
            return 0
        for k, tok in enumerate(toks[:24]):
            if tok.low == ",":
                return k + 1
            if tok.low in (";", ":", "—"):
                return 0
        return 0

    def _resolve(self, pronoun: str, at: int) -> tuple[str | None, str | None]:
        """The character ``pronoun`` at token ``at`` stands for, and why it is unsure."""
        # the characters named earlier in this sentence, nearest first, then the story's;
        # a pronoun opening the main clause looks past a leading phrase with no subject of
        # its own ("Aware of Bo's plan, she ...": not Bo; but "When Bo saw it, he ..." and
        # "In Bo's mind, he ..." are Bo)
        lead = self._lead_end() if self.toks[0].low not in _OPENERS else 0
        # nor, opening the main clause, to a leading phrase's that-clause's subject ("With
        # the hope that Bo would like it, she ...": not Bo)
        main = self._lead_end() if self.first_clause else 0
        if at == lead:
            before: list[str] = []
        elif at == main:
            before = [
                i
                for m in self.mentions
                if m.kind == "character" and m.last < at and not self._after_that(m.first)
                for i in m.ids
            ]
        else:
            before = self._named_before(at)
        recent = list(reversed(before))
        for subject in reversed(self.state.subjects[-3:]):
            recent += [s for s in subject if s not in recent]
        recent += [s for s in reversed(self.state.mentioned) if s not in recent]
        recent = list(dict.fromkeys(recent))
        if not recent:
            return None, f"no one for {pronoun!r} to stand for"
        fits = [c for c in recent if self._pronoun_of(c) in (pronoun, None)]
        known = [c for c in fits if self._pronoun_of(c) == pronoun]
        centre = self.state.centre
        if (
            len(known) == 1
            and 0 < lead == at
            and not before
            and centre is not None
            and len(centre) == 1
            and centre[0] in fits
            and centre[0] != known[0]
        ):
            # "Determined to end it, he ...": a leading phrase continues the previous
            # sentence's subject, whose pronoun is not known yet, against another known
            # by it: centering decides, unsure
            return centre[0], f"{pronoun!r} may stand for {centre[0]} or {known[0]}"
        if len(known) == 1:
            return known[0], None
        if not fits:
            return recent[0], f"{pronoun!r}: no character known by it"
        # centering: a pronoun before any name in its sentence continues the previous
        # sentence's subject when nothing else tells the characters apart
        if (
            len(fits) > 1
            and not before
            and centre is not None
            and len(centre) == 1
            and centre[0] in (known or fits)
        ):
            return centre[0], None
        if len(fits) > 1:
            return fits[0], f"{pronoun!r} may stand for {' or '.join(fits[:2])}"
        return fits[0], None

    def _named_before(self, at: int) -> list[str]:
        """The characters named before token ``at``, each once, ordered by where it was
        last named, the latest last: a bisection per character, not a scan of the
        sentence's mentions (a pronoun per clause made a long sentence quadratic)."""
        latest = []
        for who, places in self.named_at.items():
            k = bisect.bisect_left(places, (at, -1))
            if k:
                latest.append((places[k - 1], who))
        return [who for _, who in sorted(latest)]

    def _light_noun(self, i: int, hi: int) -> bool:
        """Whether token ``i`` is a bare noun a light verb takes ("care", "part",
        "action"): a word, no determiner, pronoun, particle or entity's."""
        if i >= hi or i in self.by_token:
            return False
        low = self.toks[i].low
        return (
            _wordlike(low)
            and low not in _DETERMINERS
            and low not in PARTICLES
            and _gender(low) is None
            and low not in ("it", "them", "one", "ones")
            and verb_classes(low) is None
        )

    def _after_that(self, i: int) -> bool:
        """Whether token ``i`` opens a that-clause ("that Bo would like it")."""
        return i > 0 and self.toks[i - 1].low in ("that", "whether")

    # -- verbs ------------------------------------------------------------------------
    def _find_verbs(self) -> list[_Verb]:
        verbs: list[_Verb] = []
        toks = self.toks
        span = longest_phrase()
        # each token as the verb table spells a phrase's words, made once a sentence
        spelled = ["one's" if t.low in _POSSESSIVES or t.low == "one's" else t.low for t in toks]
        i = 0
        while i < len(toks):
            tok = toks[i]
            if i in self.by_token or (tok.text[0].isupper() and i > 0) or not tok.low.isalpha():
                i += 1
                continue
            if self._noun_position(i):
                i += 1
                continue
            found = None
            for n in range(min(span, len(toks) - i, longest_from(spelled[i])), 0, -1):
                hit = verb_classes(" ".join(spelled[i : i + n]))
                if hit is not None:
                    found = (n, hit)
                    break
            if found is None:
                i += 1
                continue
            n, (classes, lemma) = found
            split = self._separated_particle(i) if n == 1 else None
            if split is not None:
                classes, lemma = split
            if tok.low == lemma.split()[0] and not self._takes_base_form(i):
                i += 1
                continue
            negated = self._negated(i)
            verbs.append(_Verb(i, i + n - 1, classes, lemma, negated, self._irrealis(i)))
            i += n
        return verbs

    def _negated(self, i: int) -> bool:
        """Whether a negation comes in the three words before the verb at token ``i``, in
        its own clause ("Bo never saw it"; not "not Ann, but Bo saw it")."""
        for j in range(i - 1, max(-1, i - 4), -1):
            low = self.toks[j].low
            if low in (",", "but"):
                return False
            if low in _NEGATIONS:
                return True
        return False

    def _irrealis(self, i: int) -> bool:
        """Whether the verb at token ``i`` is under a modal or a condition in its clause
        ("so that she could eat it later", "if he moved it"): told as possible, not done."""
        return self._modal(i) is not None

    def _modal(self, i: int) -> str | None:
        """The modal or condition word the verb at token ``i`` is under in its clause: the
        latest one before it, unless a clause's edge comes after it."""
        if self._latest is None:
            self._latest = _latest_marks(self.toks)
        j = i - 1
        if j >= 0 and self.toks[j].low in ("and", "or"):
            j -= 1  # "to find and access it": a verb joined to the one before
        if j < 0:
            return None
        edge, modal = self._latest[j]
        return self.toks[modal].low if modal > edge else None

    def _separated_particle(self, i: int) -> tuple[tuple[str, ...], str] | None:
        """A phrasal verb split by its pronoun object ("picking it up", "threw them away"):
        the phrase's classes, not the bare verb's."""
        toks = self.toks
        if i + 2 >= len(toks) or toks[i + 1].low not in ("it", "them", "him", "her"):
            return None
        if toks[i + 2].low not in PARTICLES:
            return None
        return verb_classes(f"{toks[i].low} {toks[i + 2].low}")

    def _noun_position(self, i: int) -> bool:
        """Whether token ``i`` follows a determiner with no verb between: a noun ("the
        place", "a somewhat devious move", "Ben's dislike")."""
        for j in range(i - 1, max(-1, i - 4), -1):
            tok = self.toks[j]
            if (j in self.by_token and not tok.possessive) or tok.low in _SUBJECTS:
                return False
            if tok.possessive or tok.low in _NOUN_DETERMINERS:
                return True
            if not tok.low.isalpha() or tok.low in ("and", "or", "but"):
                return False
        return False

    def _takes_base_form(self, i: int) -> bool:
        """Whether a verb's bare form at token ``i`` is a verb there: after ``to``, a modal,
        ``and``/``or`` (a second verb), a plural or first/second person subject, or at the
        sentence's start (an imperative)."""
        if i == 0:
            return True
        for j in range(i - 1, max(-1, i - 3), -1):
            low = self.toks[j].low
            if low in _BASE_BEFORE or low in ("they", "we", "i", "you", "he", "she"):
                return True  # after a singular subject, a past tense like "put" or "set"
            if j in self.by_token and self.by_token[j].kind == "character":
                return True
            if low not in _ADVERBISH and not low.endswith("ly"):
                return False
        return False

    def _segment(self, verbs: Sequence[_Verb], k: int) -> tuple[int, int]:
        lo = verbs[k].end + 1
        hi = verbs[k + 1].at if k + 1 < len(verbs) else len(self.toks)
        return lo, hi

    def _subject(self, verbs: Sequence[_Verb], k: int) -> tuple[tuple[str, ...], str | None]:
        """The characters doing verb ``k``, and why that reading is unsure."""
        at = verbs[k].at
        if at > 1 and self.toks[at - 1].low == "to":
            # object control: "led him to move it", "asked Bo to move it"
            m = self.by_token.get(at - 2)
            low = self.toks[at - 2].low
            if m is not None and m.kind == "character" and not m.possessive:
                return m.ids, None
            if low in ("him", "her") and (low != "her" or not self._next_is_noun(at - 2)):
                return self._pronoun_subject(_OBJECT_PRONOUNS[low], at - 2)
        for j in range(at - 1, -1, -1):
            tok = self.toks[j]
            if tok.low in (";",):
                break
            m = self.by_token.get(j)
            if tok.low == "who":
                prev = self.by_token.get(j - 2 if j > 1 and self.toks[j - 1].low == "," else j - 1)
                if prev is not None and prev.kind == "character":
                    return prev.ids, None
            if m is not None and m.kind == "character":
                if m.possessive or (m.first > 0 and self.toks[m.first - 1].low in _PREPOSITIONS):
                    continue
                return m.ids, None
            if tok.low in _SUBJECTS:
                return self._pronoun_subject(tok.low, j)
        # a participle opening the sentence ("Entering the room, Ann ..."): the main
        # clause's subject; a finite verb after a subject the pack does not name ("most
        # people turned up their noses, Ann ...") is that subject's, not the main clause's
        opening = all(
            t.low in _ADVERBISH or t.low.endswith("ly") or t.low in ("having", "being", "after")
            for t in self.toks[:at]
        )
        if not opening:
            return self._inherited()
        for j in range(at + 1, len(self.toks)):
            if self.toks[j].low != ",":
                continue
            for k2 in range(j + 1, min(j + 4, len(self.toks))):
                m = self.by_token.get(k2)
                if m is not None and m.kind == "character" and not m.possessive:
                    return m.ids, None
                if self.toks[k2].low in _SUBJECTS:
                    return self._pronoun_subject(self.toks[k2].low, k2)
            break
        return self._inherited()

    def _inherited(self) -> tuple[tuple[str, ...], str | None]:
        """A clause after the first with no subject of its own shares the one before
        ("He took the plum, and quickly left"): coordination leaves it out."""
        if not self.first_clause and self.state.clause_subject:
            return self.state.clause_subject, None
        return (), "no subject"

    def _pronoun_subject(self, pronoun: str, at: int) -> tuple[tuple[str, ...], str | None]:
        if pronoun == "they":
            for m in self.mentions:
                if m.kind == "character" and len(m.ids) > 1:
                    return m.ids, None
            for subject in reversed(self.state.subjects[-3:]):
                if len(subject) > 1:
                    return subject, None
            if len(self.state.company) > 1:
                return tuple(sorted(self.state.company)), None
            who, why = self._resolve("they", at)
            return ((who,) if who else ()), why
        who, why = self._resolve(pronoun, at)
        return ((who,) if who else ()), why

    # -- reading ----------------------------------------------------------------------
    def read(self) -> list[StoryAction]:
        self._find_mentions()
        self._learn_pronouns()
        verbs = self._find_verbs()
        # ("seen" | "unseen" | "unaware", who), or ("believed", (holder, *who))
        marks: list[tuple[str, tuple[str, ...]]] = []
        subjects: list[tuple[str, ...]] = []
        perceivers: list[str] = []
        believed = self._believed(verbs)
        believers: dict[int, tuple[str, ...]] = {}
        for k, verb in enumerate(verbs):
            who, why = self._subject(verbs, k)
            if "believe" in verb.classes[:1]:
                believers[k] = who
            holder = next((believers[b] for b in believed.get(k, ())), None)
            if holder is not None and who != holder:
                continue  # the believer's view of another's act or feeling, not the story's
            if not who:
                continue
            subjects.append(who)
            self.state.doers.append((self.start + self.toks[verb.at].start, who))
            lo, hi = self._segment(verbs, k)
            if why is None and len(who) == 1 and self._named_subject(verb.at):
                self._learn_bound(who[0], lo, hi)
            for cls in verb.classes:
                done = self._apply(cls, verb, who, why, lo, hi, marks, perceivers)
                if done:
                    break
        self._feeling_nouns(verbs)
        self._negative_perception(marks)
        held = self._unseen_cues(verbs, marks)
        if not any(a.kind in _SPEECH for a in self.actions):
            # what a sentence of speech says is its speaker's word to its hearers, no
            # narrator's statement that all present see ("Ann whispered to Ben that the
            # scarf is in the box" told Cal, out in the garden, where the scarf was)
            self._statements(perceivers)
            self._seen_where_it_is()
        # where a thing is, stated in a sentence that says who did not see ("Behind Ann's
        # back, Ben tucked the scarf into the box." with the tucking not read), is not seen
        # by them either
        blind = tuple(dict.fromkeys(w for kind, who in marks if kind == "unseen" for w in who))
        for i, a in enumerate(self.actions):
            if blind and a.kind == "state":
                unseen = tuple(dict.fromkeys((*a.unseen_by, *blind)))
                self.actions[i] = a.model_copy(update={"unseen_by": unseen})
        self._settle(marks, subjects, held)
        return self.actions

    def _unseen_cues(
        self, verbs: Sequence[_Verb], marks: list[tuple[str, tuple[str, ...]]]
    ) -> list[tuple[str, tuple[str, ...]]]:
        """The cues of not perceiving (:mod:`.unseen`): an act kept from someone ("unseen
        by Bob", "Nobody saw") is an ``unseen`` mark added to ``marks``; a state ("Bob was
        asleep") or its end ("Bob woke") is returned, ``("state" | "ends", who)``, for
        :meth:`_settle` to keep across the sentence and after it."""
        words = [t.low for t in self.toks]
        perceiving = {self.toks[v.at].low for v in verbs if "perceive" in v.classes}
        # "nobody saw": everyone but the clause's doers (every other, if it tells no act)
        doers = {c for a in self.actions if a.kind in _EVENT_KINDS | {"put"} for c in a.actors}
        everyone = tuple(c for c in sorted(set(self.lex.characters.values())) if c not in doers)
        nearest = self._nearest_characters()
        held: list[tuple[str, tuple[str, ...]]] = []
        for cue in unseen.find_cues(words, perceiving.__contains__):
            if cue.role == "everyone":
                who = everyone
            elif cue.role == "after":
                who = self._named_from(cue.at, cue.end + 3)
            else:
                who = nearest(self.toks[cue.at].start)
            if not who:
                continue
            if cue.kind == "event":
                marks.append(("unseen", who))
            else:
                held.append((cue.kind, who))
        # a verb of a state is no perceiving ("Bo looked away": no look at what follows)
        away = {c for kind, who in held if kind == "state" for c in who}
        marks[:] = [m for m in marks if m[0] != "seen" or not set(m[1]) & away]
        return held

    def _named_from(self, lo: int, hi: int) -> tuple[str, ...]:
        """The first character named or meant ("him", "her") at tokens ``lo..hi - 1``."""
        for k in range(lo, min(hi, len(self.toks))):
            m = self.by_token.get(k)
            if m is not None and m.kind == "character":
                return m.ids
            if self.toks[k].low in ("him", "her", "his"):
                return self._who_word(self.toks[k].text, self.toks[k].start)
        return ()

    def _believed(self, verbs: Sequence[_Verb]) -> dict[int, tuple[int, ...]]:
        """The verbs in what a verb of believing holds true ("Believing that Ann hated
        plums, Bo ...", "He assumed she would love it"), from it to the clause's next
        comma, each with the verb of believing."""
        out: dict[int, tuple[int, ...]] = {}  # verb -> the verb of believing it is under
        scope = -1
        believer = -1
        # the commas and semicolons before each token, so that a range is asked in one step
        edges = [0]
        for tok in self.toks:
            edges.append(edges[-1] + (tok.low in (",", ";")))
        for k, verb in enumerate(verbs):
            if edges[verb.at] > edges[min(max(scope, 0), verb.at)]:
                scope = -1
            if scope >= 0:
                out[k] = (believer,)
            elif "believe" in verb.classes[:1] and not verb.negated:
                scope, believer = verb.end + 1, k
        return out

    def placements(self) -> list[StoryAction]:
        """Only the placements the sentence states (a second look at a whole sentence
        whose clauses, read alone, gave nothing)."""
        self._find_mentions()
        self._statements([])
        return self.actions

    def _apply(
        self,
        cls: str,
        verb: _Verb,
        who: tuple[str, ...],
        why: str | None,
        lo: int,
        hi: int,
        marks: list[tuple[str, tuple[str, ...]]],
        perceivers: list[str],
    ) -> bool:
        if cls in ("go", "enter", "leave"):
            return self._motion(cls, verb, who, why, lo, hi)
        if cls in ("put", "take", "discard", "give"):
            return self._object(cls, verb, who, why, lo, hi)
        if cls == "perceive":
            return self._perceive(verb, who, lo, hi, marks, perceivers)
        if cls == "tell":
            return self._tell(verb, who, why, lo, hi)
        if cls in ("like", "dislike"):
            return self._feel(cls, verb, who, why, lo, hi)
        return False

    def _action(self, kind: str, **fields: object) -> StoryAction:
        return StoryAction.model_validate(
            {"kind": kind, "start": self.start, "end": self.end, **fields}
        )

    def _first(self, lo: int, hi: int, kinds: Sequence[str]) -> _Mention | None:
        for k in range(lo, hi):
            m = self.by_token.get(k)
            if m is not None and m.kind in kinds and m.first >= lo:
                return m
        return None

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

    def _perceive(
        self,
        verb: _Verb,
        who: tuple[str, ...],
        lo: int,
        hi: int,
        marks: list[tuple[str, tuple[str, ...]]],
        perceivers: list[str],
    ) -> bool:
        following = [t.low for t in self.toks[lo : min(hi, lo + 3)] if t.low not in (",",)]
        before = verb.at - 2 if verb.at > 0 and self.toks[verb.at - 1].low in _SUBJECTS else -1
        if before >= 0 and self.toks[before].low in ("what", "whatever", "which"):
            return True  # "what he saw": a thing seen, named before; no event
        if verb.lemma == "look" and not (following and following[0] in ("at", "on", "as")):
            return False
        if verb.irrealis and self._modal(verb.at) != "could":
            # what one will see, or would if it came back ("when he finds it"), is no
            # perception; what one could see is ("she could see him hide it")
            return True
        if verb.negated:
            marks.append(("unseen", who))
            return True
        thing = self._first(lo, hi, ("object",))
        nxt = following[0] if following else None
        action_noun = any(t.low in _ACTION_NOUNS for t in self.toks[lo:hi])
        character = self._first(lo, hi, ("character",))
        eventish = (
            nxt is None
            or lo >= hi
            or nxt in _EVENTISH
            or action_noun
            or (character is not None and character.first <= lo + 1)
            or self.toks[lo].low == ","
        )
        if thing is not None and not action_noun and nxt not in ("as", "while", "how"):
            perceivers.extend(who)
            self.looked.append((who, thing.ids[0]))
            return True
        if eventish:
            marks.append(("seen", who))
            return True
        return False

    def _negative_perception(self, marks: list[tuple[str, tuple[str, ...]]]) -> None:
        """The marks of what the sentence says was not seen, and of what was kept from whom.

        What is kept from a character may be another's not seeing ("Unbeknownst to Ann, Bo
        was nowhere in sight", "Little did she know, Bo never saw it", "Ann was unaware
        that Bo had not seen it"): Ann believes Bo saw her act, and he did not — a
        ``believed`` mark, ``(Ann, Bo)``, which :func:`_marked` applies to Ann's acts.
        """
        text = self.text
        nearest = self._nearest_characters()
        for m in _ABSENT.finditer(text):
            who = nearest(m.start())
            if who:
                marks.append(("unseen", who))
        # who is unaware that another did not see ("Ann was unaware that Bo had not seen
        # it"), with the mark to fall back on if the sentence names no one who did not
        unaware: list[tuple[tuple[str, ...], str]] = []
        for m in _UNAWARE.finditer(text):
            if m.group().lower().startswith("unbeknown"):
                continue
            who = nearest(m.start())
            if not who:
                continue
            rest = text[m.end() :]
            that = re.search(r"\bthat\b", rest[:12]) is not None
            fallback = "unaware" if that and _WATCHED.search(rest[:80]) else "unseen"
            if that and _NOT_SEEN.search(rest[:80]):
                unaware.append((who, fallback))
            else:
                marks.append((fallback, who))
        blind = list(dict.fromkeys(marks))  # what the sentence says of others' not seeing
        believed: list[tuple[str, tuple[str, ...]]] = []
        for who, fallback in unaware:
            found = _believed(blind, who)
            believed += found
            if not found:
                marks.append((fallback, who))
        for pattern in (_UNBEKNOWNST, _LITTLE_DID, _BEHIND_BACK, _WITHOUT):
            for m in pattern.finditer(text):
                who = self._who_word(m.group(1), m.start(1))
                if not who:
                    continue
                found = _believed(blind, who) if pattern in (_UNBEKNOWNST, _LITTLE_DID) else []
                if pattern in (_UNBEKNOWNST, _LITTLE_DID) and not found:
                    doer = self._kept_from_doer(m.group(1), who, blind)
                    found = _believed(blind, doer) if doer else []
                if found:
                    believed += found
                    continue
                if pattern is _LITTLE_DID and not _WATCHED.search(text[m.end() : m.end() + 80]):
                    # what one did not know is no perception unless it is another's seeing
                    # ("Little did she know that he meant well")
                    continue
                # kept from its doer, an act is unseen by others; kept from the doer
                # of the act seen ("Unbeknownst to Ann, Bo watched her"), the watching
                marks.append(("unseen", who))
                marks.append(("unaware", who))
        marks.extend(dict.fromkeys(believed))

    def _kept_from_doer(
        self, word: str, who: tuple[str, ...], blind: Sequence[tuple[str, tuple[str, ...]]]
    ) -> tuple[str, ...]:
        """The doer of the act a sentence is about, for a pronoun the reader took for the
        one the sentence says did not see: "Unbeknownst to him, Bo was absent" keeps Bo's
        absence from another, the act's doer, if the pronoun fits it (else none)."""
        pronoun = _gender(word.lower())
        unseen = {c for kind, cs in blind if kind == "unseen" for c in cs}
        if pronoun not in ("he", "she") or not set(who) <= unseen:
            return ()
        if self.events:
            latest: StoryAction | None = self.actions[self.events[-1]]
        elif self.state.last_event is not None:
            latest = self.state.out[self.state.last_event]
        else:
            latest = None
        if latest is None or len(latest.actors) != 1 or latest.actors[0] in who:
            return ()
        doer = latest.actors[0]
        return (doer,) if self._pronoun_of(doer) in (pronoun, None) else ()

    def _who_word(self, word: str, offset: int) -> tuple[str, ...]:
        low = word.lower().replace("’", "'")
        base = low[:-2] if low.endswith("'s") else low
        if base in self.lex.characters:
            return (self.lex.characters[base],)
        pronoun = _POSSESSIVES.get(base) or _OBJECT_PRONOUNS.get(base) or _SUBJECTS.get(base)
        if pronoun in ("he", "she"):
            at = bisect.bisect_left([t.start for t in self.toks], offset)
            at = at if at < len(self.toks) else 0
            who, _ = self._resolve(pronoun, at)
            return (who,) if who else ()
        return ()

    def _nearest_characters(self) -> Callable[[int], tuple[str, ...]]:
        """For an offset in the sentence, the character named or meant ("he", "she") last
        before it: one pass over the tokens, each pronoun resolved once, then a bisection
        per offset (a rescan per offset made a long sentence cubic)."""
        best: tuple[str, ...] = ()
        after: list[tuple[str, ...]] = []  # the nearest character up to and with token i
        for i, tok in enumerate(self.toks):
            m = self.by_token.get(i)
            if m is not None and m.kind == "character" and not m.possessive:
                best = m.ids
            elif tok.low in ("he", "she"):
                who, _ = self._resolve(tok.low, i)
                best = (who,) if who else best
            after.append(best)
        starts = [t.start for t in self.toks]

        def nearest(offset: int) -> tuple[str, ...]:
            before = bisect.bisect_left(starts, offset)  # the tokens that start before it
            return after[before - 1] if before else ()

        return nearest

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

    def _keep_blind(
        self, subjects: Sequence[tuple[str, ...]], held: Sequence[tuple[str, tuple[str, ...]]]
    ) -> tuple[str, ...]:
        """Bring the reader's ``blind`` up to date with a clause: its states of not
        perceiving begin, and end for whoever acts in it or whose state it ends; the
        characters whose state it tells, returned."""
        state = self.state
        states = tuple(dict.fromkeys(c for kind, who in held if kind == "state" for c in who))
        ended = [c for kind, who in held if kind == "ends" for c in who]
        for who in [*(c for s in subjects for c in s), *ended]:
            if who not in states:
                state.blind.pop(who, None)
        for who in states:
            state.blind[who] = None
        return states

    def _retold(self) -> None:
        """An object event with no destination that repeats the latest one's doer and
        object ("Ben watched as Ann moved the key") tells that event again: it is dropped,
        and what the sentence says of perception applies to the event it repeats."""
        state = self.state
        if state.last_event is None:
            return
        latest = state.out[state.last_event]
        for i in list(self.events):
            action = self.actions[i]
            same = (action.actors, action.obj) == (latest.actors, latest.obj)
            # a move with no destination right after one that had it in a container is
            # that move told again, whoever the reader took its doer to be ("Ann put the
            # key in the box. Bo wondered why she had moved it.")
            retold = (
                id(action) in self.undirected
                and latest.kind in ("move", "put")
                and latest.obj == action.obj
            )
            if action.kind == "take" and action.unsure is not None and (same or retold):
                self.actions[i] = StoryAction(kind="narration", start=self.start, end=self.end)
                self.events.remove(i)
        self.actions = [a for a in self.actions if a.kind != "narration"]
        kept = [a for a in self.actions]
        self.events = [kept.index(a) for a in kept if a.kind in _EVENT_KINDS]

    # long (over 60 lines): the marks apply in order, each reading what the ones before
    # set in the reader's state; one pass keeps that order visible
    def _settle(
        self,
        marks: list[tuple[str, tuple[str, ...]]],
        subjects: list[tuple[str, ...]],
        held: Sequence[tuple[str, tuple[str, ...]]] = (),
    ) -> None:
        """Apply the sentence's perception marks and keep the reader's state."""
        state = self.state
        everyone = sorted(set(self.lex.characters.values()))
        self._retold()
        states = self._keep_blind(subjects, held)
        for subject in subjects:
            if len(subject) > 1:
                state.company |= set(subject)
        # an event whose doer the reader cannot place is seen by the company it keeps
        for i in self.events:
            action = self.actions[i]
            if state.where.get(action.actor):
                continue
            others = tuple(sorted(state.company - {action.actor}))
            if others and action.actor in state.company:
                self.actions[i] = action.model_copy(update={"seen_by": others})
        marks = _distinct(marks)
        unseen_now = {w for kind, who in marks if kind == "unseen" for w in who}
        seen_now = {w for kind, who in marks if kind == "seen" for w in who}
        blind_now = (set(state.blind) | unseen_now) - seen_now - {c for s in subjects for c in s}
        if blind_now:
            state.unseen_at.append((self.start, self.end, tuple(sorted(blind_now))))
        if self.events:
            # who is not perceiving now first, so that what the clause says wins
            blind = (("unseen", tuple(state.blind)),) if state.blind else ()
            for mark in _distinct([*blind, *state.pending, *marks]):
                for i in self.events:
                    self.actions[i] = _marked(self.actions[i], mark, everyone)
            state.pending = []
            state.last_event = len(state.out) + self.events[-1]
            done = [len(state.out) + i for i in self.events]
            if state.events_sentence == state.sentence:
                state.last_events.extend(done)
            else:
                state.last_events, state.events_sentence = done, state.sentence
        else:
            if states and state.events_sentence == state.sentence:
                # a state told after its sentence's act ("Ann took it while Bo slept")
                for index in state.last_events:
                    if index < len(state.out):
                        state.out[index] = _marked(state.out[index], ("unseen", states), everyone)
            # a perception with no event before it is about the next sentence's ("Ben
            # watched. Ann moved the key."), not one told later still
            state.pending = []
            if marks and state.last_event is not None:
                # what a later sentence says of perception is said of the latest
                # sentence's act, each of the verbs that told it
                latest = [i for i in state.last_events if i < len(state.out)]
                for index in latest if state.last_event in latest else [state.last_event]:
                    for mark in marks:
                        state.out[index] = _marked(state.out[index], mark, everyone)
            elif marks:
                # one who watches and then leaves ("saw it, and left") sees nothing later
                gone = {c for a in self.actions if a.kind == "exit" for c in a.actors}
                state.pending = [m for m in marks if m[0] != "seen" or not set(m[1]) & gone]
        first = next(
            (
                m.ids
                for m in self.mentions
                if m.kind == "character"
                and not m.possessive
                and (m.first == 0 or self.toks[m.first - 1].low not in _PREPOSITIONS)
            ),
            None,
        )
        lead = self._lead_end()
        # the main clause's subject, past a leading adjunct ("Realizing that Bo saw it,
        # Ann's face fell": Ann), is the centre the next sentence continues
        main = next(
            (
                m.ids
                for m in self.mentions
                if m.kind == "character"
                and m.first >= lead
                and (not m.possessive or m.first == lead)
                and (m.first == 0 or self.toks[m.first - 1].low not in _PREPOSITIONS)
            ),
            first,
        )
        if lead < len(self.toks) and self.toks[lead].low in ("he", "she"):
            # "Knowing that Bo liked it, he ...": the pronoun is the main clause's subject
            who, _ = self._resolve(self.toks[lead].low, lead)
            main = (who,) if who else main
        if first is not None and not subjects:
            state.subjects.append(first)
        if subjects:
            state.subjects.extend(subjects)
        state.named_now = tuple(
            dict.fromkeys(
                [
                    *state.named_now,
                    *(i for m in self.mentions if m.kind == "character" for i in m.ids),
                ]
            )
        )
        if subjects or first is not None:
            state.clause_subject = subjects[0] if subjects else (first or ())
        elif self.first_clause:
            state.clause_subject = ()
        if subjects or main is not None:
            # the main clause's subject: the first character named, not after a preposition
            state.centre = main if main is not None else subjects[0]
        for m in self.mentions:
            if m.kind == "character":
                _mention(state, m.ids)
            elif m.kind == "object" and self._is_container(m.ids[0]):
                state.last_box = m.ids[0]
            elif m.kind == "object" and not self.actions:
                state.last_object = m.ids[0]  # "it" next is the thing last named


def _latest_marks(toks: Sequence[_Tok]) -> list[tuple[int, int]]:
    """For each token, the index of the latest clause edge and of the latest modal or
    condition word at or before it (-1: none), in one pass."""
    edge = modal = -1
    out = []
    for j, tok in enumerate(toks):
        if tok.low in _CLAUSE_EDGE:
            edge = j
        elif tok.low in _MODALS:
            modal = j
        out.append((edge, modal))
    return out
