"""The one error hierarchy of Fabula.

Every error Fabula raises on purpose derives from :class:`FabulaError` and
carries the context needed to act on it (story, branch, turn, field)::

    FabulaError
    ├── ConfigError            settings or an environment that cannot work
    │   ├── RedisUnavailable   the embedded server cannot start or be reached
    │   ├── ModelUnavailable   the configured chat model cannot be reached (after retries)
    │   └── SchemaRejected     the model's server refused a structured-output schema
    ├── NotFound               a story, branch, character or record that does not exist
    ├── StoryAtRest            no character has anything to do: there is no turn to write
    ├── CommitFailed           Redis did not complete a commit (its reply lost or refused)
    │   └── CommitUncertain    ... and whether the turn is in could not be learned
    ├── InvalidInput           bad input, rejected whole; nothing was written
    │   ├── LimitExceeded      a turn's text or delta larger than the configured limit
    │   ├── InvalidId          a story, branch or character id that is not a safe identifier
    │   ├── EditRefused        a human edit the critic found errors in (commit it with force)
    │   ├── InvalidDelta       a turn's delta fails validation (names the field)
    │   ├── TurnConflict       a gap in turn numbers, or a turn re-sent with other content
    │   ├── InvalidWorld       a world pack that fails validation (names the field)
    │   └── ModelOutputError   model output that could not be parsed or validated
    │       ├── ModelTruncated the reply hit its token limit, even after one raise
    │       └── ModelRefused   the model refused to answer
    └── AccessDenied           a character handle tried to read outside its own mind
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "AccessDenied",
    "CommitFailed",
    "CommitUncertain",
    "ConfigError",
    "EditRefused",
    "FabulaError",
    "InvalidDelta",
    "InvalidId",
    "InvalidInput",
    "InvalidWorld",
    "LimitExceeded",
    "ModelOutputError",
    "ModelRefused",
    "ModelTruncated",
    "ModelUnavailable",
    "NotFound",
    "RedisUnavailable",
    "SchemaRejected",
    "StoryAtRest",
    "TurnConflict",
]


class FabulaError(Exception):
    """Root of every error Fabula raises on purpose.

    ``context`` holds whatever locates the problem (story, branch, turn, field, path).
    """

    def __init__(self, message: str, **context: Any) -> None:
        self.message = message
        self.context = {k: v for k, v in context.items() if v is not None}
        super().__init__(message)

    def __str__(self) -> str:
        if not self.context:
            return self.message
        where = ", ".join(f"{k}={v}" for k, v in self.context.items())
        return f"{self.message} ({where})"


class StoryAtRest(FabulaError):
    """No character has anything to do (every goal done, waiting or blocked): the offline
    engine has no turn to write. ``idle`` is True when it was found only once the characters
    had proposed (the planner's guess was wrong; another anchor may still act)."""

    def __init__(self, message: str, *, idle: bool = False, **context: Any) -> None:
        super().__init__(message, **context)
        self.idle = idle


class ConfigError(FabulaError):
    """Settings or an environment that cannot work."""


class RedisUnavailable(ConfigError):
    """The embedded Redis server cannot start, or the configured one cannot be reached."""


class ModelUnavailable(ConfigError):
    """The configured chat model cannot be reached, or answered with an error."""


class SchemaRejected(ConfigError):
    """The model's server rejected a structured-output schema (not json_schema itself)."""


class NotFound(FabulaError):
    """A story, branch, character or record that does not exist."""


class InvalidInput(FabulaError):
    """Bad input, rejected whole: nothing was written."""


class LimitExceeded(InvalidInput):
    """A turn's text or delta is larger than the configured limit (see fabula/limits.py)."""


class InvalidId(InvalidInput, ValueError):
    """An id that cannot be used in keys and ACL patterns (also a ``ValueError``)."""


class EditRefused(InvalidInput):
    """A human edit in which the critic found errors; nothing was written."""


class CommitFailed(FabulaError):
    """Redis did not complete a commit; the turn was checked afterwards and is not in."""


class CommitUncertain(CommitFailed):
    """A commit's reply was lost and whether the turn is in could not be learned in time."""


class InvalidDelta(InvalidInput):
    """A turn's delta failed validation; ``context['field']`` names the offending field."""


class TurnConflict(InvalidInput):
    """A gap in turn numbers, or a committed turn re-sent with different content."""


class InvalidWorld(InvalidInput):
    """A world pack failed validation; ``context['field']`` names the offending field."""


class ModelOutputError(InvalidInput):
    """A model's output could not be parsed or validated into the expected type.

    ``context['raw']`` (the reply) and ``context['error']`` (every problem) are kept whole
    for whoever handles it; shown, the error is one line: no reply, the first problem.
    """

    def __str__(self) -> str:
        shown = {k: v for k, v in self.context.items() if k != "raw"}
        if "error" in shown:
            lines = [line.strip() for line in str(shown["error"]).splitlines() if line.strip()]
            first = next((line for line in lines[1:] if not line.startswith("For further")), "")
            shown["error"] = (first or (lines[0] if lines else ""))[:200]
        if not shown:
            return self.message
        return f"{self.message} ({', '.join(f'{k}={v}' for k, v in shown.items())})"


class ModelTruncated(ModelOutputError):
    """A reply stopped at its token limit (``finish_reason == "length"``), even after the
    role's ``max_tokens`` was raised once."""


class ModelRefused(ModelOutputError):
    """The model refused to answer; ``context['refusal']`` holds what it said."""


class AccessDenied(FabulaError):
    """A character's handle tried to read outside its own mind."""
