"""Phase 5: events with their perceivers, as story actions.

The frames of a turn (:mod:`.frames`) become :class:`~fabula.memory.actions.StoryAction`:

* an event's states are ``state`` actions at its sentence's span, true in W, perceived
  by those present (the tracker's rule) and by whoever the text says perceived the event,
  and not by whoever it says did not;
* an act a perception tells again ("… Tove sees the gull knock the jug over") names
  the earlier event it repeats (:mod:`.perceiving`) as well as its own telling;
* a perception names its event by the words they share, reduced to roots (the event's
  verb or its noun: "the swap" and "swapped"; its participants: "the package"): it is
  attached to the earlier event of the turn that shares the most roots with it (of
  several sharing as many, the later), or to its own sentence's event told after it
  that shares one ("checks the tuning of her violin and it sounds in tune"); one that
  shares none is attached to nothing, but "the change" (the general word of every
  change) names the latest event of a verb of WordNet's class "change";
* a character occupied in a subordinate clause ("while Bo is away") does not perceive
  the events of its sentence, unless a perception later says otherwise;
* a perception of a that-clause ("notices that the jar is empty") or of a thing with its
  adjectives ("sees a full jar") is a ``perceive`` too; how a thing seems to someone
  ("the jar looks empty", :attr:`.readings.Frame.inferred`) is only that, naming no event;
* a belief is a ``think`` with its clause: the believer's view only, assumed; a belief
  denied ("does not realize the storm flooded the cellar") is a perception denied of the
  event it names, never a belief of the clause;
* a goal stays narration (an intention, never an act), with its reason in ``unsure``;
* a feeling (:mod:`.feeling`) is a ``feel`` of each of its holders about its thing;
* a telling (:mod:`.telling`) is a ``tell`` (private) or an ``inform`` of each state it
  says, by its speaker to its listener;
* an event under a modal or a condition ("could break the vase", "the jar might be
  empty", "if the vase breaks") is no event: what may be, or would be, is not so;
* a state of an idea the story never made a thing ("the story ended", "her eyes
  widened": :func:`.mentions.in_scene`) is none of the world's, and no action;
* the doer of a state it brought about (:mod:`.doers`: "a stray cat knocked over the
  basket") is its action's actor, a force marked as one; a thing's own change ("the
  basket fell") and a state said ("the jar appears intact") have none;
* a pronoun that may name another character (:attr:`.mentions.Mention.doubt`) marks the
  actions of its clause ``unsure``, which the critic reports beside the sentence.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

from fabula.agents.reading.phases.doers import Doer, doer_of
from fabula.agents.reading.phases.lexicon import root, verb
from fabula.agents.reading.phases.mentions import in_scene
from fabula.agents.reading.phases.readings import Feeling, Frame, StateReading
from fabula.memory.actions import Clause, StoryAction
from fabula.memory.records import Entity


@dataclass
class _Event:
    sentence: int
    start: int
    end: int
    states: list[StateReading] = field(default_factory=list)
    doers: list[Doer | None] = field(default_factory=list)  # each state's
    roots: set[str] = field(default_factory=set)
    seen: list[str] = field(default_factory=list)
    unseen: list[str] = field(default_factory=list)
    doubt: str | None = None


def _clause(state: StateReading) -> Clause:
    value = f"not {state.value}" if state.negated else state.value
    return Clause(subject=state.subject.name, attribute=state.attribute, value=value)


def _add(names: list[str], name: str) -> None:
    if name not in names:
        names.append(name)


def attach(
    frames: list[Frame], entities: Mapping[str, Entity] | None = None
) -> dict[int, list[StoryAction]]:
    """The actions the frames give, by sentence index (``entities``: the story's, which
    say whether a doer named is a character or a force)."""
    events: list[_Event] = []
    by_sentence: dict[int, _Event] = {}
    out: dict[int, list[StoryAction]] = {}
    later: dict[int, set[str]] = {}  # a sentence's roots in events after each frame
    could: dict[int, list[str]] = {}  # the characters of a sentence's modal clauses
    for k, frame in enumerate(frames):
        if frame.kind == "event" and frame.modal:
            # "could break the vase", "if the vase breaks": nothing happened; but one who
            # could act is there ("before Lorenzo could move, James took it")
            for who in (frame.doer, frame.holder):
                if who is not None and who.character:
                    _add(could.setdefault(frame.sentence, []), who.name)
            continue
        if frame.kind == "event":
            event = by_sentence.get(frame.sentence)
            if event is None:
                event = _Event(frame.sentence, frame.start, frame.end)
                by_sentence[frame.sentence] = event
                events.append(event)
            event.states.extend(frame.states)
            doer = doer_of(frame.doer, frame.start, entities or {})
            # a state the doer brought about is its act; a state said or undergone has no
            # doer ("the basket fell", "the tablet appears intact"), but an undeclared
            # doer's own ("a stray cat wandered in") names it, so that the story meets it
            event.doers.extend(
                doer if doer is not None and (s.act or _own_state(s, doer)) else None
                for s in frame.states
            )
            event.doubt = event.doubt or (frame.doubt if frame.states else None)
            # a thing changed is named by its name too, though the text said "it"
            named = frame.roots | {root(w) for s in frame.states for w in s.subject.name.split()}
            event.roots |= named
            j = k - 1  # the frames before it in its own sentence (frames are in order)
            while j >= 0 and frames[j].sentence == frame.sentence:
                later.setdefault(j, set()).update(named)
                j -= 1
            for who in (frame.doer, frame.holder):
                if who is not None and who.character:
                    _add(event.seen, who.name)  # a character perceives what it does
    for sentence, names in could.items():
        if sentence in by_sentence:
            for name in names:
                _add(by_sentence[sentence].seen, name)
    for k, frame in enumerate(frames):
        if frame.kind == "event":
            continue
        holder = frame.holder.name if frame.holder else None
        if frame.kind == "occupied" and holder is not None:
            same = [f for f in frames if f.sentence == frame.sentence and f.kind == "event"]
            if same:
                event = by_sentence.get(frame.sentence) or _Event(
                    frame.sentence, frame.start, frame.end
                )
                by_sentence.setdefault(frame.sentence, event)
                if event not in events:
                    events.append(event)
                _add(event.unseen, holder)
            continue
        # "does not realize (that) the outage hit the oven": not a belief of the clause but
        # a perception denied, of the event it names
        denied = frame.kind == "believe" and frame.negated
        if (frame.kind == "perceive" or denied) and holder is not None:
            if frame.states and not frame.negated and not denied:
                out.setdefault(frame.sentence, []).extend(_holders(frame, "perceive", holder))
                if frame.inferred:
                    continue  # how a thing looks to the one looking names no event
            if frame.states and frame.negated and not denied and all(s.act for s in frame.states):
                # "did not notice when Ahmed locked the box": the act it names is told here,
                # and is so (what one fails to notice happened), unseen by the holder; not
                # "did not see the spilled sauce", which names an event told before it
                told = _Event(frame.sentence, frame.start, frame.end, list(frame.states))
                told.doers = [None] * len(told.states)
                told.unseen.append(holder)
                events.append(told)
                continue
            target = _named(events, frame, later.get(k, set()), by_sentence.get(frame.sentence))
            # an act told again ("… Tove sees the gull knock the jug over") names the event
            # it repeats as well as its own telling
            again = by_sentence.get(frame.retold.sentence) if frame.retold else None
            for event in (target, again if again is not target else None):
                if event is not None:
                    _perceived(event, holder, not frame.negated)
            continue
        if frame.kind == "believe" and holder is not None:
            out.setdefault(frame.sentence, []).extend(_holders(frame, "think", holder))
            continue
        if frame.kind == "tell" and holder is not None:
            out.setdefault(frame.sentence, []).extend(_told(frame, holder))
            continue
        if frame.kind == "feel" and frame.felt is not None:
            out.setdefault(frame.sentence, []).extend(_feelings(frame, frame.felt))
            continue
        if frame.kind == "goal":
            out.setdefault(frame.sentence, []).append(
                StoryAction(
                    kind="narration",
                    start=frame.start,
                    end=frame.end,
                    unsure="an intention, not an act: whether it was carried out is not said",
                )
            )
    for event in events:
        for state, doer in zip(event.states, event.doers, strict=True):
            if not in_scene(state.subject):
                continue
            out.setdefault(event.sentence, []).append(
                StoryAction(
                    kind="state",
                    start=event.start,
                    end=event.end,
                    actors=(doer.name,) if doer is not None else (),
                    by_force=doer is not None and doer.force,
                    clause=_clause(state),
                    seen_by=tuple(event.seen),
                    unseen_by=tuple(n for n in event.unseen if n not in event.seen),
                    unsure=event.doubt,
                )
            )
    return out


def _told(frame: Frame, speaker: str) -> list[StoryAction]:
    """Each state a telling says, told by ``speaker`` to its listeners: a ``tell`` when
    only they hear it, else an ``inform`` that everyone present hears."""
    return [
        StoryAction(
            kind="tell" if frame.private else "inform",
            start=frame.start,
            end=frame.end,
            actors=(speaker,),
            listeners=tuple(m.name for m in frame.listeners),
            clause=_clause(s),
            unsure=frame.doubt,
        )
        for s in frame.states
        if in_scene(s.subject)
    ]


def _feelings(frame: Frame, felt: Feeling) -> list[StoryAction]:
    """A ``feel`` action for each holder of the feeling, a declared character, about a
    declared thing."""
    if felt.thing.entity is None:
        return []
    return [
        StoryAction(
            kind="feel",
            start=frame.start,
            end=frame.end,
            actors=(holder.entity,),
            obj=felt.thing.entity,
            verb=felt.word,
            unsure=frame.doubt,
        )
        for holder in felt.holders
        if holder.entity is not None
    ]


def _perceived(event: _Event, holder: str, seen: bool) -> None:
    """``holder`` perceived ``event`` (``seen``), or did not."""
    if seen:
        _add(event.seen, holder)
        if holder in event.unseen:
            event.unseen.remove(holder)
    else:
        _add(event.unseen, holder)
        if holder in event.seen:
            event.seen.remove(holder)


def _holders(frame: Frame, kind: Literal["perceive", "think"], holder: str) -> list[StoryAction]:
    """Each of the frame's states as ``holder`` perceives it, or believes it."""
    return [
        StoryAction(
            kind=kind,
            start=frame.start,
            end=frame.end,
            actors=(holder,),
            clause=_clause(s),
            unsure=frame.doubt,
        )
        for s in frame.states
        if in_scene(s.subject)
    ]


def _own_state(state: StateReading, doer: Doer) -> bool:
    """Whether ``state`` is an undeclared doer's own ("a stray cat wandered in")."""
    return state.subject.entity is None and state.subject.name == doer.name


def _named(
    events: list[_Event], frame: Frame, after: set[str], here: _Event | None
) -> _Event | None:
    """The earlier event sharing the most roots with the perception (the later of a tie);
    or its own sentence's event ``here`` told after it, sharing roots with it ("checks the
    tuning of her violin and it sounds in tune": ``after`` holds that event's roots)."""
    if here is not None and frame.roots & after:
        return here
    best: tuple[int, int] | None = None
    found = None
    for k, event in enumerate(events):
        if event.sentence >= frame.sentence:
            continue
        shared = len(event.roots & frame.roots)
        if shared and (best is None or (shared, k) > best):
            best, found = (shared, k), event
    if found is None and "change" in frame.roots:
        # "notices the change in the water": the general word of every change names the
        # latest earlier event that changed a thing (a verb of WordNet's class "change")
        earlier = (e for e in reversed(events) if e.sentence < frame.sentence)
        found = next((e for e in earlier if any(_changing(r) for r in e.roots)), None)
    return found


def _changing(word: str) -> bool:
    """Whether ``word`` is the lemma of a verb whose likeliest class is "change"."""
    found = verb(word)
    return found is not None and found.lemma == word and found.classes[0] == "change"
