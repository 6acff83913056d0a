"""An error's remedy (:class:`fabula.errors.Remedy`) in the studio's words: its pages and
buttons. The command line words the same remedies with its flags
(:mod:`fabula.graph.cli.remedies`); the JSON API gives the remedy itself too."""

from __future__ import annotations

from typing import Any

from fabula.errors import FabulaError, RemedyAction

_WORDS: dict[RemedyAction, str] = {
    "force": "tick “commit it at once, whatever the critic finds” to commit it anyway",
    "review_pending": "review the turn awaiting a decision on its page",
    "write_alternatives": "“Write alternatives” writes them",
    "edit_pending": "a turn awaiting approval is edited on its own page",
    "remake_story": "delete it and make it again",
    "play_character": "play {character} from its character page first",
    "import_elsewhere": "import it with the command line: fabula import PATH",
    "migrate_story": "run `fabula migrate {story}` on the command line to bring it up to date",
    "check_committed": "see whether turn {turn} is on the story's page before retrying",
    "repair_aof": "repair it with `fabula server check-aof --fix` on the command line (keep a "
    "copy of the folder first), or start anyway with FABULA_REDIS_LOAD_TRUNCATED=1",
    "export_charx": "exporting it as CHARX keeps the picture as it is",
}


def studio_line(exc: FabulaError, *, plain: bool = False, force: str | None = None) -> str:
    """``exc`` as the studio's one line: the error (``plain``: without its context, for a
    form that shows it beside the field), then what to do about it in this studio's words
    (``force``: the words of the page's own checkbox, for a remedy that forces)."""
    line = exc.message if plain else str(exc)
    remedy = exc.remedy
    if remedy is None:
        return line
    words = force if remedy.action == "force" and force is not None else _WORDS[remedy.action]
    return f"{line}; {words.format_map(dict(remedy.args))}"


def remedy_json(exc: FabulaError) -> dict[str, Any] | None:
    """The remedy as the JSON API gives it beside the line: the action and its arguments."""
    if exc.remedy is None:
        return None
    return {"action": exc.remedy.action, "args": dict(exc.remedy.args)}
