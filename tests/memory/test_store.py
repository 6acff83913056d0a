"""StoryStore against a real Redis: atomic, idempotent, validated commits; lifecycle; raw reads."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import pytest
import redis.asyncio as aredis

from fabula.errors import InvalidDelta, StoryExists, TurnConflict
from fabula.memory import keys
from fabula.memory.connection import POOL_CONNECTIONS, POOL_WAIT_S, connect_async
from fabula.memory.delta import DeltaBuilder, TurnDelta
from fabula.memory.projections import project_beliefs, project_world
from fabula.memory.records import Development, Hypothesis, SourceSpan, State, StatusChange
from fabula.memory.store import StoryStore, list_stories
from fabula.testing.redis import on_cluster
from fabula.worlds.loader import load_world, setup_delta

STORY = "hb"
TURN1 = "Leo put the brass key in the desk drawer."
TURN2 = "Mara moved the brass key to the hollow book."

Snapshot = dict[str, tuple[str, object]]


async def snapshot(client: aredis.Redis, pattern: str = "fab:*") -> Snapshot:
    """Every key matching ``pattern`` with its type and full contents."""
    out: Snapshot = {}
    async for key in client.scan_iter(match=pattern, count=1000):
        kind = await client.type(key)
        value: object
        if kind == "hash":
            value = await client.hgetall(key)  # type: ignore[misc]
        elif kind == "zset":
            value = await client.zrange(key, 0, -1, withscores=True)
        elif kind == "set":
            value = sorted(await client.smembers(key))  # type: ignore[misc]
        elif kind == "string":
            value = await client.get(key)
        else:  # pragma: no cover - the store writes no other types
            value = await client.dump(key)
        out[key] = (kind, value)
    return out


async def new_story(client: aredis.Redis, story: str = STORY) -> StoryStore:
    store = StoryStore(client, story)
    await store.create(setup_delta(load_world("hollow_book")), world="hollow_book", title="T")
    return store


def turn1_builder() -> DeltaBuilder:
    """Leo puts the key in the drawer; both are present and both believe it is there."""
    b = DeltaBuilder(1, TURN1)
    put = b.event(
        "put",
        b.span_of(TURN1),
        actor="leo",
        participants=["brass_key", "desk_drawer"],
        place="study",
        witnesses=["leo", "mara"],
    )
    b.state("brass_key", "location", "desk_drawer", event=put)
    b.belief(["leo"], "brass_key", "location", "desk_drawer", mode="participated", event=put)
    b.belief(["mara"], "brass_key", "location", "desk_drawer", mode="observed", event=put)
    return b


def turn2_delta() -> TurnDelta:
    b = DeltaBuilder(2, TURN2)
    move = b.event("move", b.span_of(TURN2), actor="mara", place="study", witnesses=["mara"])
    b.state("brass_key", "location", "hollow_book", event=move)
    b.belief(["mara"], "brass_key", "location", "hollow_book", mode="participated", event=move)
    return b.build()


@pytest.fixture()
async def store(aredis_client: aredis.Redis) -> StoryStore:
    return await new_story(aredis_client)


class TestCommit:
    async def test_commit_advances_head(self, store: StoryStore) -> None:
        """A valid delta commits with status ok and becomes the branch's head."""
        assert await store.head() == 0
        result = await store.commit(turn1_builder().build())
        assert (result.turn, result.status) == (1, "committed")
        assert await store.head() == 1

    async def test_same_delta_twice_is_a_duplicate_and_writes_nothing(
        self, store: StoryStore
    ) -> None:
        """Re-sending a committed turn (even rebuilt from scratch) is a no-op: 'duplicate'."""
        await store.commit(turn1_builder().build())
        before = await snapshot(store.client)
        again = await store.commit(turn1_builder().build())
        assert again.status == "duplicate"
        assert await snapshot(store.client) == before

    async def test_setup_turn_resent_is_a_duplicate(self, store: StoryStore) -> None:
        """Turn 0 sent again after later turns is still recognised as a duplicate."""
        await store.commit(turn1_builder().build())
        before = await snapshot(store.client)
        result = await store.commit(setup_delta(load_world("hollow_book")))
        assert result.status == "duplicate"
        assert await snapshot(store.client) == before

    async def test_same_turn_other_content_conflicts(self, store: StoryStore) -> None:
        """A committed turn re-sent with other content raises TurnConflict and writes nothing."""
        await store.commit(turn1_builder().build())
        before = await snapshot(store.client)
        other = DeltaBuilder(1, "Leo went to the hallway.")
        other.event("exit", other.span(0, 4), actor="leo")
        with pytest.raises(TurnConflict) as info:
            await store.commit(other.build())
        assert info.value.context["turn"] == 1
        assert "already committed" in str(info.value)
        assert await snapshot(store.client) == before

    async def test_usage_is_written_with_the_turn(self, store: StoryStore) -> None:
        """The model usage that made a turn is written in the commit's own call: with the
        turn, never without it (a refused turn writes none), and a duplicate keeps the
        first's."""
        usage = {"writer": {"input_tokens": 120, "output_tokens": 40, "calls": 1, "retries": 0}}
        stats = await store.client.info("commandstats")
        calls = stats["cmdstat_fcall"]["calls"]
        await store.commit(turn1_builder().build(), usage=usage)
        stats = await store.client.info("commandstats")
        assert stats["cmdstat_fcall"]["calls"] == calls + 1
        assert await store.turn_usage() == {1: usage}
        await store.commit(turn1_builder().build(), usage={"writer": {"calls": 9}})
        assert await store.turn_usage() == {1: usage}
        gap = DeltaBuilder(3, TURN1)
        gap.event("put", gap.span_of(TURN1), actor="leo")
        with pytest.raises(TurnConflict):
            await store.commit(gap.build(), usage=usage)
        assert await store.turn_usage() == {1: usage}

    async def test_gap_in_turns_names_the_next_turn(self, store: StoryStore) -> None:
        """A turn that skips ahead raises TurnConflict naming the next turn; nothing written."""
        before = await snapshot(store.client)
        b = DeltaBuilder(3, TURN1)
        b.event("put", b.span_of(TURN1), actor="leo")
        with pytest.raises(TurnConflict) as info:
            await store.commit(b.build())
        assert "next turn is 1" in str(info.value)
        assert await snapshot(store.client) == before
        assert await store.head() == 0


def _bad_span_outside(b: DeltaBuilder) -> None:
    b.event("say", SourceSpan(turn=1, start=5, end=500, quote=TURN1[5:]), actor="leo")


def _bad_span_quote(b: DeltaBuilder) -> None:
    b.event("say", SourceSpan(turn=1, start=0, end=3, quote="Mar"), actor="leo")


def _bad_span_turn(b: DeltaBuilder) -> None:
    b.event("say", SourceSpan(turn=0, start=0, end=3, quote="Leo"), actor="leo")


def _bad_entity(b: DeltaBuilder) -> None:
    b.event("say", b.span(0, 3), actor="zed")


def _bad_holder(b: DeltaBuilder) -> None:
    b.belief(["study"], "brass_key", "location", "desk_drawer", mode="observed", event="e1.0")


def _bad_event(b: DeltaBuilder) -> None:
    b.belief(["leo"], "brass_key", "location", "desk_drawer", mode="observed", event="e0.7")


def _bad_state_id(b: DeltaBuilder) -> TurnDelta:
    b.state("leo", "mood", "calm")
    delta = b.build()
    renamed = delta.states[-1].model_copy(update={"id": "leo_mood"})
    return delta.model_copy(update={"states": (*delta.states[:-1], renamed)})


def _bad_duplicate_entity(b: DeltaBuilder) -> None:
    b.entity("character", "Leo")


def _bad_duplicate_in_delta(b: DeltaBuilder) -> None:
    b.entity("object", "lamp")
    b.entity("object", "Lamp")


def _bad_development(b: DeltaBuilder) -> None:
    b.update_development(_development("d_no_such_thing"), "advanced")


def _development(dev_id: str) -> Development:
    opened = StatusChange(turn=0, status="opened")
    return Development(id=dev_id, kind="goal", title="No such thing", history=(opened,))


def _bad_hypothesis_development(b: DeltaBuilder) -> None:
    b.hypothesis("d_no_such_thing", "It all goes wrong")


def _bad_hypothesis(b: DeltaBuilder) -> None:
    b.realise(Hypothesis(id="h0.0", development="d_x", premise="It all goes wrong", proposed=0))


def _bad_status_change_record(b: DeltaBuilder) -> TurnDelta:
    """A status change that does not carry the development it leaves (the commit stores
    whole records and edits none, so it would have nothing to store)."""
    b.update_development(_development("d_x"), "advanced")
    delta = b.build()
    bare = delta.developments[-1].model_copy(update={"development": None})
    return delta.model_copy(update={"developments": (bare,)})


def _bad_realised_record(b: DeltaBuilder) -> TurnDelta:
    """A realised hypothesis whose record is not realised at this turn."""
    hyp = Hypothesis(id="h0.0", development="d_x", premise="It all goes wrong", proposed=0)
    return b.build().model_copy(update={"realised": (hyp,)})


class TestValidation:
    """Each rejection raises InvalidDelta naming the field, and the store is left untouched."""

    @pytest.mark.parametrize(
        ("spoil", "field", "words"),
        [
            (_bad_span_outside, "events[1].span", "outside"),
            (_bad_span_quote, "events[1].span", "quotes"),
            (_bad_span_turn, "events[1].span", "turn 0"),
            (_bad_entity, "events[1].actor", "unknown entity zed"),
            (_bad_holder, "beliefs[2].holder[0]", "not a character"),
            (_bad_event, "beliefs[2].event", "unknown event e0.7"),
            (_bad_state_id, "states[1].id", "expected s1.1"),
            (_bad_duplicate_entity, "entities[0]", "already exists"),
            (_bad_duplicate_in_delta, "entities[1]", "used twice"),
            (_bad_development, "developments[0].id", "unknown development"),
            (_bad_hypothesis_development, "hypotheses[0].development", "unknown development"),
            (_bad_hypothesis, "realised[0]", "unknown hypothesis"),
            (_bad_status_change_record, "developments[0].development", "carries its development"),
            (_bad_realised_record, "realised[0]", "realised at turn 1"),
        ],
        ids=[
            "span-outside-text",
            "span-quote-mismatch",
            "span-other-turn",
            "unknown-entity",
            "holder-not-character",
            "unknown-event",
            "state-id-not-system",
            "duplicate-new-entity",
            "duplicate-in-delta",
            "unknown-development",
            "hypothesis-unknown-development",
            "unknown-hypothesis",
            "status-change-without-record",
            "realised-record-not-realised",
        ],
    )
    async def test_rejection_names_field_and_writes_nothing(
        self,
        store: StoryStore,
        spoil: Callable[[DeltaBuilder], TurnDelta | None],
        field: str,
        words: str,
    ) -> None:
        """A delta valid except for one field is refused whole, and the error names that field."""
        b = turn1_builder()  # valid records come first: a partial write would show
        delta = spoil(b) or b.build()
        before = await snapshot(store.client)
        with pytest.raises(InvalidDelta) as info:
            await store.commit(delta)
        assert info.value.context["field"] == field
        assert str(info.value).startswith(field)
        assert words in str(info.value)
        assert await snapshot(store.client) == before
        assert await store.head() == 0

    async def test_the_same_turn_commits_once_fixed(self, store: StoryStore) -> None:
        """A refused turn leaves the turn free: the corrected delta then commits."""
        bad = turn1_builder()
        _bad_entity(bad)
        with pytest.raises(InvalidDelta):
            await store.commit(bad.build())
        assert (await store.commit(turn1_builder().build())).status == "committed"


class TestHistory:
    async def test_state_change_closes_the_previous_interval(self, store: StoryStore) -> None:
        """A change closes the old record at the turn (valid_to = turn) and opens a new one;
        the history hash holds the closed records, the current one is in W's current hash
        only (written once), and every record is in the valid_from index."""
        await store.commit(turn1_builder().build())
        await store.commit(turn2_delta())
        records = await store.client.hgetall(keys.world_records(STORY, "main"))  # type: ignore[misc]
        key_states = sorted(
            (State.model_validate_json(v) for v in records.values()),
            key=lambda s: s.valid_from,
        )
        key_states = [s for s in key_states if s.slot == "brass_key|location"]
        assert [(s.value, s.valid_from, s.valid_to) for s in key_states] == [
            ("leo", 0, 1),
            ("desk_drawer", 1, 2),
        ]
        current = (await project_world(store)).get("brass_key", "location")
        assert current is not None
        assert (current.value, current.valid_from, current.valid_to) == ("hollow_book", 2, None)
        assert current.id not in records
        indexed = await store.client.zrange(keys.world_from(STORY, "main"), 0, -1)
        assert {*(s.id for s in key_states), current.id} <= set(indexed)

    async def test_history_stays_queryable(self, store: StoryStore) -> None:
        """as_of answers where the key was, in W and in a mind, at every turn."""
        await store.commit(turn1_builder().build())
        await store.commit(turn2_delta())
        world = [(await project_world(store, as_of=t)).where("brass_key") for t in range(3)]
        assert world == ["leo", "desk_drawer", "hollow_book"]
        mara = [
            (await project_beliefs(store, "mara", as_of=t)).where("brass_key") for t in range(3)
        ]
        assert mara == ["leo", "desk_drawer", "hollow_book"]
        leo = [(await project_beliefs(store, "leo", as_of=t)).where("brass_key") for t in range(3)]
        assert leo == ["leo", "desk_drawer", "desk_drawer"]


class TestLifecycle:
    async def test_create_refuses_an_existing_story(self, store: StoryStore) -> None:
        """Creating a story that exists raises StoryExists (a conflict, not bad input) and
        leaves it as it was."""
        before = await snapshot(store.client)
        with pytest.raises(StoryExists) as info:
            await StoryStore(store.client, STORY).create(
                setup_delta(load_world("hollow_book")), world="other", title="Other"
            )
        assert "already exists" in str(info.value)
        assert await snapshot(store.client) == before

    async def test_create_records_meta_and_lists_the_story(self, store: StoryStore) -> None:
        """create() stores the world and title and adds the story to the story list."""
        info = await store.info()
        assert (info.world, info.title) == ("hollow_book", "T")
        assert await list_stories(store.client) == [STORY]

    async def test_create_with_an_invalid_setup_leaves_nothing(
        self, aredis_client: aredis.Redis
    ) -> None:
        """A setup refused inside the commit function leaves no trace of the story."""
        b = DeltaBuilder(0, "A room.")
        b.event("setup", b.span(0, 7), place="nowhere")
        with pytest.raises(InvalidDelta) as info:
            await StoryStore(aredis_client, "broken").create(b.build(), world="w", title="t")
        assert info.value.context["field"] == "events[0].place"
        assert await snapshot(aredis_client) == {}

    async def test_delete_removes_every_key(self, store: StoryStore) -> None:
        """delete() removes all keys of the story (world, minds, meta) and nothing else; it
        leaves only its deletion mark, which expires (and fences a writer meanwhile)."""
        other = await new_story(store.client, "other")
        await store.commit(turn1_builder().build())
        kept = await snapshot(store.client, "fab:{other}:*")
        removed = await store.delete()
        assert removed > 0
        left = await snapshot(store.client, keys.story_pattern(STORY))
        assert list(left) == [keys.deleted(STORY)], left
        assert 0 < await store.client.ttl(keys.deleted(STORY)) <= keys.DELETED_S
        assert not await store.exists()
        assert await store.was_deleted()
        assert await list_stories(store.client) == ["other"]
        assert await snapshot(store.client, "fab:{other}:*") == kept
        assert await other.head() == 0


class TestReads:
    async def test_turn_texts_on_main(self, store: StoryStore) -> None:
        """turn_texts returns each accepted text with its event ids, in turn order."""
        await store.commit(turn1_builder().build())
        await store.commit(turn2_delta())
        texts = await store.turn_texts()
        assert [(t.turn, t.text, t.events) for t in texts] == [
            (1, TURN1, ("e1.0",)),
            (2, TURN2, ("e2.0",)),
        ]
        setup = (await store.turn_texts(first=0, last=0))[0]
        assert setup.text == load_world("hollow_book").premise
        assert [t.turn for t in await store.turn_texts(first=2)] == [2]

    async def test_events_by_id(self, store: StoryStore) -> None:
        """events() returns the stored events in the order asked, skipping unknown ids."""
        delta = turn1_builder().build()
        await store.commit(delta)
        await store.commit(turn2_delta())
        found = await store.events(["e2.0", "e1.0", "e5.0", "e0.0"])
        assert [e.id for e in found] == ["e2.0", "e1.0", "e0.0"]
        assert found[1] == delta.events[0]
        assert found[1].effects == ("s1.0",)
        assert found[0].witnesses == ("mara",)
        assert await store.events([]) == []


class TestStoredRecords:
    """The rules of stored records that the commit function relies on (memory/payload.py)."""

    async def test_the_layout_the_commit_function_reads(self, aredis_client: aredis.Redis) -> None:
        """States, beliefs and entities begin with their id (entities then their kind),
        open records carry no valid_to and a closed one ends with it; developments and
        hypotheses are whole records (realising one is covered by the projection tests)."""
        store = StoryStore(aredis_client, STORY)
        pack = load_world("hollow_book")
        await store.create(setup_delta(pack), world=pack.id, title="T")
        b = DeltaBuilder(1, "Leo put the brass key in the desk drawer.")
        put = b.event("put", b.span(0, 41), actor="leo", witnesses=["leo"])
        b.state("brass_key", "location", "desk_drawer", event=put)
        b.belief(["leo"], "brass_key", "location", "desk_drawer", mode="participated", event=put)
        await store.commit(b.build())
        current = await aredis_client.hvals(keys.world_current(STORY, "main"))
        history = await aredis_client.hvals(keys.world_records(STORY, "main"))
        beliefs = await aredis_client.hvals(keys.beliefs_current(STORY, "main", "leo"))
        for raw in [*current, *beliefs]:
            record_id = raw.removeprefix('{"id":"').partition('"')[0]
            assert raw.startswith(f'{{"id":"{record_id}",') and "valid_to" not in raw
        assert history and all(r.endswith(',"valid_to":1}') for r in history)  # closed only
        for entity_id, raw in (await aredis_client.hgetall(keys.entities(STORY))).items():
            kind = (await store.entities())[entity_id].kind
            assert raw.startswith(f'{{"id":"{entity_id}","kind":"{kind}"')
        for dev_id, raw in (await aredis_client.hgetall(keys.developments(STORY, "main"))).items():
            assert Development.model_validate_json(raw).id == dev_id


@pytest.mark.skipif(on_cluster(), reason="redis-py's cluster client keeps a pool per node")
class TestConnectionPool:
    async def test_a_full_pool_waits(self, redis_url: str) -> None:
        """More commands at once than the pool holds wait for a connection (a blocking pool)
        instead of failing with 'Too many connections'."""
        client = connect_async(redis_url, max_connections=3)
        try:
            got = await asyncio.gather(
                *[client.blpop(["fab:{pool}:none"], timeout=0.05) for _ in range(30)]
            )
            assert got == [None] * 30
        finally:
            await client.aclose()

    def test_every_client_has_a_bounded_waiting_pool(self, redis_url: str) -> None:
        """The clients Fabula opens wait (for ``POOL_WAIT_S``) on a bounded pool."""
        client = connect_async(redis_url)
        pool = client.connection_pool
        assert isinstance(pool, aredis.BlockingConnectionPool)
        assert pool.max_connections == POOL_CONNECTIONS and pool.timeout == POOL_WAIT_S
