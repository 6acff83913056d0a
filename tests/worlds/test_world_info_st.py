"""World Info as SillyTavern does it (issue 49): each case a rule of SillyTavern's
``public/scripts/world-info.js`` at release 1.12.6, named by its lines, run through the
importer (a SillyTavern World Info export, or a card with its own book, beside a card) and
the lore recall.

Each expected answer was read from that file and confirmed by running its
``checkWorldInfo`` under Node, outside this repository (SillyTavern's AGPL code stays out
of it; CI cannot reach it), with the settings of a fresh install
(``default/content/settings.json``: depth 2, whole words on, recursion on, case off), a
budget of 100% of the context given and no names in the scan. ``CASES`` and
``CARD_CASES`` are plain data so that the same cases can be fed to it.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from fabula.errors import InvalidInput
from fabula.graph.service import Fabula
from fabula.settings import Settings
from fabula.testing import imports as fx
from fabula.testing.world_info import BIG, book, entry, st_settings
from fabula.worlds.imports import import_paths
from fabula.worlds.recall import books_of, recall_books

# (name, the lines of world-info.js it follows, book, chat (oldest first), budget, expected)
CASES: list[tuple[str, str, dict[str, Any], list[str], int, list[str]]] = [
    (
        "whole words by default: power is not in powers",
        "252, 262-263; default/content/settings.json",
        book(entry(0, ["power"], "p", "The glade's power.")),
        ["What are your powers?"],
        BIG,
        [],
    ),
    (
        "whole word: king in 'long live the king!'",
        "262-263",
        book(entry(0, ["king"], "k", "The old king.")),
        ["long live the king!"],
        BIG,
        ["k"],
    ),
    (
        "an entry's own matchWholeWords false: king in liking",
        "252 (entry.matchWholeWords ?? world_info_match_whole_words)",
        book(entry(0, ["king"], "k", "The old king.", matchWholeWords=False)),
        ["not to my liking"],
        BIG,
        ["k"],
    ),
    (
        "a key of several words is found as written",
        "255-258",
        book(entry(0, ["the king"], "k", "The old king.")),
        ["the kingdom falls"],
        BIG,
        ["k"],
    ),
    (
        "case ignored by default",
        "193-196",
        book(entry(0, ["Bessie"], "b", "A cow.")),
        ["BESSIE moos"],
        BIG,
        ["b"],
    ),
    (
        "an entry's own caseSensitive",
        "194",
        book(entry(0, ["Rose"], "r", "A name.", caseSensitive=True)),
        ["a rose grows"],
        BIG,
        [],
    ),
    (
        "a regex key on the text as written: /rose/ is not in 'Rose'",
        "245-248",
        book(entry(0, ["/rose/"], "r", "A flower.")),
        ["Rose came in"],
        BIG,
        [],
    ),
    (
        "a regex key with its own i flag",
        "245-248, 2231-2257",
        book(entry(0, ["/rose/i"], "r", "A flower.")),
        ["Rose came in"],
        BIG,
        ["r"],
    ),
    (
        "a regex key is not bound to whole words",
        "245-248 (a regex overrides every other option)",
        book(entry(0, ["/king/"], "k", "A word.")),
        ["not to my liking"],
        BIG,
        ["k"],
    ),
    (
        "a key that is no valid regex is plain text",
        "2251-2255 (new RegExp throws: null, a plain key)",
        book(entry(0, ["/[oops/"], "x", "A typo.")),
        ["type /[oops/ here"],
        BIG,
        ["x"],
    ),
    (
        "flags that are not JavaScript's: plain text",
        "2234 (/^\\/([\\w\\W]+?)\\/([gimsuy]*)$/)",
        book(entry(0, ["/r/fantasy"], "x", "A forum.")),
        ["see /r/fantasy today"],
        BIG,
        ["x"],
    ),
    (
        "an unescaped slash inside: plain text",
        "2243-2245",
        book(entry(0, ["/a/b/"], "x", "A path.")),
        ["the /a/b/ path"],
        BIG,
        ["x"],
    ),
    (
        "a Cyrillic key inside an inflected word (ASCII \\W)",
        "262-263",
        book(entry(0, ["кот"], "k", "Кот.")),
        ["котёнок спит"],
        BIG,
        ["k"],
    ),
    (
        "a Chinese key in unspaced text",
        "262-263",
        book(entry(0, ["王"], "k", "王.")),
        ["国王来了"],
        BIG,
        ["k"],
    ),
    (
        "a disabled entry never",
        "3790-3793",
        book(entry(0, ["lamp"], "d", "Off.", disable=True)),
        ["the lamp"],
        BIG,
        [],
    ),
    (
        "constant",
        "3881-3885",
        book(entry(0, ["nothing"], "c", "Always.", constant=True)),
        ["the lamp"],
        BIG,
        ["c"],
    ),
    (
        "secondary keys ignored when the entry is not selective",
        "3911-3921",
        book(entry(0, ["lamp"], "l", "A lamp.", keysecondary=["tower"], selective=False)),
        ["the lamp"],
        BIG,
        ["l"],
    ),
    (
        "AND ANY: the key and one secondary",
        "3933-3937",
        book(entry(0, ["lamp"], "l", "A lamp.", keysecondary=["tower", "sea"])),
        ["the lamp by the sea"],
        BIG,
        ["l"],
    ),
    (
        "NOT ANY: none of the secondaries",
        "3944-3948",
        book(entry(0, ["lamp"], "l", "A lamp.", keysecondary=["sea"], selectiveLogic=2)),
        ["the lamp by the sea"],
        BIG,
        [],
    ),
    (
        "NOT ALL: not every secondary",
        "3937-3941",
        book(entry(0, ["lamp"], "l", "A lamp.", keysecondary=["sea", "tower"], selectiveLogic=1)),
        ["the lamp by the sea"],
        BIG,
        ["l"],
    ),
    (
        "AND ALL: every secondary",
        "3950-3954",
        book(entry(0, ["lamp"], "l", "A lamp.", keysecondary=["sea", "tower"], selectiveLogic=3)),
        ["the lamp by the sea"],
        BIG,
        [],
    ),
    (
        "recursion on by default: an entry's text activates another",
        "3988-3992; default/content/settings.json",
        book(
            entry(0, ["lamp"], "a", "The lamp hangs in the tower."),
            entry(1, ["tower"], "b", "Stone."),
        ),
        ["the lamp"],
        BIG,
        ["a", "b"],
    ),
    (
        "no limit on recursion steps: a chain of six",
        "76, 3757-3761 (world_info_max_recursion_steps = 0)",
        book(*(entry(i, [f"k{i}"], f"k{i}", f"then k{i + 1}") for i in range(6))),
        ["k0"],
        BIG,
        [f"k{i}" for i in range(6)],
    ),
    (
        "secondary keys found in the recursed text",
        "204-240 (one buffer: chat and recursed text), 3934",
        book(
            entry(0, ["lamp"], "x", "A beacon.", keysecondary=["tower"], order=50),
            entry(1, ["lamp"], "y", "The tower stands."),
        ),
        ["the lamp"],
        BIG,
        ["x", "y"],
    ),
    (
        "delay until recursion: found in the chat at a recursion step",
        "3843-3846, 204-240",
        book(
            entry(0, ["lamp"], "d", "Delayed.", delayUntilRecursion=True),
            entry(1, ["lamp"], "e", "A light."),
        ),
        ["the lamp"],
        BIG,
        ["d", "e"],
    ),
    (
        "delay until recursion: not in the first scan",
        "3741-3748, 3843-3846, 4048-4053",
        book(entry(0, ["lamp"], "d", "Delayed.", delayUntilRecursion=True)),
        ["the lamp"],
        BIG,
        [],  # its level is open from the start (3741-3748), but no recursion step runs
    ),
    (
        "exclude recursion: not activated by another entry's text",
        "3853-3856",
        book(
            entry(0, ["lamp"], "a", "A light."),
            entry(1, ["light"], "x", "X.", excludeRecursion=True),
        ),
        ["the lamp"],
        BIG,
        ["a"],
    ),
    (
        "prevent recursion: its text activates nothing",
        "3985",
        book(
            entry(0, ["lamp"], "a", "A light.", preventRecursion=True),
            entry(1, ["light"], "x", "X."),
        ),
        ["the lamp"],
        BIG,
        ["a"],
    ),
    (
        "the budget by order alone, highest first",
        "82 (sortFn), 3963-3968, 4004-4015",
        book(
            entry(0, ["lamp"], "low", "two words", order=1),
            entry(1, ["lamp"], "high", "two words", order=9),
        ),
        ["the lamp"],
        3,
        ["high"],
    ),
    (
        "a constant entry has no precedence in the budget",
        "3963-3968",
        book(
            entry(0, ["none"], "const", "two words", order=1, constant=True),
            entry(1, ["lamp"], "keyed", "two words", order=9),
        ),
        ["the lamp"],
        3,
        ["keyed"],
    ),
    (
        "probability 0: never",
        "3977-3995 (Math.random() * 100 <= probability)",
        book(entry(0, ["lamp"], "p", "Rare.", useProbability=True, probability=0)),
        ["the lamp"],
        BIG,
        [],
    ),
    (
        "probability without useProbability: not rolled",
        "3979-3982",
        book(entry(0, ["lamp"], "p", "Always.", useProbability=False, probability=0)),
        ["the lamp"],
        BIG,
        ["p"],
    ),
    (
        "an inclusion group: the override wins",
        "4349-4355 (groupOverride, highest order)",
        book(
            entry(0, ["lamp"], "a", "A.", group="light", order=50),
            entry(1, ["lamp"], "b", "B.", group="light", groupOverride=True, order=10),
            entry(2, ["lamp"], "c", "C.", group="light", groupOverride=True, order=5),
        ),
        ["the lamp"],
        BIG,
        ["b"],
    ),
    (
        "an inclusion group: drawn by weight (a weight of 0 never wins here)",
        "4357-4380",
        book(
            entry(0, ["lamp"], "a", "A.", group="light", groupWeight=0, order=50),
            entry(1, ["lamp"], "b", "B.", group="light", groupWeight=100, order=10),
        ),
        ["the lamp"],
        BIG,
        ["b"],
    ),
    (
        "an inclusion group with scoring: the most keys found wins",
        "336-380, 4203-4246",
        book(
            entry(
                0, ["lamp", "tower"], "a", "A.", group="g", useGroupScoring=True, groupOverride=True
            ),
            entry(
                1,
                ["lamp"],
                "b",
                "B.",
                group="g",
                useGroupScoring=True,
                groupOverride=True,
                order=200,
            ),
        ),
        ["the lamp in the tower"],
        BIG,
        ["a"],
    ),
    (
        "an inclusion group already active: no other of it in a later step",
        "4336-4341",
        book(
            entry(0, ["lamp"], "a", "The tower.", group="g"),
            entry(1, ["tower"], "b", "B.", group="g"),
        ),
        ["the lamp"],
        BIG,
        ["a"],
    ),
    (
        "@@activate",
        "3869-3873",
        book(entry(0, ["nothing"], "a", "@@activate\nAlways.")),
        ["the lamp"],
        BIG,
        ["a"],
    ),
    (
        "@@dont_activate",
        "3875-3878",
        book(entry(0, ["lamp"], "d", "@@dont_activate\nNever.")),
        ["the lamp"],
        BIG,
        [],
    ),
    (
        "a V3 decorator in a World Info export is dropped",
        "93 (KNOWN_DECORATORS), 3646-3692",
        book(entry(0, ["lamp"], "x", "@@exclude_keys lamp\nStill here.")),
        ["the lamp"],
        BIG,
        ["x"],
    ),
]


def card(entries: list[dict[str, Any]]) -> dict[str, Any]:
    """A V2 card whose own book holds ``entries``, as SillyTavern's card export writes them
    (``use_regex: true`` on every one)."""
    doc = fx.v2_card("Bo")
    doc["data"]["character_book"]["entries"] = entries
    return doc


def card_entry(i: int, keys: list[str], name: str, content: str, **ext: Any) -> dict[str, Any]:
    return {
        "id": i,
        "keys": keys,
        "secondary_keys": [],
        "comment": name,
        "content": content,
        "constant": False,
        "selective": True,
        "insertion_order": 100,
        "enabled": True,
        "position": "after_char",
        "use_regex": True,
        "extensions": {"match_whole_words": None, **ext},
    }


# (name, lines, card entries, chat, expected comments)
CARD_CASES: list[tuple[str, str, list[dict[str, Any]], list[str], list[str]]] = [
    (
        "use_regex is ignored: king is a plain key, whole words",
        "4519-4566 (convertCharacterBook maps no use_regex)",
        [card_entry(0, ["king"], "k", "A king.")],
        ["not to my liking"],
        [],
    ),
    (
        "use_regex is ignored: c++ is a plain key",
        "4519-4566",
        [card_entry(0, ["c++"], "c", "A language.")],
        ["I write c++ daily"],
        ["c"],
    ),
    (
        "use_regex is ignored: Mr. Smith is not in Mrs Smith",
        "4519-4566",
        [card_entry(0, ["Mr. Smith"], "s", "A man.")],
        ["Mrs Smith came"],
        [],
    ),
    (
        "extensions.case_sensitive is read",
        "4549 (caseSensitive: entry.extensions?.case_sensitive ?? null)",
        [card_entry(0, ["Rose"], "r", "A name.", case_sensitive=True)],
        ["a rose"],
        [],
    ),
    (
        "macros in keys: {{char}} is the card's character",
        "3900-3903 (substituteParams on every key)",
        [card_entry(0, ["{{char}}'s blade"], "b", "A blade.")],
        ["he drew Bo's blade"],
        ["b"],
    ),
    (
        "extensions.probability is read (useProbability true by default)",
        "4542-4543",
        [card_entry(0, ["lamp"], "p", "Rare.", probability=0)],
        ["the lamp"],
        [],
    ),
    (
        "extensions.group and group_override are read",
        "4545-4546",
        [
            card_entry(0, ["lamp"], "a", "A.", group="g"),
            card_entry(1, ["lamp"], "b", "B.", group="g", group_override=True),
        ],
        ["the lamp"],
        ["b"],
    ),
    (
        "extensions.delay_until_recursion is read",
        "4536, 3843-3846",
        [
            card_entry(0, ["lamp"], "d", "Delayed.", delay_until_recursion=True),
            card_entry(1, ["lamp"], "e", "A light."),
        ],
        ["the lamp"],
        ["d", "e"],
    ),
]


def _recall(
    tmp_path: Path, files: list[Path], owner: str | None, chat: list[str], budget: int
) -> list[str]:
    pack = import_paths(files).pack
    books = books_of(pack.lore.books_of(owner))
    found = recall_books(books, "\n".join(chat), budget=budget)
    return sorted(x.activated.entry.name for x in found.lit)


@pytest.mark.parametrize(
    ("name", "lines", "doc", "chat", "budget", "expected"), CASES, ids=[c[0] for c in CASES]
)
def test_a_world_info_export_activates_as_sillytavern(
    tmp_path: Path,
    name: str,
    lines: str,
    doc: dict[str, Any],
    chat: list[str],
    budget: int,
    expected: list[str],
) -> None:
    """The case's rule, world-info.js ``lines``: the book imported, recalled on the chat."""
    files = [
        fx.write_json(tmp_path / "ada.json", fx.v1_card()),
        fx.write_json(tmp_path / "wi.json", doc),
    ]
    assert _recall(tmp_path, files, None, chat, budget) == expected


@pytest.mark.parametrize(
    ("name", "lines", "entries", "chat", "expected"), CARD_CASES, ids=[c[0] for c in CARD_CASES]
)
def test_a_cards_book_activates_as_sillytavern(
    tmp_path: Path,
    name: str,
    lines: str,
    entries: list[dict[str, Any]],
    chat: list[str],
    expected: list[str],
) -> None:
    """The case's rule, world-info.js ``lines``: the card's own book, as its character's."""
    files = [fx.write_json(tmp_path / "bo.json", card(entries))]
    assert _recall(tmp_path, files, "Bo", chat, BIG) == expected


def test_a_lookahead_key_disables_its_entry_and_the_rest_works(tmp_path: Path) -> None:
    """SillyTavern runs ``/lamp(?= room)/`` (JavaScript has lookahead); RE2 cannot, so its
    entry is imported disabled with one finding naming it, and the book's other entries
    still fire (a difference kept: no backtracking engine runs a key)."""
    doc = book(
        entry(0, ["/lamp(?= room)/"], "ahead", "Ahead."),
        entry(1, ["lamp"], "plain", "A lamp."),
    )
    files = [
        fx.write_json(tmp_path / "ada.json", fx.v1_card()),
        fx.write_json(tmp_path / "wi.json", doc),
    ]
    [finding] = import_paths(files).findings
    assert "entries[0] ('ahead'): imported disabled: key '/lamp(?= room)/'" in finding
    assert _recall(tmp_path, files, None, ["the lamp room"], BIG) == ["plain"]


def test_the_cases_are_data_node_can_read() -> None:
    """The cases serialise to JSON as they are (how they were fed to SillyTavern's code)."""
    assert json.loads(json.dumps(CASES)) and json.loads(json.dumps(CARD_CASES))


def test_a_settings_json_sets_the_storys_world_info(redis_url: str, tmp_path: Path) -> None:
    """``world_info_settings`` of a ``settings.json`` imported beside the book (as
    ``setWorldInfoSettings`` reads them, world-info.js 767-800): whole words off makes
    ``power`` fire on "powers", recursion off stops the chain, in the story's recall."""

    doc = book(
        entry(0, ["power"], "power", "It wakes the tower."),
        entry(1, ["tower"], "tower", "Stone."),
    )
    files = [
        fx.write_json(tmp_path / "ada.json", fx.v1_card()),
        fx.write_json(tmp_path / "wi.json", doc),
        fx.write_json(
            tmp_path / "settings.json",
            st_settings(world_info_match_whole_words=False, world_info_recursive=False),
        ),
    ]
    imported = import_paths(files)
    settings = imported.pack.lore.world_info
    assert (settings.match_whole_words, settings.recursive, settings.depth) == (False, False, 2)

    async def recall(story: str, files: list[Path]) -> list[str]:
        async with Fabula(redis_url, Settings(home=tmp_path)) as fab:
            store = await fab.import_story(import_paths(files), story)
            found = await fab.read(store).recall("What are your powers?", budget=400)
            return sorted(x.name for x in found.lore)

    assert asyncio.run(recall("set", files)) == ["power"]
    assert asyncio.run(recall("fresh", files[:2])) == []  # a fresh install's: whole words


def test_a_bad_settings_field_is_refused_in_one_line(tmp_path: Path) -> None:
    """A field of the wrong type: one line naming the file and the field, nothing made."""
    files = [
        fx.write_json(tmp_path / "ada.json", fx.v1_card()),
        fx.write_json(tmp_path / "settings.json", st_settings(world_info_recursive="yes")),
    ]
    with pytest.raises(InvalidInput) as caught:
        import_paths(files)
    message = str(caught.value)
    assert "\n" not in message and "settings.json" in message
    assert "world_info_settings.world_info_recursive: 'yes' is not true or false" in message
