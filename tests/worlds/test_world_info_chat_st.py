"""World Info over a chat, as SillyTavern does it (issue 49): timed effects (``sticky``,
``cooldown``, ``delay``), scan depth (global and per entry), minimum activations and
character filters, each case a rule of ``public/scripts/world-info.js`` at release 1.12.6,
named by its lines, run through the importer and :func:`fabula.worlds.recall.recall_chat`
on a story's turns (one turn for each of SillyTavern's messages).

Each case is a sequence of scans, each of a chat (its messages oldest first), run one after
the other as SillyTavern's generations (timed effects carry over in the chat's metadata);
the expected answers are what SillyTavern's own ``checkWorldInfo`` activated, run under
Node by ``st_harness/run.mjs`` (with ``st_harness/prepare.mjs`` over its
``world-info.js``, outside this repository: SillyTavern's AGPL code is not in it, and CI
cannot fetch it). :func:`test_sillytavern_gives_the_recorded_answers` runs it again where
``FABULA_ST_WORLD_INFO`` names a ``world-info.js`` and Node is installed; elsewhere the
recorded answers stand.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from fabula.testing import imports as fx
from fabula.testing.world_info import BIG, book, entry, st_settings
from fabula.worlds.imports import import_paths
from fabula.worlds.lore import card_tags
from fabula.worlds.recall import books_of, recall_chat

HARNESS = Path(__file__).parent / "st_harness"

L3 = ["the lamp", "the lamp", "the lamp"]
L5 = [*L3, "the lamp", "the lamp"]


def grow(chat: list[str]) -> list[list[str]]:
    """The scans of a chat growing one message at a time."""
    return [chat[: k + 1] for k in range(len(chat))]


# name, the lines it follows, the book, the scans, settings (world_info_*), character,
# what SillyTavern activated at each scan
CASES: list[tuple[str, str, dict[str, Any], list[list[str]], dict[str, Any], str, list[list[str]]]]
CASES = [
    (
        "sticky holds an entry for its messages after its keys are gone",
        "601-613 (start n, end n + sticky), 547-553, 3881-3885",
        book(entry(0, ["lamp"], "s", "Lit.", sticky=2), entry(1, ["x"], "o", "Other.")),
        grow(["the lamp", "x", "x", "x"]),
        {},
        "Ada",
        [["s"], ["o", "s"], ["o"], ["o"]],
    ),
    (
        "cooldown keeps an entry out for its messages after it activated",
        "601-613, 3833-3836",
        book(entry(0, ["lamp"], "c", "Lit.", cooldown=2)),
        grow(L5),
        {},
        "Ada",
        [["c"], [], ["c"], [], ["c"]],
    ),
    (
        "a sticky entry's cooldown starts when its sticky ends",
        "415-431, 3833-3836",
        book(entry(0, ["lamp"], "sc", "Lit.", sticky=1, cooldown=2)),
        grow([*L5, "the lamp"]),
        {},
        "Ada",
        [["sc"], [], [], ["sc"], [], []],
    ),
    (
        "delay keeps an entry out while the chat is shorter",
        "563-575, 3828-3831",
        book(entry(0, ["lamp"], "d", "Lit.", delay=3)),
        grow(L5),
        {},
        "Ada",
        [[], [], ["d"], ["d"], ["d"]],
    ),
    (
        "going back to a shorter chat drops a sticky set after it",
        "525-529",
        book(entry(0, ["lamp"], "s", "Lit.", sticky=3), entry(1, ["bell"], "b", "Rings.")),
        [["a"], ["a", "the lamp"], ["a", "the lamp", "b"], ["a"], ["a", "bell"]],
        {},
        "Ada",
        [[], ["s"], ["s"], [], ["b"]],
    ),
    (
        "an entry's scanDepth sees that many of the newest messages",
        "204-220, 4552",
        book(
            entry(0, ["lamp"], "one", "One.", scanDepth=1),
            entry(1, ["lamp"], "three", "Three.", scanDepth=3),
            entry(2, ["lamp"], "global", "Global."),
            entry(3, ["lamp"], "none", "None.", scanDepth=0),
        ),
        [["the lamp", "x", "y"], ["x", "the lamp", "y"], ["x", "y", "the lamp"]],
        {},
        "Ada",
        [["three"], ["global", "three"], ["global", "one", "three"]],
    ),
    (
        "world_info_depth is the global depth",
        "205, 347-349",
        book(entry(0, ["lamp"], "g", "G.")),
        [["the lamp", "x"], ["the lamp", "x", "y", "z"]],
        {"world_info_depth": 4},
        "Ada",
        [["g"], ["g"]],
    ),
    (
        "min activations widen the depth a message at a time, to the chat's length",
        "4054-4068, 4077-4081",
        book(entry(0, ["lamp"], "far", "Far."), entry(1, ["bell"], "near", "Near.")),
        [["the lamp", "a", "b", "c"], ["a", "b", "c"], ["the bell", "the lamp", "b", "c"]],
        {"world_info_min_activations": 1},
        "Ada",
        [["far"], [], ["far"]],
    ),
    (
        "min activations stop past the depth max",
        "4077-4081",
        book(entry(0, ["lamp"], "far", "Far."), entry(1, ["bell"], "mid", "Mid.")),
        [["the lamp", "a", "b", "c", "d"], ["the bell", "a", "b", "c"]],
        {"world_info_min_activations": 1, "world_info_min_activations_depth_max": 3},
        "Ada",
        [[], ["mid"]],
    ),
    (
        "a min-activations scan leaves the recursed text out, then recursion follows",
        "233-236, 4047-4051",
        book(
            entry(0, ["lamp"], "far", "The tower."),
            entry(1, ["tower"], "tower", "Stone."),
            entry(2, ["bell"], "near", "The lamp again."),
        ),
        [["the lamp", "a", "b", "c"], ["x", "a", "the bell"]],
        {"world_info_min_activations": 2},
        "Ada",
        [["far", "tower"], ["far", "near", "tower"]],
    ),
    (
        "a character filter by name admits that character, an exclusion keeps it out",
        "3800-3808",
        book(
            entry(0, ["lamp"], "ada", "For Ada.", characterFilter={"names": ["Ada"]}),
            entry(
                1,
                ["lamp"],
                "not-ada",
                "Not Ada.",
                characterFilter={"names": ["Ada"], "isExclude": True},
            ),
            entry(2, ["lamp"], "bo", "For Bo.", characterFilter={"names": ["Bo"], "tags": []}),
        ),
        [["the lamp"]],
        {},
        "Ada",
        [["ada"]],
    ),
    (
        "a sticky entry needs no key and skips its delay until recursion",
        "3843-3846, 3881-3885",
        book(
            entry(0, ["lamp"], "s", "Lit.", sticky=2, delayUntilRecursion=True),
            entry(1, ["bell"], "b", "The lamp."),
        ),
        grow(["the bell", "x", "x"]),
        {},
        "Ada",
        [["b", "s"], ["b", "s"], []],
    ),
]


SAILOR_TAGS = [
    {"id": "101", "name": "sailor"},
    {"id": "102", "name": "Sea"},
    {"id": "103", "name": "noble"},
]
TAGGED = book(
    entry(0, ["lamp"], "sailors", "S.", characterFilter={"names": [], "tags": ["101"]}),
    entry(1, ["lamp"], "nobles", "N.", characterFilter={"names": [], "tags": ["103"]}),
    entry(
        2,
        ["lamp"],
        "not-nobles",
        "NN.",
        characterFilter={"names": [], "tags": ["103"], "isExclude": True},
    ),
    entry(
        3,
        ["lamp"],
        "not-sailors",
        "NS.",
        characterFilter={"names": [], "tags": ["101"], "isExclude": True},
    ),
    entry(4, ["lamp"], "ada-noble", "AN.", characterFilter={"names": ["Ada"], "tags": ["103"]}),
)
TWO = book(
    entry(0, ["lamp"], "high", "two words", order=9),
    entry(1, ["lamp"], "low", "two words", order=1),
)

# as CASES, and what else the case gives: the card's tags (``card_tags``) and the ids
# SillyTavern gives them (``character_tags``), its settings.json's ``tags``, and the
# context (``context``: its maxContext) the budget is a percent of
MORE: list[tuple[str, str, dict[str, Any], list[list[str]], dict[str, Any], str, list[list[str]]]]
MORE = [
    (
        "a character filter by tags admits a character with one, an exclusion keeps it out",
        "3812-3826; tags.js 746-752",
        TAGGED,
        [["the lamp"]],
        {},
        "Ada",
        [["not-nobles", "sailors"]],
    ),
    (
        "a character with no tags is kept out of a filter by tags, let into an exclusion",
        "3812-3826; tags.js 457-461",
        TAGGED,
        [["the lamp"]],
        {},
        "Ada",
        [["not-nobles", "not-sailors"]],
    ),
    (
        "world_info_budget is a percent of the context",
        "3731",
        TWO,
        [["the lamp"]],
        {"world_info_budget": 25},
        "Ada",
        [["high"]],
    ),
    (
        "world_info_budget_cap caps the budget",
        "3733-3736",
        TWO,
        [["the lamp"]],
        {"world_info_budget": 25, "world_info_budget_cap": 3},
        "Ada",
        [["high"]],
    ),
    (
        "an entry that brings the total to the budget does not fit",
        "4026-4028",
        TWO,
        [["the lamp"]],
        {"world_info_budget": 100},
        "Ada",
        [["high"]],
    ),
    (
        "a budget of 0 percent is one token",
        "3731 (|| 1)",
        TWO,
        [["the lamp"]],
        {"world_info_budget": 0},
        "Ada",
        [[]],
    ),
]
EXTRA: dict[str, dict[str, Any]] = {
    MORE[0][0]: {"card_tags": [" Sailor", "SEA"], "character_tags": ["101", "102"]},
    MORE[1][0]: {"card_tags": [], "character_tags": []},
    MORE[2][0]: {"context": 12},  # 25% of 12: 3, so one entry of two words
    MORE[3][0]: {"context": 1000},  # 25% of 1000 is 250, capped at 3
    MORE[4][0]: {"context": 4},  # 2 + 2 is 4: not below 4
    MORE[5][0]: {"context": 1000},
}


# Differences kept on purpose (the lore guide says why): name, lines, book, scans,
# settings, character, what Fabula activates, what SillyTavern does
KEPT: list[
    tuple[
        str,
        str,
        dict[str, Any],
        list[list[str]],
        dict[str, Any],
        str,
        list[list[str]],
        list[list[str]],
    ]
]
KEPT = [
    (
        "a ^ anchor matches at the start of the scan, and with m of a turn",
        "220-223 (each message begins with \\x01, so ^ never matches there)",
        book(
            entry(0, ["/^Rose/"], "start", "R."),
            entry(1, ["/^Rose/m"], "line", "R."),
        ),
        [["Rose blooms."], ["Rose blooms.", "x"]],  # the scan: newest first
        {},
        "Ada",
        [["line", "start"], ["line"]],
        [[], []],
    ),
    (
        "cut back, the chat's timed effects are those of its messages",
        "415-431 and 525-529 (a cooldown a sticky's end started survives the cut)",
        book(entry(0, ["lamp"], "sc", "Lit.", sticky=2, cooldown=3)),
        [*grow(["the lamp", "x", "y", "z"]), ["the lamp", "x"]],
        {},
        "Ada",
        [["sc"], ["sc"], [], [], ["sc"]],
        [["sc"], ["sc"], [], [], []],
    ),
]


def _fabula(
    doc: dict[str, Any],
    scans: list[list[str]],
    settings: dict[str, Any],
    who: str,
    tmp_path: Path,
    extra: dict[str, Any] | None = None,
) -> list[list[str]]:
    extra = extra or {}
    card = fx.v1_card()
    if "card_tags" in extra:
        card = fx.v2_card("Ada", book=False)
        card["data"]["tags"] = extra["card_tags"]
    st = {**st_settings(**settings), "tags": SAILOR_TAGS}
    if "context" in extra:  # getMaxContextSize: max_context less the reply's amount_gen
        st |= {"main_api": "textgenerationwebui", "max_context": extra["context"] + 80}
        st |= {"amount_gen": 80}
    files = [
        fx.write_json(tmp_path / "ada.json", card),
        fx.write_json(tmp_path / "wi.json", doc),
        fx.write_json(tmp_path / "settings.json", st),
    ]
    lore = import_paths(files).pack.lore
    books = books_of(lore.books_of(None), lore.world_info, card_tags(lore.card_of(who)))
    out = []
    for chat in scans:
        found = recall_chat(books, chat, budget=BIG, character=who)
        out.append(sorted(x.activated.entry.name for x in found.lit))
    return out


@pytest.mark.parametrize(
    ("name", "lines", "doc", "scans", "settings", "who", "expected"),
    [*CASES, *MORE],
    ids=[c[0] for c in [*CASES, *MORE]],
)
def test_a_chat_activates_as_sillytavern(
    tmp_path: Path,
    name: str,
    lines: str,
    doc: dict[str, Any],
    scans: list[list[str]],
    settings: dict[str, Any],
    who: str,
    expected: list[list[str]],
) -> None:
    """The case's rule, world-info.js ``lines``: each scan's chat as a story's turns."""
    assert _fabula(doc, scans, settings, who, tmp_path, EXTRA.get(name)) == expected


@pytest.mark.parametrize(
    ("name", "lines", "doc", "scans", "settings", "who", "ours", "theirs"),
    KEPT,
    ids=[c[0] for c in KEPT],
)
def test_a_difference_kept_on_purpose(
    tmp_path: Path,
    name: str,
    lines: str,
    doc: dict[str, Any],
    scans: list[list[str]],
    settings: dict[str, Any],
    who: str,
    ours: list[list[str]],
    theirs: list[list[str]],
) -> None:
    """What Fabula does where it differs from SillyTavern on purpose (world-info.js
    ``lines``; SillyTavern's answer, ``theirs``, is checked by the Node test)."""
    assert ours != theirs
    assert _fabula(doc, scans, settings, who, tmp_path) == ours


def node_cases() -> list[dict[str, Any]]:
    """The cases as ``st_harness/run.mjs`` reads them (settings over a fresh install's, as
    ``test_world_info_st`` feeds them: a budget of 100% of the context given, unless the
    case gives its own percent of its own context)."""
    return [
        {
            "name": c[0],
            "book": c[2],
            "scans": c[3],
            "settings": c[4],
            "character": c[5],
            "character_tags": EXTRA.get(c[0], {}).get("character_tags", []),
            "budget": EXTRA.get(c[0], {}).get("context", BIG),
        }
        for c in [*CASES, *MORE, *KEPT]
    ]


def run_sillytavern(world_info: Path, cases: list[dict[str, Any]], into: Path) -> dict[str, Any]:
    """SillyTavern's answers to ``cases``: its ``world_info`` made runnable in ``into``."""
    subprocess.run(["node", str(HARNESS / "prepare.mjs"), str(world_info), str(into)], check=True)
    done = subprocess.run(
        ["node", str(into / "run.mjs")],
        input=json.dumps(cases),
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    found: dict[str, Any] = json.loads(done.stdout)
    return found


def test_sillytavern_gives_the_recorded_answers(tmp_path: Path) -> None:
    """SillyTavern's own ``checkWorldInfo`` activates what each case records (only where
    ``FABULA_ST_WORLD_INFO`` names its ``world-info.js`` and ``node`` is installed)."""
    source = os.environ.get("FABULA_ST_WORLD_INFO")
    if not source or shutil.which("node") is None:
        pytest.skip("FABULA_ST_WORLD_INFO (SillyTavern's world-info.js) and node needed")
    found = run_sillytavern(Path(source), node_cases(), tmp_path)
    assert found == {c[0]: c[6] for c in [*CASES, *MORE]} | {c[0]: c[7] for c in KEPT}
