"""When Redis cannot write its data to disk: the full disk said in one line, and where.

Redis meets a full disk when it appends a write to its append-only file (a short write is
taken for ``ENOSPC`` by Redis itself). Under ``appendfsync always`` (the embedded server's
default) it cannot acknowledge the write and exits, its reason in its log; under
``everysec`` it stays up and refuses every write (``MISCONF Errors writing to the AOF file:
<reason>``) until the file can be written again. Either way what it acknowledged is in its
file: nothing acknowledged is lost.

:func:`disk_error` turns what a client met — a ``MISCONF`` refusal, or a connection lost to
an embedded server that stopped for its disk — into :class:`~fabula.errors.DiskError`
naming the server's append-only directory, at once (never after a wait for a server that
will not come back by itself). The embedded server is found from the client's unix socket
(``<folder>/redis.sock``): its log, its lock (held while it runs) and its disk's free space
say why it stopped.
"""

from __future__ import annotations

import os
import re
import time
from pathlib import Path
from typing import Any

from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import ResponseError
from redis.exceptions import TimeoutError as RedisTimeoutError

from fabula.errors import DiskError
from fabula.memory.server.folder import DataFolder
from fabula.memory.server.lock import lock_is_held

FULL_REASONS = ("No space left on device", "Disk quota exceeded")
"""The reasons (``strerror``) that mean the disk is full, as Redis writes them."""

_MIN_FREE = 1 << 20  # a stopped server's disk with less room than this is taken as full
_LOG_TAIL = 64 * 1024
_WRITE_ERRORS = (
    re.compile(r"Error writing to the AOF file: (?P<reason>.+)$"),
    re.compile(r"Short write while writing to the AOF file"),  # Redis: ENOSPC
    re.compile(
        r"Can't persist AOF for fsync error when the AOF fsync policy is 'always': "
        r"(?P<reason>.+?)\. Exiting"
    ),
)
_SOLVED = "AOF write error looks solved"
_MISCONF = re.compile(r"^MISCONF Errors writing to the AOF file: (?P<reason>.+?)(?: script: .*)?$")


def embedded_folder(where: Any) -> DataFolder | None:
    """The embedded server's data folder behind ``where`` (a client, or a ``unix://`` URL),
    or None: a server on TCP, or a socket that is no embedded server's."""
    path: str | None = None
    if isinstance(where, str):
        if where.startswith("unix://"):
            path = where.removeprefix("unix://").rpartition("@")[2].partition("?")[0]
    else:
        pool = getattr(where, "connection_pool", None)
        path = getattr(pool, "connection_kwargs", {}).get("path")
    if not path:
        return None
    folder = DataFolder(Path(path).parent)
    return folder if folder.socket == Path(path) and folder.lockfile.exists() else None


def stopped_for_disk(folder: DataFolder) -> str | None:
    """Why the embedded server of ``folder`` stopped for its disk (``strerror``, e.g. "No
    space left on device"), or None: it runs, or it stopped for another reason."""
    if lock_is_held(folder.lockfile):
        return None
    reason = _logged_write_error(folder)
    if reason is None:
        try:
            room = os.statvfs(folder.directory)
        except OSError:
            return None
        if room.f_bavail * room.f_frsize < _MIN_FREE:  # a full disk may not take a log line
            reason = FULL_REASONS[0]
    return reason


_EXIT_WAIT_S = 3.0
"""How long a lost connection waits for the embedded server to finish exiting: a server
that stops for its disk closes its connections before its lock is let go, and on a busy
machine the next look can come in between (the full disk then read as a plain error)."""


def _stopped_within(folder: DataFolder, wait_s: float) -> str | None:
    """:func:`stopped_for_disk`, looking again for up to ``wait_s`` seconds while the
    server still holds its lock (it may be exiting); at once when it does not."""
    deadline = time.monotonic() + wait_s
    while True:
        reason = stopped_for_disk(folder)
        if reason is not None or not lock_is_held(folder.lockfile):
            return reason
        if time.monotonic() >= deadline:
            return None
        time.sleep(0.05)


def _logged_write_error(folder: DataFolder) -> str | None:
    """The last write error the server's log gives for its last process, unless solved."""
    try:
        pid = folder.pidfile.read_text().strip()
        with folder.logfile.open("rb") as log:
            log.seek(max(0, log.seek(0, os.SEEK_END) - _LOG_TAIL))
            lines = log.read().decode(errors="replace").splitlines()
    except OSError:
        return None
    reason: str | None = None
    for line in lines:
        if not line.startswith(f"{pid}:"):
            continue
        if _SOLVED in line:
            reason = None
        for pattern in _WRITE_ERRORS:
            found = pattern.search(line)
            if found is not None:
                reason = found.groupdict().get("reason") or FULL_REASONS[0]
    return reason


def disk_error(
    exc: BaseException, where: Any, turn: int | None = None, **context: Any
) -> DiskError | None:
    """``exc`` as a :class:`DiskError` when it is the disk's doing, else None.

    ``where`` is the client (or URL) ``exc`` came from; ``turn`` the turn being committed,
    if any. A ``MISCONF`` refusal means nothing of that command was written; a connection
    lost to an embedded server that stopped for its disk means it acknowledged nothing more.
    """
    folder = embedded_folder(where)
    directory = str(folder.aof_dir) if folder is not None else "the Redis server's data folder"
    if isinstance(exc, ResponseError):
        found = _MISCONF.match(str(exc).strip())
        if found is None:
            return None
        done = "nothing was written" if turn is None else f"turn {turn} is not committed"
        return DiskError(
            f"{_full(found['reason'])}Redis cannot write its append-only file in {directory} "
            f"({found['reason']}) and refuses every write until it can; {done}. Free space "
            "there, then try again",
            turn=turn,
            **context,
        )
    if isinstance(exc, RedisConnectionError | RedisTimeoutError) and folder is not None:
        reason = _stopped_within(folder, _EXIT_WAIT_S)
        if reason is None:
            return None
        done = "" if turn is None else f" (turn {turn} was not acknowledged)"
        return DiskError(
            f"{_full(reason)}the embedded Redis could not write its append-only file in "
            f"{directory} ({reason}) and stopped; nothing it acknowledged is lost{done}. Free "
            "space there, then run the command again (it starts Redis again)",
            turn=turn,
            **context,
        )
    return None


def _full(reason: str) -> str:
    return "the disk is full: " if reason in FULL_REASONS else ""
