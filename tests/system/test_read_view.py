"""The story store split into the views it serves (issue 46, item 7): :class:`StoryReads`
holds every read and no write, :class:`StoryStore` is it with the writes, and the read side
holds the read view (mypy then refuses it a ``commit``; this test keeps the read side from
taking the whole store back by name)."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

from fabula.memory.store import StoryReads, StoryStore

ROOT = Path(__file__).resolve().parents[2]

WRITES = {
    "commit",
    "prepare_commit",
    "make_durable",
    "translate_refusal",
    "decision_lock",
    "create",
    "finish",
    "delete",
    "watch_alive",
    "set_played",
    "replace_pack",
    "add_background_usage",
}
"""Every method of the store that writes, or holds a lock to write."""

READ_SIDE = (
    "graph/service/reader.py",
    "graph/service/reading.py",
    "graph/service/light.py",
    "graph/service/cards.py",
    "graph/service/pictures.py",
    "graph/service/chat.py",
    "graph/service/epub.py",
    "graph/service/lived.py",
    "graph/service/spread.py",
    "graph/service/changes.py",
    "graph/service/pending.py",
    "memory/projections.py",
    "memory/answer.py",
    "memory/snapshot.py",
    "memory/spread.py",
    "memory/acl.py",
    "agents/views.py",
    "agents/roles.py",
    "agents/writer/context.py",
    "agents/memory_builder/request.py",
    "agents/memory_builder/offline.py",
)
"""Modules that only read a story: the service's read door and the reads behind it, the
projections, a character's own mind, the roles' views and the memory-builder's reading."""


def _public(cls: type) -> set[str]:
    return {name for name, _ in inspect.getmembers(cls) if not name.startswith("_")}


def test_the_read_view_has_every_read_and_no_write() -> None:
    """The store is exactly the read view plus the writes."""
    reads, store = _public(StoryReads), _public(StoryStore)
    assert not reads & WRITES, sorted(reads & WRITES)
    assert store - reads == WRITES
    assert issubclass(StoryStore, StoryReads)  # a store may be passed where a view is asked


def test_a_view_on_another_branch_is_still_a_view() -> None:
    """``on_branch`` and ``for_scene`` keep the view's class: a read view does not become a
    store by moving."""
    import redis.asyncio as aredis

    client = aredis.Redis()  # never connected: nothing here is sent
    view = StoryReads(client, "s")
    assert type(view.on_branch("b")) is StoryReads
    assert type(view.for_scene(["leo"])) is StoryReads
    assert type(StoryStore(client, "s").on_branch("b")) is StoryStore


def test_the_read_side_never_names_the_store() -> None:
    """No module of :data:`READ_SIDE` imports :class:`StoryStore`: each holds the read view,
    so a write there is a type error."""
    offenders = []
    for relative in READ_SIDE:
        tree = ast.parse((ROOT / relative).read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and any(a.name == "StoryStore" for a in node.names):
                offenders.append(f"{relative}:{node.lineno}")
    assert offenders == []


def test_each_module_of_the_store_is_small_and_says_what_it_is() -> None:
    """Every module of ``memory/store/`` is under 500 lines and opens with a docstring."""
    for path in sorted((ROOT / "memory" / "store").glob("*.py")):
        text = path.read_text(encoding="utf-8")
        assert len(text.splitlines()) < 500, path.name
        assert ast.get_docstring(ast.parse(text)), path.name
