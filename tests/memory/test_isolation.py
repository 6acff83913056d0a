"""Isolation against a hostile client: a character's connection cannot become anyone else,
run anything server-wide or free-form, or reach a key outside its own mind.

The enumeration test walks every command Redis files under ``@read``, ``@connection`` and
``@scripting`` (``ACL CAT``), builds a well-formed call of each from ``COMMAND DOCS`` aimed at
another character's key and at the admin's, runs it on a character's connection and expects
a denial.
"""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import tempfile
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
import redis
import redis.asyncio as aredis
from redis.backoff import NoBackoff
from redis.exceptions import AuthenticationError, NoPermissionError, ResponseError
from redis.retry import Retry

from fabula.errors import ConfigError
from fabula.graph.service import Fabula
from fabula.memory import keys
from fabula.memory.acl import CharacterMind, character_credentials, open_mind
from fabula.memory.connection import connect, is_cluster
from fabula.memory.server import (
    ADMIN_USER,
    EmbeddedRedis,
    check_open_users,
    redis_server_binary,
    resolve_url,
    without_credentials,
)
from fabula.settings import Settings
from fabula.testing.redis import on_cluster

STORY = "hb"


@pytest.fixture()
async def fab(redis_url: str) -> AsyncIterator[Fabula]:
    async with Fabula(redis_url, Settings(home=Path("/nonexistent"))) as app:
        await app.create_story("hollow_book", STORY, opening=False)
        yield app


@pytest.fixture()
async def leo(fab: Fabula) -> CharacterMind:
    """The mind the turn graph hands Leo's agent (opened from the admin's URL)."""
    return await fab.minds.mind(STORY, "leo")


def node_url(fab: Fabula) -> str:
    """The admin URL of the server, or (on a cluster) of the node that holds the story."""
    if not is_cluster(fab.url):
        return fab.url
    cluster = connect(fab.url)
    node = cluster.get_node_from_key(keys.meta(STORY))
    cluster.close()
    creds = fab.url.split("//", 1)[1].split("@", 1)[0]
    return f"redis://{creds}@{node.host}:{node.port}"


async def raw_command(client: Any, *args: str) -> Any:
    """A keyless command on a mind's connection (on a cluster: on one of its nodes)."""
    if hasattr(client, "get_random_node"):
        await client.initialize()
        return await client.execute_command(*args, target_nodes=client.get_random_node())
    return await client.execute_command(*args)


def leo_sync(fab: Fabula, password: str) -> redis.Redis:
    """A synchronous connection logged in as Leo's user (one connection, no retries)."""
    return redis.Redis.from_url(
        without_credentials(node_url(fab)),
        username=keys.acl_user(STORY, "leo"),
        password=password,
        decode_responses=True,
        single_connection_client=True,
    )


class TestNobodyElse:
    async def test_default_user_is_disabled(self, fab: Fabula, leo: CharacterMind) -> None:
        """AUTH/HELLO as `default` fail with any password, from a mind and from nowhere."""
        for attempt in (("AUTH", "default", "anything"), ("AUTH", "anything")):
            with pytest.raises(AuthenticationError):
                await raw_command(leo.client, *attempt)
        with pytest.raises(AuthenticationError):
            await raw_command(leo.client, "HELLO", "3", "AUTH", "default", "x")
        anonymous = aredis.Redis.from_url(without_credentials(fab.url))
        try:
            with pytest.raises((AuthenticationError, redis.ConnectionError), match=r"(?i)auth"):
                await anonymous.get(keys.acl_secret(STORY, "leo"))
        finally:
            await anonymous.aclose()

    async def test_cannot_become_admin_or_another_character(
        self, fab: Fabula, leo: CharacterMind
    ) -> None:
        """Guessed secrets for the admin and for Mara fail; Leo stays Leo."""
        for user in (ADMIN_USER, keys.acl_user(STORY, "mara")):
            with pytest.raises(AuthenticationError):
                await raw_command(leo.client, "AUTH", user, "guess")
        with pytest.raises(NoPermissionError):
            await leo.client.hgetall(keys.belief_records(STORY, "main", "mara"))  # type: ignore[misc]
        assert (await leo.beliefs()).holder == ("leo",)

    async def test_admin_credentials_in_the_url_never_reach_a_mind(self, fab: Fabula) -> None:
        """The admin's URL carries its secret; the mind opened from it is the character."""
        assert ADMIN_USER in fab.url
        mind = await open_mind(fab.admin, fab.url, STORY, "leo")
        try:
            with pytest.raises(NoPermissionError):
                await mind.client.get(keys.acl_secret(STORY, "mara"))
        finally:
            await mind.close()

    async def test_no_server_wide_commands_or_scripts(self, leo: CharacterMind) -> None:
        """DBSIZE, INFO, KEYS, free-form EVAL_RO and an unbounded loop are all refused."""
        for command in (
            ("DBSIZE",),
            ("INFO",),
            ("KEYS", "*"),
            ("RANDOMKEY",),
            ("EVAL_RO", "while true do end", "0"),
            ("SCRIPT", "LOAD", "return 1"),
            ("FUNCTION", "LIST"),
        ):
            with pytest.raises(NoPermissionError):
                await raw_command(leo.client, *command)


class TestDataFolder:
    def test_secret_and_acl_file_are_private(self, embedded_redis: EmbeddedRedis) -> None:
        """The admin secret and ACL file are 0600, the folder 0700."""
        for path in (embedded_redis.secretfile, embedded_redis.aclfile):
            assert stat.S_IMODE(path.stat().st_mode) == 0o600, path
        assert stat.S_IMODE(embedded_redis.directory.stat().st_mode) == 0o700

    def test_an_open_default_user_from_an_old_acl_file_is_closed(self) -> None:
        """A data folder whose ACL file opens `default` (older Fabula) starts with it off."""
        directory = Path(tempfile.mkdtemp(prefix="fi-", dir="/tmp"))
        server = EmbeddedRedis(directory / "r")
        server.directory.mkdir(parents=True)
        server.aclfile.write_text("user default on nopass sanitize-payload ~* &* +@all\n")
        try:
            server.ensure_started()
            anonymous = redis.Redis(
                unix_socket_path=str(server.socket), retry=Retry(NoBackoff(), 0)
            )
            with pytest.raises(AuthenticationError):
                anonymous.execute_command("AUTH", "default", "x")
            anonymous.close()
            admin = redis.Redis.from_url(server.url, decode_responses=True)
            assert "off" in admin.acl_getuser("default")["flags"]
            admin.close()
        finally:
            server.stop()
            shutil.rmtree(directory, ignore_errors=True)


def _on_socket(sock: Path, directory: Path, *options: str) -> list[str]:
    """A redis-server command on the unix socket ``sock`` only (no TCP port), never saving,
    its files in ``directory``, with ``options``."""
    command = [redis_server_binary(), "--port", "0", "--unixsocket", str(sock), "--save", ""]
    return [*command, "--dir", str(directory), *options]


@pytest.fixture()
def open_server() -> Iterator[str]:
    """A plain redis-server whose default user is open (as `redis-server` starts by default)."""
    directory = Path(tempfile.mkdtemp(prefix="fo-", dir="/tmp"))
    sock = directory / "s.sock"
    proc = subprocess.Popen(
        _on_socket(sock, directory, "--loglevel", "warning"), stdout=subprocess.DEVNULL
    )
    client = redis.Redis(unix_socket_path=str(sock), retry_on_error=[redis.ConnectionError])
    for _ in range(200):
        try:
            client.ping()
            break
        except redis.ConnectionError:
            time.sleep(0.02)
    client.close()
    yield f"unix://{sock}"
    proc.terminate()
    proc.wait(10)
    shutil.rmtree(directory, ignore_errors=True)


class TestOpenServerRefused:
    def test_refused_unless_told(self, open_server: str) -> None:
        """FABULA_REDIS_URL at a server with an open default user is refused, one line."""
        with pytest.raises(ConfigError, match="lets anyone in as its 'default' user"):
            resolve_url(open_server, Path("/nonexistent"))
        assert resolve_url(open_server, Path("/x"), allow_open=True) == open_server

    def test_accepted_once_closed(self, open_server: str) -> None:
        """With `default` off and an admin user, the same server is accepted."""
        client = redis.Redis.from_url(open_server)
        client.acl_setuser("boss", enabled=True, passwords=["+pw"], keys=["*"], commands=["+@all"])
        client.acl_setuser("default", enabled=False)
        client.close()
        url = open_server.replace("unix://", "unix://boss:pw@")
        check_open_users(url)

    def test_a_second_open_user_is_refused(self, open_server: str) -> None:
        """Closing ``default`` is not enough: any other enabled user that takes any password
        lets a character's own connection ``AUTH reader anything`` and read every mind. Such
        a server is refused, in one line naming the user, unless FABULA_REDIS_ALLOW_OPEN."""
        client = redis.Redis.from_url(open_server)
        client.acl_setuser("boss", enabled=True, passwords=["+pw"], keys=["*"], commands=["+@all"])
        client.execute_command("ACL", "SETUSER", "reader", "on", "nopass", "~*", "+@read")
        client.acl_setuser("default", enabled=False)
        client.set("fab:{hb}:c:mara:secret", "the letter")
        url = open_server.replace("unix://", "unix://boss:pw@")
        # the break: any password opens `reader`, which reads another character's mind
        reader = redis.Redis.from_url(open_server.replace("unix://", "unix://reader:anything@"))
        assert reader.get("fab:{hb}:c:mara:secret") == b"the letter"
        reader.close()
        with pytest.raises(ConfigError, match="lets anyone in as its 'reader' user") as caught:
            resolve_url(url, Path("/nonexistent"))
        assert "\n" not in str(caught.value) and "FABULA_REDIS_ALLOW_OPEN=1" in str(caught.value)
        assert resolve_url(url, Path("/x"), allow_open=True) == url
        client.execute_command("ACL", "SETUSER", "reader", "off")
        assert resolve_url(url, Path("/x")) == url  # disabled: nobody can become it
        client.execute_command("ACL", "SETUSER", "reader", "on", "resetpass", ">pw2")
        assert resolve_url(url, Path("/x")) == url  # a password of its own: closed
        client.close()

    def test_setting_from_the_environment(self) -> None:
        """FABULA_REDIS_ALLOW_OPEN=1 is the way to accept an open default user."""
        assert not Settings.from_env({}).allow_open_redis
        assert Settings.from_env({"FABULA_REDIS_ALLOW_OPEN": "1"}).allow_open_redis


# -- every command of @read, @connection and @scripting ------------------------------------

# Redis lets every client run these whatever its ACL says (they carry the `no-auth` flag);
# what they can do is checked separately below.
ALWAYS_ALLOWED = {"auth", "hello", "quit", "reset"}
# Granted to characters and keyless: it reveals nothing.
GRANTED_KEYLESS = {"ping"}


def _raw(client: redis.Redis, *args: Any) -> Any:
    """Send a command and read its reply without redis-py's reply callbacks."""
    conn = client.connection_pool.get_connection()
    try:
        conn.send_command(*args)
        return conn.read_response()
    finally:
        client.connection_pool.release(conn)


def _filler(arg: dict[str, Any], target: str) -> list[str]:
    """A minimal valid value for one COMMAND DOCS argument (keys are ``target``)."""
    kind = arg["type"]
    if kind == "key":
        out = [target]
    elif kind in ("integer", "double", "unix-time"):
        out = ["1"]
    elif kind == "pattern":
        out = ["*"]
    elif kind == "pure-token":
        out = [arg["token"]]
    elif kind == "oneof":
        out = _filler(arg["arguments"][0], target)
    elif kind == "block":
        out = [
            v
            for sub in arg["arguments"]
            if "optional" not in sub.get("flags", [])
            for v in _filler(sub, target)
        ]
    else:
        out = ["x"]
    if "token" in arg and kind != "pure-token":
        out = [arg["token"], *out]
    return out


def _invocation(docs: dict[str, Any], name: str, target: str) -> list[str]:
    parts = name.split("|")
    doc = docs[parts[0]]
    if len(parts) == 2:
        doc = doc["subcommands"][name]
    args = [p.upper() for p in parts]
    for arg in doc.get("arguments", []):
        if "optional" in arg.get("flags", []):
            continue
        args += _filler(arg, target)
    overrides = {
        "eval_ro": ["EVAL_RO", "return 1", "1", target],
        "eval": ["EVAL", "return 1", "1", target],
        "evalsha": ["EVALSHA", "0" * 40, "1", target],
        "evalsha_ro": ["EVALSHA_RO", "0" * 40, "1", target],
        "fcall": ["FCALL", "fabula_version", "1", target],
        "fcall_ro": ["FCALL_RO", "fabula_version", "1", target],
    }
    return overrides.get(name, args)


def _command_docs(url: str, names: list[str]) -> dict[str, Any]:
    """COMMAND DOCS of the commands' parents, read over RESP3 (so it arrives as maps)."""
    client = redis.Redis.from_url(url, protocol=3, decode_responses=True)
    try:
        docs: dict[str, Any] = _raw(
            client, "COMMAND", "DOCS", *sorted({n.split("|")[0] for n in names})
        )
        return docs
    finally:
        client.close()


class TestEveryCommand:
    def test_every_read_connection_and_scripting_command_is_denied(self, fab: Fabula) -> None:
        """Each command of the three categories, aimed at Mara's mind and at the admin's keys
        from Leo's connection, is refused (the few Redis always allows change nothing)."""
        admin = redis.Redis.from_url(node_url(fab), decode_responses=True)
        password = admin.get(keys.acl_secret(STORY, "leo"))
        assert password
        names = sorted(
            {c for cat in ("read", "connection", "scripting") for c in admin.acl_cat(cat)}
        )
        docs = _command_docs(node_url(fab), names)
        targets = {
            "another character": keys.belief_records(STORY, "main", "mara"),
            "the admin": keys.acl_secret(STORY, "mara"),
        }
        denied: dict[str, int] = {}
        tried = 0
        for name in names:
            for what, target in targets.items():
                call = _invocation(docs, name, target)
                tried += 1
                outcome = self._attempt(fab, password, name, call)
                assert outcome in ("denied", "always-allowed", "granted-keyless", "cluster"), (
                    f"{' '.join(call)} ({what}): {outcome}"
                )
                denied[outcome] = denied.get(outcome, 0) + 1
                if name not in ALWAYS_ALLOWED | GRANTED_KEYLESS:
                    self._key_is_addressed(admin, name, call, target)
        admin.close()
        assert tried == 2 * len(names) and len(names) > 140
        # everything but PING and the connection commands Redis always allows was denied
        # (AUTH is among the denied: it fails for every guessed user and password)
        # on a cluster, COMMAND and its subcommands are granted too (a cluster client reads
        # the command table when it starts); none of them reads a key
        discovery = sum(1 for n in names if n.split("|")[0] == "command") if on_cluster() else 0
        expected = {
            "denied": 2 * (len(names) - 4 - discovery),
            "always-allowed": 2 * 3,
            "granted-keyless": 2,
        }
        assert denied == expected | ({"cluster": 2 * discovery} if discovery else {})
        print(f"\n{len(names)} commands x {len(targets)} targets = {tried} calls: {denied}")

    @staticmethod
    def _key_is_addressed(admin: redis.Redis, name: str, call: list[str], target: str) -> None:
        """For a command that takes keys, the call really names the target as a key."""
        info = _raw(admin, "COMMAND", "INFO", name)[0]
        takes_keys = info[3] != 0 or "movablekeys" in info[2]
        if not takes_keys:
            return
        try:
            found = _raw(admin, "COMMAND", "GETKEYS", *call)
        except ResponseError as exc:
            pytest.fail(f"{' '.join(call)}: not a well-formed call ({exc})")
        assert target in found, f"{' '.join(call)} does not address {target}"

    @staticmethod
    def _attempt(fab: Fabula, password: str, name: str, call: list[str]) -> str:
        conn = leo_sync(fab, password)
        try:
            try:
                reply = _raw(conn, *call)
            except NoPermissionError:
                return "denied"
            except AuthenticationError:
                return "denied" if name in ("auth", "hello") else "authentication error"
            except redis.ConnectionError:
                return "always-allowed" if name == "quit" else "connection dropped"
            except ResponseError as exc:
                if on_cluster() and name.split("|")[0] == "command":
                    return "cluster"
                return f"answered with an error, not a denial: {exc}"
            if name in GRANTED_KEYLESS:
                return "granted-keyless"
            if on_cluster() and name.split("|")[0] == "command":
                return "cluster"
            if name in ALWAYS_ALLOWED:
                # whatever they did, the connection can read nothing of anyone else's
                try:
                    _raw(conn, "HGETALL", keys.belief_records(STORY, "main", "mara"))
                except (NoPermissionError, AuthenticationError, redis.ConnectionError):
                    return "always-allowed"
                return "always-allowed but then read another mind"
            return f"allowed: {str(reply)[:80]}"
        finally:
            conn.close()


def test_secret_file_is_created_private(tmp_path: Path) -> None:
    """admin_secret() creates the secret with mode 0600 and fixes a looser mode."""
    server = EmbeddedRedis(tmp_path / "r")
    secret = server.admin_secret()
    assert len(secret) == 64
    assert stat.S_IMODE(server.secretfile.stat().st_mode) == 0o600
    os.chmod(server.secretfile, 0o644)
    assert server.admin_secret() == secret
    assert stat.S_IMODE(server.secretfile.stat().st_mode) == 0o600


async def test_credentials_are_looked_up_not_guessed(fab: Fabula) -> None:
    """A character's secret is random per story and character."""
    a = await character_credentials(fab.admin, STORY, "leo")
    b = await character_credentials(fab.admin, STORY, "mara")
    assert a.password != b.password and len(a.password) == 32


class TestCompose:
    def test_compose_redis_starts_closed(self, tmp_path: Path) -> None:
        """compose.yaml's entrypoint script, run on a data folder holding an open `default`
        and a saved character, yields a server where only `fabula` (and the character) log in.
        """
        import yaml

        compose = yaml.safe_load((Path(__file__).parents[2] / "compose.yaml").read_text())
        script = compose["services"]["redis"]["entrypoint"][2]
        # compose turns $$ into $; the folder is ours; the image's entrypoint is not run
        script = script.replace("$$", "$").replace("/data", str(tmp_path))
        script = script.replace('exec docker-entrypoint.sh "$@"', "exit 0")
        (tmp_path / "users.acl").write_text(
            "user default on nopass ~* &* +@all\n"
            "user fabula.hb.leo on #" + "a" * 64 + " %R~fab:{hb}:c:leo:* resetchannels -@all +get\n"
        )
        env = {**os.environ, "FABULA_REDIS_PASSWORD": "s3cret"}
        subprocess.run(["sh", "-c", script, "--"], check=True, env=env)
        assert stat.S_IMODE((tmp_path / "users.acl").stat().st_mode) == 0o600
        sock = Path(tempfile.mkdtemp(prefix="fc-", dir="/tmp")) / "s.sock"
        proc = subprocess.Popen(
            _on_socket(sock, tmp_path, "--aclfile", str(tmp_path / "users.acl")),
            stdout=subprocess.DEVNULL,
        )
        try:
            url = f"unix://fabula:s3cret@{sock}"
            admin = redis.Redis.from_url(url, decode_responses=True, retry_on_error=[OSError])
            for _ in range(200):
                try:
                    admin.ping()
                    break
                except redis.ConnectionError:
                    time.sleep(0.02)
            users = admin.acl_users()
            assert sorted(users) == ["default", "fabula", "fabula.hb.leo"]
            assert "off" in admin.acl_getuser("default")["flags"]
            admin.close()
            check_open_users(url)
        finally:
            proc.terminate()
            proc.wait(10)
            shutil.rmtree(sock.parent, ignore_errors=True)
