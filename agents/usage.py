"""Token usage and transport retries, per role, counted where the model answers.

Every model call records its reply's token usage (and every transport retry) into each
meter open in its context. A graph node opens one around its work and returns what it
counted in the turn state, so a turn's usage is summed across its nodes — the fanned-out
character agents included — and stored with the turn; a benchmark opens one around a
whole run::

    with metering() as meter:
        await planner.plan(PlanRequest(view))
    meter.as_dict()   # {"planner": {"calls": 1, "input_tokens": 812, ...}}
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping
from contextvars import ContextVar
from dataclasses import asdict, dataclass

from fabula.settings import Price

_open: ContextVar[tuple[UsageMeter, ...]] = ContextVar("fabula_usage_meters", default=())


@dataclass
class RoleUsage:
    """What one role used: replies, tokens in and out, transport retries, and its model."""

    model: str = ""
    calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    retries: int = 0

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens


@dataclass(frozen=True)
class ReplyRecord:
    """One reply a call asked for, as a benchmark reads it: the role, the schema (``text``
    for free text), which attempt of its call it was, what came of it (``valid``,
    ``invalid``, ``truncated``, ``cut``, ``refused``, ``unavailable``) and its seconds."""

    role: str
    schema: str
    attempt: int
    outcome: str
    seconds: float


class UsageMeter:
    """Usage by role, as counted while the meter was open; ``replies`` and ``truncated``
    (replies that stopped at their token limit, by role) are for benchmarks and are not
    part of :meth:`as_dict`."""

    def __init__(self) -> None:
        self.roles: dict[str, RoleUsage] = {}
        self.replies: list[ReplyRecord] = []
        self.truncated: dict[str, int] = {}

    def role(self, role: str) -> RoleUsage:
        return self.roles.setdefault(role, RoleUsage())

    def as_dict(self) -> dict[str, dict[str, int | str]]:
        """Plain JSON-able data, by role (roles that made no call are left out)."""
        return {role: asdict(usage) for role, usage in sorted(self.roles.items())}


@contextlib.contextmanager
def metering() -> Iterator[UsageMeter]:
    """A meter counting every model call made in this context until the block ends."""
    meter = UsageMeter()
    token = _open.set((*_open.get(), meter))
    try:
        yield meter
    finally:
        _open.reset(token)


def record_call(role: str, model: str, input_tokens: int, output_tokens: int) -> None:
    """Count one reply of ``role``'s model in every open meter."""
    for meter in _open.get():
        usage = meter.role(role)
        usage.model = model
        usage.calls += 1
        usage.input_tokens += input_tokens
        usage.output_tokens += output_tokens


def record_retry(role: str) -> None:
    """Count one transport retry of ``role`` in every open meter."""
    for meter in _open.get():
        meter.role(role).retries += 1


def record_reply(role: str, schema: str, attempt: int, outcome: str, seconds: float) -> None:
    """Note one reply's outcome (see :class:`ReplyRecord`) in every open meter."""
    record = ReplyRecord(role, schema, attempt, outcome, seconds)
    for meter in _open.get():
        meter.replies.append(record)


def record_truncation(role: str) -> None:
    """Count one reply of ``role`` that stopped at its token limit in every open meter."""
    for meter in _open.get():
        meter.truncated[role] = meter.truncated.get(role, 0) + 1


def add_usage(
    old: Mapping[str, Mapping[str, int | str]] | None,
    new: Mapping[str, Mapping[str, int | str]] | None,
) -> dict[str, dict[str, int | str]]:
    """Two usages by role summed (a graph-state reducer: nodes add what they used)."""
    out = {role: dict(u) for role, u in (old or {}).items()}
    for role, usage in (new or {}).items():
        mine = out.setdefault(role, {})
        for key, value in usage.items():
            if isinstance(value, int):
                previous = mine.get(key, 0)
                mine[key] = (previous if isinstance(previous, int) else 0) + value
            elif value:
                mine[key] = value
    return out


def cost_of(
    usage: Mapping[str, Mapping[str, int | str]], prices: Mapping[str, Price]
) -> float | None:
    """The US dollars ``usage`` cost at ``prices`` (by model), None when a model has none."""
    total = 0.0
    for role_usage in usage.values():
        price = prices.get(str(role_usage.get("model", "")))
        if price is None:
            return None
        total += int(role_usage.get("input_tokens", 0)) * price.input / 1e6
        total += int(role_usage.get("output_tokens", 0)) * price.output / 1e6
    return total
