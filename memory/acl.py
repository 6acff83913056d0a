"""Private minds, enforced by Redis: one read-only ACL user per (story, character).

A character's user may read only its own keyspace (``fab:{story}:c:<character>:*``) and the
story's branch tree (``fab:{story}:common:branches``), with the key-reading commands of
:data:`CHARACTER_COMMANDS` and the project's read-only functions (whose ``redis.call`` is
checked against the caller's permissions); it cannot write, run a script of its own, scan
the keyspace, or run a server-wide command. Users are saved to
the server's ACL file, so they survive a restart. The admin connection hands an agent a
:class:`CharacterMind`, built on that user's own connection.
"""

from __future__ import annotations

import contextlib
import secrets
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import redis.asyncio as aredis
from redis.asyncio.cluster import RedisCluster as AsyncRedisCluster
from redis.exceptions import NoPermissionError, ResponseError

from fabula.errors import AccessDenied
from fabula.logs import get_logger
from fabula.memory import keys
from fabula.memory.answer import Question, answer
from fabula.memory.connection import connect_async, without_credentials
from fabula.memory.projections import BeliefView, project_beliefs, recall
from fabula.memory.recall.assemble import Assembly
from fabula.memory.recall.context import character_context, own_words
from fabula.memory.records import Entity, Memory
from fabula.memory.store.reads import Naming
from fabula.memory.store.view import StoryReads
from fabula.memory.tokens import TokenCounter

log = get_logger(__name__)

# What a character's connection may run: reads of single keys (each checked against the
# user's key patterns), the project's read-only functions, and PING. Nothing server-wide
# (DBSIZE, KEYS, SCAN, INFO, ...), no free-form scripts (EVAL_RO), no writes, no pub/sub.
# AUTH and HELLO cannot be denied by ACL (Redis lets any client run them), which is why no
# other user may be open: see memory/server/default_user.py. Keep /work/notes/coord.md's
# list in step.
CHARACTER_COMMANDS: tuple[str, ...] = (
    # hashes
    "hget",
    "hmget",
    "hgetall",
    "hvals",
    "hkeys",
    "hexists",
    "hlen",
    "hstrlen",
    "hscan",
    # lists
    "lrange",
    "lindex",
    "llen",
    # sets
    "smembers",
    "sismember",
    "smismember",
    "scard",
    "sscan",
    # sorted sets
    "zrange",
    "zrangebyscore",
    "zrevrange",
    "zrevrangebyscore",
    "zrangebylex",
    "zrevrangebylex",
    "zscore",
    "zmscore",
    "zcard",
    "zcount",
    "zlexcount",
    "zrank",
    "zrevrank",
    "zscan",
    # strings
    "get",
    "mget",
    "strlen",
    "getrange",
    # the project's registered read-only functions (they run with this user's rights)
    "fcall_ro",
    "ping",
)
_ACL_RULES = ("-@all", *(f"+{c}" for c in CHARACTER_COMMANDS))
# on a cluster only: what redis-py's cluster client asks each node when it starts (the slot
# map and the command table); neither reads a key
CLUSTER_DISCOVERY: tuple[str, ...] = ("cluster|slots", "cluster|shards", "command")


@dataclass(frozen=True)
class CharacterCredentials:
    """The name and secret of one character's Redis user."""

    story: str
    character: str
    username: str
    password: str


async def ensure_character_user(
    admin: aredis.Redis, story: str, character: str
) -> CharacterCredentials:
    """Create (or refresh) the character's read-only user and persist it; idempotent."""
    keys.check_id(story, "story")
    keys.check_id(character, "character")
    secret_key = keys.acl_secret(story, character)
    await admin.set(secret_key, secrets.token_hex(16), nx=True)
    password = await admin.get(secret_key)
    assert password is not None
    username = keys.acl_user(story, character)
    cluster = isinstance(admin, AsyncRedisCluster)
    rules = [
        "reset",
        "on",
        f">{password}",
        f"%R~{keys.mind_pattern(story, character)}",
        # of the story's common keys only the branch tree: the story's full list of
        # entities is not for a character (it knows of what its own mind names)
        f"%R~{keys.branches(story)}",
        "resetchannels",
        *_ACL_RULES,
        # a cluster client first asks which node serves which slots, and for the command table
        *((f"+{c}" for c in CLUSTER_DISCOVERY) if cluster else ()),
    ]
    await _on_every_node(admin, "ACL", "SETUSER", username, *rules)
    try:
        await _on_every_node(admin, "ACL", "SAVE")
    except ResponseError as exc:
        # a server without an ACL file keeps users in memory only; say so rather than fail
        log.warning("acl_not_persisted", story=story, character=character, reason=str(exc))
    return CharacterCredentials(story, character, username, password)


async def drop_character_users(admin: aredis.Redis, story: str, characters: Sequence[str]) -> None:
    """Delete the ACL users of a story's characters (when a story is deleted): those named,
    and every other user of the story the server has (one a process writing the story
    meanwhile made)."""
    prefix = keys.acl_user(story, "")
    found = [str(n.decode() if isinstance(n, bytes) else n) for n in await _acl_users(admin)]
    others = [n.removeprefix(prefix) for n in found if n.startswith(prefix)]
    for character in dict.fromkeys([*characters, *others]):
        with contextlib.suppress(ResponseError):
            await _on_every_node(admin, "ACL", "DELUSER", keys.acl_user(story, character))
    with contextlib.suppress(ResponseError):
        await _on_every_node(admin, "ACL", "SAVE")


async def _acl_users(admin: aredis.Redis) -> list[Any]:
    """The server's user names (a cluster: its first node's; users are set on every node)."""
    if not isinstance(admin, AsyncRedisCluster):
        return list(await admin.execute_command("ACL", "USERS"))
    nodes = await _cluster_nodes(admin)
    try:
        return list(await nodes[0].execute_command("ACL", "USERS")) if nodes else []
    finally:
        for node in nodes:
            await node.aclose()


async def _on_every_node(admin: aredis.Redis, *command: str) -> None:
    """Run an ACL command on the server, or on every node of a cluster (ACL is per node)."""
    if not isinstance(admin, AsyncRedisCluster):
        await admin.execute_command(*command)
        return
    for node in await _cluster_nodes(admin):
        try:
            await node.execute_command(*command)
        finally:
            await node.aclose()


async def _cluster_nodes(admin: AsyncRedisCluster) -> list[aredis.Redis]:
    """A plain admin client of every live node, replicas included.

    From ``CLUSTER NODES``: the cluster client's own map comes from ``CLUSTER SLOTS``, which
    leaves out replicas that have not replicated anything yet."""
    described = await admin.cluster_nodes()  # redis-py parses it: {"host:port": {...}}
    kwargs = admin.connection_kwargs
    out = []
    for address, info in described.items():
        if {"fail", "handshake", "noaddr"} & set(str(info.get("flags", "")).split(",")):
            continue
        host, _, port = address.split("@", 1)[0].rpartition(":")
        out.append(
            aredis.Redis(
                host=host,
                port=int(port),
                username=kwargs.get("username"),
                password=kwargs.get("password"),
                decode_responses=True,
            )
        )
    return out


async def sync_users(admin: aredis.Redis) -> int:
    """On a cluster, copy every Fabula user to the nodes that lack it (a node that joined
    after the users were made, or lost them); returns how many were copied. A no-op on a
    single server."""
    if not isinstance(admin, AsyncRedisCluster):
        return 0
    await admin.initialize()
    nodes = await _cluster_nodes(admin)
    try:
        have: list[dict[str, str]] = []
        for node in nodes:
            users = (ln.split(maxsplit=2) for ln in await node.execute_command("ACL", "LIST"))
            have.append({u[1]: u[2] for u in users if u[1].startswith("fabula.")})
        wanted: dict[str, str] = {}
        for users_of in have:
            wanted.update(users_of)
        copied = 0
        for node, users_of in zip(nodes, have, strict=True):
            missing = [name for name in wanted if name not in users_of]
            for name in missing:
                # the rules as ACL LIST gives them, the hashed secret included
                await node.execute_command("ACL", "SETUSER", name, *wanted[name].split())
            if missing:
                copied += len(missing)
                with contextlib.suppress(ResponseError):
                    await node.execute_command("ACL", "SAVE")
        return copied
    finally:
        for node in nodes:
            await node.aclose()


class CharacterMind:
    """A character's read-only view of its own mind, on its own Redis user's connection.

    Every read goes through a connection that Redis itself restricts to this character's
    keyspace and the story's common knowledge; anything else is :class:`AccessDenied`.
    """

    def __init__(self, client: aredis.Redis, story: str, character: str, branch: str = "main"):
        self.client = client
        self.story = story
        self.character = character
        self.branch = branch
        self._store = StoryReads(client, story, branch, viewer=character)

    async def beliefs(self, about: Sequence[str] = (), *, as_of: int | None = None) -> BeliefView:
        """B[self] (or, with ``about=["ben"]``, what this character thinks Ben believes)."""
        try:
            return await project_beliefs(self._store, (self.character, *about), as_of=as_of)
        except NoPermissionError as exc:
            raise AccessDenied(str(exc), story=self.story, character=self.character) from exc

    async def memories(self, last: int = 20, *, as_of: int | None = None) -> list[Memory]:
        """This character's last first-person memories (the events it witnessed; by turn
        ``as_of`` if given)."""
        try:
            return await recall(self._store, self.character, last=last, as_of=as_of)
        except NoPermissionError as exc:
            raise AccessDenied(str(exc), story=self.story, character=self.character) from exc

    async def recall(
        self,
        request: str,
        *,
        budget: int,
        counter: TokenCounter | None = None,
        as_of: int | None = None,
    ) -> Assembly:
        """This character's context for ``request``: its beliefs and the episodes it
        witnessed, within ``budget`` tokens, read through this mind's own connection."""
        try:
            return await character_context(
                self.client,
                self.story,
                self.branch,
                self.character,
                request,
                budget=budget,
                counter=counter,
                as_of=as_of,
            )
        except NoPermissionError as exc:
            raise AccessDenied(str(exc), story=self.story, character=self.character) from exc

    async def answer(self, question: Question, *, as_of: int | None = None) -> str:
        """The question-answerer's answer to ``question`` asked by this character, from its
        own beliefs only (a chain it names is read from this keyspace: B[self→other]), or
        ``"unknown"`` (see :func:`fabula.memory.answer.answer`)."""
        try:
            return await answer(self._store, question, asker=self.character, as_of=as_of)
        except NoPermissionError as exc:
            raise AccessDenied(str(exc), story=self.story, character=self.character) from exc

    async def own_words(self, last: int = 3, *, as_of: int | None = None) -> list[str]:
        """The last things this character said (its own utterances, as it remembers them;
        by turn ``as_of`` if given), oldest first, read from its own episode index."""
        try:
            return await own_words(
                self.client, self.story, self.branch, self.character, last, as_of=as_of
            )
        except NoPermissionError as exc:
            raise AccessDenied(str(exc), story=self.story, character=self.character) from exc

    async def lore(self) -> str | None:
        """This character's own lore (the document the story was created with for it: its
        card's book and what the author made known to it), read from its own keyspace;
        None if it has none."""
        try:
            raw: str | None = await self.client.get(keys.mind_lore(self.story, self.character))
        except NoPermissionError as exc:
            raise AccessDenied(str(exc), story=self.story, character=self.character) from exc
        return raw

    async def voice(self) -> str | None:
        """This character's voice document (its card's example dialogues, its BookWorld
        lines: see :mod:`fabula.worlds.voice`), read from its own keyspace; None if none."""
        try:
            raw: str | None = await self.client.get(keys.mind_voice(self.story, self.character))
        except NoPermissionError as exc:
            raise AccessDenied(str(exc), story=self.story, character=self.character) from exc
        return raw

    async def entities(
        self, *, as_of: int | None = None, naming: Naming | None = None
    ) -> dict[str, Entity]:
        """The entities this character knows of (by turn ``as_of``, if given): those its
        beliefs and the events it witnessed name, and the pack's places and cast — read from
        its own mind; the story's full list is not readable by this connection. With
        ``naming``, only those what it reads may name (:meth:`~fabula.memory.store.reads.
        RecordReads.known_entities`)."""
        try:
            if naming is not None:
                return await self._store.known_entities(self.character, as_of, naming=naming)
            return await self._store.entities(as_of)
        except NoPermissionError as exc:
            raise AccessDenied(str(exc), story=self.story, character=self.character) from exc

    async def close(self) -> None:
        """Close this mind's connection."""
        await self.client.aclose()

    async def retire(self) -> None:
        """Close this mind's idle connections; one still in use by a call under way is left
        to finish, and is closed when it is released and dropped."""
        pool = getattr(self.client, "connection_pool", None)
        if pool is None:  # a cluster client: one pool per node, closed together
            await self.client.aclose()
        else:
            await pool.disconnect(inuse_connections=False)


async def character_credentials(
    admin: aredis.Redis, story: str, character: str
) -> CharacterCredentials:
    """The character's user (created on first use; afterwards one read)."""
    password = await admin.get(keys.acl_secret(story, character))
    if password is None or await _stale(admin, story, character):
        return await ensure_character_user(admin, story, character)
    return CharacterCredentials(story, character, keys.acl_user(story, character), password)


async def _stale(admin: aredis.Redis, story: str, character: str) -> bool:
    """Whether the character's user still has an older Fabula's rules (every common key
    readable, the story's full entity list included): then it is made again."""
    try:
        user = await admin.acl_getuser(keys.acl_user(story, character))
    except ResponseError:
        return True
    return not user or keys.common_pattern(story) in str(user.get("keys", ""))


async def open_mind(
    admin: aredis.Redis, url: str, story: str, character: str, branch: str = "main"
) -> CharacterMind:
    """A :class:`CharacterMind` logged in as the character's own read-only user."""
    creds = await character_credentials(admin, story, character)
    # the admin's URL may carry the admin's own name and secret, and redis-py lets a URL's
    # credentials override keyword arguments: strip them, or the mind would be the admin
    client = connect_async(
        without_credentials(url),
        cluster=isinstance(admin, AsyncRedisCluster),
        max_connections=MIND_CONNECTIONS,
        username=creds.username,
        password=creds.password,
    )
    return CharacterMind(client, story, character, branch)


MAX_OPEN_MINDS = 256
"""How many character minds a :class:`MindPool` keeps open (each holds its own connections)."""
MIND_CONNECTIONS = 8
"""The most connections one mind's client holds (more reads at once wait for one)."""


class MindPool:
    """Open character minds, kept for reuse (one connection pool per story, branch and
    character), at most ``limit`` of them: the least recently used is closed first, so a
    long-running application serving many stories never runs Redis out of connections
    (``maxclients``), which would refuse the admin's connections too."""

    def __init__(self, admin: aredis.Redis, url: str, limit: int = MAX_OPEN_MINDS) -> None:
        self.admin = admin
        self.url = url
        self.limit = limit
        self._minds: OrderedDict[tuple[str, str, str], CharacterMind] = OrderedDict()

    async def mind(self, story: str, character: str, branch: str = "main") -> CharacterMind:
        """The mind of ``character`` on ``branch``, on a connection as that character's Redis user
        (one per character, reused)."""
        key = (story, character, branch)
        mind = self._minds.get(key)
        if mind is not None:
            self._minds.move_to_end(key)
            return mind
        mind = self._minds[key] = await open_mind(self.admin, self.url, story, character, branch)
        while len(self._minds) > self.limit:
            _, oldest = self._minds.popitem(last=False)
            await oldest.retire()
        return mind

    def __len__(self) -> int:
        return len(self._minds)

    async def forget(self, story: str) -> None:
        """Close the minds of one story (when it is deleted)."""
        for key in [k for k in self._minds if k[0] == story]:
            await self._minds.pop(key).close()

    async def aclose(self) -> None:
        """Close every mind's connection."""
        for mind in self._minds.values():
            await mind.close()
        self._minds.clear()
