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
import threading
from collections.abc import AsyncIterator, Iterator

from redis.asyncio.lock import Lock
from redis.exceptions import LockError, LockNotOwnedError, RedisError
from redis.lock import Lock as SyncLock

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


@contextlib.contextmanager
def renewed_in_thread(lock: SyncLock, *, keep_s: float | None = None) -> Iterator[None]:
    """Hold the acquired synchronous ``lock`` for the body, renewed every third of its
    timeout by a thread of its own, then release it — or, with ``keep_s``, after a body
    that ended well, leave it to expire ``keep_s`` seconds later: whoever takes the lock
    gone for the holder's death then sees the holder's result recorded first (an RQ job's
    result is saved after the job's function returns, which a busy machine may take
    seconds to do).

    Unlike :func:`renewed`, the renewal does not wait for an event loop: a body whose
    coroutines hold the loop for seconds on end (a scene of a town of 1,000 read on a busy
    machine) keeps its lock, and only the death of the process lets it lapse. ``lock``
    must not be thread-local (``thread_local=False``): the thread renews the token its
    holder took."""
    stop = threading.Event()
    renewer = threading.Thread(
        target=_renew_until, args=(lock, stop), name=f"renew {lock.name!r}", daemon=True
    )
    renewer.start()
    ended_well = False
    try:
        yield
        ended_well = True
    finally:
        stop.set()
        renewer.join()
        if ended_well and keep_s is not None:
            _keep(lock, keep_s)
        else:
            _release(lock)


def _keep(lock: SyncLock, seconds: float) -> None:
    try:
        lock.extend(seconds, replace_ttl=True)
    except LockError:
        pass  # expired already: nobody holds it any more
    except RedisError as exc:
        log.warning("lock_not_kept", lock=str(lock.name), reason=str(exc))


def _release(lock: SyncLock) -> None:
    try:
        lock.release()
    except LockError:
        pass  # expired, or the server lost it: nobody holds it any more
    except RedisError as exc:
        log.warning("lock_not_released", lock=str(lock.name), reason=str(exc))


def _renew_until(lock: SyncLock, stop: threading.Event) -> None:
    every = (lock.timeout or 30.0) / 3
    while not stop.wait(every):
        try:
            lock.reacquire()
        except LockNotOwnedError:
            log.warning("lock_lost", lock=str(lock.name))
            return
        except RedisError as exc:  # the server restarting: try again at the next round
            log.warning("lock_not_renewed", lock=str(lock.name), reason=str(exc))
