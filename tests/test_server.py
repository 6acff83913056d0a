"""The embedded Redis server: started once, shared, persistent, and clear when it cannot run."""

from __future__ import annotations

import shutil
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from fabula.memory.errors import RedisUnavailable
from fabula.memory.server import EmbeddedRedis


def server_pid(server: EmbeddedRedis) -> int:
    client = redis.Redis(unix_socket_path=str(server.socket))
    try:
        return int(client.info("server")["process_id"])
    finally:
        client.close()


def processes_on(socket: Path) -> list[int]:
    """Pids of running processes whose command line (or process title) names this socket."""
    pids = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            cmdline = (proc / "cmdline").read_bytes()
        except OSError:
            continue
        if str(socket).encode() in cmdline:
            pids.append(int(proc.name))
    return pids


@pytest.fixture()
def server() -> Iterator[EmbeddedRedis]:
    """An EmbeddedRedis in a fresh short temporary folder, stopped and removed afterwards."""
    directory = Path(tempfile.mkdtemp(prefix="fs-", dir="/tmp"))
    embedded = EmbeddedRedis(directory / "r")
    yield embedded
    embedded.stop()
    shutil.rmtree(directory, ignore_errors=True)


class TestEmbeddedRedis:
    def test_starts_and_answers(self, server: EmbeddedRedis) -> None:
        """ensure_started starts a server on the folder's socket and returns its URL."""
        assert not server.is_running()
        url = server.ensure_started()
        assert url == server.url == f"unix://{server.directory / 'redis.sock'}"
        assert server.is_running()
        client = redis.Redis.from_url(url, decode_responses=True)
        try:
            assert client.ping()
            assert client.config_get("appendonly") == {"appendonly": "yes"}
        finally:
            client.close()
        assert int(server.pidfile.read_text()) == server_pid(server)

    def test_second_start_reuses_the_server(self, server: EmbeddedRedis) -> None:
        """A second ensure_started on the same folder (even another object) reuses the server."""
        server.ensure_started()
        pid = server_pid(server)
        assert server.ensure_started() == server.url
        again = EmbeddedRedis(Path(str(server.directory)))
        assert again.ensure_started() == server.url
        assert server_pid(server) == pid
        assert processes_on(server.socket) == [pid]

    def test_concurrent_starts_get_one_server(self, server: EmbeddedRedis) -> None:
        """Two threads starting the same folder at once agree on one server."""
        barrier = threading.Barrier(2)
        urls: list[str] = []
        errors: list[BaseException] = []

        def start() -> None:
            try:
                barrier.wait()
                urls.append(EmbeddedRedis(server.directory).ensure_started())
            except BaseException as exc:  # pragma: no cover - reported below
                errors.append(exc)

        threads = [threading.Thread(target=start) for _ in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=30)
        assert errors == []
        assert urls == [server.url, server.url]
        assert processes_on(server.socket) == [server_pid(server)]

    def test_data_survives_stop_and_start(self, server: EmbeddedRedis) -> None:
        """What was written before stop() is there after a restart (append-only file)."""
        server.ensure_started()
        first_pid = server_pid(server)
        client = redis.Redis(unix_socket_path=str(server.socket))
        client.hset("fab:{s}:meta", mapping={"title": "kept"})
        client.close()
        server.stop()
        assert not server.is_running()
        assert processes_on(server.socket) == []
        server.ensure_started()
        assert server_pid(server) != first_pid
        client = redis.Redis(unix_socket_path=str(server.socket), decode_responses=True)
        try:
            assert client.hgetall("fab:{s}:meta") == {"title": "kept"}
        finally:
            client.close()

    def test_stop_when_not_running_is_a_no_op(self, server: EmbeddedRedis) -> None:
        """stop() on a folder with no server does nothing."""
        server.stop()
        assert not server.is_running()


class TestStartFailures:
    def test_path_too_long_for_a_socket(self) -> None:
        """A folder whose socket path exceeds the limit is refused before anything starts."""
        deep = Path("/tmp") / ("fabula-" + "x" * 120)
        with pytest.raises(RedisUnavailable, match="too long") as info:
            EmbeddedRedis(deep).ensure_started()
        assert info.value.context["path"] == str(deep / "redis.sock")
        assert not deep.exists()

    def test_binary_that_fails(
        self, server: EmbeddedRedis, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """A redis-server that exits non-zero gives RedisUnavailable naming the binary."""
        monkeypatch.setattr("fabula.memory.server.redis_server_binary", lambda: "/bin/false")
        with pytest.raises(RedisUnavailable, match="failed to start") as info:
            server.ensure_started()
        assert info.value.context["binary"] == "/bin/false"
        assert not server.is_running()

    def test_binary_that_cannot_run(
        self, server: EmbeddedRedis, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """A redis-server path that cannot be executed gives RedisUnavailable, not OSError."""
        missing = str(server.directory / "no-such-redis-server")
        monkeypatch.setattr("fabula.memory.server.redis_server_binary", lambda: missing)
        with pytest.raises(RedisUnavailable, match="cannot run") as info:
            server.ensure_started()
        assert info.value.context["binary"] == missing
