"""Lore reaches a character only through its own keyspace and Redis user.

A card's own ``character_book`` is what that character knows; a world book is the author's;
``extensions["fabula/visibility"]`` makes an entry common knowledge, the author's only, or
known to named characters. The story copies into each character's keyspace what it may
know (nothing else of the lore is readable by it), and its prompt, its schema and its
recall (``fabula recall --as C``) are built from that copy. The property test generates
lorebooks of private and common entries and checks that no character's prompt, schema,
keyspace copy or recall ever holds an entry it may not know — and that the entries it may
know do reach it (a constant one is always shown).
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from fabula.agents.character.model import (
    MEMORIES,
    known_attributes,
    lore_lines,
    proposal_json_schema,
    render_mind,
)
from fabula.agents.contracts import TurnPlan
from fabula.agents.shared.brief import brief_for
from fabula.agents.views import author_view
from fabula.agents.writer.context import writer_context
from fabula.errors import AccessDenied
from fabula.graph.service import Fabula
from fabula.memory.tokens import default_counter
from fabula.settings import Settings
from fabula.worlds.loader import load_world
from fabula.worlds.lore import Lore, LoreBook, LoreEntry
from fabula.worlds.pack import WorldPack

CAST = ("Ada", "Ben", "Cora", "Dev")
_stories = itertools.count()


def with_lore(books: list[LoreBook]) -> WorldPack:
    pack = load_world("lighthouse")
    return WorldPack.model_validate(
        {**pack.model_dump(), "lore": Lore(books=tuple(books)).model_dump()}
    )


def entry(token: str, seen: Any = None, *, keys: tuple[str, ...] = (), **kw: Any) -> LoreEntry:
    kept = {} if seen is None else {"extensions": {"fabula/visibility": seen}}
    return LoreEntry(keys=keys, content=f"{token} is so.", constant=not keys, kept=kept, **kw)


def knows(owner: str | None, seen: Any, character: str) -> bool:
    """The oracle: who knows an entry, written from the rules (not from the code)."""
    if seen == "common":
        return True
    if seen == "author":
        return False
    if isinstance(seen, list):
        return character == owner or character in seen
    return character == owner  # absent or "owner": the book's owner; a world book: nobody


@pytest.fixture()
async def app(redis_url: str, tmp_path: Path) -> Any:
    async with Fabula(redis_url, Settings(home=tmp_path)) as fab:
        yield fab


BOOKS = [
    LoreBook(
        name="world",
        format="lorebook_v3",
        entries=(
            entry("AUTHOR-ONLY"),
            entry("EVERYONE-KNOWS", "common"),
            entry("BEN-AND-DEV", ["Ben", "Dev"]),
            entry("NO-ONE", "author"),
        ),
    ),
    LoreBook(
        name="Ada's book",
        format="character_book",
        owner="Ada",
        entries=(
            entry("ADA-PRIVATE"),
            entry("ADA-AND-CORA", ["Cora"]),
        ),
    ),
]
TOKENS = {
    "AUTHOR-ONLY": (None, None),
    "EVERYONE-KNOWS": (None, "common"),
    "BEN-AND-DEV": (None, ["Ben", "Dev"]),
    "NO-ONE": (None, "author"),
    "ADA-PRIVATE": ("Ada", None),
    "ADA-AND-CORA": ("Ada", ["Cora"]),
}


async def test_each_character_holds_what_it_may_know_and_recalls_it(app: Fabula) -> None:
    store = await app.create_story(with_lore(BOOKS), "lore-minds", opening=False)
    for name in CAST:
        mind = await app.minds.mind(store.story, name.lower())
        held = await mind.lore() or ""
        found = await app.read(store).recall("what is so", budget=500, character=name)
        shown = " ".join(x.text for x in found.lore)
        for token, (owner, seen) in TOKENS.items():
            assert (token in held) == knows(owner, seen, name), (name, token, held)
            assert (token in shown) == knows(owner, seen, name), (name, token, shown)
        assert "fabula/visibility" not in held  # who else knows it is no lore of its own
    author = await app.read(store).recall("what is so", budget=500)
    assert {x.text.split()[0] for x in author.lore} == {
        "AUTHOR-ONLY",
        "EVERYONE-KNOWS",
        "BEN-AND-DEV",
        "NO-ONE",
    }


async def test_a_character_cannot_read_anothers_lore(app: Fabula) -> None:
    store = await app.create_story(with_lore(BOOKS), "lore-acl", opening=False)
    cora = await app.minds.mind(store.story, "cora")
    spy = type(cora)(cora.client, store.story, "ada")  # Cora's connection, Ada's key
    with pytest.raises(AccessDenied):
        await spy.lore()


async def test_the_writer_sees_the_world_books_and_no_characters_own(app: Fabula) -> None:
    store = app.store(await app.create_story(with_lore(BOOKS), "lore-writer", opening=False))
    view = await author_view(store)
    plan = TurnPlan(scene_goal="what is so", focal=("ada",), beats=("Ada speaks",))
    found = await writer_context(store, view, plan, 800, default_counter())
    assert "EVERYONE-KNOWS" in found.text and "AUTHOR-ONLY" in found.text
    assert "ADA-PRIVATE" not in found.text and "ADA-AND-CORA" not in found.text


def test_a_visibility_naming_no_character_is_refused_in_one_line() -> None:
    book = LoreBook(name="w", format="lorebook_v3", entries=(entry("X", ["Zed"]),))
    with pytest.raises(ValidationError, match=r"lore\.books\[0\]\.entries\[0\]: .*'Zed'"):
        with_lore([book])
    odd = LoreBook(name="w", format="lorebook_v3", entries=(entry("X", "everyone"),))
    with pytest.raises(ValidationError, match="none of 'common'"):
        with_lore([odd])


# -- the property ---------------------------------------------------------------------------
SEEN = st.one_of(
    st.none(),
    st.sampled_from(["common", "author", "owner"]),
    st.lists(st.sampled_from(CAST), max_size=2, unique=True),
)


@st.composite
def lorebooks(draw: st.DrawFn) -> tuple[list[LoreBook], dict[str, tuple[str | None, Any]]]:
    books: list[LoreBook] = []
    tokens: dict[str, tuple[str | None, Any]] = {}
    n = itertools.count()
    for owner in draw(st.lists(st.sampled_from([None, *CAST]), min_size=1, max_size=4)):
        entries = []
        for _ in range(draw(st.integers(1, 4))):
            token = f"LORE{next(n)}X"
            seen = draw(SEEN)
            # keyed by a name every situation holds (the character's own), or constant
            keys = draw(st.sampled_from([(), (), ("Ada", "Ben", "Cora", "Dev"), ("cottage",)]))
            entries.append(entry(token, seen, keys=keys))
            tokens[token] = (owner, seen)
        books.append(
            LoreBook(
                name=f"book{len(books)}", format="lorebook_v3", owner=owner, entries=tuple(entries)
            )
        )
    return books, tokens


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(drawn=lorebooks())
async def test_no_lore_reaches_a_character_that_may_not_know_it(
    app: Fabula, drawn: tuple[list[LoreBook], dict[str, tuple[str | None, Any]]]
) -> None:
    books, tokens = drawn
    store = app.store(
        await app.create_story(with_lore(books), f"lore-leak{next(_stories)}", opening=False)
    )
    view = await author_view(store)
    plan = TurnPlan(scene_goal="SECRET-PLAN", focal=("ada",), beats=())
    for character in view.characters():
        name = view.name(character)
        mind = await app.minds.mind(store.story, character)
        brief = brief_for(view, character, plan)
        beliefs, entities = await mind.beliefs(), await mind.entities()
        memories = await mind.memories(last=MEMORIES)
        lore = await lore_lines(mind, brief, beliefs, entities, memories)
        prompt = render_mind(brief, beliefs, memories, entities, lore=lore)
        schema = json.dumps(proposal_json_schema(character, entities, known_attributes(beliefs)))
        held = await mind.lore() or ""
        recalled = await app.read(store).recall(
            "Ada Ben Cora Dev cottage", budget=800, character=character
        )
        shown = " ".join(x.text for x in recalled.lore)
        for token, (owner, seen) in tokens.items():
            if not knows(owner, seen, name):
                for where, text in (
                    ("prompt", prompt),
                    ("schema", schema),
                    ("keyspace", held),
                    ("recall", shown),
                ):
                    assert token not in text, (name, token, where)
            elif not books_key(books, token):  # constant and known: always shown
                assert token in prompt and token in shown, (name, token, prompt)
    await app.delete_story(store.story)


def books_key(books: list[LoreBook], token: str) -> tuple[str, ...]:
    return next(e.keys for b in books for e in b.entries if e.content.startswith(token))
