"""``fabula migrate``: a story stored by an older Fabula is refused until it is migrated,
then opens and reads as it did.

The old shape is made for real, in Redis, as the old code wrote it: a story written by
today's code, then its record's schema version removed (a story made before versions), its
characters' rosters deleted (a story made before rosters), and its pending turn's
checkpoints rewritten as the untyped graph stored them (every contract a ``model_dump()``
dict, the proposals by ``str(attempt)``, the approval payload with ``delta`` the preview
and ``turn_delta`` the delta). Every door refuses it in one line naming ``fabula migrate``;
the migration gives back, id for id and turn for turn, the rosters the commits had written,
and the turn awaiting approval commits the text it was drafted with.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest
import redis.asyncio as aredis
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
from langgraph.types import Interrupt

from fabula.agents.contracts import Decision
from fabula.bench.loop import synthetic_world
from fabula.errors import StoryOutdated
from fabula.graph.build import thread_id
from fabula.graph.checkpoint import RegistrySerializer
from fabula.graph.checkpoint.batches import pack, unpack
from fabula.graph.checkpoint.keys import THREADS, ThreadKeys
from fabula.graph.checkpoint.migrations import CHECKPOINT_VERSION
from fabula.graph.service import Fabula
from fabula.graph.state import CHECKPOINT_TYPES, ApprovalRequest
from fabula.memory import keys
from fabula.memory.connection import connect_async
from fabula.memory.schema import SCHEMA_VERSION
from fabula.settings import Settings
from fabula.testing.cli import fabula
from fabula.worlds.loader import load_world

SERDE = RegistrySerializer(CHECKPOINT_TYPES)
# how checkpointer version 1 stored a value: every object named by its module path
OLD_SERDE = JsonPlusSerializer(
    allowed_msgpack_modules=[tuple(p.rsplit(".", 1)) for p in CHECKPOINT_TYPES.legacy]
)


async def _rosters(admin: aredis.Redis, story: str, cast: list[str]) -> dict[str, dict[str, int]]:
    out = {}
    for c in cast:
        raw = await admin.hgetall(keys.known_entities(story, "main", c))
        out[c] = {i: json.loads(v)["known_from"] for i, v in raw.items()}
    return out


def _plain(channel: str, value: Any, attempt: int) -> Any:
    """``value`` of ``channel`` as the untyped graph checkpointed it."""
    if channel == "proposals":
        return {str(attempt): [p.model_dump() for p in value]}
    if channel == "delta" and value is not None:
        return value.model_dump(mode="json")
    if channel == "briefs":
        return {c: b.model_dump() for c, b in value.items()}
    if hasattr(value, "model_dump"):
        return value.model_dump()
    if isinstance(value, list) and value and hasattr(value[0], "model_dump"):
        return [v.model_dump() for v in value]
    return value


def _old_request(request: ApprovalRequest) -> dict[str, Any]:
    """An approval payload as the untyped graph interrupted with it."""
    data = request.model_dump(mode="json")
    return {**data, "delta": data["preview"], "turn_delta": data["delta"], "plan": data["plan"]}


async def _untype_thread(url: str, thread: str, attempt: int) -> int:
    """Rewrite every typed value of ``thread``'s checkpoints as the old graph stored it, and
    the rest as checkpointer version 1 did (no version, types named by module path)."""
    client = connect_async(url, decode_responses=False)
    tk, n = ThreadKeys(thread), 0
    try:
        assert await client.delete(tk.version) == 1
        for ns in await client.smembers(tk.namespaces):
            for cid in await client.zrange(tk.index(ns.decode()), 0, -1):
                key = tk.checkpoint(ns.decode(), cid.decode())
                for field, raw in (await client.hgetall(key)).items():
                    if field in (b"checkpoint", b"metadata"):
                        head, payload = unpack(raw)
                        kind, body = OLD_SERDE.dumps_typed(SERDE.loads_typed((head[0], payload)))
                        await client.hset(key, field, pack([kind], body))
                    if not field.startswith(b"value:"):
                        continue
                    head, payload = unpack(raw)
                    value = SERDE.loads_typed((head[0], payload))
                    old = _plain(field.decode()[6:], value, attempt)
                    kind, body = OLD_SERDE.dumps_typed(old)
                    await client.hset(key, field, pack([kind], body))
                    n += old is not value
                wkey = tk.writes(ns.decode(), cid.decode())
                for field, raw in (await client.hgetall(wkey)).items():
                    head, payload = unpack(raw)
                    value = SERDE.loads_typed((head[2], payload))
                    if head[1] == "__interrupt__":
                        value = [
                            dataclasses.replace(i, value=_old_request(i.value))
                            if isinstance(i, Interrupt) and isinstance(i.value, ApprovalRequest)
                            else i
                            for i in value
                        ]
                        n += 1
                    kind, body = OLD_SERDE.dumps_typed(value)
                    await client.hset(wkey, field, pack([head[0], head[1], kind], body))
    finally:
        await client.aclose()
    return n


async def _as_version_1(url: str, thread: str) -> None:
    """Store ``thread`` again as checkpointer version 1 did: no version, every value's
    types named by module path (values otherwise as they are)."""
    client = connect_async(url, decode_responses=False)
    tk = ThreadKeys(thread)
    try:
        assert await client.delete(tk.version) == 1
        for ns in await client.smembers(tk.namespaces):
            for cid in await client.zrange(tk.index(ns.decode()), 0, -1):
                for key in (
                    tk.checkpoint(ns.decode(), cid.decode()),
                    tk.writes(ns.decode(), cid.decode()),
                ):
                    for field, raw in (await client.hgetall(key)).items():
                        if field in (b"owners", b"parent", b"run_id"):
                            continue
                        head, payload = unpack(raw)
                        kind, body = OLD_SERDE.dumps_typed(SERDE.loads_typed((head[-1], payload)))
                        await client.hset(key, field, pack([*head[:-1], kind], body))
    finally:
        await client.aclose()


class TestMigrate:
    async def test_an_old_story_is_refused_then_migrated_and_reads_the_same(
        self, redis_url: str, tmp_path: Path
    ) -> None:
        async with Fabula(redis_url, Settings(home=tmp_path, consolidate="off")) as fab:
            made = {}
            for story, world in (("hb", load_world("hollow_book")), ("ring", synthetic_world(4))):
                store = fab.store(await fab.create_story(world, story))
                await fab.run(store, 4, auto=True)
                assert (await fab.run(store, auto=False)).outcome == "pending"
                pending = await fab.read(store).pending()
                assert pending is not None
                cast = await store.characters()
                rosters = await _rosters(fab.admin, story, cast)
                assert all(rosters.values()), rosters
                text = [t.text for t in await store.turn_texts(0, await store.head())]
                made[story] = (store, cast, rosters, text, pending.request)
                # the old shape, written as the old code wrote it
                assert await fab.admin.hdel(keys.meta(story), "schema") == 1
                for c in cast:
                    await fab.admin.delete(keys.known_entities(story, "main", c))
                thread = thread_id(story, "main", pending.turn)
                assert await _untype_thread(redis_url, thread, attempt=0)
            await fab.minds.aclose()

            assert await fab.all_pending() == []  # listed once migrated
            for story, (store, *_) in made.items():
                with pytest.raises(StoryOutdated, match="must be migrated first") as refused_here:
                    await fab.pending_details(store)
                remedy = refused_here.value.remedy
                assert remedy is not None and remedy.args == {"story": story}
                with pytest.raises(StoryOutdated):
                    await fab.decide(store, Decision(action="approve"))
            refused = fabula(redis_url, "show", "hb", "story", check=False)
            assert refused.returncode == StoryOutdated.exit_code, refused.stderr
            assert refused.stderr.count("\n") == 1 and "`fabula migrate hb`" in refused.stderr

            done = fabula(redis_url, "migrate", "--all")
            lines = done.stdout.splitlines()
            assert [line.split(":")[0] for line in lines] == ["hb", "ring"], done.stdout
            assert all(f": schema 1 -> {SCHEMA_VERSION} (" in line for line in lines), lines
            assert all("roster" in line and " 0 roster" not in line for line in lines), lines
            assert all(f"; checkpoints 1 -> {CHECKPOINT_VERSION} (" in ln for ln in lines), lines
            again = fabula(redis_url, "migrate", "hb")
            assert again.stdout == (
                f"hb: already at schema {SCHEMA_VERSION}; "
                f"checkpoints already at version {CHECKPOINT_VERSION}\n"
            )

            assert len(await fab.all_pending()) == 2
            for story, (store, cast, rosters, text, request) in made.items():
                assert await _rosters(fab.admin, story, cast) == rosters
                head = await store.head()
                assert [t.text for t in await store.turn_texts(0, head)] == text
                pending = await fab.read(store).pending()
                assert pending is not None and pending.request.delta == request.delta
                assert pending.request.preview == request.preview
                assert pending.request.draft == request.draft
                assert (await fab.decide(store, Decision(action="approve"))).outcome == "committed"
                (last,) = await store.turn_texts(head + 1, head + 1)
                assert last.text == request.draft.text
                out = await fab.run(store, 2, auto=True)
                assert out.written == 2, out

    async def test_a_current_story_with_old_checkpoints_migrates_only_them(
        self, redis_url: str, tmp_path: Path
    ) -> None:
        """Issue 46: a story at today's schema whose checkpoints an older checkpointer wrote
        (types by module path, no version): its turn is refused until ``migrate``, which
        reports both stores and migrates the checkpoints alone; then the turn commits."""
        async with Fabula(redis_url, Settings(home=tmp_path, consolidate="off")) as fab:
            store = fab.store(await fab.create_story(load_world("hollow_book"), "cur"))
            assert (await fab.run(store, auto=False)).outcome == "pending"
            pending = await fab.read(store).pending()
            assert pending is not None
            await _as_version_1(redis_url, thread_id("cur", "main", pending.turn))
            with pytest.raises(StoryOutdated, match="checkpoint version 1"):
                await fab.read(store).pending()
            done = fabula(redis_url, "migrate", "--all")
            assert done.stdout.startswith(
                f"cur: already at schema {SCHEMA_VERSION}; "
                f"checkpoints 1 -> {CHECKPOINT_VERSION} (1 thread, "
            ), done.stdout
            again = await fab.read(store).pending()
            assert again is not None and again.request.draft == pending.request.draft
            assert (await fab.decide(store, Decision(action="approve"))).outcome == "committed"

    def test_a_story_that_cannot_be_migrated_is_named(self, redis_url: str) -> None:
        """No such story: one line naming it, the exit status of ``NotFound``; a command
        that names neither a story nor ``--all`` is bad input."""
        missing = fabula(redis_url, "migrate", "nosuch", check=False)
        assert missing.returncode == 3 and "'nosuch'" in missing.stderr
        assert missing.stderr.count("\n") == 1
        assert fabula(redis_url, "migrate", check=False).returncode == 2

    async def test_an_old_story_can_be_deleted_unmigrated(
        self, redis_url: str, tmp_path: Path
    ) -> None:
        """Deleting reads nothing of the story: one that cannot be migrated can go."""
        async with Fabula(redis_url, Settings(home=tmp_path, consolidate="off")) as fab:
            store = fab.store(await fab.create_story(load_world("hollow_book"), "gone"))
            await fab.admin.hdel(keys.meta("gone"), "schema")
            with pytest.raises(StoryOutdated):
                await store.require()
        fabula(redis_url, "delete", "gone", "--yes")
        async with Fabula(redis_url, Settings(home=tmp_path, consolidate="off")) as fab:
            assert not await fab.store("gone").exists()


class TestWhatCannotBeRead:
    """Issue 45: a story stored with schema 99 was read and written by this version
    (``migrate`` said "already at 2"); a corrupt schema field was a ``ValueError``
    traceback, and ``migrate --all`` stopped at that story."""

    async def _stories(self, redis_url: str, tmp_path: Path, *names: str) -> None:
        async with Fabula(redis_url, Settings(home=tmp_path, consolidate="off")) as fab:
            for name in names:
                store = await fab.create_story(load_world("hollow_book"), name)
                await fab.run(store, 1, auto=True)

    async def test_a_newer_story_is_refused_in_one_line_and_left_as_it_is(
        self, redis_url: str, tmp_path: Path
    ) -> None:
        await self._stories(redis_url, tmp_path, "later")
        admin = connect_async(redis_url)
        try:
            await admin.hset(keys.meta("later"), "schema", "99")
            before = await admin.hgetall(keys.meta("later"))
            done = fabula(redis_url, "migrate", "later", check=False)
            assert done.returncode == 4, done.stderr
            assert done.stderr.count("\n") == 1 and "newer Fabula (schema 99" in done.stderr
            shown = fabula(redis_url, "show", "later", "world", check=False)
            assert shown.returncode == 4 and "newer Fabula" in shown.stderr
            assert await admin.hgetall(keys.meta("later")) == before
        finally:
            await admin.aclose()

    async def test_all_reports_an_unreadable_story_and_migrates_the_others(
        self, redis_url: str, tmp_path: Path
    ) -> None:
        await self._stories(redis_url, tmp_path, "broken", "garbled", "old")
        admin = connect_async(redis_url)
        raw = connect_async(redis_url, decode_responses=False)
        try:
            await admin.hset(keys.meta("broken"), "schema", "two")
            await admin.hdel(keys.meta("garbled"), "schema")  # old, to be migrated...
            (thread, *_) = [t async for t in raw.sscan_iter(THREADS, match="garbled/*")]
            tk = ThreadKeys(thread.decode())
            (ns, *_) = await raw.smembers(tk.namespaces)
            cid = (await raw.zrange(tk.index(ns.decode()), 0, 0))[0].decode()
            key = tk.checkpoint(ns.decode(), cid)
            await raw.hset(key, "value:plan", b"\x00 not a checkpoint")  # ...and unreadable
            garbled = {k: await raw.dump(k) async for k in raw.scan_iter("*garbled*")}
            await admin.hdel(keys.meta("old"), "schema")
            done = fabula(redis_url, "migrate", "--all", check=False)
            assert done.returncode != 0 and "Traceback" not in done.stderr, done.stderr
            assert "'broken' has an unreadable schema version ('two')" in done.stderr
            assert "'garbled' cannot be migrated: its stored data cannot be read" in done.stderr
            assert f"old: schema 1 -> {SCHEMA_VERSION}" in done.stdout
            assert await admin.hget(keys.meta("broken"), "schema") == "two"
            assert {k: await raw.dump(k) async for k in raw.scan_iter("*garbled*")} == garbled
        finally:
            await raw.aclose()
            await admin.aclose()
