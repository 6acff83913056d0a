"""What each kind of action does to W and to every mind: one handler per action kind.

:data:`HANDLERS` maps every :data:`~fabula.memory.actions.ActionKind` to its handler (a
test checks that none is missing); :func:`track` applies a turn's actions in order. The
rules the handlers follow are written down in :mod:`fabula.memory.rules`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence

from fabula.memory.actions import ActionKind, Clause, StoryAction
from fabula.memory.delta import DeltaBuilder
from fabula.memory.records import AcquisitionMode, Event, Fact, is_secret, secret_text, slug
from fabula.memory.rules import WorldRules
from fabula.memory.tracking.prior import PriorView, name_id
from fabula.memory.tracking.state import Tracker

Handler = Callable[[Tracker, StoryAction], None]


def track(
    rules: WorldRules,
    prior: PriorView,
    actions: Iterable[StoryAction],
    builder: DeltaBuilder,
) -> None:
    """Apply ``actions`` in order: entities, events, states and beliefs into ``builder``.

    An action naming something no identifier can be made of is kept as narration. The
    scene the turn ends in (the place of the latest entry) is recorded with the delta, so
    the next turn starts there without reading back through the event log.
    """
    tracker = Tracker(rules, prior, builder)
    for action in actions:
        names = [*action.actors, *action.listeners, action.place, action.obj, action.target]
        if action.clause is not None:
            names.append(action.clause.subject)
        if any(n is not None and name_id(n) is None for n in names):
            _narration(tracker, action)
        else:
            HANDLERS[action.kind](tracker, action)
    builder.scene = tracker.scene
    builder.known = dict(tracker.entities)


def _one(items: Sequence[str]) -> str | None:
    return items[0] if len(items) == 1 else None


def _unique(*items: str) -> tuple[str, ...]:
    return tuple(dict.fromkeys(items))


def _narration(t: Tracker, action: StoryAction) -> None:
    t.event("narration", action)


# -- entering, leaving, staying ---------------------------------------------------------
def _arrive(t: Tracker, action: StoryAction, actors: Sequence[str], place: str, kind: str) -> None:
    witnesses = t.perceivers(action, t.present(place), actors)
    ev = t.event(
        kind, action, actor=_one(actors), participants=actors, place=place, witnesses=witnesses
    )
    for who in actors:
        t.set_world(who, "location", place, ev)
    t.scene = place
    for w in witnesses:
        for who in actors:
            t.believe(
                (w,),
                who,
                "location",
                place,
                event=ev,
                source=ev.id,
                refresh=True,
                mode="participated" if w == who else "observed",
            )
    # a newcomer sees who is already there
    for who in actors:
        for other in witnesses:
            if other not in actors:
                t.believe((who,), other, "location", place, event=ev, source=ev.id, mode="observed")
    covert = t.covert(action, witnesses)
    for obj, where in t.visible(place):
        t.observe(witnesses, obj, "location", where, ev, refresh=actors, covert=covert)


def _enter(t: Tracker, action: StoryAction) -> None:
    actors = [t.entity("character", a) for a in action.actors]
    _arrive(t, action, actors, t.entity("place", action.place_name), "enter")


def _locate(t: Tracker, action: StoryAction) -> None:
    actors = [t.entity("character", a) for a in action.actors]
    _arrive(t, action, actors, t.entity("place", action.place_name), "locate")


def _leave(t: Tracker, action: StoryAction, who: str, place: str) -> None:
    witnesses = t.perceivers(action, t.present(place), (who,))
    ev = t.event("exit", action, actor=who, participants=(who,), place=place, witnesses=witnesses)
    if t.rules.open_containers:
        # the leaver's access to what it could see ends now: its freshness moves here
        for obj, where in t.visible(place):
            t.believe(
                (who,),
                obj,
                "location",
                where,
                mode="observed",
                event=ev,
                source=ev.id,
                refresh=True,
            )
    t.set_world(who, "location", place, ev, polarity=False)
    for w in witnesses:
        t.believe(
            (w,),
            who,
            "location",
            place,
            polarity=False,
            event=ev,
            source=ev.id,
            refresh=True,
            mode="participated" if w == who else "observed",
        )


def _exit(t: Tracker, action: StoryAction) -> None:
    who = t.entity("character", action.actor)
    _leave(t, action, who, t.entity("place", action.place_name))


def _go(t: Tracker, action: StoryAction) -> None:
    who = t.entity("character", action.actor)
    place = t.entity("place", action.place_name)
    old = t.where(who)
    if old is not None and old != place and t.kind(old) == "place":
        _leave(t, action, who, old)
    _arrive(t, action, [who], place, "enter")


def _stay(t: Tracker, action: StoryAction) -> None:
    who = t.entity("character", action.actor)
    place = t.entity("place", action.place_name)
    if t.where(who) != place:
        _arrive(t, action, [who], place, "enter")
        return
    witnesses = t.perceivers(action, t.present(place))
    t.event("stay", action, actor=who, participants=(who,), place=place, witnesses=witnesses)


# -- objects ------------------------------------------------------------------------------
def _place_object(t: Tracker, action: StoryAction, kind: str, who: str, obj: str, to: str) -> None:
    place = t.place_of(who)
    witnesses = t.perceivers(action, t.present(place), (who,))
    content = Fact(subject=obj, attribute="location", value=to, truth="true")
    ev = t.event(
        kind,
        action,
        actor=who,
        participants=_unique(who, obj, to),
        place=place,
        content=content,
        witnesses=witnesses,
    )
    if place is not None and t.where(to) is None and t.kind(to) == "object":
        t.set_world(to, "location", place, ev)
    t.set_world(obj, "location", to, ev)
    t.observe(
        witnesses,
        obj,
        "location",
        to,
        ev,
        actor=who,
        covert=t.covert(action, witnesses),
        believed=t.believed_seen(action, witnesses),
    )


def _move(t: Tracker, action: StoryAction) -> None:
    """``put`` and ``move``: an object into a container."""
    who = t.entity("character", action.actor)
    obj = t.entity("object", action.object_name)
    to = t.entity("object", action.target_name, container=True)
    _place_object(t, action, action.kind, who, obj, to)


def _take(t: Tracker, action: StoryAction) -> None:
    who = t.entity("character", action.actor)
    obj = t.entity("object", action.object_name)
    _place_object(t, action, "take", who, obj, who)


def _give(t: Tracker, action: StoryAction) -> None:
    who = t.entity("character", action.actor)
    obj = t.entity("object", action.object_name)
    to = t.entity("character", action.target_name)
    _place_object(t, action, "give", who, obj, to)


def _drop(t: Tracker, action: StoryAction) -> None:
    who = t.entity("character", action.actor)
    obj = t.entity("object", action.object_name)
    place = t.place_of(who)
    if place is None:
        t.event("drop", action, actor=who, participants=(who, obj), witnesses=(who,))
        return
    _place_object(t, action, "drop", who, obj, place)


def _looked_in(t: Tracker, box: str, witnesses: Sequence[str]) -> tuple[list[str], list[str]]:
    """What is in ``box``, and what a witness believed was in it but is not."""
    inside = sorted(
        slot.partition("|")[0]
        for slot, (value, polarity) in t.world.items()
        if slot.endswith("|location") and polarity and value == box
    )
    missing = sorted(
        {
            slot.partition("|")[0]
            for chain, held in t.minds.items()
            if len(chain) == 1 and chain[0] in witnesses
            for slot, k in held.items()
            if slot.endswith("|location") and k.polarity and k.value == box
        }
        - set(inside)
    )
    return inside, missing


def _search(t: Tracker, action: StoryAction) -> None:
    """Searching a container shows everyone present what is in it — and what is not:
    a witness who believed an object was there learns it is not."""
    who = t.entity("character", action.actor)
    box = t.known(action.target) or t.entity("object", action.target_name, container=True)
    place = t.place_of(who)
    witnesses = t.perceivers(action, t.present(place), (who,))
    inside, missing = _looked_in(t, box, witnesses)
    ev = t.event(
        "search",
        action,
        actor=who,
        participants=_unique(who, box, *inside),
        place=place,
        witnesses=witnesses,
    )
    covert, believed = t.covert(action, witnesses), t.believed_seen(action, witnesses)
    for obj in inside:
        t.observe(witnesses, obj, "location", box, ev, actor=who, covert=covert, believed=believed)
    for obj in missing:
        slot = f"{obj}|location"
        for w in witnesses:
            held = t.minds.get((w,), {}).get(slot)
            # only a witness that had it there (or had nothing) learns it is not there;
            # one that believes it is elsewhere keeps that belief
            if held is None or (held.value == box and held.polarity):
                t.believe(
                    (w,),
                    obj,
                    "location",
                    box,
                    polarity=False,
                    event=ev,
                    mode="participated" if w == who else "observed",
                    source=ev.id,
                )
        # the same for every chain over the witnesses, as each reads it
        t.share(
            witnesses,
            obj,
            "location",
            box,
            ev,
            mode="observed",
            actor=who,
            polarity=False,
            retract=True,
        )


# -- facts stated and seen ------------------------------------------------------------
def _fact(t: Tracker, clause: Clause) -> Fact:
    """The clause as a fact over identifiers (a location's container is introduced; a
    secret is its character's, its proposition kept as written)."""
    if is_secret(clause.attribute):
        owner = t.entity("character", clause.subject)
        return Fact(subject=owner, attribute=clause.attribute, value=secret_text(clause.value))
    subject = t.entity("object", clause.subject)
    if clause.attribute != "location":
        return Fact(subject=subject, attribute=clause.attribute, value=clause.value)
    target = slug(clause.value)
    if target not in t.entities:
        target = t.entity("object", clause.value, container=True)
    return Fact(subject=subject, attribute="location", value=target)


def _settle(t: Tracker, fact: Fact, place: str | None, ev: Event) -> None:
    """Make a stated or seen fact true in W (placing an unplaced container in ``place``)."""
    if (
        fact.attribute == "location"
        and place is not None
        and t.where(fact.value) is None
        and t.kind(fact.value) == "object"
    ):
        t.set_world(fact.value, "location", place, ev)
    t.set_world(fact.subject, fact.attribute, fact.value, ev)


def _state(t: Tracker, action: StoryAction) -> None:
    """A bare statement: made in the current scene, seen by everyone in it — but where a
    thing is, stated, is seen where it is: "The scarf is in the box." said of a box in the
    kitchen is not seen by those in the garden, where the scene moved with Cal.

    A change with a doer (``actors``) is that doer's act, done where the thing is: its
    event's actor, introduced if the story lacks it (:meth:`Tracker.doer`), never anyone
    else."""
    # its doer ("a stray cat knocked over the basket"), met first: a character perceives
    # its own act, a force (the wind) perceives nothing
    doer = t.doer(action.actors[0], force=action.by_force) if action.actors else None
    place = t.scene
    fact = _fact(t, action.proposition).model_copy(update={"truth": "true"})
    if fact.attribute == "location" and fact.polarity:
        place = (fact.value if t.kind(fact.value) == "place" else t.place_of(fact.value)) or place
    elif doer is not None:
        # an act on a thing is done where the thing is: "Ahmed emptied the basket" in the
        # pantry, not in the yard where the scene went with Ann
        place = t.place_of(fact.subject) or place
    mind = doer is not None and t.kind(doer) == "character"
    witnesses = t.perceivers(action, t.present(place), doers=(doer,) if mind and doer else ())
    ev = t.event(
        "state",
        action,
        actor=doer,
        participants=(fact.subject,),
        place=place,
        content=fact,
        witnesses=witnesses,
    )
    _settle(t, fact, place, ev)
    covert = t.covert(action, witnesses)
    t.observe(
        witnesses,
        fact.subject,
        fact.attribute,
        fact.value,
        ev,
        actor=doer if mind else None,
        covert=covert,
    )


def _perceive(t: Tracker, action: StoryAction) -> None:
    """``A saw that <clause>``: true in the world; only the named see it."""
    seers = [t.entity("character", a) for a in action.actors]
    place = t.place_of(seers[0])
    fact = _fact(t, action.proposition).model_copy(update={"truth": "true"})
    ev = t.event(
        "observe",
        action,
        actor=_one(seers),
        participants=seers,
        place=place,
        content=fact,
        witnesses=seers,
    )
    _settle(t, fact, place, ev)
    t.observe(seers, fact.subject, fact.attribute, fact.value, ev)


def _see(t: Tracker, action: StoryAction) -> None:
    who = t.entity("character", action.actor)
    place = t.place_of(who)
    t.event(
        "see",
        action,
        actor=who,
        participants=(who,),
        place=place,
        witnesses=t.perceivers(action, t.present(place), (who,)),
    )


def _known(t: Tracker, sid: str | None) -> tuple[str, ...]:
    return (sid,) if sid is not None and sid in t.entities else ()


def _feel(t: Tracker, action: StoryAction) -> None:
    # what a feeling is about may be a place, a container or an object: it is not
    # introduced here, so that a later, more telling mention decides its kind
    who = t.entity("character", action.actor)
    obj = t.known(action.obj) or name_id(action.obj) or "thing"
    verb = action.verb or "likes"
    attribute = f"feeling about {obj}"
    content = Fact(subject=who, attribute=attribute, value=verb, truth="true")
    witnesses = t.perceivers(action, t.present(t.scene), (who,))
    ev = t.event(
        "feel",
        action,
        actor=who,
        participants=_unique(who, *_known(t, obj)),
        place=t.scene,
        content=content,
        witnesses=witnesses,
    )
    t.set_world(who, attribute, verb, ev)
    t.observe(witnesses, who, attribute, verb, ev, actor=who, nested=False)


def _think(t: Tracker, action: StoryAction) -> None:
    """Thinking; with a clause ("A believes that the jar is empty"), A's belief alone,
    inferred (assumed, not seen): nothing of W or of anyone else's mind changes."""
    who = t.entity("character", action.actor)
    topic = t.known(action.obj)
    fact = _fact(t, action.clause) if action.clause is not None else None
    ev = t.event(
        "think",
        action,
        actor=who,
        participants=_unique(who, *_known(t, topic), *((fact.subject,) if fact else ())),
        place=t.place_of(who),
        witnesses=(who,),
    )
    if fact is not None:
        t.believe(
            (who,), fact.subject, fact.attribute, fact.value, mode="inferred", event=ev, source=None
        )


# -- what is said ---------------------------------------------------------------------
def _ask(t: Tracker, action: StoryAction) -> None:
    """A question is heard by everyone present; it changes no belief."""
    who = t.entity("character", action.actor)
    listener = t.entity("character", action.listener)
    obj = t.known(action.obj) or t.entity("object", action.object_name)
    place = t.place_of(who)
    t.event(
        "ask",
        action,
        actor=who,
        participants=_unique(who, listener, obj),
        place=place,
        witnesses=t.perceivers(action, t.present(place), (who, listener)),
    )


def _inform(t: Tracker, action: StoryAction) -> None:
    """``A told B that …`` out loud: a telling everyone present hears."""
    _communicate(t, action, "inform", t.entity("character", action.actor), (), private=False)


def _tell(t: Tracker, action: StoryAction) -> None:
    """A private telling: only its listeners hear it."""
    speaker = t.entity("character", action.actor)
    listeners = [t.entity("character", n) for n in action.listeners]
    _communicate(t, action, "tell", speaker, listeners, private=True)


def _claim(t: Tracker, action: StoryAction) -> None:
    _communicate(t, action, "claim", t.entity("character", action.actor), (), private=False)


def _say(t: Tracker, action: StoryAction) -> None:
    """An utterance: a public claim if it is a clause, else words everyone present hears."""
    speaker = t.entity("character", action.actor)
    if action.clause is not None:
        _communicate(t, action, "say", speaker, (), private=False)
        return
    place = t.place_of(speaker)
    # whom it was said to ("…," said Ann to Ben): among those it is about, not a witness
    # for being named (someone elsewhere does not hear it)
    listeners = [t.entity("character", n) for n in action.listeners]
    t.event(
        "say",
        action,
        actor=speaker,
        participants=_unique(speaker, *listeners),
        place=place,
        witnesses=t.perceivers(action, t.present(place), (speaker,)),
    )


def _communicate(
    t: Tracker,
    action: StoryAction,
    kind: str,
    speaker: str,
    listeners: Sequence[str],
    *,
    private: bool,
) -> None:
    place = t.place_of(speaker)
    fact = _fact(t, action.proposition)
    fact = fact.model_copy(update={"truth": t.truth(fact)})
    if private:
        audience = sorted({speaker, *listeners})
    else:
        audience = t.perceivers(action, t.present(place), (speaker,))
        listeners = [h for h in audience if h != speaker]
    listeners = sorted(set(listeners) - {speaker})
    slot = f"{fact.subject}|{fact.attribute}"
    spoken = t.minds.get((speaker,), {}).get(slot)
    source = spoken.source if spoken is not None else None
    ev = t.event(
        kind,
        action,
        actor=speaker,
        participants=_unique(speaker, *listeners, fact.subject),
        place=place,
        content=fact,
        witnesses=audience,
        private_to=listeners if private else (),
        causes=(source,) if source else (),
    )
    told: AcquisitionMode = "told_private" if private else "told_public"
    for listener in listeners:
        if not t.trusts(listener, speaker, slot, fact.value):
            continue
        # the listener adopts the claim and takes it as the speaker's own belief; the
        # speaker expects that uptake (the trust rule's inputs are public): every chain
        # over the two, except the speaker's own belief (what it says never changes it)
        t.believe(
            (listener,),
            fact.subject,
            fact.attribute,
            fact.value,
            event=ev,
            speaker=speaker,
            mode=told,
            source=source,
            refresh=True,
        )
        t.share(
            (speaker, listener),
            fact.subject,
            fact.attribute,
            fact.value,
            ev,
            mode=told,
            actor=speaker,
            speaker=speaker,
        )


HANDLERS: Mapping[ActionKind, Handler] = {
    "enter": _enter,
    "exit": _exit,
    "go": _go,
    "locate": _locate,
    "stay": _stay,
    "move": _move,
    "put": _move,
    "take": _take,
    "give": _give,
    "drop": _drop,
    "search": _search,
    "state": _state,
    "perceive": _perceive,
    "see": _see,
    "feel": _feel,
    "think": _think,
    "ask": _ask,
    "inform": _inform,
    "tell": _tell,
    "claim": _claim,
    "say": _say,
    "narration": _narration,
}
