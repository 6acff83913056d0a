"""Invariants of the store under random sequences of valid turns (hypothesis, real Redis)."""

from __future__ import annotations

import itertools
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import redis.asyncio as aredis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fabula.memory import keys
from fabula.memory.delta import DeltaBuilder, TurnDelta
from fabula.memory.projections import project_beliefs, project_world
from fabula.memory.records import ACQUISITION_MODES, Belief, State
from fabula.memory.store import StoryStore

CHARACTERS = ("ava", "ben", "cal")
PLACES = ("kitchen", "garden", "attic")
CONTAINERS = ("crate", "basket")  # objects that hold things; they stay where they start
THINGS = ("apple", "coin")  # objects that move among places and containers
STARTS = {
    "ava": "kitchen",
    "ben": "kitchen",
    "cal": "garden",
    "crate": "kitchen",
    "basket": "attic",
    "apple": "crate",
    "coin": "garden",
}

Go = tuple[str, str, str]  # ("go", character, place)
Put = tuple[str, str, str, str]  # ("put", character, thing, place or container)
Action = Go | Put

_story_ids = itertools.count()

go = st.tuples(st.just("go"), st.sampled_from(CHARACTERS), st.sampled_from(PLACES))
put = st.tuples(
    st.just("put"),
    st.sampled_from(CHARACTERS),
    st.sampled_from(THINGS),
    st.sampled_from(PLACES + CONTAINERS),
)
turns_strategy = st.lists(
    st.lists(st.one_of(go, put), min_size=1, max_size=3), min_size=1, max_size=6
)


@dataclass
class Replay:
    """The expected world and minds, replayed in Python, after each turn."""

    world: dict[str, str] = field(default_factory=dict)
    minds: dict[str, dict[str, str]] = field(default_factory=lambda: defaultdict(dict))
    world_at: list[dict[str, str]] = field(default_factory=list)
    minds_at: list[dict[str, dict[str, str]]] = field(default_factory=list)

    def place_of(self, entity: str) -> str:
        while entity not in PLACES:
            entity = self.world[f"{entity}|location"]
        return entity

    def present(self, place: str) -> list[str]:
        return [c for c in CHARACTERS if self.world[f"{c}|location"] == place]

    def snapshot(self) -> None:
        self.world_at.append(dict(self.world))
        self.minds_at.append({c: dict(self.minds[c]) for c in CHARACTERS})


def setup(replay: Replay) -> TurnDelta:
    text = "A small house with a kitchen, a garden and an attic."
    b = DeltaBuilder(0, text)
    for place in PLACES:
        b.entity("place", place)
    for character in CHARACTERS:
        b.entity("character", character)
    for obj in (*CONTAINERS, *THINGS):
        b.entity("object", obj, attributes={"container": "yes"} if obj in CONTAINERS else None)
    event = b.event("setup", b.span(0, len(text)), witnesses=CHARACTERS)
    for subject, where in STARTS.items():
        b.state(subject, "location", where, event=event)
        replay.world[f"{subject}|location"] = where
    for character in CHARACTERS:
        here = replay.place_of(character)
        for subject in STARTS:
            if replay.place_of(subject) == here:
                slot = f"{subject}|location"
                b.belief(
                    [character],
                    subject,
                    "location",
                    replay.world[slot],
                    mode="observed",
                    event=event,
                )
                replay.minds[character][slot] = replay.world[slot]
    replay.snapshot()
    return b.build()


def sentence(action: Action) -> str:
    if action[0] == "go":
        return f"{action[1]} went to the {action[2]}."
    return f"{action[1]} put the {action[2]} in the {action[3]}."


def turn_delta(turn: int, actions: Sequence[Action], replay: Replay) -> TurnDelta:
    """One turn: each action an event; witnesses are the characters present; each witness
    believes the new location, linked to the event of this turn that showed it."""
    text = " ".join(sentence(a) for a in actions)
    b = DeltaBuilder(turn, text)
    offset = 0
    for action in actions:
        span = b.span_of(sentence(action), offset)
        offset = span.end
        actor = action[1]
        if action[0] == "go":
            subject, target = actor, action[2]
            seen_at = {replay.place_of(actor), target}
        else:
            subject, target = action[2], action[3]
            seen_at = {replay.place_of(actor)}
        witnesses = sorted({c for p in seen_at for c in replay.present(p)} | {actor})
        event = b.event(action[0], span, actor=actor, witnesses=witnesses)
        b.state(subject, "location", target, event=event)
        slot = f"{subject}|location"
        replay.world[slot] = target
        for who in witnesses:
            mode = "participated" if who == actor else "observed"
            b.belief([who], subject, "location", target, mode=mode, event=event)
            replay.minds[who][slot] = target
    replay.snapshot()
    return b.build()


def assert_no_overlap(records: Iterable[State | Belief], what: str) -> None:
    """Per slot (and holder chain): at most one open record, no two non-empty intervals overlap."""
    by_slot: dict[str, list[State | Belief]] = defaultdict(list)
    for record in records:
        chain = record.chain if isinstance(record, Belief) else ""
        by_slot[f"{chain}:{record.slot}"].append(record)
    for slot, history in by_slot.items():
        assert sum(r.valid_to is None for r in history) <= 1, (what, slot, history)
        spans = [(r.valid_from, r.valid_to if r.valid_to is not None else 10**9) for r in history]
        spans = [s for s in spans if s[0] < s[1]]
        for (a_from, a_to), (b_from, b_to) in itertools.combinations(spans, 2):
            assert a_to <= b_from or b_to <= a_from, (what, slot, history)


class TestRandomStories:
    @settings(
        max_examples=40,
        deadline=None,
        suppress_health_check=[HealthCheck.function_scoped_fixture],
    )
    @given(turns=turns_strategy)
    async def test_invariants_hold(
        self, aredis_client: aredis.Redis, turns: list[list[Action]]
    ) -> None:
        """Random valid turns keep W's and B's intervals disjoint, as_of equal to a replay
        with nothing from later turns, and every belief linked to an existing event."""
        replay = Replay()
        store = StoryStore(aredis_client, f"prop{next(_story_ids)}")
        await store.create(setup(replay), world="house", title="House")
        for turn, actions in enumerate(turns, start=1):
            assert (await store.commit(turn_delta(turn, actions, replay))).status == "committed"
        head = len(turns)

        raw = await aredis_client.hvals(keys.world_records(store.story, "main"))  # type: ignore[misc]
        assert_no_overlap((State.model_validate_json(v) for v in raw), "W")

        for t in range(head + 1):
            world = await project_world(store, as_of=t)
            assert all(s.valid_from <= t for s in world.states.values())
            assert {slot: s.value for slot, s in world.states.items()} == replay.world_at[t]
            for character in CHARACTERS:
                mind = await project_beliefs(store, character, as_of=t)
                assert all(b.valid_from <= t for b in mind.beliefs.values())
                assert {slot: b.value for slot, b in mind.beliefs.items()} == (
                    replay.minds_at[t][character]
                )
        current = await project_world(store)
        assert current.states == (await project_world(store, as_of=head)).states

        for character in CHARACTERS:
            raw = await aredis_client.hvals(  # type: ignore[misc]
                keys.belief_records(store.story, "main", character)
            )
            beliefs = [Belief.model_validate_json(v) for v in raw]
            assert_no_overlap(beliefs, f"B[{character}]")
            events = {e.id: e for e in await store.events(sorted({b.event for b in beliefs}))}
            for belief in beliefs:
                assert belief.holder[0] == character
                assert belief.mode in ACQUISITION_MODES
                event = events.get(belief.event)
                assert event is not None, belief
                assert event.turn == belief.valid_from
                assert character in event.witnesses
