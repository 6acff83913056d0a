"""Lore activation agrees with SillyTavern's World Info documentation (and the character-card
V3 spec for regex keys and decorators): one row per documented rule."""

from __future__ import annotations

from typing import Any

import pytest

from fabula.worlds.activation import activate, decorators_of
from fabula.worlds.lore import LoreBook, LoreEntry
from fabula.worlds.recall import books_of, recall_books


def e(*keys: str, content: str = "", **kw: Any) -> LoreEntry:
    return LoreEntry(keys=keys, content=content or f"about {keys[0] if keys else 'nothing'}", **kw)


# (rule, entries, text, expected names of activated entries, keyword arguments)
CASES: list[tuple[str, list[LoreEntry], str, list[str], dict[str, Any]]] = [
    ("keys are not case-sensitive by default", [e("Bessie", name="b")], "bessie moos", ["b"], {}),
    (
        # kept on purpose: SillyTavern's matchKeys (world-info.js 255-259, 268-269) finds a
        # key of spaces in any text with a space; here it is in no text
        "a key of only spaces fires on nothing",
        [e(" ", name="blank"), e("   ", name="blank2", whole_words=False)],
        "the old king sat down",
        [],
        {},
    ),
    (
        "a case-sensitive key needs its case",
        [e("Rose", name="r", case_sensitive=True)],
        "a rose",
        [],
        {},
    ),
    (
        "case-sensitive, in its case",
        [e("Rose", name="r", case_sensitive=True)],
        "Rose came",
        ["r"],
        {},
    ),
    (
        "a key as a word: 'king' in 'long live the king'",
        [e("king", name="k")],
        "long live the king",
        ["k"],
        {},
    ),
    (
        # a fresh SillyTavern install: default/content/settings.json,
        # world_info_match_whole_words true
        "whole words by default, as a fresh SillyTavern: not 'power' in 'What are your powers?'",
        [e("power", name="p")],
        "What are your powers?",
        [],
        {},
    ),
    (
        "whole words off: 'king' in 'liking'",
        [e("king", name="k", whole_words=False)],
        "not to my liking",
        ["k"],
        {},
    ),
    (
        "whole words on (the entry's own): not in 'liking'",
        [e("king", name="k", whole_words=True)],
        "not to my liking",
        [],
        {},
    ),
    (
        "whole words on (the entry's own): 'king' in 'long live the king!'",
        [e("king", name="k", whole_words=True)],
        "long live the king!",
        ["k"],
        {},
    ),
    (
        "whole words as the default of entries that do not say",
        [e("king", name="k", content="k"), e("king", name="w", content="w", whole_words=False)],
        "not to my liking",
        ["w"],
        {"whole_words": True},
    ),
    (
        "an entry's own case overrides the default",
        [e("Rose", name="r", case_sensitive=False)],
        "a rose",
        ["r"],
        {"case_sensitive": True},
    ),
    (
        "a key of several words is matched as written",
        [e("the king", name="k")],
        "the kingdom",
        ["k"],
        {},
    ),
    ("a /regex/flags key", [e("/lamp\\s+room/i", name="l")], "the LAMP   Room", ["l"], {}),
    (
        "use_regex: every key a regex",
        [e("log(book)?", name="l", use_regex=True)],
        "the logbook",
        ["l"],
        {},
    ),
    ("an invalid regex matches nothing", [e("/[oops/", name="x")], "[oops", [], {}),
    (
        "AND ANY: the key and one optional key",
        [e("key", name="k", selective=True, secondary_keys=("brass", "iron"))],
        "the brass key",
        ["k"],
        {},
    ),
    (
        "AND ANY: not without one",
        [e("key", name="k", selective=True, secondary_keys=("brass",))],
        "the key",
        [],
        {},
    ),
    (
        "AND ALL: every optional key",
        [e("key", name="k", selective=True, logic="and_all", secondary_keys=("brass", "old"))],
        "the old brass key",
        ["k"],
        {},
    ),
    (
        "AND ALL: not with one missing",
        [e("key", name="k", selective=True, logic="and_all", secondary_keys=("brass", "old"))],
        "the brass key",
        [],
        {},
    ),
    (
        "NOT ANY: none of the optional keys",
        [e("key", name="k", selective=True, logic="not_any", secondary_keys=("brass",))],
        "the key",
        ["k"],
        {},
    ),
    (
        "NOT ANY: not with one present",
        [e("key", name="k", selective=True, logic="not_any", secondary_keys=("brass", "iron"))],
        "the iron key",
        [],
        {},
    ),
    (
        "NOT ALL: with some present",
        [e("key", name="k", selective=True, logic="not_all", secondary_keys=("brass", "old"))],
        "the brass key",
        ["k"],
        {},
    ),
    (
        "NOT ALL: not with all present",
        [e("key", name="k", selective=True, logic="not_all", secondary_keys=("brass", "old"))],
        "the old brass key",
        [],
        {},
    ),
    (
        "no optional keys: the filter is ignored",
        [e("key", name="k", selective=True, logic="and_all")],
        "the key",
        ["k"],
        {},
    ),
    (
        "not selective: optional keys ignored",
        [e("key", name="k", secondary_keys=("brass",))],
        "the key",
        ["k"],
        {},
    ),
    ("constant: whatever the keys", [e(name="c", constant=True)], "nothing here", ["c"], {}),
    (
        "disabled: never, constant or not",
        [e("key", name="d", enabled=False, constant=True)],
        "the key",
        [],
        {},
    ),
    (
        "recursion: Bessie brings Rufus",
        [
            e("Bessie", name="b", content="Bessie is friends with Rufus."),
            e("Rufus", name="r", content="Rufus is a dog."),
        ],
        "I met Bessie",
        ["b", "r"],
        {},
    ),
    (
        "recursion off: Bessie alone",
        [e("Bessie", name="b", content="Bessie is friends with Rufus."), e("Rufus", name="r")],
        "I met Bessie",
        ["b"],
        {"recursive": False},
    ),
    (
        "non-recursable: not by another's text",
        [
            e("Bessie", name="b", content="friends with Rufus"),
            e("Rufus", name="r", exclude_recursion=True),
        ],
        "I met Bessie",
        ["b"],
        {},
    ),
    (
        "non-recursable: still by the text",
        [e("Rufus", name="r", exclude_recursion=True)],
        "Rufus barks",
        ["r"],
        {},
    ),
    (
        "prevent further recursion",
        [
            e("Bessie", name="b", content="friends with Rufus", prevent_recursion=True),
            e("Rufus", name="r"),
        ],
        "I met Bessie",
        ["b"],
        {},
    ),
    (
        "delay until recursion: not by the text",
        [e("Rufus", name="r", kept={"delayUntilRecursion": True})],
        "Rufus barks",
        [],
        {},
    ),
    (
        "delay until recursion: by another's text",
        [
            e("Bessie", name="b", content="with Rufus"),
            e("Rufus", name="r", kept={"delayUntilRecursion": True}),
        ],
        "Bessie",
        ["b", "r"],
        {},
    ),
    (
        # world-info.js 3757-3761: the loop stops once max recursion steps scans ran
        "max recursion steps: 3 scans, the first included",
        [
            e("a", name="a", content="then b"),
            e("b", name="b", content="then c"),
            e("c", name="c", content="then d"),
            e("d", name="d"),
        ],
        "a",
        ["a", "b", "c"],
        {"max_recursion": 3},
    ),
    (
        # world-info.js 76: world_info_max_recursion_steps = 0, no limit
        "no limit on recursion steps by default",
        [e(f"k{i}", name=f"k{i}", content=f"then k{i + 1}") for i in range(6)],
        "k0",
        [f"k{i}" for i in range(6)],
        {},
    ),
    (
        "a cycle ends: each entry once",
        [e("a", name="a", content="b"), e("b", name="b", content="a")],
        "a",
        ["a", "b"],
        {},
    ),
    (
        "insertion order: lower first",
        [e("x", name="late", order=200), e("x", name="early", order=5)],
        "x",
        ["early", "late"],
        {},
    ),
    (
        "budget: constant first, then higher order; full stops",
        [
            e("x", name="low", order=1, content="one two"),
            e("x", name="high", order=9, content="one two"),
            e(name="const", constant=True, content="one two"),
        ],
        "x",
        ["high", "const"],
        {"budget": 5},  # 4 fits below 5; 6 would not (world-info.js 4026-4028)
    ),
    (
        # world-info.js 82 and 3963-3968: sortFn, by order alone; priority is not read
        "budget: higher order first, priority not read",
        [
            e("x", name="p", order=1, priority=10, content="a b"),
            e("x", name="o", order=9, content="a b"),
        ],
        "x",
        ["o"],
        {"budget": 3},
    ),
    (
        # world-info.js 3963-3968: a constant entry has no precedence in the budget
        "budget: a constant entry by its order too",
        [
            e("x", name="c", order=1, constant=True, content="a b"),
            e("x", name="o", order=9, content="a b"),
        ],
        "x",
        ["o"],
        {"budget": 3},
    ),
    (
        "budget: the text's entries before recursion's",
        [
            e("x", name="direct", order=1, content="y y"),
            e("y", name="recursed", order=99, content="z z"),
        ],
        "x",
        ["direct"],
        {"budget": 3},
    ),
    ("@@dont_activate", [e("x", name="d", content="@@dont_activate\nhidden")], "x", [], {}),
    ("@@activate", [e("nope", name="a", content="@@activate\nalways")], "x", ["a"], {}),
    (
        "@@exclude_keys",
        [e("key", name="k", content="@@exclude_keys iron,steel\nbody")],
        "the steel key",
        [],
        {},
    ),
    (
        "@@additional_keys",
        [e("key", name="k", content="@@additional_keys brass\nbody")],
        "the key",
        [],
        {},
    ),
    (
        "an unknown decorator falls back",
        [e("key", name="k", content="@@risu_only 1\n@@@dont_activate\nbody")],
        "key",
        [],
        {},
    ),
    (
        "@@activate_only_after, before the turn",
        [e("key", name="k", content="@@activate_only_after 3\nbody")],
        "key",
        [],
        {"turn": 2},
    ),
    (
        "@@activate_only_after, at the turn",
        [e("key", name="k", content="@@activate_only_after 3\nbody")],
        "key",
        ["k"],
        {"turn": 3},
    ),
    (
        "@@activate_only_every",
        [e("key", name="k", content="@@activate_only_every 2\nbody")],
        "key",
        [],
        {"turn": 3},
    ),
]


@pytest.mark.parametrize(
    ("rule", "entries", "text", "expected", "kw"), CASES, ids=[c[0] for c in CASES]
)
def test_activation_case(
    rule: str, entries: list[LoreEntry], text: str, expected: list[str], kw: dict[str, Any]
) -> None:
    """Each documented rule of activation, as a case."""
    assert [a.entry.name for a in activate(entries, text, **kw)] == expected, rule


def test_what_fired_each_entry() -> None:
    """Each activated entry says how it fired, which key, at which recursion step."""
    entries = [
        e(name="c", constant=True),
        e("Bessie", name="b", content="with Rufus"),
        e("Rufus", name="r"),
    ]
    got = {a.entry.name: (a.fired, a.key, a.step) for a in activate(entries, "Bessie")}
    assert got == {
        "c": ("constant", None, 0),
        "b": ("key", "Bessie", 0),
        "r": ("recursion", "Rufus", 1),
    }


def test_decorators_and_fallbacks_are_read() -> None:
    """Of a decorator and its fallbacks the first known is used; of two with one name the first."""
    entry = e(
        "x", content="@@depth 4\n@@@activate_only_after 2\n@@exclude_keys a\n@@exclude_keys b\nbody"
    )
    assert decorators_of(entry) == {"activate_only_after": "2", "exclude_keys": "a"}


@pytest.mark.parametrize(
    ("says", "expected"),
    [(None, ["b", "r"]), (False, ["b"]), (True, ["b", "r"])],
    ids=["unset", "off", "on"],
)
def test_a_book_scans_recursively_unless_it_says_not(
    says: bool | None, expected: list[str]
) -> None:
    """A fresh SillyTavern install scans recursively (``world_info_recursive: true`` in its
    ``default/content/settings.json``); a book's own ``recursive_scanning: false`` turns it
    off."""
    book = LoreBook(
        name="farm",
        format="lorebook_v3",
        recursive_scanning=says,
        entries=(e("Bessie", name="b", content="friends with Rufus"), e("Rufus", name="r")),
    )
    found = recall_books(books_of([book]), "Bessie moos")
    assert [x.activated.entry.name for x in found.lit] == expected
