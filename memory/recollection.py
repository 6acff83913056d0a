"""What a witness remembers of an event: text it saw told, or the event itself, never more.

A character's first-person memory of an event reaches its prompt, so it may hold nothing
the character did not witness. An event's span comes from a memory-builder — a model may
give a whole sentence, or the whole passage — so the span is never quoted as it is:

1. The span is snapped to the sentence it touches; a span over several sentences is never
   quoted from (which of them tells the event is not known: one that names only the
   event's subjects may tell a deed the memory-builder missed, which a witness of this
   event did not witness), only rule 3 may give its words. A sentence is quoted when it is
   the one sentence that is *about* the event (it names everything the event is about: who
   did it, to what, where) and *safe* for its witnesses: every event whose span touches it was
   witnessed by all of them, and every entity it names is one of those events' referents
   (actor, participants, place, what was stated, witnesses; the words of an utterance
   are what its hearers heard) — so text no event accounts for ("…, and Mara slipped the
   key into her pocket" that no action was read from) is never quoted.
2. Failing that, the same test runs on the sentence's clauses (cut at ``;``, ``, and``,
   ``, while`` …): a sentence mixing a seen and an unseen event gives each witness only
   the clause it saw. A unit (of one clause or several) is quoted only if each of its
   clauses tells one of the events read from it, each clause an action of its own that
   accounts for everything it names (a clause that names the same people and things as
   another action, or as several actions and their witnesses together, does not count),
   so a deed the memory-builder missed is never quoted, alone or along.
3. An utterance's hearers heard its words: when no one sentence or clause tells it whole
   (the words run over several sentences, or the speaker is named apart from them), they
   remember, on a script line ("Ann: The key is gone. Someone took it."), the span itself
   (quotes inside it are part of the line: a title, words retold), else the words its
   span quotes (``Ben asked: "Where were you last night?"``) — each part only when every
   event whose span touches it was witnessed by all of them.
4. Failing that (no such unit, or several that could each be it), the memory is rendered
   from the typed event ("Leo left the study."), which holds exactly what its witnesses
   witnessed.

Each witness remembers what *it* witnessed: the test "every event touching the unit was
witnessed by all of them" is run for the event's witnesses together (the shared text, safe
for every one of them: what the episode index keeps) and for each witness alone. Leo, who
saw both halves of "Leo went to the hallway." (he left the study and entered the hallway),
keeps that sentence; Mara, who saw him leave the study only, keeps "Leo left the study.".
A witness's own text is kept only where it differs from the shared one; where the units a
witness could be told are several (which one tells the event is not known), it keeps the
shared text, which is safe for it too.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from fabula.memory.records import Entity, Event, Fact, is_secret, slug
from fabula.memory.text import split_clauses, split_sentences

Span = tuple[int, int]
_SPEECH = frozenset({"say", "tell", "inform", "claim", "ask"})
_QUOTED = re.compile(r'"[^"\n]+"|\u201c[^\u201d\n]+\u201d')


@dataclass(frozen=True)
class Recollections:
    """What the witnesses of a turn's events remember of them.

    ``shared``: by event id, the text safe for all the event's witnesses; ``own``: by event
    id and witness, the text that witness remembers, only where it differs from ``shared``.
    """

    shared: dict[str, str] = field(default_factory=dict)
    own: dict[str, dict[str, str]] = field(default_factory=dict)

    def of(self, event: str, witness: str) -> str | None:
        """What ``witness`` remembers of ``event`` (None: not recollected)."""
        mine = self.own.get(event)
        if mine is not None and witness in mine:
            return mine[witness]
        return self.shared.get(event)


def recollect(text: str, events: Sequence[Event], entities: Mapping[str, Entity]) -> dict[str, str]:
    """For every witnessed event of a turn, what all its witnesses may remember (see the
    module docstring): a quote of ``text`` that is safe for every one of them, else the event
    rendered. ``entities`` are every entity the story knows, this turn's new ones included."""
    reader = _Reader(text, events, entities)
    return {e.id: reader.recall(e, frozenset(e.witnesses)) for e in events if e.witnesses}


def recollect_each(
    text: str, events: Sequence[Event], entities: Mapping[str, Entity]
) -> Recollections:
    """:func:`recollect`, and what each witness remembers where it may be told more (see
    the module docstring)."""
    reader = _Reader(text, events, entities)
    shared: dict[str, str] = {}
    own: dict[str, dict[str, str]] = {}
    for event in events:
        if not event.witnesses:
            continue
        units = reader.units(event)
        common = shared[event.id] = reader.pick(event, units, frozenset(event.witnesses))
        if len(set(event.witnesses)) < 2:
            continue
        for witness in dict.fromkeys(event.witnesses):
            mine = reader.pick(event, units, frozenset({witness}), otherwise=common)
            if mine != common:
                own.setdefault(event.id, {})[witness] = mine
    return Recollections(shared, own)


@dataclass
class _Units:
    """The units of text that may tell an event, each with who may be told it: the
    witnesses of every event touching it (sentences; clauses, found when first needed)."""

    touched: list[Span]  # the sentences the event's span touches
    sentences: list[tuple[Span, frozenset[str]]]
    clauses: list[tuple[Span, frozenset[str]]] | None = None


class _Reader:
    def __init__(self, text: str, events: Sequence[Event], entities: Mapping[str, Entity]):
        self.text = text
        self.events = list(events)
        self.entities = entities
        self.sentences = list(split_sentences(text))
        self.names = _name_pattern(entities.values(), text)
        self.ids = {e.name.lower(): e.id for e in entities.values()} | {
            e.id.replace("_", " "): e.id for e in entities.values()
        }

    def recall(self, event: Event, witnesses: frozenset[str]) -> str:
        """What ``witnesses`` together may remember of ``event``."""
        return self.pick(event, self.units(event), witnesses)

    def units(self, event: Event) -> _Units:
        """The sentences (and clauses) touching ``event``'s span that name everything it is
        about and nothing no event told there accounts for, each with who may read it."""
        span = (event.span.start, event.span.end)
        touched = [s for s in self.sentences if _overlaps(s, span)]
        if len(touched) != 1:
            # a span over several sentences does not say which of them tells the event: one
            # that names only its subjects may be a deed the memory-builder missed, done
            # where a witness of this event was not ("Ada took the key, and …. Ben left the
            # study. Ada hid the key." spanned whole): no sentence of it is quoted
            return _Units([], [])
        sentences = [(s, self.audience(s)) for s in touched if self.about_only(s, event)]
        return _Units(touched, sentences)

    def pick(
        self, event: Event, units: _Units, witnesses: frozenset[str], otherwise: str = ""
    ) -> str:
        """The one unit ``witnesses`` may all read, quoted; else ``otherwise`` when given,
        else the event rendered."""
        chosen = [u for u, who in units.sentences if witnesses <= who]
        if not chosen:
            if units.clauses is None:
                span = (event.span.start, event.span.end)
                units.clauses = [
                    (c, self.audience(c))
                    for s in units.touched
                    for c in split_clauses(self.text, *s)
                    if _overlaps(c, span) and self.about_only(c, event)
                ]
            chosen = [u for u, who in units.clauses if witnesses <= who]
        if len(chosen) == 1:
            a, b = chosen[0]
            if a <= event.span.start and event.span.end <= b:
                return self.text[a:b]  # the one unit tells the whole utterance or deed
            return self.words(event, witnesses) or self.text[a:b]
        # none, or several that could each be it: which one tells the event is not known
        return self.words(event, witnesses) or otherwise or render_event(event, self.entities)

    def words(self, event: Event, witnesses: frozenset[str]) -> str | None:
        """What the hearers of an utterance heard (rule 3 of the module docstring): the
        words its span quotes, or the span of a script line spoken by its speaker; None
        when it is no utterance, has neither, or a part is not safe for ``witnesses``."""
        if event.kind not in _SPEECH or not event.actor:
            return None
        start, end = event.span.start, event.span.end
        line = self.text[self.text.rfind("\n", 0, start) + 1 : start]
        tag = re.fullmatch(r"\s*(.+?)\s*:\s*", line)
        # who the line is tagged with: a known name, or the speaker's own id spelt out
        # ("Narrator: ..." or "He had one word for them: ..." is no one's script line)
        tagged = (
            None
            if tag is None
            else self.ids.get(tag.group(1).lower())
            or (event.actor if _slug_or_none(tag.group(1)) == event.actor else None)
        )
        if tagged is not None:
            # a script line ("Ann: ...") is all its speaker's words, quotes inside it
            # included (a title, another's words retold); another speaker's is not
            spoken = self.text[start:end].strip()
            if tagged != event.actor or "\n" in spoken or not spoken:
                return None
            return spoken if witnesses <= self.audience((start, end)) else None
        quoted = [(m.start(), m.end()) for m in _QUOTED.finditer(self.text, start, end)]
        if not quoted:
            return None
        # who else the span names, outside the words, is someone the utterance is about:
        # a span running over another speaker's line ("Go away," Mara hissed to Cal) is
        # not all this one's words
        others = self.named((start, end), outside_quotes=True) - _referents(event)
        if others or not all(witnesses <= self.audience(q) for q in quoted):
            return None
        speaker = self.entities.get(event.actor)
        name = speaker.name if speaker is not None else event.actor.replace("_", " ")
        parts = [self.text[a + 1 : b - 1].strip() for a, b in quoted]
        said = " ".join(p[:-1] + "." if p.endswith(",") else p for p in parts)
        verb = "asked" if event.kind == "ask" else "said"
        if event.kind == "say" and event.content is None:
            # plain words said to someone by name ("Ben said to Ann: …"): whom, as named
            to = [self.entities[p].name for p in event.participants[1:] if p in self.entities]
            if to:
                verb += " to " + " and ".join(to)
        return f'{name} {verb}: "{said}"'

    def audience(self, unit: Span) -> frozenset[str]:
        """Who witnessed every event whose span touches ``unit``."""
        told = [e for e in self.events if _overlaps((e.span.start, e.span.end), unit)]
        return frozenset.intersection(*(frozenset(e.witnesses) for e in told))

    def about_only(self, unit: Span, event: Event) -> bool:
        """Whether ``unit`` names everything ``event`` is about, and every entity it names
        and every clause it holds is accounted for by the events told there."""
        told = [e for e in self.events if _overlaps((e.span.start, e.span.end), unit)]
        # the words of an utterance are what its hearers heard: names inside them count
        spoken = any(e.kind in _SPEECH for e in told)
        named = self.named(unit, outside_quotes=spoken)
        accounted = set().union(*(_referents(e) for e in told))
        if not self.about(unit, [event]) or not named <= accounted:
            return False
        # every clause of it must tell an action of its own: text no action was read from
        # (a deed the memory-builder missed) is never quoted along with one it read, even
        # when it names the same people and things as another action told there — nor
        # alone: a sentence of one clause is no exception, for the names of the actions
        # spanned over it (and their witnesses) may cover a deed the memory-builder missed
        # ("Ada privately told Cora that … Ben … the cove." passes for Ben's leaving the
        # cove when Ada's taking and Cora's seeing him arrive are spanned over it too)
        clauses = split_clauses(self.text, *unit)

        # and names no one that action does not itself account for (its witnesses do not
        # count): "Ben privately told Cora…", which the memory-builder missed, is not told
        # by Ada's telling Ben something, though it names Ada and Ben
        def tells(clause: Span, action: list[Event]) -> bool:
            own = set().union(*(_referents(e, witnesses=False) for e in action))
            return (
                self.about(clause, action, spoken)
                and self.named(clause, outside_quotes=spoken) <= own
            )

        # an action whose span runs past the unit may be told elsewhere in it: only the
        # event's own action and those read inside the unit can vouch for its clauses
        inside = [
            e
            for e in told
            if (e.span.start, e.span.end, e.actor)
            == (event.span.start, event.span.end, event.actor)
            or (unit[0] <= e.span.start and e.span.end <= unit[1])
        ]
        return _each_matched(clauses, _actions(inside), tells)

    def about(self, unit: Span, events: Sequence[Event], spoken: bool = False) -> bool:
        """Whether ``unit`` names all that one of ``events`` is about."""
        named = self.named(unit, outside_quotes=spoken)
        for event in events:
            core = {c for c in _core(event) if c in self.entities}
            if core and core <= named:
                return True
        return False

    def named(self, unit: Span, *, outside_quotes: bool = False) -> set[str]:
        if self.names is None:
            return set()
        words = self.text[unit[0] : unit[1]]
        if outside_quotes:
            words = re.sub(r'"[^"]*"', " ", words)
        found = self.names.findall(words)
        return {self.ids[f.lower()] for f in found if f.lower() in self.ids}


def _name_pattern(entities: Iterable[Entity], text: str) -> re.Pattern[str] | None:
    """The pattern of every name and id of ``entities`` that ``text`` may hold (a name
    not in it, in any case, cannot match: the pattern grows with the text, not with the
    story; a text or name beyond ASCII keeps every name, as lowering their case may join them)."""
    forms = {e.name for e in entities} | {e.id.replace("_", " ") for e in entities}
    lowered = text.lower() if text.isascii() else None
    forms = {
        f
        for f in forms
        if f.strip() and (lowered is None or not f.isascii() or f.lower() in lowered)
    }
    if not forms:
        return None
    alternation = "|".join(re.escape(f) for f in sorted(forms, key=len, reverse=True))
    return re.compile(rf"(?<!\w)(?:{alternation})(?!\w)", re.IGNORECASE)


def _slug_or_none(name: str) -> str | None:
    try:
        return slug(name)
    except ValueError:
        return None


def _overlaps(a: Span, b: Span) -> bool:
    return a[0] < b[1] and b[0] < a[1]


def _actions(events: Sequence[Event]) -> list[list[Event]]:
    """``events`` grouped by the action they were read from (one span, one actor: a
    journey is read as its exit and its entry)."""
    groups: dict[tuple[int, int, str | None], list[Event]] = {}
    for e in events:
        groups.setdefault((e.span.start, e.span.end, e.actor), []).append(e)
    return list(groups.values())


def _each_matched(
    clauses: Sequence[Span],
    actions: Sequence[list[Event]],
    tells: Callable[[Span, list[Event]], bool],
) -> bool:
    """Whether every clause can be given an action of its own that it tells (a bipartite
    matching: a clause takes a free action, or one whose holder can move to another)."""
    if len(clauses) > len(actions):
        return False
    options = [[j for j, a in enumerate(actions) if tells(c, a)] for c in clauses]
    holder: dict[int, int] = {}  # action -> the clause it is given to

    def give(i: int, seen: set[int]) -> bool:
        for j in options[i]:
            if j not in seen:
                seen.add(j)
                if j not in holder or give(holder[j], seen):
                    holder[j] = i
                    return True
        return False

    return all(give(i, set()) for i in range(len(clauses)))


def _core(event: Event) -> set[str]:
    """What a text telling ``event`` must name: who did it, to what, where."""
    core = set(event.participants[:2] if event.kind == "search" else event.participants)
    core.update(event.private_to)
    if event.actor:
        core.add(event.actor)
    if event.place and event.kind in ("enter", "exit", "stay", "locate"):
        core.add(event.place)
    if event.content is not None:
        core.update((event.content.subject, event.content.value))
    return core


def _referents(event: Event, *, witnesses: bool = True) -> set[str]:
    """Whom and what ``event`` accounts for in a text telling it (its witnesses too, unless
    ``witnesses`` is false)."""
    refs = {*event.participants, *event.private_to}
    if witnesses:
        refs.update(event.witnesses)
    if event.actor:
        refs.add(event.actor)
    if event.place:
        refs.add(event.place)
    if event.content is not None:
        refs.update((event.content.subject, event.content.value))
    return refs


@dataclass(frozen=True)
class _Teller:
    """How a plain sentence names what ``entities`` know: a character by its name, anything
    else as "the" thing, an unknown id as its words."""

    entities: Mapping[str, Entity]

    def ref(self, entity_id: str | None) -> str:
        """One entity ("someone" for none)."""
        if not entity_id:
            return "someone"
        entity = self.entities.get(entity_id)
        if entity is None:
            return entity_id.replace("_", " ")
        if entity.is_extra and not entity.name[:1].isupper():
            return f"the {entity.name}"  # met as "a stray cat": "the stray cat"
        return entity.name if entity.kind == "character" else f"the {entity.name}"

    def group(self, ids: Sequence[str]) -> str:
        """Entities as a list ("A, B and C"; "someone" for none)."""
        named = [self.ref(i) for i in ids] or ["someone"]
        return named[0] if len(named) == 1 else ", ".join(named[:-1]) + " and " + named[-1]

    def fact(self, f: Fact) -> str:
        """A fact: where something is, a secret, or an attribute's value."""
        negation = "" if f.polarity else "not "
        if f.attribute == "location":
            return f"{self.ref(f.subject)} is {negation}in {self.ref(f.value)}"
        if is_secret(f.attribute):
            return f"{self.ref(f.subject)}'s {f.attribute} is {negation}that {f.value}"
        return f"the {f.attribute} of {self.ref(f.subject)} is {negation}{f.value}"


def render_event(event: Event, entities: Mapping[str, Entity]) -> str:
    """One plain sentence telling ``event`` from its typed fields alone."""
    teller = _Teller(entities)
    ref, group, fact = teller.ref, teller.group, teller.fact
    actor = ref(event.actor) if event.actor else group(_characters(event, entities))
    content = event.content
    kind = event.kind
    if kind == "enter":
        line = f"{group(_characters(event, entities))} entered {ref(event.place)}"
    elif kind == "locate":
        line = f"{group(_characters(event, entities))} was in {ref(event.place)}"
    elif kind == "exit":
        line = f"{actor} left {ref(event.place)}"
    elif kind == "stay":
        line = f"{actor} stayed in {ref(event.place)}"
    elif kind in ("move", "put") and content is not None:
        line = f"{actor} put {ref(content.subject)} in {ref(content.value)}"
    elif kind == "take" and content is not None:
        line = f"{actor} took {ref(content.subject)}"
    elif kind == "give" and content is not None:
        line = f"{actor} gave {ref(content.subject)} to {ref(content.value)}"
    elif kind == "drop" and content is not None:
        line = f"{actor} dropped {ref(content.subject)}"
    elif kind == "state" and content is not None and event.actor:
        # a change by its doer: "the stray cat left the basket knocked over"
        line = f"{actor} left {_result(content, teller)}"
    elif kind in ("state", "observe") and content is not None:
        line = fact(content) if kind == "state" else f"{actor} saw that {fact(content)}"
    elif kind == "search" and len(event.participants) > 1:
        line = f"{actor} searched {ref(event.participants[1])}"
    elif kind == "ask" and len(event.participants) > 2:
        line = f"{actor} asked {ref(event.participants[1])} about {ref(event.participants[2])}"
    elif kind == "tell" and content is not None:
        line = f"{actor} told {group(event.private_to)} that {fact(content)}"
    elif kind in ("inform", "claim", "say") and content is not None:
        line = f"{actor} said that {fact(content)}"
    elif kind == "feel" and content is not None:
        about = content.attribute.removeprefix("feeling about ")
        line = f"{actor} {content.value} {ref(about)}"
    elif kind == "think":
        topics = [p for p in event.participants if p != event.actor]
        line = f"{actor} thought about {ref(topics[0])}" if topics else f"{actor} thought"
    elif kind == "say":
        line = f"{actor} spoke"
    elif kind == "see":
        line = f"{actor} saw something"
    else:
        line = f"{actor}: {kind}"
    return line[0].upper() + line[1:] + "."


def _result(f: Fact, teller: _Teller) -> str:
    """What a change left: "the basket knocked over", "the jar holding raisins", "the key in
    the drawer" (a negated value: "the jar not cracked")."""
    thing, negation = teller.ref(f.subject), "" if f.polarity else "not "
    if f.attribute == "location":
        return f"{thing} {negation}in {teller.ref(f.value)}"
    if f.attribute == "contents":
        return f"{thing} {negation}holding {f.value}"
    if f.attribute == "condition":
        return f"{thing} {negation}{f.value}"
    return f"the {f.attribute} of {thing} {negation}{f.value}"


def _characters(event: Event, entities: Mapping[str, Entity]) -> list[str]:
    people = [p for p in event.participants if _kind(p, entities) == "character"]
    return people or ([event.actor] if event.actor else [])


def _kind(entity_id: str, entities: Mapping[str, Entity]) -> str | None:
    entity = entities.get(entity_id)
    return entity.kind if entity else None
