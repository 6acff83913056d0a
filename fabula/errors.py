"""The one error hierarchy of Fabula, sorted by what an error means to whoever meets it.

Every error Fabula raises on purpose derives from :class:`FabulaError` and carries the
context needed to act on it (story, branch, turn, field). Each class says the command
line's exit status (``exit_code``) and the web's status (``http_status``) for it; the CLI
and the studio read them from the class, never from a table of their own::

    class                      exit http  meaning
    FabulaError                  1  500   root of every error Fabula raises on purpose
    ├── InvalidInput             2  422   bad input, rejected whole; nothing was written
    │   ├── LimitExceeded        2  422   a turn's text or delta larger than the limit
    │   ├── InvalidId            2  422   an id that is not a safe identifier
    │   ├── EditRefused          2  422   a human edit the critic found errors in (force it)
    │   ├── InvalidDelta         2  422   a turn's delta fails validation (names the field)
    │   └── InvalidWorld         2  422   a world pack fails validation (names the field)
    ├── Conflict                 4  409   the request is sound but the story's state refuses it
    │   ├── TurnConflict         4  409   a gap in turn numbers, or a turn re-sent changed
    │   ├── StoryAtRest          4  409   no character has anything to do: no turn to write
    │   ├── SceneFailed          4  409   a scene of a tick failed: none of the tick is written
    │   ├── StoryExists          4  409   a story of that id is already there
    │   └── StoryOutdated        4  409   a story stored by an older Fabula: `fabula migrate` it
    ├── NotFound                 3  404   a story, branch, character or record not there
    │   └── StoryDeleted         3  404   ... a story deleted (by another command meanwhile)
    ├── AccessDenied             5  403   a character's handle read outside its own mind
    ├── ModelError               6  502   the chat model did not give a usable answer
    │   ├── ModelUnavailable     6  503   it cannot be reached, or answered with an error
    │   ├── SchemaRejected       6  502   its server refused a structured-output schema
    │   └── ModelOutputError     6  502   its output could not be parsed or validated
    │       ├── ModelTruncated   6  502   the reply hit its token limit, even after a raise
    │       └── ModelRefused     6  502   the model refused to answer
    └── ServerError              1  500   Fabula's own side could not do it
        ├── ConfigError         78  500   settings or an environment that cannot work
        │   └── RedisUnavailable 69 503   the embedded Redis cannot start or be reached
        ├── DiskError           74  507   Redis cannot write to its disk (full, or failing)
        └── CommitFailed         1  500   Redis did not complete a commit (the turn is not in)
            └── CommitUncertain  1  500   ... and whether the turn is in could not be learned

An error the person who met it can do something about carries a :class:`Remedy`: what to
do, named as an action with its arguments, never in one interface's words; the command line
words it with its flags, the studio with its buttons (the message itself names neither).

A model's bad output is the model's failure, not the user's: a 502, never a 422. The exit
statuses 69, 74 and 78 are ``sysexits.h``'s ``EX_UNAVAILABLE``, ``EX_IOERR`` and
``EX_CONFIG`` (507 is HTTP's Insufficient Storage); 2 is what the command line's own usage
errors exit with.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal

__all__ = [
    "AccessDenied",
    "CommitFailed",
    "CommitUncertain",
    "ConfigError",
    "Conflict",
    "DiskError",
    "EditRefused",
    "FabulaError",
    "InvalidDelta",
    "InvalidId",
    "InvalidInput",
    "InvalidWorld",
    "LimitExceeded",
    "ModelError",
    "ModelOutputError",
    "ModelRefused",
    "ModelTruncated",
    "ModelUnavailable",
    "NotFound",
    "RedisUnavailable",
    "Remedy",
    "RemedyAction",
    "SceneFailed",
    "SchemaRejected",
    "ServerError",
    "StoryAtRest",
    "StoryDeleted",
    "StoryExists",
    "StoryOutdated",
    "TurnConflict",
]


RemedyAction = Literal[
    "force",  # do it anyway, whatever the critic found (args: none)
    "review_pending",  # read the turn awaiting a decision again, then decide
    "write_alternatives",  # write alternative drafts of the turn first
    "edit_pending",  # a turn awaiting approval is edited as a decision, not as a retcon
    "remake_story",  # delete the story (args: story) and make it again
    "play_character",  # make the character (args: story, character) a played one first
    "import_elsewhere",  # import these files where the folders beside them are read
    "migrate_story",  # bring the story (args: story) up to this Fabula's schema first
    "check_committed",  # see whether turn (args: story, turn) is in the story before retrying
    "repair_aof",  # repair the embedded Redis's append-only file, or load it truncated
    "export_charx",  # export the character as CHARX, which keeps any picture as it is
]
"""What a person can do about an error, named once for every interface."""


@dataclass(frozen=True)
class Remedy:
    """What the person who met an error can do about it: an ``action`` and its ``args``
    (a story, a character), worded by each interface its own way."""

    action: RemedyAction
    args: Mapping[str, str] = field(default_factory=dict)


class FabulaError(Exception):
    """Root of every error Fabula raises on purpose.

    ``context`` holds whatever locates the problem (story, branch, turn, field, path);
    ``remedy``, when there is one, what to do about it (:class:`Remedy`). ``exit_code`` is
    the command line's exit status for it, ``http_status`` the web's.
    """

    exit_code: ClassVar[int] = 1
    http_status: ClassVar[int] = 500

    def __init__(self, message: str, **context: Any) -> None:
        # ``remedy=`` rides with the context's keywords (a call may spread a context dict)
        remedy = context.pop("remedy", None)
        if remedy is not None and not isinstance(remedy, Remedy):
            raise TypeError(f"remedy: a Remedy, not {type(remedy).__name__}")
        self.message = message
        self.remedy: Remedy | None = remedy
        self.context = {k: v for k, v in context.items() if v is not None}
        super().__init__(message)

    def __str__(self) -> str:
        if not self.context:
            return self.message
        where = ", ".join(f"{k}={v}" for k, v in self.context.items())
        return f"{self.message} ({where})"


class InvalidInput(FabulaError):
    """Bad input, rejected whole: nothing was written."""

    exit_code = 2
    http_status = 422


class LimitExceeded(InvalidInput):
    """A turn's text or delta is larger than the configured limit (see fabula/limits.py)."""


class InvalidId(InvalidInput, ValueError):
    """An id that cannot be used in keys and ACL patterns (also a ``ValueError``)."""


class EditRefused(InvalidInput):
    """A human edit in which the critic found errors; nothing was written."""


class InvalidDelta(InvalidInput):
    """A turn's delta failed validation; ``context['field']`` names the offending field."""


class InvalidWorld(InvalidInput):
    """A world pack failed validation; ``context['field']`` names the offending field."""


class Conflict(FabulaError):
    """The request is sound, but the story's state refuses it (as it stands now)."""

    exit_code = 4
    http_status = 409


class TurnConflict(Conflict):
    """A gap in turn numbers, or a committed turn re-sent with different content."""


class StoryAtRest(Conflict):
    """No character has anything to do (every goal done, waiting or blocked): the offline
    engine has no turn to write. ``idle`` is True when it was found only once the characters
    had proposed (the planner's guess was wrong; another anchor may still act)."""

    def __init__(self, message: str, *, idle: bool = False, **context: Any) -> None:
        super().__init__(message, **context)
        self.idle = idle


class SceneFailed(Conflict):
    """One scene of a tick could not be played (``context['place']`` names it): the tick
    fails as a whole and nothing of it is committed."""


class StoryExists(Conflict):
    """A story of that id is already there: choose another id, or delete that one."""


class StoryOutdated(Conflict):
    """The story was stored by an older Fabula (its schema ``version`` is older than this
    one's ``current``): it is opened only once ``fabula migrate`` has brought it up to date
    (see ``fabula.memory.schema``)."""

    def __init__(self, message: str, *, version: int, current: int, **context: Any) -> None:
        super().__init__(message, version=version, current=current, **context)
        self.version = version
        self.current = current


class NotFound(FabulaError):
    """A story, branch, character or record that does not exist."""

    exit_code = 3
    http_status = 404


class StoryDeleted(NotFound):
    """The story was deleted: before this command, or by another one while this one wrote
    it (whose writes from then on are refused: see ``StoryStore.delete``)."""


class AccessDenied(FabulaError):
    """A character's handle tried to read outside its own mind."""

    exit_code = 5
    http_status = 403


class ModelError(FabulaError):
    """The chat model did not give a usable answer: the model's failure, not the user's."""

    exit_code = 6
    http_status = 502


class ModelUnavailable(ModelError):
    """The configured chat model cannot be reached, or answered with an error."""

    http_status = 503


class SchemaRejected(ModelError):
    """The model's server rejected a structured-output schema (not json_schema itself)."""


class ModelOutputError(ModelError):
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


class ServerError(FabulaError):
    """Fabula's own side could not do it: its settings, its Redis, a commit."""


class ConfigError(ServerError):
    """Settings or an environment that cannot work."""

    exit_code = 78  # sysexits.h EX_CONFIG


class RedisUnavailable(ConfigError):
    """The embedded Redis server cannot start, or the configured one cannot be reached."""

    exit_code = 69  # sysexits.h EX_UNAVAILABLE
    http_status = 503


class DiskError(ServerError):
    """Redis cannot write its data to disk: the disk holding its data directory is full (or
    failing). It refuses every write, or (``appendfsync always``) it stopped; whatever it
    acknowledged is on disk. ``context`` names the directory and, for a commit, the turn."""

    exit_code = 74  # sysexits.h EX_IOERR
    http_status = 507  # Insufficient Storage


class CommitFailed(ServerError):
    """Redis did not complete a commit; the turn was checked afterwards and is not in."""


class CommitUncertain(CommitFailed):
    """A commit's reply was lost and whether the turn is in could not be learned in time."""
