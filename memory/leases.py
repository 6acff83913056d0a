"""Locks held while their holder works, renewed so that a holder that dies frees them soon.

A lock that must outlive slow work (a decision that re-drafts a turn with a model) would
need a long timeout, and a holder killed while holding it — its process, or the server
restarted under it with the lock already on disk — would then block everyone for that long.
Instead the lock gets a short timeout and its holder renews it while it works: a holder that
dies stops renewing, and the lock expires within its timeout.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

from redis.asyncio.lock import Lock
from redis.exceptions import LockError, LockNotOwnedError, RedisError

from fabula.logs import get_logger

log = get_logger(__name__)


@contextlib.asynccontextmanager
async def renewed(lock: Lock) -> AsyncIterator[None]:
    """Hold the acquired ``lock`` for the body, renewing it every third of its timeout,
    then release it. A release that cannot reach the server is logged (a warning, or at info
    when the body failed) and the lock left to expire (within its timeout)."""
    renewing = asyncio.create_task(_renew(lock))
    failed = False
    try:
        yield
    except BaseException:
        failed = True
        raise
    finally:
        renewing.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await renewing
        try:
            await lock.release()
        except LockError:
            pass  # expired, or the server lost it: nobody holds it any more
        except RedisError as exc:
            # after a failed body, the body's error is what its caller reports (a full disk
            # refuses the release too): this one is only logged at info
            (log.info if failed else log.warning)(
                "lock_not_released", lock=str(lock.name), reason=str(exc)
            )


async def _renew(lock: Lock) -> None:
    every = (lock.timeout or 30.0) / 3
    while True:
        await asyncio.sleep(every)
        try:
            await lock.reacquire()
        except LockNotOwnedError:
            log.warning("lock_lost", lock=str(lock.name))
            return
        except RedisError as exc:  # the server restarting: try again at the next tick
            log.warning("lock_not_renewed", lock=str(lock.name), reason=str(exc))
