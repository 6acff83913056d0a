"""Sending a commit, and learning what happened when its reply never came.

A commit is one function call that Redis runs whole or not at all. When its reply is lost —
the client timed out, the connection dropped, the server restarted — the turn may be in or
not, and an error saying "failed" could hide a commit that happened. :func:`send_commit`
does not guess: it asks the server to settle the attempt (``fabula_fence``), which in one
atomic step returns the turn's stored digest, or, when the turn is not committed, marks the
attempt dead. The commit function refuses a dead attempt, so a call still on its way — left
in a dead connection's buffer, or queued behind a busy script — can no longer commit after
the report "not committed": that report stays true.

A server busy in another script refuses the call (``BUSY``) without running it: the call is
sent again until the wait is over. Re-sending is safe because the commit is idempotent: the
same turn with the same digest is a ``duplicate``, never a second write.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import Literal

import redis
import redis.asyncio as aredis
from redis.exceptions import ResponseError

from fabula.errors import CommitFailed, CommitUncertain, Remedy, TurnConflict
from fabula.logs import get_logger
from fabula.memory.lua import fcall
from fabula.memory.payload import CommitCall
from fabula.memory.server.disk import disk_error

Status = Literal["committed", "duplicate"]
"""A commit's outcome: written, or already there with the same digest (a no-op)."""

log = get_logger(__name__)

SETTLE_S = 60.0
"""How long a commit waits for a busy or unreachable server before reporting it."""

FENCE_S = 3600
"""How long (seconds) a dead attempt stays refused unless its turn is committed first (which
clears the marks): longer than any call can stay on its way (a busy script is answered
``BUSY`` after the server's busy-reply threshold, TCP gives up resending within ~15 min)."""

_LOST = (redis.TimeoutError, redis.ConnectionError)


def _busy(exc: ResponseError) -> bool:
    return str(exc).startswith("BUSY")


async def send_commit(
    client: aredis.Redis,
    send: Callable[[], Awaitable[Status]],
    call: CommitCall,
    *,
    wait_s: float = SETTLE_S,
    **context: object,
) -> Status:
    """Run ``send()`` (sending ``call``) and return its status, ``"committed"`` or ``"duplicate"``.

    On a lost reply the attempt is settled by ``fabula_fence``: the turn committed with the
    call's digest means ``"committed"`` (logged as ``commit_reply_lost``); no turn raises
    :class:`CommitFailed`, and the attempt is refused by the server from then on, so nothing
    is or will be written by it; another digest raises :class:`TurnConflict`; no answer
    within ``wait_s`` raises :class:`CommitUncertain`, unless the server is an embedded one
    that stopped for its disk: :class:`~fabula.errors.DiskError` at once (it acknowledged
    nothing more, and nothing restarts it by itself). Other errors propagate unchanged.
    """
    deadline = time.monotonic() + wait_s
    resent = False  # after BUSY or a retry, a 'duplicate' may be our own earlier call
    while True:
        try:
            status = await send()
            return "committed" if resent and status == "duplicate" else status
        except ResponseError as exc:
            if not _busy(exc) or time.monotonic() > deadline:
                raise
            resent = True
            await asyncio.sleep(0.1)
        except _LOST as exc:
            return await _settle(client, call, exc, deadline, context)


async def _settle(
    client: aredis.Redis,
    call: CommitCall,
    cause: Exception,
    deadline: float,
    context: dict[str, object],
) -> Status:
    why = f"{type(cause).__name__}: {cause}"
    turn = call.turn
    while True:
        try:
            stored = await fcall(client, "fabula_fence", call.fence, [turn, call.attempt, FENCE_S])
            break
        except (*_LOST, ResponseError) as exc:
            if isinstance(exc, ResponseError) and not _busy(exc):
                raise
            disk = disk_error(exc, client, turn, **context)
            if disk is not None:
                raise disk from None
            if time.monotonic() > deadline:
                raise CommitUncertain(
                    f"the reply to turn {turn}'s commit was lost ({why}) and the server has "
                    "not answered since: whether it is committed is unknown",
                    turn=turn,
                    remedy=Remedy(
                        "check_committed", {"story": str(context.get("story")), "turn": str(turn)}
                    ),
                    **context,
                ) from None
            await asyncio.sleep(0.2)
    if stored is None:
        raise CommitFailed(
            f"turn {turn} was not committed ({why}); nothing was written", turn=turn, **context
        )
    if stored != call.digest:
        raise TurnConflict(
            f"turn {turn} is committed with other content (the reply to this commit was "
            f"lost: {why})",
            turn=turn,
            **context,
        )
    log.warning("commit_reply_lost", turn=turn, cause=why, outcome="committed")
    return "committed"
