"""The store's commit path: :class:`Commits`, one turn's delta into Redis, atomically and
idempotently, and what surrounds it — the decision lock held while a turn is decided, the
wait for the append-only file to be on disk, and the server's refusals in Fabula's errors.

``commit`` sends the whole delta in one Redis function call (one round trip); the function
(``fabula_commit`` in ``fabula.lua``) checks turn order, idempotency and every reference
before its first write, so a delta is committed whole or not at all. A tick commits its
scenes' deltas together through :meth:`Commits.prepare_commit` (:mod:`fabula.memory.ticks`).
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass

from redis.asyncio.lock import Lock
from redis.exceptions import RedisError, ResponseError

from fabula.errors import FabulaError, InvalidDelta, TurnConflict
from fabula.logs import get_logger
from fabula.memory import keys
from fabula.memory.connection import node_client
from fabula.memory.delta import TurnDelta
from fabula.memory.lineage import branch_for
from fabula.memory.lua import fcall
from fabula.memory.payload import CommitCall, encode_commit
from fabula.memory.server.disk import FULL_REASONS, disk_error
from fabula.memory.settle import Status, send_commit
from fabula.memory.store.reads import RecordReads
from fabula.memory.validate import validate_delta

log = get_logger(__name__)


@dataclass(frozen=True)
class CommitResult:
    """The outcome of a commit: ``committed`` (written) or ``duplicate`` (already there, a
    no-op)."""

    turn: int
    status: Status


def _payload_bytes(limit: int, *parts: str) -> int:
    chars = sum(len(p) for p in parts)
    # encoding megabytes to count bytes costs time: only when non-ASCII could tip the balance
    return chars if chars * 4 <= limit else sum(len(p.encode()) for p in parts)


DECISION_LOCK_S = 15.0
"""How long a decision's lock outlives its holder's last renewal (see ``decision_lock``)."""


def _waitaof_refusal(exc: Exception) -> str:
    """Why the server refused the durable mark or ``WAITAOF``, in a person's words."""
    message = str(exc)
    if "appendonly is disabled" in message:
        return "the server keeps no append-only file (appendonly no)"
    if message.startswith("MISCONF"):  # committed in memory, not yet written: a disk error
        reason = message.partition("AOF file: ")[2].partition(" script:")[0] or message
        full = "the disk is full: " if reason in FULL_REASONS else ""
        return f"{full}Redis cannot write its append-only file ({reason})"
    return f"the server refused WAITAOF ({message})"


class Commits(RecordReads):
    """Committing one turn of this branch, and deciding it under a lock."""

    async def commit(
        self, delta: TurnDelta, *, usage: Mapping[str, Mapping[str, object]] | None = None
    ) -> CommitResult:
        """Commit one turn atomically and idempotently (one round trip).

        ``usage``, the model usage that made the turn (by role: tokens, calls, retries), is
        written in the same call (see :meth:`turn_usage`); a duplicate leaves the first's.

        The same turn sent twice is a no-op (``status='duplicate'``); a turn that is not the
        next one, or a committed turn re-sent with other content, raises
        :class:`TurnConflict`; an invalid delta raises :class:`InvalidDelta`. Either way
        nothing is written. A text or payload above :attr:`limits` raises
        :class:`LimitExceeded` before anything is sent. A lost reply is settled with the
        server (see :func:`~fabula.memory.settle.send_commit`): ``committed`` if the turn is in with
        this digest, else :class:`CommitFailed`, after which this attempt can no longer
        commit (a call still on its way is refused).
        """
        call = await self.prepare_commit(delta, usage=usage)

        async def send() -> Status:
            reply = await fcall(self.client, "fabula_commit", call.keys, call.args)
            return "duplicate" if reply == "duplicate" else "committed"  # the function's 'ok'

        try:
            status = await send_commit(
                self.client,
                send,
                call,
                story=self.story,
                branch=self.branch,
            )
        except ResponseError as exc:
            raise self._translate(exc, delta.turn) from None
        return CommitResult(turn=delta.turn, status=status)

    async def prepare_commit(
        self, delta: TurnDelta, *, usage: Mapping[str, Mapping[str, object]] | None = None
    ) -> CommitCall:
        """The ``fabula_commit`` call :meth:`commit` sends for ``delta``: checked against
        :attr:`limits` and validated (raising as :meth:`commit` does, nothing sent), as a new
        attempt (see :mod:`fabula.memory.payload`)."""
        where = {"story": self.story, "branch": self.branch, "turn": delta.turn}
        self.limits.check_text(delta.text, **where)
        refs = validate_delta(delta)
        ancestry = await self.ancestry()
        turn_key = keys.turns(self.story, branch_for(self.branch, ancestry, delta.turn))
        call = encode_commit(
            delta,
            refs,
            layout=self._layout_json,
            head_key=self._layout["head"],
            turn_key=turn_key,
            fence_key=keys.fence(self.story, self.branch, delta.turn),
            events_of=lambda turn: keys.events(self.story, branch_for(self.branch, ancestry, turn)),
            committed_at=time.time(),
            usage=usage,
        )
        size = _payload_bytes(self.limits.delta_bytes, call.header, call.records)
        self.limits.check_delta(size, **where)
        return call

    async def make_durable(self, turn: int, timeout_ms: int = 4000) -> str | None:
        """Wait until the server has fsynced its append-only file past ``turn``'s commit.

        Returns None once the server confirms it, else why it did not: the server has no
        append-only file, refused, did not confirm within ``timeout_ms``, or could not be
        asked (the turn is committed either way; it is only not known to be on disk).

        ``WAITAOF`` waits for the writes of the connection it is sent on, so a small write
        (the head's ``durable`` mark) goes first on the same connection: the file is
        written in order, so once that write is on disk the commit before it is too.
        """
        node = node_client(self.client, self._layout["head"])  # a cluster: the key's primary
        try:
            async with (node or self.client).pipeline(transaction=False) as pipe:
                pipe.hset(self._layout["head"], "durable", turn)
                pipe.execute_command("WAITAOF", 1, 0, timeout_ms)
                marked, confirmed = await pipe.execute(raise_on_error=False)
        except RedisError as exc:
            return self._not_durable(turn, f"the server could not be asked ({exc})")
        finally:
            if node is not None:
                await node.aclose()
        for answer in (marked, confirmed):
            if isinstance(answer, Exception):
                return self._not_durable(turn, _waitaof_refusal(answer))
        if int(confirmed[0]) < 1:
            return self._not_durable(turn, f"the server did not fsync within {timeout_ms} ms")
        return None

    def _not_durable(self, turn: int, reason: str) -> str:
        # the caller reports it (the command line, the studio): a log line at info only
        log.info("commit_not_fsynced", story=self.story, turn=turn, reason=reason)
        return reason

    def translate_refusal(self, exc: ResponseError, turn: int) -> FabulaError:
        """The error of a commit the server refused (``exc``) at ``turn``, in Fabula's
        hierarchy (also for a tick's commit, :mod:`fabula.memory.ticks`)."""
        return self._translate(exc, turn)

    def _translate(self, exc: ResponseError, turn: int) -> FabulaError:
        disk = disk_error(exc, self.client, turn, story=self.story, branch=self.branch)
        if disk is not None:
            return disk
        message = str(exc)
        if message.startswith("FABULA_INVALID "):
            field, _, detail = message.removeprefix("FABULA_INVALID ").partition(" ")
            return InvalidDelta(
                f"{field}: {detail}", story=self.story, branch=self.branch, turn=turn, field=field
            )
        if message.startswith("FABULA_DELETED "):
            return self.deleted_error(meanwhile=True)
        if message.startswith("FABULA_CONFLICT "):
            return TurnConflict(
                message.removeprefix("FABULA_CONFLICT "),
                story=self.story,
                branch=self.branch,
                turn=turn,
            )
        return FabulaError(f"redis refused the commit: {message}", story=self.story, turn=turn)

    def decision_lock(self, turn: int, wait_s: float = 60.0) -> Lock:
        """A lock on deciding ``turn`` of this branch, shared by every process.

        Held while one approval, edit or rejection resumes the turn, so two decisions never
        resume it at once; a second waits up to ``wait_s`` (then ``LockError``). It lives
        :data:`DECISION_LOCK_S` seconds unless its holder renews it
        (:func:`fabula.memory.leases.renewed`), so a holder that dies frees it that soon.
        """
        return Lock(
            self.client,
            keys.decision_lock(self.story, self.branch, turn),
            timeout=DECISION_LOCK_S,
            blocking_timeout=wait_s,
        )
