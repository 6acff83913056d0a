"""The handles an interface holds, named by the service: :class:`StoryRef`, one branch of
one story by its ids (an interface passes it to :class:`~fabula.graph.service.application.Fabula`'s
operations and reads it through :meth:`~fabula.graph.service.application.Fabula.read`; it
holds no connection and can do nothing by itself), and :class:`TurnText`, a committed turn
as :meth:`~fabula.graph.service.reader.Reader.turns` gives it. Memory's store stays behind
the service: the interfaces import nothing of :mod:`fabula.memory` and never call
``Fabula.store`` (an import contract in ``pyproject.toml`` and ``tests/system`` hold them
to it), as LangGraph hands its callers a config of ids and keeps the saver behind the graph.
"""

from __future__ import annotations

from dataclasses import dataclass

from fabula.memory.store import TurnText as TurnText


@dataclass(frozen=True)
class StoryRef:
    """One branch of one story, by its ids: what an interface holds and passes back to the
    service (``fab.run(StoryRef(story, branch), ...)``, ``fab.read(ref)``), and what the
    operations that make a branch hand back (``create_story``, ``import_story``, ``fork``).
    The service, the tests and the benchmarks open memory's store of it with
    ``fab.store(ref)``."""

    story: str
    branch: str = "main"
