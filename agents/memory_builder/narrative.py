"""Developments and hypotheses: the part of the memory-builder that tracks the plot.

After the access tracker has read a turn, :func:`enrich` adds to its delta:

- links from each event to the open developments it moves — an object the development's
  title names changes place, is searched for or told about; for a development naming no
  object, a participant speaks with someone — and one ``advanced`` step per development
  so moved (acting is not enough: a participant walking about moves nothing);
- the hypotheses this turn's text made true (every fact a hypothesis ``realises`` holds in
  the world after the turn), which are marked realised — never the other way round: a
  hypothesis never writes a fact;
- for each open development without open hypotheses, a few new ones (who ends up with the
  objects its title names), so the planner always sees possible continuations.
"""

from __future__ import annotations

from fabula.agents.views import AuthorView
from fabula.memory.delta import DevelopmentUpdate, TurnDelta
from fabula.memory.delta import realised as realised_at
from fabula.memory.records import Development, Event, Fact, Hypothesis, StatusChange

MAX_HYPOTHESES = 3


def _world_after(view: AuthorView, delta: TurnDelta) -> dict[str, str]:
    world = {slot: s.value for slot, s in view.world.states.items() if s.polarity}
    for state in delta.states:
        if state.polarity:
            world[state.slot] = state.value
        else:
            world.pop(state.slot, None)
    return world


def propose_hypotheses(view: AuthorView, turn: int, start: int = 0) -> list[Hypothesis]:
    """New hypotheses for every open development that has none open, numbered from ``start``."""
    out: list[Hypothesis] = []
    open_for = {h.development for h in view.hypotheses.values() if h.status == "open"}
    characters = view.characters()
    for dev in view.open_developments():
        if dev.id in open_for:
            continue
        title = dev.title.lower()
        objects = [
            e.id for e in view.entities.values() if e.kind == "object" and e.name.lower() in title
        ]
        candidates = list(dict.fromkeys([*dev.participants, *characters]))[:MAX_HYPOTHESES]
        for obj in objects[:1]:
            for who in candidates:
                name, thing = view.name(who), view.name(obj)
                out.append(
                    Hypothesis(
                        id=f"h{turn}.{start + len(out)}",
                        development=dev.id,
                        premise=f"{name} ends up with the {thing}",
                        possible_events=(f"{name} finds the {thing}", f"{name} takes the {thing}"),
                        constraints=(
                            f"the {thing} is in one place at a time",
                            "characters act on what they believe",
                        ),
                        uncertainty=0.5,
                        proposed=turn,
                        realises=(Fact(subject=obj, attribute="location", value=who),),
                    )
                )
        if not objects and dev.participants:
            who = dev.participants[0]
            out.append(
                Hypothesis(
                    id=f"h{turn}.{start + len(out)}",
                    development=dev.id,
                    premise=f"{view.name(who)} settles '{dev.title}'",
                    possible_events=(f"{view.name(who)} acts on '{dev.title}'",),
                    constraints=("characters act on what they believe",),
                    uncertainty=0.7,
                    proposed=turn,
                )
            )
    return out


def _latest(delta: TurnDelta, dev_id: str) -> Development | None:
    """Development ``dev_id`` as ``delta`` leaves it, if it touches it."""
    for update in reversed(delta.developments):
        if update.id == dev_id:
            return update.record
    return None


_DEEDS = frozenset({"take", "put", "move", "give", "drop", "search"})
_TELLINGS = frozenset({"tell", "inform", "claim", "say", "ask"})


def _named_objects(view: AuthorView, dev: Development) -> set[str]:
    """The objects a development's title names ("Who gets the logbook": the logbook)."""
    title = dev.title.lower()
    return {e.id for e in view.entities.values() if e.kind == "object" and e.name.lower() in title}


def _moves(view: AuthorView, dev: Development, event: Event, changed: set[str]) -> bool:
    """Whether ``event`` moves ``dev``: an object its title names changes place or is told
    about (or searched for) by anyone; for a development naming no object, one of its
    participants speaks with someone else."""
    involved = {p for p in (event.actor, *event.participants) if p is not None}
    objects = _named_objects(view, dev)
    if objects:
        about = involved
        if event.content is not None:
            about.add(event.content.subject)
        return bool(objects & (about | changed)) and event.kind in _DEEDS | _TELLINGS
    people = {p for p in involved if view.kind(p) == "character"}
    return event.kind in _TELLINGS and bool(people & set(dev.participants)) and len(people) > 1


def enrich(view: AuthorView, delta: TurnDelta) -> TurnDelta:
    """``delta`` with development links and steps, realised and new hypotheses (see above)."""
    turn = delta.turn
    open_devs = view.open_developments()
    events = list(delta.events)
    moved: dict[str, str] = {}
    changed_by: dict[str, set[str]] = {}
    for state in delta.states:
        if state.event and state.attribute == "location":
            changed_by.setdefault(state.event, set()).add(state.subject)
    for i, event in enumerate(events):
        changed = changed_by.get(event.id, set())
        links = tuple(d.id for d in open_devs if _moves(view, d, event, changed))
        if links:
            events[i] = event.model_copy(update={"developments": links})
            for dev_id in links:
                moved.setdefault(dev_id, event.id)
    updates = [
        DevelopmentUpdate.status_change(
            _latest(delta, dev_id) or view.developments[dev_id],
            StatusChange(
                turn=turn, status="advanced", event=event_id, note="an event of the turn moved it"
            ),
        )
        for dev_id, event_id in sorted(moved.items())
    ]
    world = _world_after(view, delta)
    realised = tuple(
        realised_at(h, turn)
        for h in view.hypotheses.values()
        if h.status == "open"
        and h.realises
        and all(world.get(f.slot) == f.value for f in h.realises)
    )
    hypotheses = propose_hypotheses(view, turn, start=len(delta.hypotheses))
    return delta.model_copy(
        update={
            "events": tuple(events),
            "developments": (*delta.developments, *updates),
            "realised": (*delta.realised, *realised),
            "hypotheses": (*delta.hypotheses, *hypotheses),
        }
    )
