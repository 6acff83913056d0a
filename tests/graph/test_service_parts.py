"""The service split by what it does: one name per operation, small modules, one door for
reads.

``Fabula`` was one class of 1,400 lines with several names per operation (``run_turn`` and
``run``, ``decide`` and ``decide_turn``, four ways to ask what is pending, four ways to make
a story); its reads lived both on it and on its ``Reader``.
"""

from __future__ import annotations

from pathlib import Path

from fabula.graph.service import Fabula
from fabula.graph.service.handles import StoryRef
from fabula.graph.service.reader import Reader
from fabula.memory.store import StoryStore
from fabula.settings import Settings

SERVICE = Path(__file__).resolve().parents[2] / "graph" / "service"
RETIRED = (
    "run_turn",
    "decide_turn",
    "pending_turn",
    "pending_listed",
    "new_story",
    "create_story_from_text",
    "recall",
    "chat",
    "lived",
    "summary",
)


def test_no_service_module_is_a_god_module() -> None:
    """Each module of the service does one thing, and fits in ~450 lines: the response
    models (``responses/``, by what they answer about) included."""
    modules = sorted(SERVICE.rglob("*.py"))
    assert SERVICE / "responses" / "turns.py" in modules
    long = {
        str(p.relative_to(SERVICE)): n
        for p in modules
        if (n := len(p.read_text(encoding="utf-8").splitlines())) > 500
    }
    assert long == {}


async def test_one_name_per_operation(redis_url: str, tmp_path: Path) -> None:
    """The retired names are gone; each operation is the class's own method (not bound on
    the instance), and the reads that need the minds are the reader's."""
    async with Fabula(redis_url, Settings(home=tmp_path)) as fab:
        assert [name for name in RETIRED if hasattr(fab, name)] == []
        assert fab.run.__func__ is Fabula.run and "run" not in vars(fab)
        reader = fab.read("nothing")
        assert isinstance(reader, Reader)
        assert all(callable(getattr(reader, n)) for n in ("recall", "chat", "lived", "summary"))


OPERATIONS = (
    "create_story",
    "import_story",
    "delete_story",
    "stories",
    "set_played",
    "set_world_info",
    "commit_scripted",
    "run",
    "check_steering",
    "adopt_pending",
    "decide",
    "pending_details",
    "all_pending",
    "fork",
    "rewind",
    "retcon",
    "alternatives",
    "drafts",
    "tick",
    "read",
    "summaries",
)
PLUMBING = (
    "config",
    "sweeping",
    "swept",
    "turn_lock",
    "consolidate",
    "on_commit",
    "on_critique",
    # what waits is the Reader's (fab.read(ref).pending(), .waiting_parts()), not Fabula's too
    "pending",
    "waiting_parts",
)
PARTS = {
    "_stories": "Stories",
    "_turns": "Turns",
    "_decisions": "Decisions",
    "_branches": "Branches",
    "_alternatives": "Alternatives",
    "_ticking": "Ticking",
}


async def test_the_class_shows_its_api(redis_url: str, tmp_path: Path) -> None:
    """``dir(Fabula)`` lists every operation, each a coroutine function defined on the
    class with a docstring; the core's plumbing is private, and the parts are private
    attributes named like their classes."""
    public = {n for n in dir(Fabula) if not n.startswith("_")}
    assert set(OPERATIONS) <= public
    assert all((getattr(Fabula, n).__doc__ or "").strip() for n in OPERATIONS)
    assert all(n in vars(Fabula) for n in OPERATIONS)  # defined here, not inherited or bound
    assert public.isdisjoint(PLUMBING)
    async with Fabula(redis_url, Settings(home=tmp_path)) as fab:
        assert {n: type(getattr(fab, n)).__name__ for n in PARTS} == PARTS
        assert {n for n in vars(fab) if not n.startswith("_")}.isdisjoint(PLUMBING)


async def test_making_hands_back_a_handle(redis_url: str, tmp_path: Path) -> None:
    """``create_story`` and ``fork`` hand back a :class:`StoryRef` (the ids, no connection:
    nothing to ``commit`` on), which the operations take; memory's store of it opens only
    through ``fab.store``, for the service and the tests."""
    async with Fabula(redis_url, Settings(home=tmp_path)) as fab:
        made = await fab.create_story("hollow_book", "handle")
        assert made == StoryRef("handle", "main")
        assert not hasattr(made, "commit")
        await fab.run(made, auto=True)
        child = await fab.fork(made, 1, "side")
        assert child == StoryRef("handle", "side")
        store = fab.store(child)
        assert isinstance(store, StoryStore)
        assert (store.story, store.branch) == ("handle", "side")
        assert await store.head() == 1
        assert await fab.store(made).head() == await fab.read(made).head()
