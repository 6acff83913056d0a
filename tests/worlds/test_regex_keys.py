"""Lore keys in bounded time (issue 34): a regex key that would backtrack for ever in
Python's ``re`` is matched by RE2 in linear time, in the import's cycle check, in the
writer's and a character's recall; a pattern RE2 cannot take is refused at import in one
line, and one a stored story already holds fires nothing (logged once); the recursive-lore
cycle check of a book at the size limit finishes, and finds what it found before.

A backtracking match in Python's ``re`` holds the GIL until it ends: the pure probes run in a
child process the guard can kill; the recall probes, in a thread, would hang (not fail)
should matching ever backtrack again."""

from __future__ import annotations

import asyncio
import json
import re
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import pytest
import structlog
from hypothesis import given, settings
from hypothesis import strategies as st

from fabula.graph.service import Fabula
from fabula.settings import Settings
from fabula.testing import imports as fx
from fabula.worlds.imports import import_paths
from fabula.worlds.imports.keys import KeyFinder, key_matches
from fabula.worlds.imports.lorebooks import check_book
from fabula.worlds.lore import LoreBook, LoreEntry
from fabula.worlds.pack import WorldPack

T = TypeVar("T")
GUARD = 30.0  # seconds: far past what each call takes, far short of what backtracking took
A40 = "a" * 40 + "!"


def within(call: Callable[[], T]) -> T:
    """``call()``'s result; fails (rather than hangs) when it is still running after GUARD."""
    out: dict[str, Any] = {}

    def run() -> None:
        try:
            out["value"] = call()
        except BaseException as exc:  # handed to the test's thread
            out["error"] = exc

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    worker.join(GUARD)
    assert not worker.is_alive(), f"still running after {GUARD:.0f} s"
    if "error" in out:
        raise out["error"]
    return out["value"]  # type: ignore[no-any-return]


def in_child(code: str) -> Any:
    """What ``code`` (Python, run in a child interpreter) prints as JSON; fails when the child
    is still running after GUARD. A backtracking ``re`` match holds the GIL for its whole
    length, so no thread can time it out: a process can be killed."""
    try:
        done = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, timeout=GUARD
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"still running after {GUARD:.0f} s")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def entry(key: str, content: str, order: int) -> dict[str, Any]:
    return {
        "keys": [key],
        "content": content,
        "extensions": {},
        "enabled": True,
        "insertion_order": order,
        "use_regex": False,
        "constant": False,
        "name": key,
    }


def probe_book(recursive: bool, key: str = "/(a+)+$/") -> dict[str, Any]:
    """The issue's probe: an entry keyed ``key``, another whose text is forty ``a``s and ``!``."""
    book = fx.v3_lorebook()
    book["data"]["recursive_scanning"] = recursive
    book["data"]["entries"] = [entry(key, "The pattern.", 1), entry("zz", A40, 2)]
    return book


def card_with_book(key: str) -> dict[str, Any]:
    card = fx.v2_card("Bo")
    card["data"]["character_book"]["entries"] = [entry(key, "Bo's own lore.", 1)]
    return card


def test_a_backtracking_key_in_a_recursive_book_imports(tmp_path: Path) -> None:
    """The cycle check tries `/(a+)+$/` on forty a's and a '!': no match, at once."""
    paths = [
        fx.write_json(tmp_path / "ada.json", fx.v1_card()),
        fx.write_json(tmp_path / "probe.json", probe_book(recursive=True)),
    ]
    keys = in_child(
        "import json; from pathlib import Path; from fabula.worlds.imports import import_paths\n"
        f"pack = import_paths([Path(p) for p in {[str(p) for p in paths]!r}]).pack\n"
        "print(json.dumps([e.keys for b in pack.lore.books for e in b.entries]))"
    )
    assert keys == [["/(a+)+$/"], ["zz"]]


def test_a_backtracking_key_activates_in_linear_time() -> None:
    """`/(a+)+$/` and `/(a|aa)+$/` on the texts that make a backtracking engine explode:
    no match where the text ends in '!', a match where it ends in 'a'."""
    found = in_child(
        "import json\n"
        "from fabula.worlds.activation import activate\n"
        "from fabula.worlds.lore import LoreEntry\n"
        "keyed = [LoreEntry(keys=('/(a+)+$/',), content='one'),"
        " LoreEntry(keys=('/(a|aa)+$/',), content='two')]\n"
        f"texts = [{A40!r}, 'a' * 3999 + '!', 'b' + 'a' * 3999]\n"
        "print(json.dumps([[(a.index, a.key) for a in activate(keyed, t)] for t in texts]))"
    )
    assert found == [[], [], [[0, "/(a+)+$/"], [1, "/(a|aa)+$/"]]]


def test_recall_of_a_story_with_a_backtracking_key(redis_url: str, tmp_path: Path) -> None:
    """The writer's recall (a world book's `/(a+)+$/`, the question forty a's and a '!') and
    a character's (its own book's `/(a|aa)+$/`, a 4,000-character question) return; the
    same keys fire on a text they match."""
    paths = [
        fx.write_json(tmp_path / "bo.json", card_with_book("/(a|aa)+$/")),
        fx.write_json(tmp_path / "probe.json", probe_book(recursive=False)),
    ]
    imported = import_paths(paths, story_id="probe")

    async def recall_all() -> list[list[tuple[str | None, str | None]]]:
        async with Fabula(redis_url, Settings(home=tmp_path)) as fab:
            store = await fab.create_story(imported.pack, "probe")
            asks = [
                (A40, None),
                ("aaaa", None),
                ("a" * 3999 + "!", "bo"),
                ("a" * 3999, "bo"),
            ]
            found: list[list[tuple[str | None, str | None]]] = []
            for question, character in asks:
                out = await fab.read(store).recall(question, budget=400, character=character)
                found.append([(x.name, x.key) for x in out.lore])
            return found

    assert within(lambda: asyncio.run(recall_all())) == [
        [],
        [("/(a+)+$/", "/(a+)+$/")],
        [],
        [("/(a|aa)+$/", "/(a|aa)+$/")],
    ]


@pytest.mark.parametrize(
    ("key", "why"),
    [
        ("/(a)\\1/", "invalid escape sequence"),
        ("/(?<=a)b/", "invalid perl operator"),
        ("/(?!a)b/i", "invalid perl operator"),
        ("/a{1001}/", "invalid repetition size"),
        ("/\\p{L}{1000}/u", "is too large: its RE2 program needs more than the 512 KiB"),
    ],
)
def test_a_key_re2_cannot_match_is_imported_disabled(tmp_path: Path, key: str, why: str) -> None:
    """Backreferences, lookaround, a pattern past the memory bound: its entry is imported
    disabled, with one finding naming the entry and the key; the rest of the book works
    (issue 49); never a fallback to a backtracking engine."""
    book = probe_book(recursive=False, key=key)
    paths = [
        fx.write_json(tmp_path / "ada.json", fx.v1_card()),
        fx.write_json(tmp_path / "probe.json", book),
    ]
    imported = within(lambda: import_paths(paths))
    [finding] = imported.findings
    assert "\n" not in finding
    assert f"entries[0] ({key!r}): imported disabled: " in finding and why in finding
    [read] = imported.pack.lore.books
    assert [e.enabled for e in read.entries] == [False, True]


def test_a_stored_key_re2_cannot_match_fires_nothing_and_is_logged_once(
    redis_url: str, tmp_path: Path
) -> None:
    """A story stored before the import refused such keys: its recall answers, the key fires
    nothing, the others still do, and the refusal is logged once, not at every recall."""
    paths = [
        fx.write_json(tmp_path / "ada.json", fx.v1_card()),
        fx.write_json(tmp_path / "probe.json", probe_book(recursive=False, key="/aa/")),
    ]
    document = json.loads(import_paths(paths, story_id="old").pack.model_dump_json())
    first = document["lore"]["books"][0]["entries"][0]
    first["keys"] = ["/(a)\\1(?=!)/"]
    document["lore"]["books"][0]["entries"][1]["keys"] = ["zz"]
    pack = WorldPack.model_validate(document)

    async def recall_twice() -> list[list[str | None]]:
        async with Fabula(redis_url, Settings(home=tmp_path)) as fab:
            store = await fab.create_story(pack, "old")
            found = []
            for question in ("aa!", "aa! zz"):
                out = await fab.read(store).recall(question, budget=400)
                found.append([x.key for x in out.lore])
            return found

    with structlog.testing.capture_logs() as logs:
        assert within(lambda: asyncio.run(recall_twice())) == [[], ["zz"]]
    refused = [x for x in logs if x["event"] == "lore_key_refused"]
    assert len(refused) == 1 and "(a)\\\\1(?=!)" in refused[0]["error"]


def chain(n: int, back: bool) -> LoreBook:
    """A recursive book of ``n`` entries, each text naming the next one's key (``back``: the
    last names the first's, closing a cycle through every entry)."""
    entries = [
        LoreEntry(
            name=f"e{i}",
            keys=(f"/w{i}x/" if i % 10 == 0 else f"w{i}x",),
            content=f"Entry {i} leads to w{(i + 1) % n if back else i + 1}x, and more words.",
        )
        for i in range(n)
    ]
    return LoreBook(
        name="chain", format="lorebook_v3", entries=tuple(entries), recursive_scanning=True
    )


def test_the_cycle_check_of_a_book_at_the_size_limit() -> None:
    """20,000 entries in one chain (once quadratic, and a RecursionError past 1,000): no
    cycle; closed into a ring, the cycle named from the first entry round to it again."""
    within(lambda: check_book(chain(20_000, back=False)))
    with pytest.raises(ValueError) as caught:
        within(lambda: check_book(chain(5_000, back=True)))
    message = str(caught.value)
    assert message.startswith("entries 'e0' -> 'e1' -> 'e2' -> ")
    assert "'e4999' -> 'e0' activate each other" in message


TRICKY = "aAbB -_éÉſsSKkİiıIσςΣß\n1ǅǆǄ王"


@settings(max_examples=400, deadline=None)
@given(
    key=st.text(TRICKY, min_size=1, max_size=4),
    text=st.text(TRICKY, max_size=16),
    case=st.booleans(),
    whole=st.booleans(),
)
def test_a_plain_key_is_found_where_re_finds_it_escaped(
    key: str, text: str, case: bool, whole: bool
) -> None:
    """A plain key is found by string search exactly where Python's ``re`` finds it escaped
    (case ignored as ``re.IGNORECASE`` ignores it; whole words bounded by JavaScript's ASCII
    ``\\W``, as SillyTavern's ``(?:^|\\W)`` and ``(?:$|\\W)``, world-info.js 262-263)."""
    needle = key.strip()
    if not needle:
        return
    bits = 0 if case else re.IGNORECASE
    found = key_matches(key, text, use_regex=False, case_sensitive=case, whole_words=whole)
    spans = [
        (m.start(), m.start() + len(needle))
        for m in re.finditer(f"(?={re.escape(needle)})", text, bits)
    ]
    if not (whole and not re.search(r"\s", needle)):
        assert found == bool(spans)
        return

    def word(char: str) -> bool:  # JavaScript's \w, in the lowercased text unless case counts
        return bool(char) and char.isascii() and (char.isalnum() or char == "_")

    def bound(before: str, after: str) -> bool:
        if not case:
            before, after = before.lower()[-1:], after.lower()[:1]
        return not word(before) and not word(after)

    assert found == any(bound(text[a - 1 : a], text[b : b + 1]) for a, b in spans)


@settings(max_examples=200, deadline=None)
@given(
    keys=st.lists(
        st.tuples(
            st.one_of(st.text(TRICKY, min_size=1, max_size=3), st.sampled_from(["/a+b/", "/^S/i"])),
            st.booleans(),
            st.booleans(),
        ),
        min_size=1,
        max_size=8,
    ),
    text=st.text(TRICKY, max_size=20),
)
def test_the_finder_names_every_entry_whose_key_is_in_a_text(
    keys: list[tuple[str, bool, bool]], text: str
) -> None:
    """The cycle check tests only the finder's candidates: they hold every key found."""
    finder = KeyFinder()
    for owner, (key, case, _) in enumerate(keys):
        finder.add(owner, key, use_regex=False, case_sensitive=case)
    finder.seal()
    candidates = finder.candidates(text)
    for owner, (key, case, whole) in enumerate(keys):
        if key_matches(key, text, use_regex=False, case_sensitive=case, whole_words=whole):
            assert owner in candidates
