"""Stories built by hand for tests, through the real builder and store in Redis.

:func:`tell_story` commits controlled-English turns through the offline memory-builder;
:func:`story_through` commits the hand-built Leo/Mara turns of story ``hb``
(:func:`turn1` .. :func:`turn3`, :func:`branch_turn` for a fork); :func:`setup`,
:func:`turn_delta` and :func:`new_story` build a story of utterances for narrative memory;
:func:`check_story` asserts the invariants a crash must not break; :func:`write_turn`
writes one turn as the writers of the crash and cluster tests do.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING

import redis.asyncio as aredis

from fabula.agents.contracts import Decision
from fabula.graph.commit import CommitPath, commit_text
from fabula.memory import keys
from fabula.memory.connection import connect
from fabula.memory.delta import DeltaBuilder, TurnDelta
from fabula.memory.rules import WorldRules
from fabula.memory.store import StoryStore
from fabula.worlds.loader import load_world, setup_delta

if TYPE_CHECKING:
    from fabula.graph.service import Fabula

__all__ = [
    "KEY_STORY",
    "STORY",
    "TEXTS",
    "branch_turn",
    "check_story",
    "new_story",
    "setup",
    "story_through",
    "tell_story",
    "turn1",
    "turn2",
    "turn3",
    "turn_delta",
    "write_turn",
]

STORY = "hb"
DEV = "d_mara_finds_the_brass_key"


TEXTS = {
    1: "Leo put the brass key in the desk drawer.",
    2: "Leo went to the hallway.",
    3: "Mara moved the brass key to the hollow book.",
}


def turn1() -> TurnDelta:
    """Leo puts the key in the drawer; both are present and both believe it; D opens."""
    b = DeltaBuilder(1, TEXTS[1])
    put = b.event("put", b.span_of(TEXTS[1]), actor="leo", place="study", witnesses=["leo", "mara"])
    b.state("brass_key", "location", "desk_drawer", event=put)
    b.belief(["leo"], "brass_key", "location", "desk_drawer", mode="participated", event=put)
    b.belief(["mara"], "brass_key", "location", "desk_drawer", mode="observed", event=put)
    assert b.open_development("goal", "Mara finds the brass key", participants=["mara"]) == DEV
    return b.build()


def turn2() -> TurnDelta:
    """Leo goes to the hallway (Mara sees him go); D advances; H proposes the hiding place."""
    b = DeltaBuilder(2, TEXTS[2])
    go = b.event("exit", b.span_of(TEXTS[2]), actor="leo", place="study", witnesses=["leo", "mara"])
    b.state("leo", "location", "hallway", event=go)
    b.belief(["leo"], "leo", "location", "hallway", mode="participated", event=go)
    b.belief(["mara"], "leo", "location", "hallway", mode="observed", event=go)
    opened = turn1().developments[0].record
    assert opened is not None
    b.update_development(opened, "advanced", event=go)
    hyp = b.hypothesis(DEV, "Mara hides the key in the hollow book", uncertainty=0.3)
    assert hyp.id == "h2.0"
    return b.build()


def turn3() -> TurnDelta:
    """Mara moves the key to the hollow book; only Mara witnesses it; she knows Leo didn't see."""
    b = DeltaBuilder(3, TEXTS[3])
    move = b.event("move", b.span_of(TEXTS[3]), actor="mara", place="study", witnesses=["mara"])
    b.state("brass_key", "location", "hollow_book", event=move)
    b.belief(["mara"], "brass_key", "location", "hollow_book", mode="participated", event=move)
    b.belief(["mara", "leo"], "brass_key", "location", "desk_drawer", mode="inferred", event=move)
    before = turn2()
    advanced = before.developments[0].record
    assert advanced is not None
    b.update_development(advanced, "resolved", event=move)
    b.realise(before.hypotheses[0])
    return b.build()


async def tell_story(
    client: aredis.Redis,
    turns: Sequence[str],
    rules: WorldRules | None = None,
    story: str = "s",
) -> StoryStore:
    """A new story with ``rules``, each text committed as the next turn."""
    store = StoryStore(client, story)
    await store.create(
        DeltaBuilder(0, "").build(),
        world="test",
        title="test",
        rules=rules,
    )
    path = CommitPath()  # the service's commit path, offline
    for turn, text in enumerate(turns, start=1):
        await commit_text(path, store, turn, text)
    return store


KEY_STORY = (
    "Leo entered the study. Mara entered the study. Leo put the key in the desk_drawer. "
    "Leo exited the study. Mara moved the key to the hollow_book."
)


def setup() -> TurnDelta:
    b = DeltaBuilder(0, "Ann, Ben and Cal. The hall and the garden.")
    for name in ("Ann", "Ben", "Cal"):
        b.entity("character", name)
    b.entity("place", "hall")
    b.entity("place", "garden")
    b.entity("object", "ledger")
    return b.build()


def turn_delta(
    turn: int, lines: list[tuple[str, str, tuple[str, ...]]], clock: str | None
) -> TurnDelta:
    """One turn: each line (speaker, words, witnesses) an utterance."""
    text = "\n".join(f"{who}: {words}" for who, words, _ in lines)
    b = DeltaBuilder(turn, text)
    b.clock = clock
    offset = 0
    for who, words, witnesses in lines:
        start = offset + len(who) + 2
        b.event(
            "say",
            b.span(start, start + len(words)),
            actor=who,
            participants=(who,),
            place="hall",
            witnesses=witnesses,
        )
        offset = start + len(words) + 1
    return b.build()


async def new_story(client: aredis.Redis, story: str) -> StoryStore:
    store = StoryStore(client, story)
    await store.create(setup(), world="test", title="T")
    return store


def branch_turn(turn: int, text: str = "Mara took the brass key.") -> TurnDelta:
    """On a branch: Mara takes the key herself; both see it."""
    b = DeltaBuilder(turn, text)
    take = b.event("take", b.span(0, len(text)), actor="mara", witnesses=["mara", "leo"])
    b.state("brass_key", "location", "mara", event=take)
    b.belief(["mara"], "brass_key", "location", "mara", mode="participated", event=take)
    b.belief(["leo"], "brass_key", "location", "mara", mode="observed", event=take)
    return b.build()


async def story_through(client: aredis.Redis, last: int) -> StoryStore:
    store = StoryStore(client, STORY)
    await store.create(setup_delta(load_world("hollow_book")), world="hollow_book", title="T")
    for delta in (turn1(), turn2(), turn3())[:last]:
        await store.commit(delta)
    return store


def check_story(url: str, story: str, branch: str = "main") -> int:
    """The invariants a crash must not break; returns the head.

    Turns 0..head are all there and nothing lies beyond the head; every event belongs to a
    committed turn and is listed under its turn; no character remembers an event twice or
    out of order.
    """
    client = connect(url)  # a cluster client on a cluster
    try:
        head = int(client.hget(keys.head(story, branch), "turn") or -1)
        turns = client.hgetall(keys.turns(story, branch))
        assert sorted(int(t) for t in turns) == list(range(head + 1)), (head, sorted(turns))
        listed: set[str] = set()
        for raw in turns.values():
            listed.update(json.loads(raw)["events"])
        events = client.hkeys(keys.events(story, branch))
        assert set(events) == listed, set(events) ^ listed
        for event in events:
            assert int(event[1:].split(".", 1)[0]) <= head
        # hollow_book's characters, or the synthetic world's (whichever the story has)
        for character in ("leo", "mara", "agent0", "agent1", "agent2"):
            memories = [
                json.loads(m) for m in client.lrange(keys.memories(story, branch, character), 0, -1)
            ]
            ids = [m["event"] for m in memories]
            assert len(ids) == len(set(ids)), f"{character} remembers an event twice"
            assert [m["turn"] for m in memories] == sorted(m["turn"] for m in memories)
            assert set(ids) <= listed
        return head
    finally:
        client.close()


async def write_turn(fab: Fabula, store: StoryStore, acked: dict[int, str], *, human: bool) -> None:
    """One turn, run through by the model, or approved by a human (``human``); once
    committed, its text is recorded in ``acked`` under its turn."""
    outcome = (await fab.run(store, auto=not human)).outcome
    if outcome == "pending":
        outcome = (await fab.decide(store, Decision(action="approve"))).outcome
    if outcome == "committed":
        head = await store.head()
        acked[head] = (await store.turn_texts(head, head))[0].text


async def opened_world(
    fab: Fabula, world: str, story: str, played: Sequence[str] = ()
) -> StoryStore:
    """The story ``story`` of the shipped world ``world`` with its scripted opening
    committed turn by turn, and ``played`` the characters a person plays."""
    pack = load_world(world)
    store = fab.store(await fab.create_story(pack, story, opening=False))
    for text in pack.opening.turns:
        await fab.commit_scripted(store, text)
    if played:
        await fab.set_played(store, list(played))
    return store
