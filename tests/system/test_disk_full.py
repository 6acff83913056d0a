"""A full disk, for real: `fabula run` and `fabula approve` say so in one line, naming the
server's append-only directory, and nothing acknowledged is lost.

How the disk fills: the embedded server (a real ``redis-server`` in a test folder) is given a
file-size limit while it runs (``RLIMIT_FSIZE`` by ``prlimit``, a few bytes above its
append-only file). The kernel then cuts the server's next append short exactly as a full
disk does, and Redis takes a short write for ``ENOSPC`` ("No space left on device") itself
(``aof.c``): under ``appendfsync always`` it exits without acknowledging the write, under
``everysec`` it stays up and answers every write ``MISCONF``. The server ignores
``SIGXFSZ`` (Fabula starts it so: a limit is a write error, never a silent kill); lifting the
soft limit is the disk getting room again. No root, no mount, no mock: the server's own
code path for a full disk, with its own words in its log.
"""

from __future__ import annotations

import asyncio
import os
import resource
import subprocess
import time
from pathlib import Path

import pytest
import redis

from fabula.bench.loop import synthetic_world
from fabula.errors import DiskError
from fabula.graph.service import Fabula
from fabula.memory.connection import connect_async
from fabula.memory.server import EmbeddedRedis
from fabula.memory.store import StoryStore
from fabula.settings import FsyncPolicy, Settings
from fabula.testing.cli import fabula_process
from fabula.testing.stories import STORY, check_story, story_through, turn3


def _server(home: Path, fsync: FsyncPolicy) -> EmbeddedRedis:
    server = EmbeddedRedis(home / "redis", fsync=fsync)
    server.ensure_started()
    return server


def _pid(server: EmbeddedRedis) -> int:
    return int(server.pidfile.read_text().strip())


def _fill_disk(server: EmbeddedRedis, room: int = 16) -> None:
    """The server's append-only file may grow ``room`` bytes more: a write past them is cut
    short (the first, with the default room)."""
    pid = _pid(server)
    ignored = int(Path(f"/proc/{pid}/status").read_text().split("SigIgn:")[1].split()[0], 16)
    assert ignored & (1 << (25 - 1)), "the server must ignore SIGXFSZ (signal 25)"
    incr = max(server.folder.aof_dir.glob("*.incr.aof"), key=lambda p: p.stat().st_mtime)
    hard = resource.prlimit(pid, resource.RLIMIT_FSIZE)[1]
    resource.prlimit(pid, resource.RLIMIT_FSIZE, (incr.stat().st_size + room, hard))


def _free_disk(server: EmbeddedRedis) -> None:
    """Room again: the limit lifted; wait until the server has written what it held."""
    pid = _pid(server)
    hard = resource.prlimit(pid, resource.RLIMIT_FSIZE)[1]
    resource.prlimit(pid, resource.RLIMIT_FSIZE, (hard, hard))
    client = redis.Redis.from_url(server.url)
    deadline = time.monotonic() + 20
    while client.info("persistence")["aof_last_write_status"] != "ok":
        assert time.monotonic() < deadline, "the server did not write again"
        time.sleep(0.1)
    client.close()


def _fabula(home: Path, fsync: FsyncPolicy, *args: str) -> subprocess.CompletedProcess[str]:
    """``fabula ARGS`` as a user runs it: the embedded server of ``home`` (no URL)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("FABULA_")}
    env |= {"FABULA_HOME": str(home), "FABULA_REDIS_FSYNC": fsync, "FABULA_CONSOLIDATE": "off"}
    env |= {"COLUMNS": "200", "PYTHONPATH": os.environ.get("PYTHONPATH", "")}
    return fabula_process(env, *args)


def _says_disk_full(proc: subprocess.CompletedProcess[str], server: EmbeddedRedis) -> str:
    assert proc.returncode == DiskError.exit_code, (proc.returncode, proc.stderr)
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr  # one line: no log line, no traceback
    assert lines[0].startswith("error: the disk is full: "), lines[0]
    assert str(server.folder.aof_dir) in lines[0], lines[0]
    assert "No space left on device" in lines[0], lines[0]
    return lines[0]


async def _new_story(url: str, home: Path, *, pending: bool) -> int:
    async with Fabula(url, Settings(home=home, consolidate="off")) as fab:
        await fab.create_story(synthetic_world(3), "full")
        if pending:
            assert (await fab.run(fab.store("full"), auto=False)).outcome == "pending"
        return await fab.store("full").head()


class TestDiskFull:
    async def test_a_commit_lost_to_a_server_stopped_for_its_disk_says_so_at_once(
        self, tmp_path: Path
    ) -> None:
        """The commit itself is the write the disk refuses (``always``): its lost reply is
        not settled for a minute against a server that will not come back, the commit
        raises :class:`DiskError` naming the turn, and the server, started again, holds
        every turn acknowledged before and not this one."""
        server = _server(tmp_path, "always")
        client = connect_async(server.url)
        store = await story_through(client, 2)
        _fill_disk(server)
        with pytest.raises(DiskError) as raised:
            await store.commit(turn3())
        await client.aclose()
        assert "the disk is full" in str(raised.value)
        assert "turn 3 was not acknowledged" in str(raised.value), raised.value
        assert str(server.folder.aof_dir) in str(raised.value)
        assert not server.is_running()
        server.ensure_started()
        assert check_story(server.url, STORY) == 2
        client = connect_async(server.url)
        assert (await StoryStore(client, STORY).commit(turn3())).status == "committed"
        await client.aclose()
        server.stop()

    def test_fsync_always_the_server_stops_and_run_and_approve_say_why(
        self, tmp_path: Path
    ) -> None:
        """``always``: the server exits on the write it cannot make. `run --auto` (its lost
        commit) and `approve` say at once that the disk is full, not after a minute that the
        commit's fate is unknown; the next command starts the server again, every turn
        acknowledged before is there, and the story goes on."""
        server = _server(tmp_path, "always")
        head = asyncio.run(_new_story(server.url, tmp_path, pending=False))
        _fill_disk(server)
        line = _says_disk_full(_fabula(tmp_path, "always", "run", "full", "--auto"), server)
        assert "stopped" in line
        assert not server.is_running()
        run = _fabula(tmp_path, "always", "run", "full", "--turns", "1")  # starts it again
        assert run.returncode == 0, run.stderr
        assert check_story(server.url, "full") == head  # nothing acknowledged lost
        _fill_disk(server)
        _says_disk_full(_fabula(tmp_path, "always", "approve", "full"), server)
        approve = _fabula(tmp_path, "always", "approve", "full")
        assert approve.returncode == 0 and "committed" in approve.stdout, approve.stderr
        assert check_story(server.url, "full") == head + 1
        server.stop()

    def test_fsync_everysec_writes_are_refused_and_approve_says_why(self, tmp_path: Path) -> None:
        """``everysec``: the server stays up and refuses writes (``MISCONF``): `approve` says
        the disk is full in one line (no raw log line), commits nothing, and once there is
        room the same approval commits the turn."""
        server = _server(tmp_path, "everysec")
        head = asyncio.run(_new_story(server.url, tmp_path, pending=True))
        _fill_disk(server)
        line = _says_disk_full(_fabula(tmp_path, "everysec", "approve", "full"), server)
        assert "refuses every write" in line
        assert check_story(server.url, "full") == head
        _free_disk(server)
        approve = _fabula(tmp_path, "everysec", "approve", "full")
        assert approve.returncode == 0 and "committed" in approve.stdout, approve.stderr
        assert check_story(server.url, "full") == head + 1
        server.stop()
