"""Loading and calling Fabula's Redis functions (``memory/fabula.lua``)."""

from __future__ import annotations

from importlib import resources
from typing import Any

import redis.asyncio as aredis
from redis.exceptions import ResponseError

__all__ = ["LIBRARY", "fcall", "fcall_ro", "load_functions"]

LIBRARY = resources.files("memory").joinpath("fabula.lua").read_text()


async def load_functions(client: aredis.Redis) -> None:
    """Load (or replace) the function library on the server."""
    await client.function_load(LIBRARY, replace=True)


def _missing(exc: ResponseError) -> bool:
    return "Function not found" in str(exc) or "function not found" in str(exc).lower()


async def fcall(client: aredis.Redis, name: str, keys: list[str], args: list[Any]) -> Any:
    """Call a function, loading the library first if the server does not have it yet."""
    try:
        return await client.fcall(name, len(keys), *keys, *args)  # type: ignore[no-untyped-call]
    except ResponseError as exc:
        if not _missing(exc):
            raise
    await load_functions(client)
    return await client.fcall(name, len(keys), *keys, *args)  # type: ignore[no-untyped-call]


async def fcall_ro(client: aredis.Redis, name: str, keys: list[str], args: list[Any]) -> Any:
    """Call a read-only function (allowed to read-only users). The library must be loaded."""
    return await client.fcall_ro(name, len(keys), *keys, *args)  # type: ignore[no-untyped-call]
