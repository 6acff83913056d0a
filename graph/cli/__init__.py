"""The ``fabula`` command line (typer + rich): the story commands, over the service layer.

:data:`app` is the root. Its commands are listed in :data:`COMMANDS` (name, the module that
registers it, its one-line help, in the order of ``--help``); a command's module — and what
it imports — loads only when that command runs, so ``fabula --help`` imports none of them
(a test holds each line here to its command's own help). The console script is
:func:`fabula.cli.main`, which also mounts the benchmarks.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable

from fabula.graph.cli.app import add_lazy
from fabula.graph.cli.app import app as app

COMMANDS: dict[str, tuple[str, str]] = {
    "new": ("stories", "Create a story from a world pack and commit its scripted opening."),
    "stories": (
        "stories",
        "List the stories on this server: id, title, world, turns, and the turns awaiting "
        "approval (branch:turn).",
    ),
    "delete": (
        "stories",
        "Delete a story, its branches, its minds and their users (asks first, unless --yes).",
    ),
    "fork": ("stories", "Start a branch from a turn; its next turns may pursue a hypothesis."),
    "import": (
        "imports",
        "Import character cards (V1/V2/V3: JSON, PNG, CHARX), lorebooks (V3, SillyTavern, "
        "NovelAI, Agnai, KoboldAI) and a BookWorld preset as one world: a pack folder (--pack "
        "DIR) a user can read and edit, or a story (--id STORY).",
    ),
    "run": ("turns", "Write turns; without --auto, stop at the first turn awaiting approval."),
    "tick": (
        "ticks",
        "Run ticks: every place with characters plays its own scene at once, and each tick "
        "is committed whole (every scene's turn, or none); stops early when nobody anywhere "
        "has anything to do.",
    ),
    "pending": (
        "turns",
        "List the turns awaiting approval (--json: each with its draft, findings and "
        "changes, as the API's pending gives them).",
    ),
    "approve": (
        "turns",
        "Approve the pending turn: it is committed to memory (with --choose, the draft chosen "
        "among those `run --alternatives` wrote, exactly as shown).",
    ),
    "edit": (
        "turns",
        "Replace the pending turn's text (from --text, --text-file, or $EDITOR on the draft).",
    ),
    "rewind": (
        "turns",
        "Make turn --to the head of the branch; the turns after it are kept as a branch of "
        "their own (nothing is deleted).",
    ),
    "reject": (
        "turns",
        "Reject the pending turn: nothing is committed; the turn is planned again.",
    ),
    "write": (
        "write",
        "Write a story in one session: each turn's draft, findings and changes, then a key: "
        "a approve, e edit ($EDITOR), r reject with a note, d a direction for the next turn, "
        "n alternative drafts, q quit.",
    ),
    "play": (
        "play",
        "Choose the characters a person plays in STORY (each turn, their part is yours; the "
        "others answer from their own minds), or list them.",
    ),
    "show": (
        "show",
        "Show one view of a story: world, beliefs CHAR, developments, hypotheses, story, "
        "branches, scenes, plot (the plot and its plotlines), usage (model tokens and cost "
        'per turn and role), spread "CLAUSE" (the share of characters holding it, tick by tick).',
    ),
    "recall": (
        "show",
        "Ask the story's memory: the context the writer (or, with --as, a character) would be "
        "given for REQUEST, within --budget tokens, e.g.",
    ),
    "export": (
        "show",
        "Export a story's text (markdown, or an EPUB book), its text and views (json), a "
        "character as a V3 card holding what it believes (card --character C; PNG if it has "
        "a picture), the same as a CHARX zip with its assets (charx --character C), or the "
        "world as SillyTavern's World Info (lorebook: its import takes it) or a V3 lorebook "
        "(lorebook_v3).",
    ),
    "demo": (
        "show",
        "Run the demo world (hollow_book) offline: story `demo`, recreated each time (a story "
        "of yours named `demo` is left alone).",
    ),
    "chat": (
        "chat",
        "Ask a character questions: it answers from only its own mind (its beliefs and what "
        "it witnessed), e.g.",
    ),
    "lore": ("lore", "A story's lore: its World Info settings."),
    "migrate": (
        "migrate",
        "Bring stories stored by an older Fabula up to this one's schema (one line each; "
        "run it again at will: a story up to date is left as it is).",
    ),
    "serve": ("studio", "The web studio: steer stories in a browser."),
    "server": ("redis_server", "The embedded Redis server."),
}
"""Every story command: name -> (its module under ``fabula.graph.cli``, its one-line help)."""


def _loader(name: str, module: str) -> Callable[[], str]:
    def load() -> str:
        importlib.import_module(f"fabula.graph.cli.{module}")  # registers it on app
        return name

    return load


for _name, (_module, _short) in COMMANDS.items():
    add_lazy(_name, _short, _loader(_name, _module))
