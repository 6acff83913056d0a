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
  watchers (``unaware_of``).
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

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from fabula.agents.memory_builder.extract import parse_sentence
from fabula.agents.memory_builder.verbs import PARTICLES, longest_phrase, verb_classes
from fabula.memory.actions import Clause, StoryAction
from fabula.memory.index.general import general_table
from fabula.memory.index.terms import terms
from fabula.memory.records import Entity, slug
from fabula.memory.text import split_clauses, split_sentences

__all__ = ["read_prose"]

_INTERPUNCT = re.compile(r"[·‧・•]")
_WORD = re.compile(r"[A-Za-z][A-Za-z'’-]*|[,;:—–()]")
_DETERMINERS = frozenset(
    {"the", "a", "an", "his", "her", "their", "its", "my", "your", "our", "this", "that"}
    | {"these", "those", "some", "any", "every", "each", "no", "one's", "own", "of", "to"}
)
_DEFINITE = frozenset({"the", "this", "that", "these", "those", "his", "her", "their", "its"})
_POSSESSIVES = {"his": "he", "her": "she", "their": "they", "its": "it"}
_SUBJECTS = {"he": "he", "she": "she", "they": "they"}
_REFLEXIVES = {"himself": "he", "herself": "she", "themselves": "they", "themself": "they"}
_OBJECT_PRONOUNS = {"him": "he", "her": "she", "them": "they", "it": "it"}
_NEGATIONS = frozenset(
    {"not", "never", "didn't", "don't", "doesn't", "wasn't", "weren't", "couldn't", "failed"}
    | {"hadn't", "wouldn't", "without", "nor", "neither"}
)
_TO = frozenset(
    {"to", "into", "towards", "toward", "onto", "in", "inside", "on", "under", "at", "atop"}
)
_LOCATIVE = frozenset(
    {"in", "inside", "into", "within", "on", "onto", "atop", "under", "beneath", "at"}
)
_AWAY = frozenset({"out", "from"})
# what a perception verb sees when it sees an event rather than a thing
_EVENTISH = frozenset(
    {"as", "while", "when", "how", "what", "this", "that", "it", "him", "her", "them"}
    | {"his", "their", "everything", "the", "silently", "quietly", "closely", "intently"}
)
_ACTION_NOUNS = frozenset(
    {"action", "actions", "move", "gesture", "act", "deed", "scene", "exchange", "whole"}
    | {"transfer", "switch", "maneuver", "manoeuvre", "relocation", "behavior", "behaviour"}
)
_UNAWARE = re.compile(r"\b(?:unaware|oblivious|ignorant|unbeknown(?:st)?)\b", re.I)
_WATCHED = re.compile(
    r"\b(?:watch\w*|notic\w*|unnoticed|seen|saw|observ\w*|eyes?|witness\w*|gaze|spotted)\b",
    re.I,
)
_ABSENT = re.compile(
    r"\b(?:was|were)\s+(?:absent|away|not\s+there|not\s+around|nowhere|elsewhere|gone|busy|"
    r"distracted|preoccupied|not\s+looking|occupied)\b|\bhad\s+(?:already\s+)?left\b",
    re.I,
)
_BEHIND_BACK = re.compile(r"\bbehind\s+(\w+(?:'s)?)\s+back\b", re.I)
_UNBEKNOWNST = re.compile(r"\bunbeknown(?:st)?\s+to\s+(\w+)", re.I)
_WITHOUT = re.compile(
    r"\bwithout\s+(\w+)\s+(?:noticing|knowing|seeing|realizing|realising|"
    r"being\s+aware|suspecting)",
    re.I,
)


@dataclass
class _Thing:
    id: str
    kind: str
    words: tuple[str, ...]
    owner: str | None
    container: bool


@dataclass
class _Tok:
    text: str
    low: str
    start: int
    end: int
    possessive: bool = False


@dataclass
class _Mention:
    """An entity (or entities) named at tokens ``first..last``."""

    ids: tuple[str, ...]
    kind: str  # character, object, place
    first: int
    last: int
    pronoun: str | None = None
    unsure: str | None = None
    possessive: bool = False
    of_object: str | None = None  # "the bottle of peas": the contents named


@dataclass
class _Verb:
    at: int
    end: int  # the last token of the phrase
    classes: tuple[str, ...]
    lemma: str
    negated: bool
    irrealis: bool = False  # under a modal or a condition: what may happen, not what did


@dataclass
class _State:
    """What the reader holds across one text's sentences."""

    pronoun: dict[str, dict[str, int]] = field(default_factory=dict)
    subjects: list[tuple[str, ...]] = field(default_factory=list)
    mentioned: list[str] = field(default_factory=list)
    last_object: str | None = None
    inside: dict[str, str] = field(default_factory=dict)  # container -> the object it holds
    holding: dict[str, str] = field(default_factory=dict)  # character -> what it took
    last_objects: tuple[str, ...] = ()
    where: dict[str, str | None] = field(default_factory=dict)
    company: set[str] = field(default_factory=set)
    located: set[str] = field(default_factory=set)
    at: dict[str, str] = field(default_factory=dict)  # object -> where the reader has it
    out: list[StoryAction] = field(default_factory=list)
    last_event: int | None = None  # index in ``out`` of the latest object event
    pending: list[tuple[str, tuple[str, ...]]] = field(default_factory=list)
    last_box: str | None = None  # the container the latest sentence that named one named
    # the characters the previous sentence named, and its first subject (its main clause's)
    named_before: tuple[str, ...] = ()
    placed_by: dict[str, str | None] = field(default_factory=dict)  # object -> who put it
    named_now: tuple[str, ...] = ()  # the characters named so far in this sentence
    clause_subject: tuple[str, ...] = ()  # the latest clause's first subject
    centre: tuple[str, ...] | None = None


def _singular(word: str) -> str:
    word = word.lower().replace("’", "'")
    if word.endswith("'s"):
        word = word[:-2]
    if len(word) > 4 and word.endswith("ves"):
        return word[:-3] + "f"
    if len(word) > 3 and word.endswith("ies"):
        return word[:-3] + "y"
    if len(word) > 3 and word.endswith(("ches", "shes", "sses", "xes", "oes")):
        return word[:-2]
    if len(word) > 2 and word.endswith("s") and not word.endswith(("ss", "us", "is")):
        return word[:-1]
    return word


class _Lexicon:
    """The story's entities as the words a text names them with."""

    def __init__(self, entities: Mapping[str, Entity]) -> None:
        self.characters: dict[str, str] = {}
        self.names: dict[str, str] = {}  # id -> name as written
        first: dict[str, list[str]] = {}
        self.things: dict[str, list[_Thing]] = {}
        for sid, entity in sorted(entities.items()):
            if entity.kind == "group":
                continue
            if entity.kind == "character":
                # a name's parts may be joined by an interpunct ("Lacia·Eldridge"), which
                # the text's words are split at as at a space
                spelled = _INTERPUNCT.sub(" ", entity.name).lower()
                self.characters[spelled] = sid
                head = spelled.split()[0]
                first.setdefault(head, []).append(sid)
                continue
            words, owner = self._words(entity.name, entities)
            if not words:
                continue
            thing = _Thing(sid, entity.kind, words, owner, entity.is_container)
            self.things.setdefault(words[-1], []).append(thing)
        for head, ids in first.items():
            if len(ids) == 1:
                self.characters.setdefault(head, ids[0])
        self.general = self._general()

    def _general(self) -> dict[str, _Thing]:
        """A general noun's stem -> the one plain object it is a kind of (WordNet's
        hypernyms: "fruit" for a grapefruit, "garment" for a skirt); a noun that would fit
        two of the story's things, or that names one itself, fits none. Containers are
        left out: their general words ("room", "case") name places and cases too often."""
        table = general_table()
        found: dict[str, list[_Thing]] = {}
        every = [t for ts in self.things.values() for t in ts]
        for thing in every:
            for general in (g for t in terms(thing.words[-1]) for g in table.get(t, ())):
                if "_" not in general:
                    found.setdefault(general, []).append(thing)
        own = {t for thing in every for w in thing.words for t in terms(w)}
        return {
            g: ts[0]
            for g, ts in found.items()
            if len(ts) == 1 and g not in own and ts[0].kind == "object" and not ts[0].container
        }

    def _words(
        self, name: str, entities: Mapping[str, Entity]
    ) -> tuple[tuple[str, ...], str | None]:
        owner = None
        words = []
        for raw in re.findall(r"[A-Za-z][A-Za-z'’-]*", name.replace("_", " ")):
            low = raw.lower().replace("’", "'")
            if low.endswith("'s"):
                sid = slug(raw[:-2]) if raw[:-2] else ""
                if sid in entities and entities[sid].kind == "character":
                    owner = sid
                    continue
            if low in _DETERMINERS:
                continue
            words.append(_singular(low))
        return tuple(words), owner


def read_prose(text: str, entities: Mapping[str, Entity]) -> list[StoryAction]:
    """``text`` as story actions anchored on ``entities`` (a :data:`.builder.Reader`)."""
    lexicon = _Lexicon(entities)
    state = _State()
    for start, end in split_sentences(text):
        sentence = text[start:end]
        controlled = parse_sentence(sentence, start)
        if controlled.kind != "narration" and _own_names(controlled, entities):
            _follow(state, controlled, entities)
            state.out.append(controlled)
            continue
        before = len(state.out)
        clauses = split_clauses(text, start, end)
        for k, (a, b) in enumerate(clauses if len(clauses) > 1 else [(start, end)]):
            # each clause read alone, so that a clause's place phrase never attaches to
            # another clause's verb ("Ann took the key, and Bo waited in the hall")
            state.out.extend(_Sentence(text[a:b], a, lexicon, state, first=k == 0).read())
        state.named_before = state.named_now
        state.named_now = ()
        if len(state.out) > before:
            continue
        if controlled.kind != "narration":
            _follow(state, controlled, entities)
            state.out.append(controlled)
            continue
        state.out.append(StoryAction(kind="narration", start=start, end=end))
    return state.out


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
        state.mentioned.extend(ids)
    if action.obj:
        state.last_object = slug(action.obj)
    if action.kind in ("move", "put", "take", "give", "drop"):
        state.last_event = len(state.out)
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
        self.toks = [
            _Tok(
                m.group(),
                m.group().lower().replace("’", "'"),
                m.start(),
                m.end(),
                m.group().lower().replace("’", "'").endswith("'s"),
            )
            for m in _WORD.finditer(text)
        ]
        self.mentions: list[_Mention] = []
        self.by_token: dict[int, _Mention] = {}
        self.unsure: str | None = None
        self.actions: list[StoryAction] = []
        self.events: list[int] = []  # indexes in self.actions of object events
        self.known_before = set(state.located)  # objects placed before this sentence

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
            if inner is not None and inner.id != thing.id and not inner.container:
                mention.of_object = inner.id
                mention.last = self._token_of(inner, i + 2)
        return mention

    def _general_at(self, i: int) -> _Mention | None:
        """A definite general noun for the one object it is a kind of ("the fruit", "this
        tasty vegetable", "her beloved garments"): a determiner or owner before it, at most
        two modifiers between."""
        tok = self.toks[i]
        found = [self.lex.general[t] for t in terms(_singular(tok.low)) if t in self.lex.general]
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
        self.mentions.append(mention)
        for k in range(mention.first, mention.last + 1):
            self.by_token[k] = mention

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
                and (joiner == "and" or (joiner == "," and len(nxt.ids) > 1))
            ):
                nxt.ids = (*m.ids, *nxt.ids)
                nxt.first = m.first
                continue
            merged.append(m)
        merged.reverse()
        self.mentions = merged
        self.by_token = {}
        for m in merged:
            for k in range(m.first, m.last + 1):
                self.by_token[k] = m

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
        elif not named and len(self.state.named_now) == 1:
            named = set(self.state.named_now)  # a later clause of a sentence naming one
        elif len(named) == 1:
            after = min(m.first for m in self.mentions if m.kind == "character")
        if len(named) != 1:
            return
        [who] = named
        seen = {
            _SUBJECTS.get(t.low)
            or _OBJECT_PRONOUNS.get(t.low)
            or _POSSESSIVES.get(t.low)
            or _REFLEXIVES.get(t.low)
            for t in self.toks[after:]
        } & {"he", "she"}
        found = [p for p in seen if p is not None]
        if adjacent and any(self._pronoun_of(c) in found for c in self.lex.characters.values()):
            return  # by adjacency only a pronoun no character is known by yet
        if len(found) == 1:
            counts = self.state.pronoun.setdefault(who, {})
            counts[found[0]] = counts.get(found[0], 0) + 1

    def _pronoun_of(self, who: str) -> str | None:
        counts = self.state.pronoun.get(who)
        if not counts:
            return None
        return max(counts, key=lambda p: counts[p])  # a tie: the one learnt first

    def _resolve(self, pronoun: str, at: int) -> tuple[str | None, str | None]:
        """The character ``pronoun`` at token ``at`` stands for, and why it is unsure."""
        # the characters named earlier in this sentence, nearest first, then the story's
        before = [i for m in self.mentions if m.kind == "character" and m.last < at for i in m.ids]
        recent = list(reversed(before))
        for subject in reversed(self.state.subjects[-3:]):
            recent += [s for s in subject if s not in recent]
        recent += [s for s in reversed(self.state.mentioned) if s not in recent]
        recent = list(dict.fromkeys(recent))
        if not recent:
            return None, f"no one for {pronoun!r} to stand for"
        fits = [c for c in recent if self._pronoun_of(c) in (pronoun, None)]
        known = [c for c in fits if self._pronoun_of(c) == pronoun]
        if len(known) == 1:
            return known[0], None
        if not fits:
            return recent[0], f"{pronoun!r}: no character known by it"
        centre = self.state.centre
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

    # -- verbs ------------------------------------------------------------------------
    def _find_verbs(self) -> list[_Verb]:
        verbs: list[_Verb] = []
        toks = self.toks
        span = longest_phrase()
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
            for n in range(min(span, len(toks) - i), 0, -1):
                words = [
                    "one's" if t.low in _POSSESSIVES or t.low == "one's" else t.low
                    for t in toks[i : i + n]
                ]
                hit = verb_classes(" ".join(words))
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
            negated = any(t.low in _NEGATIONS for t in toks[max(0, i - 3) : i]) and not any(
                t.low in (",", "but") for t in toks[max(0, i - 3) : i]
            )
            verbs.append(_Verb(i, i + n - 1, classes, lemma, negated, self._irrealis(i)))
            i += n
        return verbs

    def _irrealis(self, i: int) -> bool:
        """Whether the verb at token ``i`` is under a modal or a condition in its clause
        ("so that she could eat it later", "if he moved it"): told as possible, not done."""
        for j in range(i - 1, -1, -1):
            low = self.toks[j].low
            if low in ("and", "or") and j == i - 1:
                continue  # "to find and access it": a verb joined to the one before
            if low in _CLAUSE_EDGE:
                return False
            if low in _MODALS:
                return True
        return False

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
            if tok.possessive or tok.low in _DETERMINERS - {"to", "that", "her", "of", "no"}:
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
        marks: list[tuple[str, tuple[str, ...]]] = []  # ("seen" | "unseen" | "unaware", who)
        subjects: list[tuple[str, ...]] = []
        perceivers: list[str] = []
        for k, verb in enumerate(verbs):
            who, why = self._subject(verbs, k)
            if not who:
                continue
            subjects.append(who)
            lo, hi = self._segment(verbs, k)
            for cls in verb.classes:
                done = self._apply(cls, verb, who, why, lo, hi, marks, perceivers)
                if done:
                    break
        self._negative_perception(marks)
        self._statements(perceivers)
        self._settle(marks, subjects)
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
        place = self._first(lo, hi, ("place",))
        box = self._first(lo, hi, ("object",))
        if place is not None and box is not None and box.first < place.first:
            return False  # something else moves to the place
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
                before = self._object_before(k)
                if before is not None:
                    return before, k, None
                if self.state.last_object is None:
                    return None, k, None
                return self.state.last_object, k, None
        return None, hi, None

    def _object_before(self, k: int) -> str | None:
        """What ``it`` at token ``k`` stands for when this sentence named an object before
        it ("reached for the plum, picking it up"): the nearest, or what a container
        named there holds."""
        for j in range(k - 1, -1, -1):
            m = self.by_token.get(j)
            if m is not None and m.kind == "object":
                if m.of_object is not None:
                    return m.of_object
                return self.state.inside.get(m.ids[0], m.ids[0])
        return None

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

    def _object(
        self, cls: str, verb: _Verb, who: tuple[str, ...], why: str | None, lo: int, hi: int
    ) -> bool:
        if verb.negated or verb.irrealis or len(who) != 1:
            return False
        if lo < hi and self.toks[lo].low in _TO | {"towards", "toward", "over", "across"}:
            return False  # no object: the subject itself moves ("moved towards the bin")
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
            cls != "take" or verb.lemma.split()[-1] in ("away", "off")
        ):
            # its own doer already put it somewhere: an act with no destination on it
            # ("relocated it", "disposed of it", "whisked it away") tells that act again
            return True
        elif cls == "take":
            self._event(self._action("take", actors=who, obj=obj, unsure=unsure))
        elif verb.lemma == "leave":
            return False  # left where it is
        else:
            particle = next((t.low for t in self.toks[at + 1 : hi] if t.low in PARTICLES), None)
            where = f" ({verb.lemma} {particle})" if particle else f" ({verb.lemma})"
            self._event(
                self._action(
                    "take",
                    actors=who,
                    obj=obj,
                    unsure=unsure or f"a move with no destination{where}",
                )
            )
        self.state.last_object = obj
        self.state.located.add(obj)
        last = self.actions[self.events[-1]] if self.events else None
        if last is not None and last.obj == obj:
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
        if verb.lemma == "look" and not (following and following[0] in ("at", "on", "as")):
            return False
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
            return True
        if eventish:
            marks.append(("seen", who))
            return True
        return False

    def _negative_perception(self, marks: list[tuple[str, tuple[str, ...]]]) -> None:
        text = self.text
        for pattern in (_UNBEKNOWNST, _BEHIND_BACK, _WITHOUT):
            for m in pattern.finditer(text):
                who = self._who_word(m.group(1), m.start(1))
                if who:
                    marks.append(("unseen", who))
        for m in _ABSENT.finditer(text):
            who = self._nearest_before(m.start())
            if who:
                marks.append(("unseen", who))
        for m in _UNAWARE.finditer(text):
            if m.group().lower().startswith("unbeknown"):
                continue
            who = self._nearest_before(m.start())
            if not who:
                continue
            rest = text[m.end() :]
            if _WATCHED.search(rest[:80]) and re.search(r"\bthat\b", rest[:12]):
                marks.append(("unaware", who))
            else:
                marks.append(("unseen", who))

    def _who_word(self, word: str, offset: int) -> tuple[str, ...]:
        low = word.lower().replace("’", "'")
        base = low[:-2] if low.endswith("'s") else low
        if base in self.lex.characters:
            return (self.lex.characters[base],)
        pronoun = _POSSESSIVES.get(base) or _OBJECT_PRONOUNS.get(base) or _SUBJECTS.get(base)
        if pronoun in ("he", "she"):
            at = next((i for i, t in enumerate(self.toks) if t.start >= offset), 0)
            who, _ = self._resolve(pronoun, at)
            return (who,) if who else ()
        return ()

    def _nearest_before(self, offset: int) -> tuple[str, ...]:
        best: tuple[str, ...] = ()
        for i, tok in enumerate(self.toks):
            if tok.start >= offset:
                break
            m = self.by_token.get(i)
            if m is not None and m.kind == "character" and not m.possessive:
                best = m.ids
            elif tok.low in ("he", "she"):
                who, _ = self._resolve(tok.low, i)
                best = (who,) if who else best
        return best

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
            near = [o for o in plain if abs(o.first - box.first) <= 12]
            if len(near) == 1 and not any(a.obj == near[0].ids[0] for a in self.actions):
                self._state((near[0].ids[0], box.ids[0]), perceivers)
        for box in containers:
            after = " ".join(t.low for t in self.toks[box.last + 1 : box.last + 4])
            if _HOLDS.match(after):
                inner = [o for o in plain if box.last < o.first <= box.last + 8]
                if inner:
                    self._state((inner[0].ids[0], box.ids[0]), perceivers)
        box_id = self.state.last_box
        if containers or box_id is None or len(plain) != 1 or self.actions:
            return
        thing = plain[0].ids[0]
        if thing in self.state.located:
            return
        words = [t.low for t in self.toks]
        bridged = any(w in ("inside", "within", "therein", "there") for w in words)
        for k, w in enumerate(words[:-1]):
            if w in ("it", "which") and _HOLDS.match(" ".join(words[k + 1 : k + 3])):
                bridged = True
        if bridged:
            self._state((thing, box_id), perceivers)

    def _locative_before(self, at: int) -> bool:
        """Whether a locative preposition comes before token ``at`` with at most three
        modifiers between ("in the bucket", "inside a small wooden box")."""
        for j in range(at - 1, max(-1, at - 5), -1):
            tok = self.toks[j]
            if tok.low in _LOCATIVE:
                return True
            if j in self.by_token or not tok.low.isalpha() or tok.low in ("and", "or"):
                return False
        return False

    def _is_container(self, sid: str) -> bool:
        return any(t.id == sid and t.container for ts in self.lex.things.values() for t in ts)

    def _state(self, placed: tuple[str, str], perceivers: list[str]) -> None:
        obj, box = placed
        if self.state.at.get(obj) == box:
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
            if (
                action.kind == "take"
                and action.unsure is not None
                and (action.actors, action.obj) == (latest.actors, latest.obj)
            ):
                self.actions[i] = StoryAction(kind="narration", start=self.start, end=self.end)
                self.events.remove(i)
        self.actions = [a for a in self.actions if a.kind != "narration"]
        kept = [a for a in self.actions]
        self.events = [kept.index(a) for a in kept if a.kind in _EVENT_KINDS]

    def _settle(
        self, marks: list[tuple[str, tuple[str, ...]]], subjects: list[tuple[str, ...]]
    ) -> None:
        """Apply the sentence's perception marks and keep the reader's state."""
        state = self.state
        everyone = sorted(set(self.lex.characters.values()))
        self._retold()
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
        if self.events:
            for mark in [*state.pending, *marks]:
                for i in self.events:
                    self.actions[i] = _marked(self.actions[i], mark, everyone)
            state.pending = []
            state.last_event = len(state.out) + self.events[-1]
        else:
            # a perception with no event before it is about the next sentence's ("Ben
            # watched. Ann moved the key."), not one told later still
            state.pending = []
            if marks and state.last_event is not None:
                for mark in marks:
                    state.out[state.last_event] = _marked(
                        state.out[state.last_event], mark, everyone
                    )
            elif marks:
                state.pending = list(marks)
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
        if subjects or first is not None:
            # the main clause's subject: the first character named, not after a preposition
            state.centre = first if first is not None else subjects[0]
        for m in self.mentions:
            if m.kind == "character":
                state.mentioned.extend(m.ids)
            elif m.kind == "object" and self._is_container(m.ids[0]):
                state.last_box = m.ids[0]
            elif m.kind == "object" and not self.actions:
                state.last_object = m.ids[0]  # "it" next is the thing last named


def _marked(
    action: StoryAction, mark: tuple[str, tuple[str, ...]], everyone: Sequence[str]
) -> StoryAction:
    kind, who = mark
    if kind == "seen":
        seen = tuple(dict.fromkeys((*action.seen_by, *who)))
        unseen = tuple(u for u in action.unseen_by if u not in who)
        return action.model_copy(update={"seen_by": seen, "unseen_by": unseen})
    if kind == "unseen":
        if action.actors and set(who) <= set(action.actors):
            return action
        seen = tuple(s for s in action.seen_by if s not in who)
        unseen = tuple(dict.fromkeys((*action.unseen_by, *who)))
        return action.model_copy(update={"seen_by": seen, "unseen_by": unseen})
    # the doer did not know it was watched: every other perceiver was covert
    if action.actors and set(who) & set(action.actors):
        others = tuple(c for c in everyone if c not in action.actors)
        return action.model_copy(update={"unaware_of": others})
    return action


_EVENT_KINDS = frozenset({"move", "take", "give"})
_HOLDS = re.compile(
    r"(?:held|holds|holding|contained|contains|containing|filled with|full of|housed|housing)\b"
)
_BASE_BEFORE = frozenset(
    {"to", "would", "could", "can", "will", "should", "might", "must", "may", "shall", "did"}
    | {"didn't", "couldn't", "wouldn't", "won't", "can't", "cannot", "and", "or", "not"}
    | {"don't", "doesn't", "let", "help", "helped", "made", "make", "watch", "watched"}
)
_ADVERBISH = frozenset({"not", "also", "then", "just", "quickly", "never", "even", "soon"})
_MODALS = frozenset(
    {"would", "could", "might", "should", "may", "will", "can", "shall", "if", "unless"}
)
_CLAUSE_EDGE = frozenset({",", ";", ":", "—", "–", "(", ")", "and", "but", "so", "then"})
_OBLIQUE = frozenset(
    {"for", "towards", "toward", "about", "at", "with", "against", "upon", "across", "through"}
    | {"into", "onto", "to", "in", "on", "under", "inside", "behind", "beside", "near", "by"}
    | {"like", "than", "without", "despite", "toward", "regarding", "concerning"}
)
_PREPOSITIONS = frozenset(
    {"to", "of", "at", "with", "for", "from", "by", "about", "towards", "toward", "upon", "on"}
)
