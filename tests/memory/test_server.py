"""The embedded Redis server: started once, shared, persistent, and clear when it cannot run."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis
from typer.testing import CliRunner

from fabula.cli import app
from fabula.errors import ConfigError, RedisUnavailable
from fabula.graph.cli.remedies import error_line
from fabula.memory.server import EmbeddedRedis, redis_url
from fabula.settings import Settings
from fabula.testing.busy import busy_until_killed


def server_pid(server: EmbeddedRedis) -> int:
    client = redis.Redis.from_url(server.url)
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


@pytest.fixture()
def home_server() -> Iterator[EmbeddedRedis]:
    """The embedded server of a fresh FABULA_HOME (``<home>/redis``), not started here;
    stopped and removed afterwards."""
    home = Path(tempfile.mkdtemp(prefix="fs-", dir="/tmp"))
    embedded = EmbeddedRedis(home / "redis")
    yield embedded
    embedded.stop()
    shutil.rmtree(home, ignore_errors=True)


class TestEmbeddedRedis:
    def test_starts_and_answers(self, server: EmbeddedRedis) -> None:
        """ensure_started starts a server on the folder's socket and returns its URL."""
        assert not server.is_running()
        url = server.ensure_started()
        socket = server.directory / "redis.sock"
        assert url == server.url == f"unix://fabula-admin:{server.admin_secret()}@{socket}"
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
        client = redis.Redis.from_url(server.url)
        client.hset("fab:{s}:meta", mapping={"title": "kept"})
        client.close()
        server.stop()
        assert not server.is_running()
        assert processes_on(server.socket) == []
        server.ensure_started()
        assert server_pid(server) != first_pid
        client = redis.Redis.from_url(server.url, decode_responses=True)
        try:
            assert client.hgetall("fab:{s}:meta") == {"title": "kept"}
        finally:
            client.close()

    def test_fsync_policy(self, home_server: EmbeddedRedis) -> None:
        """FABULA_REDIS_FSYNC sets the embedded server's appendfsync: ``always`` (before
        every reply) unless ``everysec``; a running server takes the policy of each command
        that uses it, and stays the same process."""
        server, home = home_server, home_server.directory.parent

        def policy(url: str) -> str:
            client = redis.Redis.from_url(url, decode_responses=True)  # the admin's URL
            try:
                return str(client.config_get("appendfsync")["appendfsync"])
            finally:
                client.close()

        everysec = Settings.from_env({"FABULA_HOME": str(home), "FABULA_REDIS_FSYNC": "everysec"})
        url = redis_url(everysec)
        assert server.is_running() and policy(url) == "everysec"
        pid = server_pid(server)
        default = Settings.from_env({"FABULA_HOME": str(home)})
        assert default.redis_fsync == "always"
        assert redis_url(default) == url and policy(url) == "always"
        assert server_pid(server) == pid

    def test_an_open_user_on_the_embedded_server_is_refused(
        self, home_server: EmbeddedRedis
    ) -> None:
        """A user that takes any password, added to the embedded server (and saved to its
        ACL file), is refused at the next command as on a configured server, unless
        FABULA_REDIS_ALLOW_OPEN=1; saved, it is refused after a restart too."""
        home = home_server.directory.parent
        settings = Settings.from_env({"FABULA_HOME": str(home)})
        url = redis_url(settings)
        client = redis.Redis.from_url(url)
        client.execute_command("ACL", "SETUSER", "reader", "on", "nopass", "~*", "+@read")
        client.execute_command("ACL", "SAVE")
        client.close()
        with pytest.raises(ConfigError, match="lets anyone in as its 'reader' user"):
            redis_url(settings)
        allowed = Settings.from_env({"FABULA_HOME": str(home), "FABULA_REDIS_ALLOW_OPEN": "1"})
        assert redis_url(allowed) == url
        home_server.stop()
        with pytest.raises(ConfigError, match="'reader'"):
            redis_url(settings)

    def test_a_bad_fsync_policy_is_one_line_and_starts_nothing(self, tmp_path: Path) -> None:
        """FABULA_REDIS_FSYNC=bogus: one error line naming the variable and the choices,
        the exit status of a ConfigError, and no server started."""
        home = Path(tempfile.mkdtemp(prefix="fs-", dir="/tmp"))
        try:
            result = CliRunner().invoke(
                app, ["stories"], env={"FABULA_HOME": str(home), "FABULA_REDIS_FSYNC": "bogus"}
            )
            assert result.exit_code == ConfigError.exit_code, result.output
            assert result.stderr == (
                "error: FABULA_REDIS_FSYNC='bogus' is invalid: "
                "Input should be 'always' or 'everysec'\n"
            )
            assert not (home / "redis").exists()
        finally:
            shutil.rmtree(home, ignore_errors=True)

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
        monkeypatch.setattr("fabula.memory.server.folder.redis_server_binary", lambda: "/bin/false")
        with pytest.raises(RedisUnavailable, match="failed to start") as info:
            server.ensure_started()
        assert info.value.context["binary"] == "/bin/false"
        assert not server.is_running()

    def test_binary_that_cannot_run(
        self, server: EmbeddedRedis, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """A redis-server path that cannot be executed gives RedisUnavailable, not OSError."""
        missing = str(server.directory / "no-such-redis-server")
        monkeypatch.setattr("fabula.memory.server.folder.redis_server_binary", lambda: missing)
        with pytest.raises(RedisUnavailable, match="cannot run") as info:
            server.ensure_started()
        assert info.value.context["binary"] == missing


@pytest.fixture()
def quick_busy() -> Iterator[EmbeddedRedis]:
    """A server that answers BUSY after 50 ms of one script (instead of 5 s)."""
    directory = Path(tempfile.mkdtemp(prefix="fb-", dir="/tmp"))
    embedded = EmbeddedRedis(directory / "r", busy_reply_ms=50)
    yield embedded
    embedded.stop()
    shutil.rmtree(directory, ignore_errors=True)


class TestOneServerPerFolder:
    def test_a_busy_server_is_not_duplicated(self, quick_busy: EmbeddedRedis) -> None:
        """While a script keeps the server busy, another start finds it and starts nothing."""
        quick_busy.ensure_started()
        pid = server_pid(quick_busy)
        with busy_until_killed(quick_busy.url):
            assert quick_busy.is_running()
            again = EmbeddedRedis(quick_busy.directory)
            assert again.ensure_started() == quick_busy.url
            assert processes_on(quick_busy.socket) == [pid]
        assert server_pid(quick_busy) == pid

    def test_stop_stops_a_busy_server(self, quick_busy: EmbeddedRedis) -> None:
        """`server stop` during a long script stops the owner and only then says so."""
        quick_busy.ensure_started()
        with busy_until_killed(quick_busy.url):
            assert EmbeddedRedis(quick_busy.directory).stop() is True
            assert not quick_busy.is_running()
            assert processes_on(quick_busy.socket) == []

    def test_the_lock_outlives_the_starter(self, server: EmbeddedRedis) -> None:
        """The lock is the server's: a kill -9 of the server frees it, and a start follows."""
        server.ensure_started()
        pid = server_pid(server)
        assert server.is_running()
        os.kill(pid, signal.SIGKILL)
        for _ in range(500):
            if not server.is_running():
                break
            time.sleep(0.01)
        assert not server.is_running()
        server.ensure_started()
        assert server_pid(server) != pid

    def test_stop_says_why_it_could_not(self, server: EmbeddedRedis) -> None:
        """An owner that ignores SHUTDOWN and SIGTERM is reported, not called stopped."""
        server.directory.mkdir(parents=True)
        holder = subprocess.Popen(
            [
                sys.executable,
                "-c",
                "import fcntl, signal, sys, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
                "f = open(sys.argv[1], 'w'); fcntl.flock(f, fcntl.LOCK_EX); "
                "print('locked', flush=True); time.sleep(60)",
                str(server.lockfile),
            ],
            stdout=subprocess.PIPE,
            text=True,
        )
        try:
            assert holder.stdout is not None and holder.stdout.readline() == "locked\n"
            assert server.is_running()
            with pytest.raises(RedisUnavailable, match="pid is unknown"):
                server.stop(timeout_s=0.4)
            server.pidfile.write_text(f"{holder.pid}\n")
            with pytest.raises(RedisUnavailable, match=f"pid {holder.pid}.*did not stop"):
                server.stop(timeout_s=0.4)
            assert holder.poll() is None
        finally:
            holder.kill()
            holder.wait()


class TestTruncatedAof:
    def test_a_truncated_append_only_file_is_refused_then_repaired(self) -> None:
        """An append-only file cut mid-write (an acknowledged turn's tail lost with it) is
        not loaded silently: the embedded server refuses to start, saying what it found and
        how to repair it; `fabula server check-aof --fix` (the bundled redis-check-aof)
        cuts it at its last complete write, and the server starts with what it held."""
        home = Path(tempfile.mkdtemp(prefix="fabula-aof-", dir="/tmp"))
        server = EmbeddedRedis(home / "redis")
        try:
            client = redis.Redis.from_url(server.ensure_started())
            for i in range(20):
                client.set(f"turn{i}", "x" * 100)
            client.close()
            server.stop()
            (cut,) = sorted((home / "redis" / "appendonlydir").glob("*.incr.aof"))
            cut.write_bytes(cut.read_bytes()[:-30])  # the last write, half on disk
            with pytest.raises(RedisUnavailable) as refused:
                EmbeddedRedis(home / "redis").ensure_started()
            message = error_line(refused.value)  # the message, then its remedy's words
            assert "append-only file" in message and "is truncated" in message
            assert "fabula server check-aof --fix" in message
            assert "FABULA_REDIS_LOAD_TRUNCATED=1" in message
            env = {**os.environ, "FABULA_HOME": str(home)}
            fixed = subprocess.run(
                [sys.executable, "-m", "fabula", "server", "check-aof", "--fix"],
                input="y\n",
                text=True,
                capture_output=True,
                env=env,
                timeout=60,
            )
            assert fixed.returncode == 0, fixed.stderr
            assert "Successfully truncated AOF" in fixed.stdout
            client = redis.Redis.from_url(server.ensure_started())
            assert client.dbsize() == 19  # every complete write, the cut one not
            client.close()
        finally:
            server.stop()
            shutil.rmtree(home, ignore_errors=True)

    def test_load_truncated_is_the_explicit_way_in(self) -> None:
        """With FABULA_REDIS_LOAD_TRUNCATED=1 the server is told to load such a file."""
        assert "--aof-load-truncated" in EmbeddedRedis(Path("/x")).folder.server_args(
            "redis-server", fsync="always", busy_reply_ms=1
        )
        settings = Settings.from_env({"FABULA_REDIS_LOAD_TRUNCATED": "1"})
        assert settings.redis_load_truncated
