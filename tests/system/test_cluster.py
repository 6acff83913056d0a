"""Fabula on a Redis Cluster: three primaries and three replicas started from the same
``redis-server`` binary (``fabula/testing/localcluster.py``).

These run in the default suite (about 20 s, most of it starting the cluster). The store, ACL,
checkpoint and loop test modules run unchanged against a cluster with
``FABULA_TEST_CLUSTER=1 pytest tests/memory/test_store.py tests/memory/test_acl.py
tests/memory/test_isolation.py tests/graph/test_checkpoint.py tests/graph/test_loop.py``.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis
from redis.exceptions import NoPermissionError

from fabula.errors import FabulaError
from fabula.graph.service import Fabula
from fabula.graph.service.consolidation import InlineConsolidation
from fabula.memory import keys
from fabula.memory.connection import connect, is_cluster
from fabula.memory.hierarchy import scenes
from fabula.settings import Settings
from fabula.testing.localcluster import LocalCluster
from fabula.testing.redis import on_cluster, wipe
from fabula.testing.stories import check_story, write_turn


@pytest.fixture(scope="module")
def cluster(request: pytest.FixtureRequest) -> Iterator[LocalCluster]:
    """The session's cluster when the whole run is on one, else this module's own."""
    if on_cluster():
        yield request.getfixturevalue("local_cluster")
        return
    with LocalCluster() as started:
        yield started


@pytest.fixture()
def url(cluster: LocalCluster) -> str:
    wipe(cluster.url)
    return cluster.url


def settings(home: Path) -> Settings:
    return Settings(home=home, consolidate="off")


def slot_owner(client: Any, key: str) -> str:
    node = client.get_node_from_key(key)
    return f"{node.host}:{node.port}"


class TestStories:
    async def test_thirty_stories_spread_over_the_primaries(self, url: str, tmp_path: Path) -> None:
        """Each story's keys share one slot; 30 stories land on every primary; reads, commits
        and projections work wherever a story lives."""
        assert is_cluster(url)
        async with Fabula(url, settings(tmp_path)) as fab:
            for i in range(30):
                store = await fab.create_story("hollow_book", f"s{i}", opening=False)
                await fab.commit_scripted(store, "Leo went to the hallway.")
            client = connect(url)
            owners = {slot_owner(client, keys.meta(f"s{i}")) for i in range(30)}
            assert len(owners) == 3
            for i in (0, 17, 29):
                story_keys = list(client.scan_iter(match=keys.story_pattern(f"s{i}")))
                slots = {client.keyslot(k) for k in story_keys}
                assert len(story_keys) > 10 and len(slots) == 1
                assert check_story(url, f"s{i}") == 1
            client.close()
            assert sorted(await fab.stories()) == sorted(f"s{i}" for i in range(30))
            mind = await fab.minds.mind("s5", "leo")
            assert (await mind.beliefs()).where("leo") == "hallway"
            with pytest.raises(NoPermissionError):
                await mind.client.hgetall(keys.world_current("s5", "main"))
            await fab.delete_story("s7")
            assert "s7" not in await fab.stories()


class TestUsers:
    async def test_users_on_every_node_and_on_a_node_that_joins(
        self, url: str, cluster: LocalCluster, tmp_path: Path
    ) -> None:
        """Character users are set on all six nodes; a seventh node that joins gets them when
        Fabula next starts, and a mind can then read through it after a failover to it."""
        async with Fabula(url, settings(tmp_path)) as fab:
            await fab.create_story("hollow_book", "acl", opening=False)
        user = keys.acl_user("acl", "leo")
        for port in cluster.ports:
            assert cluster.client(port).acl_getuser(user), port
        owner = int(slot_owner(connect(url), keys.meta("acl")).rsplit(":", 1)[1])
        joined = cluster.join_replica(owner)
        assert not cluster.client(joined).acl_getuser(user)
        async with Fabula(url, settings(tmp_path)) as fab:  # syncs the users
            assert cluster.client(joined).acl_getuser(user)
            cluster.failover(joined)
            mind = await fab.minds.mind("acl", "leo")
            assert (await mind.beliefs()).holder == ("leo",)


class TestTransactions:
    async def test_watched_writes_start_no_thread(
        self, url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """Checkpoints, branches and the hierarchy write with WATCH/MULTI on the slot's
        primary: redis-py's asyncio cluster pipeline would run each command sent while
        watching in a new thread with its own event loop, which binds the client's lock to
        that loop after a slot map refresh (every story then failed after a failover)."""
        started: list[str] = []
        start = threading.Thread.start

        def counted(thread: threading.Thread) -> None:
            target = getattr(thread, "_target", None)
            started.append(getattr(target, "__module__", "") or "")
            start(thread)

        folds = InlineConsolidation()
        async with Fabula(url, settings(tmp_path), consolidate=folds) as fab:
            store = fab.store(await fab.create_story("hollow_book", "tx"))
            monkeypatch.setattr(threading.Thread, "start", counted)
            for _ in range(3):
                assert (await fab.run(store, auto=True)).outcome == "committed"
            await folds.drain()
            assert await scenes(store)  # the hierarchy was written, watched
            await fab.fork(store, 2, "alt")
            monkeypatch.undo()
        assert not [m for m in started if m.startswith("redis")], started


class TestFailover:
    async def test_a_primary_fails_over_mid_run_and_nothing_acknowledged_is_lost(
        self, url: str, cluster: LocalCluster, tmp_path: Path
    ) -> None:
        """Six stories written at once (autonomous turns and human approvals) while the
        primary holding some of them hands over to its replica: every acknowledged turn is
        there afterwards, with its text, and every story goes on."""
        stories = [f"f{i}" for i in range(6)]
        acknowledged: dict[str, dict[int, str]] = {s: {} for s in stories}
        async with Fabula(url, settings(tmp_path)) as fab:
            for story in stories:
                await fab.create_story("hollow_book", story)
            client = connect(url)
            victim = int(slot_owner(client, keys.meta(stories[0])).rsplit(":", 1)[1])
            replica = cluster.replica_of(victim)
            on_victim = [
                s for s in stories if slot_owner(client, keys.meta(s)).endswith(f":{victim}")
            ]
            client.close()
            stop = asyncio.Event()
            writers = [asyncio.create_task(_write(fab, s, acknowledged[s], stop)) for s in stories]
            await _until(lambda: sum(len(a) for a in acknowledged.values()) >= 12)
            await asyncio.to_thread(cluster.failover, replica)
            before = {s: len(a) for s, a in acknowledged.items()}
            await _until(lambda: all(len(acknowledged[s]) > before[s] for s in on_victim))
            stop.set()
            await asyncio.gather(*writers)
            for story in stories:
                head = check_story(url, story)
                stored = {t.turn: t.text for t in await fab.store(story).turn_texts(1)}
                lost = {t: x for t, x in acknowledged[story].items() if stored.get(t) != x}
                assert not lost, f"{story}: acknowledged turns lost after the failover: {lost}"
                assert max(acknowledged[story]) <= head
        total = sum(len(a) for a in acknowledged.values())
        print(f"\n{total} acknowledged turns on 6 stories; {victim} failed over to {replica}")


async def _until(condition: Any, timeout_s: float = 120.0) -> None:
    deadline = asyncio.get_running_loop().time() + timeout_s
    while not condition():
        assert asyncio.get_running_loop().time() < deadline, "timed out"
        await asyncio.sleep(0.02)


async def _write(fab: Fabula, story: str, acked: dict[int, str], stop: asyncio.Event) -> None:
    """Turns on one story until told to stop; every other one approved by a human."""
    store = fab.store(story)
    while not stop.is_set():
        human = (await store.head()) % 2 == 0
        with contextlib.suppress(FabulaError, redis.RedisError):
            await write_turn(fab, store, acked, human=human)
        await asyncio.sleep(0)
