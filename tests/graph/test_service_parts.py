"""The service split by what it does: one name per operation, small modules, one door for
reads.

``Fabula`` was one class of 1,400 lines with several names per operation (``run_turn`` and
``run``, ``decide`` and ``decide_turn``, four ways to ask what is pending, four ways to make
a story); its reads lived both on it and on its ``Reader``.
"""

from __future__ import annotations

from pathlib import Path

from fabula.graph.service import Fabula
from fabula.graph.service.reader import Reader
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
LONGER = {"responses.py": 720}  # the response models, one per answer: not split here


def test_no_service_module_is_a_god_module() -> None:
    """Each module of the service does one thing, and fits in ~450 lines."""
    long = {
        p.name: n
        for p in SERVICE.glob("*.py")
        if (n := len(p.read_text(encoding="utf-8").splitlines())) > LONGER.get(p.name, 500)
    }
    assert long == {}


async def test_one_name_per_operation(redis_url: str, tmp_path: Path) -> None:
    """The retired names are gone; each operation is bound to the part that does it, and
    the reads that need the minds are the reader's."""
    async with Fabula(redis_url, Settings(home=tmp_path)) as fab:
        assert [name for name in RETIRED if hasattr(fab, name)] == []
        assert fab.run.__self__ is fab.turns and fab.decide.__self__ is fab.decisions
        reader = fab.read("nothing")
        assert isinstance(reader, Reader)
        assert all(callable(getattr(reader, n)) for n in ("recall", "chat", "lived", "summary"))
