"""The compiled activation (a word index over the entries' keys) activates exactly what the
naive scan of every entry does, on generated lorebooks: plain keys of one word and of
several, keys with punctuation, case-sensitive entries, whole words off, regex keys,
secondary keys with each logic, constant, disabled, recursion flags and budgets."""

from __future__ import annotations

from typing import Any

from hypothesis import example, given, settings
from hypothesis import strategies as st

from fabula.bench.lore import lorebook, naive_activate
from fabula.worlds.activation import Activated, activate
from fabula.worlds.lore import LoreEntry

WORDS = ["king", "King", "liking", "tower", "lamp", "lamp room", "o'neil", "the king", "KING"]
KEYS = st.sampled_from([*WORDS, "/lamp\\s+room/i", "/to(w|k)er/", "/(/", "", "  king  ", "ing"])
TEXTS = st.lists(
    st.sampled_from([*WORDS, "towers", "o'neil's", "lamp-room", "\n", "kingdom", "Tower"]),
    max_size=8,
).map(" ".join)


@st.composite
def entries(draw: st.DrawFn) -> LoreEntry:
    kw: dict[str, Any] = {
        "keys": tuple(draw(st.lists(KEYS, max_size=3))),
        "content": draw(TEXTS) or "nothing",
        "secondary_keys": tuple(draw(st.lists(KEYS, max_size=2))),
        "selective": draw(st.sampled_from([False, False, True])),
        "logic": draw(st.sampled_from(["and_any", "not_all", "not_any", "and_all"])),
        "enabled": draw(st.sampled_from([True, True, True, False])),
        "constant": draw(st.sampled_from([False, False, False, True])),
        "case_sensitive": draw(st.sampled_from([None, True, False])),
        "whole_words": draw(st.sampled_from([None, True, False])),
        "use_regex": draw(st.sampled_from([False, False, False, True])),
        "order": draw(st.integers(0, 5)),
        "priority": draw(st.sampled_from([None, 1, 3])),
        "exclude_recursion": draw(st.sampled_from([False, False, True])),
        "prevent_recursion": draw(st.sampled_from([False, False, True])),
    }
    if draw(st.sampled_from([False, False, False, True])):
        kw["content"] = f"@@exclude_keys tower\n{kw['content']}"
    return LoreEntry(**kw)


def seen(found: list[Activated]) -> list[tuple[int, str, str | None, int, int]]:
    return [(a.index, a.fired, a.key, a.step, a.tokens) for a in found]


@settings(max_examples=600, deadline=None)
@given(
    book=st.lists(entries(), max_size=8),
    text=TEXTS,
    budget=st.sampled_from([None, None, 10, 40]),
    case=st.booleans(),
    whole=st.booleans(),
)
@example([LoreEntry(keys=("king", "lamp room"), content="x")], "the lamp room", None, False, True)
@example([LoreEntry(keys=("o'neil",), content="x")], "o'neil's lamp", None, False, True)
@example([LoreEntry(keys=("King",), content="x")], "the KING", None, True, True)
@example([LoreEntry(keys=("ing",), content="x")], "liking", None, False, False)
@example([LoreEntry(keys=("/to(w|k)er/",), content="x")], "a tower", None, False, True)
def test_the_index_activates_what_the_scan_does(
    book: list[LoreEntry], text: str, budget: int | None, case: bool, whole: bool
) -> None:
    kw: dict[str, Any] = {"budget": budget, "case_sensitive": case, "whole_words": whole}
    assert seen(activate(book, text, **kw)) == seen(naive_activate(book, text, **kw))


def test_a_generated_book_of_a_thousand_entries_agrees() -> None:
    book, text = lorebook(1000)
    for budget in (None, 4000):
        fast = activate(book, text, budget=budget)
        assert fast, "the generated text names entries"
        assert seen(fast) == seen(naive_activate(book, text, budget=budget))


def test_other_entries_are_not_answered_from_the_index_of_a_first_call() -> None:
    first = [LoreEntry(keys=("tower",), content="old", name="a")]
    assert [a.entry.name for a in activate(first, "the tower")] == ["a"]
    # equal entries, other objects; then other keys: each call reads its own entries
    again = [LoreEntry(keys=("tower",), content="old", name="a")]
    assert [a.entry.name for a in activate(again, "the tower")] == ["a"]
    other = [LoreEntry(keys=("lamp",), content="new", name="b")]
    assert activate(other, "the tower") == []
    assert [a.entry.name for a in activate(other, "the lamp")] == ["b"]
