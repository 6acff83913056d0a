"""Keeping a test server busy in a script, as a slow or hostile client would."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator

import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

__all__ = ["FOREVER", "LOOP", "busy_for", "busy_until_killed", "loop_count", "wait_until_busy"]

LOOP = "local n = 0 for i = 1, tonumber(ARGV[1]) do n = n + i end return 1"
FOREVER = "while true do end"


def _client(url: str, timeout: float | None) -> redis.Redis:
    return redis.Redis.from_url(url, socket_timeout=timeout, retry=Retry(NoBackoff(), 0))


def _eval_in_thread(url: str, script: str, *args: object) -> threading.Thread:
    def run() -> None:
        client = _client(url, None)
        with contextlib.suppress(redis.RedisError):
            client.eval(script, 0, *args)
        client.close()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


def wait_until_busy(url: str) -> None:
    """Until the server stops answering PING promptly (BUSY, or no reply within 50 ms)."""
    probe = _client(url, 0.05)
    try:
        for _ in range(400):
            try:
                probe.ping()
            except (redis.TimeoutError, redis.ResponseError):
                return
            time.sleep(0.005)
        raise AssertionError("the server never became busy")
    finally:
        probe.close()


def loop_count(url: str, seconds: float) -> int:
    """How many iterations of LOOP keep this server busy for about ``seconds``."""
    client = _client(url, None)
    n = 2_000_000
    started = time.perf_counter()
    client.eval(LOOP, 0, n)
    elapsed = time.perf_counter() - started
    client.close()
    return max(n, int(n * seconds / max(elapsed, 1e-4)))


@contextlib.contextmanager
def busy_for(url: str, seconds: float) -> Iterator[threading.Thread]:
    """A script that ends by itself after about ``seconds`` (no SCRIPT KILL needed)."""
    thread = _eval_in_thread(url, LOOP, loop_count(url, seconds))
    wait_until_busy(url)
    try:
        yield thread
    finally:
        thread.join(30)


@contextlib.contextmanager
def busy_until_killed(url: str) -> Iterator[threading.Thread]:
    """An endless script; killed on exit (the server's busy-reply threshold must be short)."""
    thread = _eval_in_thread(url, FOREVER)
    wait_until_busy(url)
    try:
        yield thread
    finally:
        killer = _client(url, 2.0)
        for _ in range(200):
            try:
                killer.script_kill()
                break
            except redis.ResponseError as exc:  # NOTBUSY: it already ended
                if "NOTBUSY" in str(exc):
                    break
                time.sleep(0.02)
            except redis.ConnectionError:  # the server is gone
                break
        killer.close()
        thread.join(30)
