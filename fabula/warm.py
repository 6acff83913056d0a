"""Warm commands: a command line that answers in a fraction of a second, offline.

A story command spends most of its time importing (LangGraph alone loads langchain-core,
its tracers and LangSmith: about 0.6 s of processor time) and a fraction running. So the
first ``fabula`` command of a session runs as it always did and, beside it, starts a
*warm process* that imports once what the commands need and then waits on a Unix socket.
Each later command's process (:func:`relay`) connects, hands over its argument list, its
environment, its working folder and its own standard input, output and error (the file
descriptors themselves, so a terminal stays a terminal), and waits. The warm process forks
a child for it; the child takes on that environment and those descriptors, runs the command
exactly as the command line would, and sends back its exit status, which the command's
process exits with. A signal to the command's process (Ctrl-C) is passed on to the child.

What stays right by construction:

- *nothing is shared between commands*: every command runs in a child of its own, forked
  from a process that has imported modules and nothing else (no settings, no connection,
  no logging configured), and it reads its settings from its own environment as a cold
  command does;
- *no stale code*: the socket's name holds a fingerprint of the interpreter and of every
  source file of the package (path, size, modification time), so after an edit or an
  upgrade the next command starts a new warm process; an old one ends when it has been
  idle for ``FABULA_WARM`` seconds (default 600), or when its socket is taken over;
- *only its user*: the socket lives in a folder only the user can open (``0700``), and the
  warm process serves only connections from its own user id (``SO_PEERCRED``).

``FABULA_WARM=0`` runs every command in its own process, as before; the test helpers set
it, so that the suite runs the commands cold (tests/graph/test_warm.py runs them warm).
``fabula serve`` and the benchmarks always run in their own process.

This module imports nothing but the standard library, and only the command's process
imports it before deciding: a command that is relayed costs about what ``python -c
"import socket"`` does, plus the command's own work in the child.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib
import json
import os
import select
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time
import traceback
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

DEFAULT_IDLE_S = 600.0
"""How long a warm process waits for a command before it ends (``FABULA_WARM``)."""

COLD = frozenset({"serve", "bench", "demo", "worker"})
"""Commands that always run in their own process: long-lived ones (a server, a worker, the
demo's whole session), and the benchmarks, which time processes themselves."""

PRELOAD = (
    "fabula.cli",
    "fabula.settings",
    "fabula.graph.cli.turns",
    "fabula.graph.cli.stories",
    "fabula.graph.cli.show",
    "fabula.graph.cli.chat",
    "fabula.graph.cli.play",
    "fabula.graph.build",
    "fabula.graph.service",
    "fabula.graph.service.application",
    "fabula.agents.factory",
    "fabula.agents.roles",
    "fabula.memory.tokens",
)
"""What the warm process imports before it serves: the command line, the turn graph (and
with it LangGraph and langchain-core), the service and the offline roles. A name that is
not there (a module renamed) is skipped, never fatal: the child imports what it needs."""

_HEADER = struct.Struct("!I")

_SOCKET_PATH_MAX = 107  # sun_path's 108 bytes, less the closing NUL


def idle_seconds(env: Mapping[str, str]) -> float | None:
    """``FABULA_WARM`` as the settings read it (``fabula.settings.Settings.warm_idle_s``):
    seconds a warm process waits; ``None`` where it is ``0`` or not a number (then the
    command runs cold, and the settings report a bad value as they report any other)."""
    text = env.get("FABULA_WARM", "").strip()
    if not text:
        return DEFAULT_IDLE_S
    try:
        seconds = float(text)
    except ValueError:
        return None
    return seconds if seconds > 0 else None


def _package() -> Path:
    return Path(__file__).resolve().parent


def fingerprint() -> str:
    """Which code would run, as ``INSTALL-CODE``: ``INSTALL`` names the interpreter, the
    package's folder and ``PYTHONPATH`` (one install, one checkout), ``CODE`` every
    source file of the package (path, size, modification time): any edit or upgrade
    changes it."""
    package = _package()
    # the import path is the warm process's from its start: a command with another
    # PYTHONPATH is another install
    where = os.environ.get("PYTHONPATH", "")
    install = hashlib.sha256(f"{sys.executable}\0{sys.version}\0{package}\0{where}".encode())
    code = hashlib.sha256()
    for folder, dirs, files in os.walk(package, followlinks=True):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        for name in sorted(files):
            if name.endswith((".py", ".json", ".txt", ".gz")):
                path = os.path.join(folder, name)
                try:
                    info = os.stat(path)
                except OSError:
                    continue
                code.update(f"{path}\0{info.st_size}\0{info.st_mtime_ns}\n".encode())
    return f"{install.hexdigest()[:10]}-{code.hexdigest()[:16]}"


def socket_path(code: str | None = None) -> Path:
    """The warm process's socket for this user and this code (its folder made ``0700``)."""
    folder = Path(tempfile.gettempdir()) / f"fabula-warm-{os.getuid()}"
    folder.mkdir(mode=0o700, exist_ok=True)
    info = folder.lstat()
    if info.st_uid != os.getuid() or info.st_mode & 0o077 or not folder.is_dir():
        raise PermissionError(f"{folder} is not a folder only this user can open")
    path = folder / f"{code or fingerprint()}.sock"
    if len(os.fsencode(path)) > _SOCKET_PATH_MAX:
        raise OSError(f"{path} is too long for a Unix socket")
    return path


def program_name() -> str:
    """How this process was called, as usage lines name it: ``fabula``, or ``python -m
    fabula``."""
    first = os.path.basename(sys.argv[0]) if sys.argv and sys.argv[0] else "fabula"
    return "python -m fabula" if first == "__main__.py" else first


def command_of(argv: Sequence[str]) -> str | None:
    """The command word of ``fabula ARGS`` (its first argument that is not an option)."""
    return next((a for a in argv if not a.startswith("-")), None)


# --- the command's process ---------------------------------------------------------------


def relay(argv: Sequence[str], env: Mapping[str, str] | None = None) -> int | None:
    """Run ``fabula ARGV`` in the warm process and return its exit status; ``None`` where
    it must run here (warm commands off, a cold command, no warm process yet: one is started
    for the next command, and this one runs here)."""
    env = os.environ if env is None else env
    idle = idle_seconds(env)
    command = command_of(argv)
    if idle is None or command in COLD or command is None or not hasattr(os, "fork"):
        return None
    try:
        path = socket_path()
        conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    except OSError:
        return None
    try:
        try:
            conn.connect(str(path))
        except OSError:
            conn.close()
            _start(path, idle)
            return None
        return _converse(conn, argv, env)
    finally:
        conn.close()


def _converse(conn: socket.socket, argv: Sequence[str], env: Mapping[str, str]) -> int | None:
    request = {
        "argv": list(argv),
        "prog": program_name(),
        "env": dict(env),
        "cwd": os.getcwd(),
        "encodings": [_encoding(sys.stdin), _encoding(sys.stdout), _encoding(sys.stderr)],
    }
    body = json.dumps(request).encode("utf-8", "surrogateescape")
    try:
        socket.send_fds(conn, [b"F"], [0, 1, 2])
        conn.sendall(_HEADER.pack(len(body)) + body)
        pid = _read_int(conn)
    except OSError:
        return None  # the warm process went away before it forked: run here
    if pid is None:
        return None
    previous = {}
    for number in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT):
        previous[number] = signal.signal(number, lambda signum, _frame: _pass_on(pid, signum))
    try:
        status = _read_int(conn)
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)
    # the child died without a status (killed): as a shell reports a killed process
    return 128 + signal.SIGKILL if status is None else status


def _pass_on(pid: int, signum: int) -> None:
    # to the child's process group (it leads one), as a terminal signals a foreground job
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pid, signum)


def _encoding(stream: Any) -> tuple[str, str] | None:
    if stream is None:
        return None
    encoding = getattr(stream, "encoding", None) or "utf-8"
    return (encoding, getattr(stream, "errors", None) or "strict")


def _read_int(conn: socket.socket) -> int | None:
    """The next signed 8-byte integer the warm process sends (a pid, a status), or None
    where the connection closed first."""
    try:
        return int(struct.unpack("!q", _recv_exactly(conn, 8))[0])
    except EOFError:
        return None


def _start(path: Path, idle: float) -> None:
    """Start the warm process for ``path`` in the background, detached from this session;
    what it has to say (only ever why it could not start) goes to ``warm.log`` beside it."""
    try:
        with open(path.with_name("warm.log"), "ab") as log:
            subprocess.Popen(
                [sys.executable, "-m", "fabula.warm", str(path), str(idle)],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=log,
                start_new_session=True,
                close_fds=True,
            )
    except OSError:
        pass  # no warm process: every command runs cold


# --- the warm process --------------------------------------------------------------------


def serve(path: Path, idle: float) -> None:
    """Import :data:`PRELOAD`, then serve commands on ``path`` until idle for ``idle``
    seconds or until the socket is taken over (by a newer warm process for the same code).

    Each child tells the warm process, when it ends, which of the package's modules it had
    to import itself; the warm process imports them between commands, so that the next
    command of that kind finds them loaded (what a command needs is learnt, not listed)."""
    for name in PRELOAD:
        _load(name)
    _warm_caches()
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    staging = path.with_name(f".{path.name}.{os.getpid()}")
    listener.bind(str(staging))
    listener.listen(16)
    os.replace(staging, path)  # ready: only now can a command find it
    mine = os.stat(path).st_ino
    _retire_older(path)
    path.with_suffix(".pid").write_text(f"{os.getpid()}\n")
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # children are reaped by the system
    signal.signal(signal.SIGTERM, _end)
    door = listener.fileno()
    learning: dict[int, bytearray] = {}  # a child's pipe -> what it has said so far
    last = time.monotonic()
    try:
        while True:
            ready, _, _ = select.select([door, *learning], [], [], min(idle, 30.0))
            if not ready:
                if time.monotonic() - last >= idle or not _still_mine(path, mine):
                    return
                continue
            for source in ready:
                if source == door:
                    last = time.monotonic()
                    pipe = _accept(listener)
                    if pipe is not None:
                        learning[pipe] = bytearray()
                else:
                    chunk = os.read(source, 65536)
                    if chunk:
                        learning[source] += chunk
                        continue
                    os.close(source)
                    for name in learning.pop(source).decode("utf-8", "replace").split():
                        _load(name)
    finally:
        listener.close()
        if _still_mine(path, mine):
            path.unlink(missing_ok=True)
            path.with_suffix(".pid").unlink(missing_ok=True)


def _end(signum: int, _frame: Any) -> None:
    raise SystemExit(128 + signum)


def stop_all(folder: Path | None = None) -> int:
    """End every warm process of this user (in ``folder``, by default the usual one);
    return how many were asked to end. Their sockets go with them."""
    folder = folder or socket_path("x").parent
    ended = 0
    for pid_file in folder.glob("*.pid"):
        try:
            os.kill(int(pid_file.read_text().strip()), signal.SIGTERM)
            ended += 1
        except (OSError, ValueError):
            pass
        pid_file.unlink(missing_ok=True)
        pid_file.with_suffix(".sock").unlink(missing_ok=True)
    return ended


def _accept(listener: socket.socket) -> int | None:
    """Take one command: fork its child; return the pipe the child names its imports on."""
    conn, _ = listener.accept()
    with conn:
        if _peer_uid(conn) != os.getuid():
            return None
        conn.setblocking(True)
        read, write = os.pipe()
        if os.fork() == 0:
            listener.close()
            os.close(read)
            _child(conn, write)  # never returns
        os.close(write)
        return read


def _load(name: str) -> None:
    if not name.startswith("fabula") or name in sys.modules:
        return
    with contextlib.suppress(Exception):
        importlib.import_module(name)


def _warm_caches() -> None:
    """Load what the first command of each process would otherwise load: the token
    encoding (a third of a second)."""
    try:
        from fabula.memory.tokens import shipped_encoding

        shipped_encoding()
    except Exception:
        pass


def _retire_older(path: Path) -> None:
    """Take the sockets of this install's warm processes for older code away: each ends at
    its next look (:func:`_still_mine`), and no command finds it meanwhile."""
    install = path.name.split("-", 1)[0]
    for other in path.parent.glob(f"{install}-*.sock"):
        if other != path:
            other.unlink(missing_ok=True)
            other.with_suffix(".pid").unlink(missing_ok=True)


def _still_mine(path: Path, inode: int) -> bool:
    try:
        return os.stat(path).st_ino == inode
    except OSError:
        return False


def _peer_uid(conn: socket.socket) -> int | None:
    try:
        creds = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    except (OSError, AttributeError):
        return None
    return int(struct.unpack("3i", creds)[1])


def _child(conn: socket.socket, learnt: int) -> None:
    """Run one command in this forked child, as the command's own process would, and send
    back its exit status; then name on ``learnt`` the package's modules it imported, and
    end, whatever happened."""
    status = 1
    before = set(sys.modules)
    try:
        _, fds, _, _ = socket.recv_fds(conn, 1, 3)
        size = _HEADER.unpack(_recv_exactly(conn, _HEADER.size))[0]
        request = json.loads(_recv_exactly(conn, size).decode("utf-8", "surrogateescape"))
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        for number in (signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT):
            signal.signal(number, signal.SIG_DFL)
        os.setsid()
        _take_over(fds, request)
        conn.sendall(struct.pack("!q", os.getpid()))
        status = _run(request["argv"], request["prog"])
    except BaseException:
        status = 1
    finally:
        try:
            for stream in (sys.stdout, sys.stderr):
                stream.flush()
        except Exception:
            pass
        with contextlib.suppress(OSError):
            conn.sendall(struct.pack("!q", status))
        try:
            new = sorted(n for n in set(sys.modules) - before if n.startswith("fabula."))
            os.write(learnt, "\n".join(new).encode()[:60000])
        except OSError:
            pass
        os._exit(0)


def _recv_exactly(conn: socket.socket, size: int) -> bytes:
    data = bytearray()
    while len(data) < size:
        chunk = conn.recv(min(size - len(data), 1 << 20))
        if not chunk:
            raise EOFError("the command's process went away")
        data += chunk
    return bytes(data)


def _take_over(fds: list[int], request: dict[str, Any]) -> None:
    """Become the command's process: its descriptors, environment, folder and streams."""
    for target, fd in enumerate(fds[:3]):
        os.dup2(fd, target)
        os.close(fd)
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    streams = []
    for number, (mode, encoding) in enumerate(
        zip(("r", "w", "w"), request["encodings"], strict=True)
    ):
        name, errors = encoding or ("utf-8", "strict")
        # as the interpreter makes them: stderr, and stdout on a terminal, by the line
        lines = mode == "w" and (number == 2 or os.isatty(number))
        streams.append(
            open(  # noqa: SIM115 - the process's own streams, open until it ends
                number,
                mode,
                buffering=1 if lines else -1,
                encoding=name,
                errors=errors,
                closefd=False,
            )
        )
    sys.stdin, sys.stdout, sys.stderr = streams
    sys.argv = [request["prog"], *request["argv"]]
    consoles = sys.modules.get("fabula.graph.cli.app")
    if consoles is not None:
        consoles.fresh_consoles()


def _run(argv: list[str], prog: str) -> int:
    """The command's exit status, as the interpreter would make it of how it ended."""
    from fabula.cli import run_here

    try:
        run_here(argv, prog)
    except SystemExit as exc:
        code = exc.code
        if code is None:
            return 0
        if isinstance(code, int):
            return code
        print(code, file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 128 + signal.SIGINT
    except Exception:
        traceback.print_exc()
        return 1
    return 0


def main(argv: Sequence[str] | None = None) -> None:
    """``python -m fabula.warm SOCKET IDLE``: the warm process (started by :func:`relay`)."""
    args = list(sys.argv[1:] if argv is None else argv)
    serve(Path(args[0]), float(args[1]))


if __name__ == "__main__":
    main()
