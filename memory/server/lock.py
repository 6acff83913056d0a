"""Which process owns a data folder: a lock held for the server's whole life.

The server process holds an exclusive ``flock`` on ``server.lock``: the starter takes it and
hands the open file to ``redis-server``, which keeps it across daemonizing. A folder whose
lock is held has a server, however busy it is; the kernel frees the lock the moment the
server exits, even by ``kill -9``.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import time
from collections.abc import Iterator
from pathlib import Path

from fabula.errors import RedisUnavailable


def lock_is_held(path: Path) -> bool:
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


def take(lock_fd: int, path: Path, wait_s: float = 2.0) -> None:
    """Take the exclusive lock on the open ``lock_fd`` (of ``path``), waiting ``wait_s`` for a
    concurrent :func:`lock_is_held` (which holds a shared lock for a moment)."""
    deadline = time.monotonic() + wait_s
    while True:
        try:
            fcntl.flock(lock_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            if time.monotonic() > deadline:
                raise RedisUnavailable(
                    "another server holds this folder's lock", directory=str(path.parent)
                ) from None
            time.sleep(0.01)


@contextlib.contextmanager
def exclusive(path: Path) -> Iterator[None]:
    """Hold an exclusive lock on ``path`` (created if needed) for the body, waiting for it."""
    with open(path, "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def pid_alive(pid: int) -> bool:
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
