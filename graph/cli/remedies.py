"""An error's remedy (:class:`fabula.errors.Remedy`) in the command line's words: its flags
and commands. The studio words the same remedies with its buttons
(:mod:`fabula.graph.web.remedies`)."""

from __future__ import annotations

from fabula.errors import FabulaError, RemedyAction

_WORDS: dict[RemedyAction, str] = {
    "force": "commit it anyway with --force",
    "review_pending": "review it with `fabula pending`",
    "write_alternatives": "`fabula run --alternatives N` writes them",
    "edit_pending": "a turn awaiting approval is edited with `fabula edit` without --turn",
    "remake_story": "delete it (fabula delete {story}) and make it again",
    "play_character": "`fabula play {story} {character}` plays it",
    "import_elsewhere": "import it with the command line: fabula import PATH",
    "migrate_story": "run `fabula migrate {story}` to bring it up to date",
    "check_committed": "check with `fabula show {story} story` whether turn {turn} is there "
    "before retrying",
    "repair_aof": "repair it with `fabula server check-aof --fix` (it cuts the file at the "
    "last complete write, dropping what follows; keep a copy of the folder first), or start "
    "anyway with FABULA_REDIS_LOAD_TRUNCATED=1 (a truncated file only: its cut tail is dropped)",
    "export_charx": "export --format charx keeps the picture as it is",
}


def error_line(exc: FabulaError) -> str:
    """``exc`` as the command line's one error line: the error, then what to do about it."""
    if exc.remedy is None:
        return str(exc)
    return f"{exc}; {_WORDS[exc.remedy.action].format_map(dict(exc.remedy.args))}"
