"""The offline critic (symbolic checks): checks a draft by reading the delta it would commit.

The draft is run through the memory-builder (nothing is committed) and its events are
replayed over the world as it stands, in order:

- **contradiction** — a statement of fact (a bare statement, ``saw that``, ``is in``) that
  disagrees with the world at that moment, or an action the world does not allow (taking
  an object that is not there, putting or giving one the actor does not hold), and a
  question or private telling put to someone in another place;
- **knowledge** — a character asserting (telling, claiming, saying) something it has no
  belief about at that moment; asserting the opposite of its belief is a lie, reported as
  a warning, since characters may lie;
- **future** — a reference to an entity that enters the story only after the current turn;
- **referent** — a deed (take, put, give, drop) on an object the story never placed, whose
  preconditions cannot be checked (a warning); and what no story may hold (errors): a
  character introduced out of nowhere (a name the story does not have), a place put inside
  something, a container (a fixture of its place) carried off or handed to someone, a thing
  put inside itself;
- **plan** — a focal character who does nothing, and a draft that repeats one of the last
  few turns word for word (warnings);
- **unparsed** — a sentence kept as narration (a warning);
- **markup** — what a card's text is written in, never a story's (errors): a macro left
  unresolved (``{{user}}``, ``<BOT>``), a ``<START>``, an ``*action*``, a W++ or
  bracketed list, and a line said by one that is another's (``"User: …" said Seraphina``,
  a quotation holding an example's ``Name:`` turn).
"""

from __future__ import annotations

import re

from fabula.agents.contracts import Finding, TurnPlan
from fabula.agents.shared.replies import said_line
from fabula.agents.views import AuthorView
from fabula.memory.delta import TurnDelta
from fabula.memory.index.general import the_place
from fabula.memory.records import Belief, Event, State
from fabula.memory.text import split_sentences
from fabula.worlds.cardtext import has_markup

_ASSERTIONS = {"state", "perceive", "locate"}
_SPEECH = {"tell", "claim", "say", "inform"}
_VERB = {"take": "takes", "put": "puts", "move": "moves", "give": "gives", "drop": "drops"}
_DEEDS = frozenset(_VERB)


class OfflineCritic:
    """Deterministic checks; the same in offline and model mode."""

    def critique(self, view: AuthorView, delta: TurnDelta, plan: TurnPlan | None) -> list[Finding]:
        """Findings on ``delta``: contradictions with W at that time, speakers stating what they
        cannot know, leaks from the future, departures from the plan."""
        findings: list[Finding] = []
        world: dict[str, str] = {
            slot: s.value for slot, s in view.world.states.items() if s.polarity
        }
        states_by_event, beliefs_by_event = _by_event(delta)
        minds = _Minds(view)
        new_entities = {e.id for e in delta.entities}
        findings.extend(self._referents(view, delta))
        findings.extend(_markup(view, delta.text))
        acted: set[str] = set()
        for event in delta.events:
            states = states_by_event.get(event.id, [])
            if event.actor:
                acted.add(event.actor)
            acted.update(p for p in event.participants if view.kind(p) == "character")
            findings.extend(self._future(view, event, new_entities))
            if event.kind == "narration":
                findings.append(
                    Finding(
                        kind="unparsed",
                        severity="warning",
                        quote=event.span.quote,
                        message="kept as narration: no fact was read from it",
                    )
                )
            if event.kind in _ASSERTIONS:
                findings.extend(_contradictions(view, event, states, world))
            findings.extend(self._unknown(view, event, delta))
            findings.extend(self._preconditions(view, event, world))
            if event.kind in _SPEECH and event.actor and event.content is not None:
                findings.extend(self._knowledge(view, event, minds))
            findings.extend(self._absent(view, event, world))
            _apply(world, minds, states, beliefs_by_event.get(event.id, []))
        findings.extend(self._repeats(view, delta))
        if plan is not None:
            findings.extend(
                Finding(kind="plan", severity="warning", message=f"{view.name(c)} does nothing")
                for c in plan.focal
                if c not in acted
            )
        return findings

    def _absent(self, view: AuthorView, event: Event, world: dict[str, str]) -> list[Finding]:
        """A question, a private telling or words said to someone by name (``"…," Ann said
        to Ben``, ``Ann asked Ben about …``) who is, at that moment, in another place than
        the speaker: nobody answers, tells or speaks to one who is not there."""
        if event.actor is None:
            return []
        others = tuple(p for p in event.participants[1:] if view.kind(p) == "character")
        if event.kind == "tell":
            listeners = event.private_to
        elif event.kind == "ask":
            listeners = others[:1]
        elif event.kind == "say" and event.content is None:
            listeners = others  # plain words: its participants are whom they were said to
        else:
            return []
        here = world.get(f"{event.actor}|location")
        out = []
        for listener in listeners:
            there = world.get(f"{listener}|location")
            if here is not None and there is not None and here != there:
                out.append(
                    Finding(
                        kind="contradiction",
                        quote=event.span.quote,
                        message=(
                            f"{view.name(event.actor)} speaks to {view.name(listener)}, who is "
                            f"in {the_place(view.name(there))}, not in "
                            f"{the_place(view.name(here))}"
                        ),
                    )
                )
        return out

    def _repeats(self, view: AuthorView, delta: TurnDelta) -> list[Finding]:
        """A draft whose text is one of the recent turns' again: the story is not moving."""
        text = " ".join(delta.text.split())
        for recent in reversed(view.recent):
            if recent.turn < delta.turn and " ".join(recent.text.split()) == text:
                return [
                    Finding(
                        kind="plan",
                        severity="warning",
                        message=f"repeats turn {recent.turn} word for word",
                    )
                ]
        return []

    def _referents(self, view: AuthorView, delta: TurnDelta) -> list[Finding]:
        out: list[Finding] = []
        quotes = {e.id: e.span.quote for e in delta.events}
        kinds = {**{k: e.kind for k, e in view.entities.items()}}
        kinds.update({e.id: e.kind for e in delta.entities})
        containers = {k for k, e in view.entities.items() if e.is_container}
        containers |= {e.id for e in delta.entities if e.is_container}
        for entity in delta.entities:
            if entity.kind == "character":
                out.append(
                    Finding(
                        kind="referent",
                        message=(
                            f"{entity.name} is not a character of this story (a character "
                            "introduced out of nowhere)"
                        ),
                    )
                )
        for state in delta.states:
            if state.attribute != "location" or not state.polarity:
                continue
            quote = quotes.get(state.event or "", "")
            subject, where = state.subject, state.value
            if kinds.get(subject) == "place":
                out.append(
                    Finding(
                        kind="referent",
                        quote=quote,
                        message=f"{view.name(subject)} is a place: it cannot be put anywhere",
                    )
                )
            elif subject in containers and kinds.get(where) != "place":
                out.append(
                    Finding(
                        kind="referent",
                        quote=quote,
                        message=(
                            f"the {view.name(subject)} is a fixture of its place: it cannot go "
                            f"to {view.name(where)}"
                        ),
                    )
                )
            elif subject == where:
                out.append(
                    Finding(
                        kind="referent",
                        quote=quote,
                        message=f"the {view.name(subject)} cannot be inside itself",
                    )
                )
        return out

    def _future(self, view: AuthorView, event: Event, new: set[str]) -> list[Finding]:
        out = []
        for ref in (event.actor, event.place, *event.participants):
            if ref is None or ref in new:
                continue
            entity = view.entities.get(ref)
            if entity is not None and entity.introduced > view.turn:
                out.append(
                    Finding(
                        kind="future",
                        quote=event.span.quote,
                        message=(
                            f"{entity.name} enters the story only at turn {entity.introduced}"
                        ),
                    )
                )
        return out

    def _unknown(self, view: AuthorView, event: Event, delta: TurnDelta) -> list[Finding]:
        """A deed on an object the story never placed: its preconditions (that the object
        is there, that the actor holds it) cannot be checked, so they are reported."""
        if event.kind not in _DEEDS or event.actor is None:
            return []
        new = {e.id: e for e in delta.entities}
        out = []
        for p in event.participants:
            if p == event.actor or view.kind(p) is not None:
                continue
            entity = new.get(p)
            if entity is not None and entity.kind != "object":
                continue
            name = entity.name if entity else p
            out.append(
                Finding(
                    kind="referent",
                    severity="warning",
                    quote=event.span.quote,
                    message=(
                        f"{view.name(event.actor)} {_VERB[event.kind]} the {name}, which the "
                        "story never placed anywhere: whether it is there cannot be checked"
                    ),
                )
            )
        return out

    def _preconditions(
        self, view: AuthorView, event: Event, world: dict[str, str]
    ) -> list[Finding]:
        actor = event.actor
        if actor is None or not event.participants:
            return []
        obj = next((p for p in event.participants if view.kind(p) == "object"), None)
        if obj is None:
            return []
        where = world.get(f"{obj}|location")
        quote = event.span.quote

        def place(entity: str | None) -> str | None:
            seen: set[str] = set()
            while entity is not None and view.kind(entity) != "place" and entity not in seen:
                seen.add(entity)
                entity = world.get(f"{entity}|location")
            return entity

        if event.kind == "take" and where is not None and place(obj) != place(actor):
            return [
                Finding(
                    kind="contradiction",
                    quote=quote,
                    message=(
                        f"{view.name(actor)} takes the {view.name(obj)}, but it is in "
                        f"{view.name(where)}, not here"
                    ),
                )
            ]
        if event.kind in ("put", "give", "drop") and where is not None and where != actor:
            return [
                Finding(
                    kind="contradiction",
                    quote=quote,
                    message=(
                        f"{view.name(actor)} does not hold the {view.name(obj)}: it is in "
                        f"{view.name(where)}"
                    ),
                )
            ]
        return []

    def _knowledge(self, view: AuthorView, event: Event, minds: _Minds) -> list[Finding]:
        assert event.actor is not None and event.content is not None
        speaker = event.actor
        content = event.content
        belief = minds.of(speaker).get(content.slot)
        quote = event.span.quote
        if belief is None:
            return [
                Finding(
                    kind="knowledge",
                    quote=quote,
                    message=(
                        f"{view.name(speaker)} states the {content.attribute} of "
                        f"{view.name(content.subject)} but cannot know it"
                    ),
                )
            ]
        if belief.polarity and belief.value != content.value:
            return [
                Finding(
                    kind="knowledge",
                    severity="warning",
                    quote=quote,
                    message=(
                        f"{view.name(speaker)} says {view.name(content.value)} but believes "
                        f"{view.name(belief.value)} (a lie)"
                    ),
                )
            ]
        return []


def _by_event(delta: TurnDelta) -> tuple[dict[str, list[State]], dict[str, list[Belief]]]:
    """The delta's states and beliefs, by the event that made each."""
    states_by_event: dict[str, list[State]] = {}
    for state in delta.states:
        if state.event:
            states_by_event.setdefault(state.event, []).append(state)
    beliefs_by_event: dict[str, list[Belief]] = {}
    for belief in delta.beliefs:
        beliefs_by_event.setdefault(belief.event, []).append(belief)
    return states_by_event, beliefs_by_event


def _contradictions(
    view: AuthorView, event: Event, states: list[State], world: dict[str, str]
) -> list[Finding]:
    """An assertion's states that say otherwise than W (``world``) at that moment."""
    findings = []
    for state in states:
        before = world.get(state.slot)
        if before is not None and before != state.value:
            findings.append(
                Finding(
                    kind="contradiction",
                    quote=event.span.quote,
                    message=(
                        f"says the {state.attribute} of {view.name(state.subject)} is "
                        f"{view.name(state.value)}, but it is {view.name(before)}"
                    ),
                )
            )
    return findings


class _Minds:
    """Each character's first-order beliefs as the turn's events change them: copied from
    the view when first touched (a scene touches its few characters, a town holds a
    thousand)."""

    def __init__(self, view: AuthorView) -> None:
        self._view = view
        self._minds: dict[str, dict[str, Belief]] = {}

    def of(self, character: str) -> dict[str, Belief]:
        """``character``'s beliefs by slot, as the events so far left them."""
        mind = self._minds.get(character)
        if mind is None:
            held = self._view.beliefs.get(character)
            mind = self._minds[character] = dict(held.beliefs) if held is not None else {}
        return mind


def _apply(
    world: dict[str, str],
    minds: _Minds,
    states: list[State],
    beliefs: list[Belief],
) -> None:
    """An event's ``states`` and first-order ``beliefs`` applied to W and the minds, for
    the events after it."""
    for state in states:
        if state.polarity:
            world[state.slot] = state.value
        else:
            world.pop(state.slot, None)
    for belief in beliefs:
        if len(belief.holder) == 1:
            minds.of(belief.holder[0])[belief.slot] = belief


_QUOTE = re.compile(r"[\"“]([^\"“”]*)[\"”]")


def _markup(view: AuthorView, text: str) -> list[Finding]:
    """Card markup in a passage, and a line said by one that is another's (see the module
    docstring): one error a sentence."""
    names = {view.name(c) for c in view.characters()}
    out = []
    for start, end in split_sentences(text):
        sentence = text[start:end]
        found = has_markup(sentence)
        if found is not None:
            out.append(
                Finding(
                    kind="markup",
                    quote=sentence,
                    message=f"card markup in the passage: {found!r}",
                )
            )
            continue
        said = said_line(sentence)
        for words in _QUOTE.findall(sentence):
            turn = re.search(r"(?:^|[\s'‘])([A-Z][\w' -]{0,40}?):\s", words)
            if turn is None or turn[1] not in names:
                continue
            if said is None or turn[1] != said.speaker:
                who = said.speaker if said is not None else "the passage"
                out.append(
                    Finding(
                        kind="markup",
                        quote=sentence,
                        message=f"a line of {turn[1]}'s said by {who}",
                    )
                )
                break
    return out
