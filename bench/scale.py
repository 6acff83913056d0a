"""``fabula bench scale``: how commit and projection cost grow with the story and the cast.

For each (turns, characters) it builds a synthetic story in a real Redis — the characters
moving among 10 places, 200 objects, about five events a turn (character moves, object moves,
property changes, private tellings) — with the beliefs access tracking would derive: every
witness of an event believes its outcome (rewritten each time: its freshness moves), and
every ordered pair of witnesses (a, b) holds the nested belief "a thinks b believes it",
written, as the tracker does, only when its value changes (depth 2; deeper chains are
bounded by the same co-presence and cost proportionally more writes). It reports commit
latency, the latency of projecting one character's current beliefs and the current world,
Redis round trips per operation, and Redis memory per turn (what the story's keys hold,
by ``MEMORY USAGE``, over its turns). The story is consolidated into
its hierarchy after every turn, as the application does (``consolidate_ms``: one turn's
consolidation, sampled over the last turns), so the writer's assembly (``assemble_ms``) reads the
summaries of scenes and plotlines as a writer's would.

The baseline in the same run is the first size: the target is that no figure grows by more
than 1.5x from 1,000 to 10,000 turns (no scans of the whole story on these paths).

``--cast 5,20,50,100`` measures the cast instead, with the real memory-builder (the offline
reader and the access tracker, nested chains to the default depth 4) and the real
commit: every character in one room of a two-room world, :data:`CAST_TURNS` turns of
controlled English in which objects are put and moved, someone steps out and back (so
the room's minds differ), and characters tell each other where things are. Per cast size:
the time to build and commit a turn (p50/p95), the payload a turn sends, the records it
writes, and what the story holds in Redis per turn (``MEMORY USAGE`` of its keys) and in
keys; then a nested read (a chain of four) and a fork. The baseline is the first cast
size: ``growth`` is each figure over the baseline's, beside the cast's own ratio — linear
growth in the cast is a growth equal to that ratio (it was ~ratio⁴ when every chain over
the witnesses was written).
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import redis.asyncio as aredis

from fabula.agents.memory_builder.offline import OfflineMemoryBuilder
from fabula.bench.report import percentiles, print_table, write_json
from fabula.memory import keys
from fabula.memory.branching import fork
from fabula.memory.delta import DeltaBuilder, TurnDelta
from fabula.memory.hierarchy import consolidate
from fabula.memory.index.build import index_through
from fabula.memory.projections import project_beliefs, project_world
from fabula.memory.recall.context import author_context
from fabula.memory.records import Event, SourceSpan
from fabula.memory.store import StoryStore
from fabula.worlds.loader import setup_delta
from fabula.worlds.pack import WorldPack

PLACES = 10
OBJECTS = 200
EVENTS_PER_TURN = 5
PROJECTION_SAMPLES = 200  # projections measured after each of the last 200 commits
ASSEMBLY_BUDGET = 1200  # the writer's default budget
COLOURS = ("red", "green", "blue", "amber", "grey", "white", "black", "violet")


class CountingRedis(aredis.Redis):  # type: ignore[misc]
    """An asyncio client that counts the commands it sends (one per round trip here)."""

    round_trips = 0

    async def execute_command(self, *args: Any, **options: Any) -> Any:
        type(self).round_trips += 1
        return await super().execute_command(*args, **options)


@dataclass
class _World:
    where: dict[str, str]  # character -> place
    obj_place: dict[str, str]


class _Generator:
    """Deterministic synthetic turns in controlled English with their deltas."""

    def __init__(self, characters: int, seed: int = 7) -> None:
        self.rng = random.Random(seed)
        self.chars = [f"c{i}" for i in range(characters)]
        self.places = [f"p{i}" for i in range(PLACES)]
        self.objects = [f"o{i}" for i in range(OBJECTS)]
        self.nested: dict[tuple[str, str, str], str] = {}
        self.world = _World(
            where={c: self.rng.choice(self.places) for c in self.chars},
            obj_place={o: self.rng.choice(self.places) for o in self.objects},
        )

    def setup(self) -> TurnDelta:
        b = DeltaBuilder(0, "A synthetic town.")
        for p in self.places:
            b.entity("place", p)
        for c in self.chars:
            b.entity("character", c)
        for o in self.objects:
            b.entity("object", o)
        ev = b.event("setup", b.span(0, len(b.text)))
        for c in self.chars:
            b.state(c, "location", self.world.where[c], event=ev)
        for o in self.objects:
            b.state(o, "location", self.world.obj_place[o], event=ev)
        return b.build()

    def _present(self, place: str) -> list[str]:
        return [c for c in self.chars if self.world.where[c] == place]

    def _believe(
        self, b: DeltaBuilder, ev: Event, witnesses: list[str], subject: str, attr: str, value: str
    ) -> None:
        # as the access tracker does: first-order beliefs are always rewritten (their
        # freshness moves), a nested chain's only when its value changes
        for a in witnesses:
            b.belief([a], subject, attr, value, mode="observed", event=ev)
        slot = f"{subject}|{attr}"
        for a in witnesses:
            for other in witnesses:
                if other != a and self.nested.get((a, other, slot)) != value:
                    self.nested[(a, other, slot)] = value
                    b.belief([a, other], subject, attr, value, mode="observed", event=ev)

    def turn(self, turn: int) -> TurnDelta:
        """Turn ``turn``: ``EVENTS_PER_TURN`` random events (a tell with nobody to tell is
        none), its text their sentences, its delta what each did and who saw it."""
        sentences = self._sentences()
        text = " ".join(s for s, _ in sentences)
        b = DeltaBuilder(turn, text)
        offset = 0
        for sentence, info in sentences:
            span = b.span(offset, offset + len(sentence))
            offset += len(sentence) + 1
            self._record(b, span, info)
        return b.build()

    def _sentences(self) -> list[tuple[str, Any]]:
        """The turn's events drawn (and done in the world): each its sentence and what it
        was (kind, actor, ...)."""
        rng = self.rng
        sentences: list[tuple[str, Any]] = []
        for _ in range(EVENTS_PER_TURN):
            kind = rng.choice(("move", "object", "property", "tell"))
            actor = rng.choice(self.chars)
            here = self.world.where[actor]
            if kind == "move":
                dest = rng.choice([p for p in self.places if p != here])
                sentences.append((f"{actor} went to the {dest}.", ("move", actor, here, dest)))
                self.world.where[actor] = dest
            elif kind == "object":
                obj = rng.choice(self.objects)
                sentences.append(
                    (f"{actor} moved the {obj} to the {here}.", ("object", actor, obj, here))
                )
                self.world.obj_place[obj] = here
            elif kind == "property":
                obj = rng.choice(self.objects)
                colour = rng.choice(COLOURS)
                sentences.append(
                    (f"The colour of the {obj} is {colour}.", ("property", actor, obj, colour))
                )
            else:
                present = [c for c in self._present(here) if c != actor]
                if not present:
                    continue
                listener = rng.choice(present)
                obj = rng.choice(self.objects)
                place = self.world.obj_place[obj]
                sentences.append(
                    (
                        f"{actor} privately told {listener} that the {obj} is in the {place}.",
                        ("tell", actor, listener, obj, place),
                    )
                )
        return sentences

    def _record(self, b: DeltaBuilder, span: SourceSpan, info: Any) -> None:
        """One event (``info``, as :meth:`_sentences` drew it) in the delta: the event, the
        state it changed, and the beliefs of those who saw or were told it."""
        kind = info[0]
        if kind == "move":
            _, actor, src, dest = info
            witnesses = sorted({*self._present(src), *self._present(dest), actor})
            ev = b.event("move", span, actor=actor, place=dest, witnesses=witnesses)
            b.state(actor, "location", dest, event=ev)
            self._believe(b, ev, witnesses, actor, "location", dest)
        elif kind == "object":
            _, actor, obj, place = info
            witnesses = self._present(place)
            ev = b.event(
                "put", span, actor=actor, participants=[obj], place=place, witnesses=witnesses
            )
            b.state(obj, "location", place, event=ev)
            self._believe(b, ev, witnesses, obj, "location", place)
        elif kind == "property":
            _, actor, obj, colour = info
            place = self.world.where[actor]
            witnesses = self._present(place)
            ev = b.event("state", span, participants=[obj], place=place, witnesses=witnesses)
            b.state(obj, "colour", colour, event=ev)
            self._believe(b, ev, witnesses, obj, "colour", colour)
        else:
            _, actor, listener, obj, place = info
            ev = b.event(
                "tell",
                span,
                actor=actor,
                participants=[listener, obj],
                witnesses=[actor, listener],
                private_to=[listener],
            )
            b.belief(
                [listener], obj, "location", place, mode="told_private", event=ev, speaker=actor
            )
            b.belief([actor, listener], obj, "location", place, mode="participated", event=ev)


async def _story_bytes(client: aredis.Redis, story: str) -> int:
    """What the story's keys hold in Redis, in bytes (``MEMORY USAGE`` of each, counted
    exactly): unlike the server's ``used_memory`` before and after, it counts nothing
    else the server allocated meanwhile (scripts, buffers), so a short story is not
    measured as negative."""
    total = 0
    batch: list[str] = []
    async for key in client.scan_iter(match=keys.story_pattern(story), count=1000):
        batch.append(key)
        if len(batch) >= 1000:
            total += await _usage(client, batch)
            batch = []
    return total + (await _usage(client, batch) if batch else 0)


async def _usage(client: aredis.Redis, batch: Sequence[str]) -> int:
    async with client.pipeline(transaction=False) as pipe:
        for key in batch:
            pipe.execute_command("MEMORY", "USAGE", key, "SAMPLES", "0")
        return sum(int(n or 0) for n in await pipe.execute())


@dataclass
class _Timings:
    """What one size's run measured: each step's times (ms) and round trips."""

    commit_ms: list[float] = field(default_factory=list)
    commit_trips: list[int] = field(default_factory=list)
    beliefs_ms: list[float] = field(default_factory=list)
    world_ms: list[float] = field(default_factory=list)
    beliefs_trips: list[int] = field(default_factory=list)
    world_trips: list[int] = field(default_factory=list)
    index_ms: list[float] = field(default_factory=list)
    consolidate_ms: list[float] = field(default_factory=list)
    assemble_ms: list[float] = field(default_factory=list)

    async def commit(self, store: StoryStore, delta: TurnDelta, sampled: bool) -> None:
        """Commit ``delta``, then index and consolidate it, as an acknowledged commit is
        (consolidation timed only when ``sampled``)."""
        turn = delta.turn
        trips = CountingRedis.round_trips
        start = time.perf_counter()
        await store.commit(delta)
        self.commit_ms.append((time.perf_counter() - start) * 1000)
        self.commit_trips.append(CountingRedis.round_trips - trips)
        # the consolidation step that follows an acknowledged commit: the episode index
        start = time.perf_counter()
        await index_through(store, turn)
        self.index_ms.append((time.perf_counter() - start) * 1000)
        # then the hierarchy (one turn consolidated), so that the assembly reads its summaries
        start = time.perf_counter()
        await consolidate(store, turn)
        if sampled:
            self.consolidate_ms.append((time.perf_counter() - start) * 1000)

    async def reads(self, store: StoryStore, request: str, who: str) -> None:
        """The reads of a turn loop after a commit: the writer's planned recall for
        ``request``, ``who``'s beliefs and the world."""
        start = time.perf_counter()
        await author_context(store, request, budget=ASSEMBLY_BUDGET, purpose="write", focus=(who,))
        self.assemble_ms.append((time.perf_counter() - start) * 1000)
        # projections are sampled as the story grows, after each of the last turns,
        # as the turn loop reads them: the state has just changed
        trips = CountingRedis.round_trips
        start = time.perf_counter()
        await project_beliefs(store, who)
        self.beliefs_ms.append((time.perf_counter() - start) * 1000)
        self.beliefs_trips.append(CountingRedis.round_trips - trips)
        trips = CountingRedis.round_trips
        start = time.perf_counter()
        await project_world(store)
        self.world_ms.append((time.perf_counter() - start) * 1000)
        self.world_trips.append(CountingRedis.round_trips - trips)


async def _measure(url: str, turns: int, characters: int) -> dict[str, Any]:
    client = CountingRedis.from_url(url, decode_responses=True)
    story = f"bench-scale-{turns}-{characters}"
    store = StoryStore(client, story)
    await store.delete()
    gen = _Generator(characters)
    await store.create(gen.setup(), world="synthetic", title=story)
    await store.ancestry()
    timings = _Timings()
    who = gen.chars[0]
    sample_from = max(1, turns - PROJECTION_SAMPLES + 1)
    for turn in range(1, turns + 1):
        await timings.commit(store, gen.turn(turn), turn >= sample_from)
        if turn >= sample_from:
            # the writer's planned recall for a request about a character and an object
            request = f"Where is the {gen.objects[turn % OBJECTS]} and what did {who} say about it?"
            await timings.reads(store, request, who)
    held_bytes = await _story_bytes(client, story)
    # the size of what a projection returns (it grows with what the character has come to
    # know, up to every slot of the world, not with the length of the story)
    held = await client.hlen(keys.beliefs_current(story, "main", who))
    slots = await client.hlen(keys.world_current(story, "main"))
    await store.delete()
    await client.aclose()
    return {
        "turns": turns,
        "characters": characters,
        "commit_ms": percentiles(timings.commit_ms),
        "beliefs_ms": percentiles(timings.beliefs_ms),
        "world_ms": percentiles(timings.world_ms),
        "index_ms": percentiles(timings.index_ms),
        "consolidate_ms": percentiles(timings.consolidate_ms),
        "assemble_ms": percentiles(timings.assemble_ms),
        "round_trips": {
            "commit": max(timings.commit_trips),
            "beliefs": max(timings.beliefs_trips),
            "world": max(timings.world_trips),
        },
        "redis_bytes_per_turn": round(held_bytes / max(turns, 1), 1),
        "beliefs_held": held,
        "world_slots": slots,
    }


async def run_scale(
    url: str,
    turns: list[int],
    characters: list[int],
    json_out: str | None = None,
) -> dict[str, Any]:
    """Run every (turns, characters) size; print a table; write JSON if asked."""
    rows = []
    for c in characters:
        for t in turns:
            rows.append(await _measure(url, t, c))
    result = {"benchmark": "scale", "rows": rows}
    print_table(
        "fabula bench scale",
        [
            "turns",
            "chars",
            "commit p50/p95 ms",
            "beliefs p50/p95 ms",
            "world p50/p95 ms",
            "index p50/p95 ms",
            "consolidate p50/p95 ms",
            "assemble p50/p95 ms",
            "trips c/b/w",
            "bytes/turn",
            "held/slots",
        ],
        [
            [
                r["turns"],
                r["characters"],
                f"{r['commit_ms']['p50']}/{r['commit_ms']['p95']}",
                f"{r['beliefs_ms']['p50']}/{r['beliefs_ms']['p95']}",
                f"{r['world_ms']['p50']}/{r['world_ms']['p95']}",
                f"{r['index_ms']['p50']}/{r['index_ms']['p95']}",
                f"{r['consolidate_ms']['p50']}/{r['consolidate_ms']['p95']}",
                f"{r['assemble_ms']['p50']}/{r['assemble_ms']['p95']}",
                f"{r['round_trips']['commit']}/{r['round_trips']['beliefs']:g}"
                f"/{r['round_trips']['world']:g}",
                r["redis_bytes_per_turn"],
                f"{r['beliefs_held']}/{r['world_slots']}",
            ]
            for r in rows
        ],
    )
    write_json(json_out, result)
    return result


def run(url: str, turns: list[int], characters: list[int], json_out: str | None) -> dict[str, Any]:
    """Synchronous entry point for the command line."""
    return asyncio.run(run_scale(url, turns, characters, json_out))


# -- the cast -----------------------------------------------------------------------------
CAST_TURNS = 20
CAST_OBJECTS = 6


def _cast_pack(characters: int) -> WorldPack:
    """``characters`` characters and a few objects in a study, a hallway beside it."""
    return WorldPack.model_validate(
        {
            "id": f"cast{characters}",
            "title": f"A cast of {characters}",
            "premise": "Everyone is in the study.",
            "places": [{"name": "study"}, {"name": "hallway"}],
            "characters": [{"name": f"C{i}", "location": "study"} for i in range(characters)],
            "objects": [
                {"name": "desk drawer", "location": "study", "container": True},
                {"name": "hollow book", "location": "study", "container": True},
                *({"name": f"coin{i}", "location": "desk drawer"} for i in range(CAST_OBJECTS)),
            ],
        }
    )


def _cast_turn(turn: int, characters: int, rng: random.Random) -> str:
    """One turn: a coin moved, someone stepping out and back in, a telling."""
    a, b, c = (f"C{i}" for i in rng.sample(range(characters), 3))
    coin = f"coin{rng.randrange(CAST_OBJECTS)}"
    box = ("desk drawer", "hollow book")[turn % 2]
    other = ("hollow book", "desk drawer")[turn % 2]
    return (
        f"{a} put the {coin} in the {box}. {b} went to the hallway. "
        f"{a} moved the {coin} to the {other}. {b} went to the study. "
        f"{c} privately told {b} that the {coin} is in the {other}."
    )


async def _measure_cast(url: str, characters: int, turns: int) -> dict[str, Any]:
    client = aredis.Redis.from_url(url, decode_responses=True)
    story = f"bench-cast-{characters}"
    store = StoryStore(client, story)
    await store.delete()
    pack = _cast_pack(characters)
    await store.create(setup_delta(pack), world=pack.id, title=pack.title, rules=pack.rules)
    created = await _story_bytes(client, story)
    rng = random.Random(characters)
    builder = OfflineMemoryBuilder()
    turn_ms: list[float] = []
    payload: list[int] = []
    records: list[int] = []
    for turn in range(1, turns + 1):
        text = _cast_turn(turn, characters, rng)
        start = time.perf_counter()
        delta = await builder.build(store, turn, text)
        call = await store.prepare_commit(delta)
        await store.commit(delta)
        turn_ms.append((time.perf_counter() - start) * 1000)
        payload.append(len(call.header.encode()) + len(call.records.encode()))
        records.append(len(delta.beliefs) + len(delta.shared))
    held = await _story_bytes(client, story) - created
    story_keys = len([k async for k in client.scan_iter(match=keys.story_pattern(story))])
    chain = ("c0", "c1", "c2", "c1")
    start = time.perf_counter()
    await project_beliefs(store, chain)
    read_ms = (time.perf_counter() - start) * 1000
    start = time.perf_counter()
    await fork(store, turns // 2, "alt")
    fork_ms = (time.perf_counter() - start) * 1000
    forked_keys = len([k async for k in client.scan_iter(match=keys.story_pattern(story))])
    start = time.perf_counter()
    await store.delete()
    delete_ms = (time.perf_counter() - start) * 1000
    await client.aclose()
    return {
        "characters": characters,
        "turns": turns,
        "turn_ms": percentiles(turn_ms),
        "payload_bytes_per_turn": round(sum(payload) / turns),
        "records_per_turn": round(sum(records) / turns, 1),
        "redis_bytes_per_turn": round(held / turns),
        "keys": story_keys,
        "nested_read_ms": round(read_ms, 2),
        "fork_ms": round(fork_ms, 1),
        "fork_keys": forked_keys - story_keys,
        "delete_ms": round(delete_ms, 1),
    }


async def run_cast(
    url: str, cast: list[int], turns: int = CAST_TURNS, json_out: str | None = None
) -> dict[str, Any]:
    """Run every cast size (all in one room); print a table with the growth over the first
    size; write JSON if asked."""
    rows = [await _measure_cast(url, n, turns) for n in cast]
    base = rows[0]
    for r in rows:
        r["growth"] = {
            "cast": round(r["characters"] / base["characters"], 2),
            "turn_ms_p50": round(r["turn_ms"]["p50"] / max(base["turn_ms"]["p50"], 1e-9), 2),
            "payload": round(r["payload_bytes_per_turn"] / base["payload_bytes_per_turn"], 2),
            "redis_bytes": round(r["redis_bytes_per_turn"] / base["redis_bytes_per_turn"], 2),
        }
    result = {"benchmark": "scale-cast", "turns": turns, "rows": rows}
    print_table(
        f"fabula bench scale --cast ({turns} turns each, everyone in one room)",
        [
            "cast",
            "turn p50/p95 ms",
            "payload B/turn",
            "records/turn",
            "redis B/turn",
            "keys",
            "read ms",
            "fork ms/keys",
            "delete ms",
            "growth cast/time/payload/redis",
        ],
        [
            [
                r["characters"],
                f"{r['turn_ms']['p50']}/{r['turn_ms']['p95']}",
                r["payload_bytes_per_turn"],
                r["records_per_turn"],
                r["redis_bytes_per_turn"],
                r["keys"],
                r["nested_read_ms"],
                f"{r['fork_ms']}/{r['fork_keys']}",
                r["delete_ms"],
                "/".join(
                    f"{r['growth'][k]}x" for k in ("cast", "turn_ms_p50", "payload", "redis_bytes")
                ),
            ]
            for r in rows
        ],
    )
    write_json(json_out, result)
    return result


def run_cast_sync(url: str, cast: list[int], json_out: str | None) -> dict[str, Any]:
    """Synchronous entry point for ``fabula bench scale --cast``."""
    return asyncio.run(run_cast(url, cast, json_out=json_out))
