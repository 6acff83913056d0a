"""Loading and calling Fabula's Redis functions (``memory/fabula.lua``).

The library carries a version (a hash of its source). The first call through a connection
pool checks it once and replaces an outdated library, so a server that outlives an upgrade
of Fabula never runs old code.
"""

from __future__ import annotations

import contextlib
import hashlib
import weakref
from importlib import resources
from typing import Any

import redis.asyncio as aredis
from redis.exceptions import NoPermissionError, ResponseError

_SOURCE = resources.files("fabula.memory").joinpath("fabula.lua").read_text()
VERSION = hashlib.sha1(_SOURCE.encode()).hexdigest()[:16]
LIBRARY = _SOURCE.replace("@VERSION@", VERSION)

# the connection pools (a cluster client: the client) whose server's library was checked
_checked: weakref.WeakSet[Any] = weakref.WeakSet()


async def load_functions(client: aredis.Redis) -> None:
    """Load (or replace) the function library on the server."""
    await client.function_load(LIBRARY, replace=True)


async def _ensure_current(client: aredis.Redis) -> None:
    pool = getattr(client, "connection_pool", client)
    if pool in _checked:
        return
    try:
        version = await client.fcall_ro("fabula_version", 0)
    except ResponseError as exc:
        if "not found" not in str(exc).lower():
            raise
        version = None
    if version != VERSION:
        # a read-only character connection cannot load it: the admin does
        with contextlib.suppress(NoPermissionError):
            await load_functions(client)
    _checked.add(pool)


async def _call(
    client: aredis.Redis, name: str, keys: list[str], args: list[Any], readonly: bool
) -> Any:
    await _ensure_current(client)
    method = client.fcall_ro if readonly else client.fcall
    try:
        return await method(name, len(keys), *keys, *args)
    except ResponseError as exc:
        if "function not found" not in str(exc).lower():
            raise
    # the server lost its functions (flushed or restarted without persistence): reload once
    await load_functions(client)
    return await method(name, len(keys), *keys, *args)


async def fcall(client: aredis.Redis, name: str, keys: list[str], args: list[Any]) -> Any:
    """Call a function, loading the library first if the server lacks the current one."""
    return await _call(client, name, keys, args, readonly=False)


async def fcall_ro(client: aredis.Redis, name: str, keys: list[str], args: list[Any]) -> Any:
    """Call a read-only function (allowed to read-only users)."""
    return await _call(client, name, keys, args, readonly=True)
