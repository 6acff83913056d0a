"""A redis-server an older Fabula started on a data folder without holding its lock:
no command looks for one on its way in; ``fabula migrate`` stops it (its pid read from the
folder's pid file, and only if that process serves the folder's socket)."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path

from fabula.memory.server import EmbeddedRedis, redis_server_binary
from fabula.memory.server.lock import pid_alive


class TestUnlockedServer:
    def test_migrate_stops_a_server_running_without_its_lock(self) -> None:
        """Started as an older Fabula did (no lock handed to it), it is not the folder's
        owner; ``stop_unlocked`` stops it and says its pid; with none, it says None."""
        home = Path(tempfile.mkdtemp(prefix="fabula-old-", dir="/tmp"))
        server = EmbeddedRedis(home / "redis")
        try:
            server.folder.prepare()
            server.folder.write_aclfile()
            args = server.folder.server_args(
                redis_server_binary(), fsync="everysec", busy_reply_ms=1000
            )
            subprocess.run(args, check=True, capture_output=True, umask=0o077)
            deadline = time.monotonic() + 10
            while not server.answers() and time.monotonic() < deadline:
                time.sleep(0.02)
            assert server.answers() and not server.is_running()
            pid = int(server.pidfile.read_text().strip())
            assert server.stop_unlocked(timeout_s=4) == pid
            assert not pid_alive(pid)
            assert server.stop_unlocked() is None
        finally:
            with contextlib.suppress(OSError, ValueError):  # never left running
                os.kill(int(server.pidfile.read_text().strip()), signal.SIGKILL)
            shutil.rmtree(home, ignore_errors=True)
