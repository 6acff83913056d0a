"""The application service and its read side: what every interface (the command line, the
studio, the Agent Server) calls, over the turn graph (:mod:`fabula.graph.build`).

- :mod:`~fabula.graph.service.application` — :class:`Fabula`, the one object an interface
  holds: the :mod:`~fabula.graph.service.core` (Redis, checkpointer, roles) with its parts,
  :mod:`~fabula.graph.service.stories` (make, import, delete),
  :mod:`~fabula.graph.service.turns` (write turns), :mod:`~fabula.graph.service.decisions`
  (what awaits a decision; approve, edit, reject), :mod:`~fabula.graph.service.branches`
  (fork, rewind, retcon) and :mod:`~fabula.graph.service.alternatives` (drafts side by side);
- :mod:`~fabula.graph.service.reader` — :class:`Reader`, the one door for reads
  (``fab.read(story, branch)``: recall, chat and the lived story too) over
  :mod:`~fabula.graph.service.reading`,
  :mod:`~fabula.graph.service.cards` (cards, CHARX, lorebooks) and
  :mod:`~fabula.graph.service.epub`; :mod:`~fabula.graph.service.light`, the same reads on
  the light way in (``fabula show``: no roles or graph);
  :mod:`~fabula.graph.service.responses`, the response models every interface answers with;
- :mod:`~fabula.graph.service.server` — the Redis server as the interfaces manage it, and
  :mod:`~fabula.graph.service.handles` — a story's handle, named for them: the interfaces
  import nothing of :mod:`fabula.memory`;
- :mod:`~fabula.graph.service.pending` — a turn awaiting a decision, what a listener hears;
- :mod:`~fabula.graph.service.changes` — what a turn changed;
- :mod:`~fabula.graph.service.chat` — talking with a character, inside its own mind;
- :mod:`~fabula.graph.service.consolidation` — after each commit: inline, on RQ, or off.

The application's names are imported on first use, so an interface that only reads (``fabula
show``) loads neither the application nor LangGraph.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from fabula.lazy import exports as _exports

if TYPE_CHECKING:
    from fabula.graph.service.application import Fabula as Fabula
    from fabula.graph.service.consolidation import consolidator as consolidator
    from fabula.graph.service.core import TurnOutcome as TurnOutcome
    from fabula.graph.service.decisions import Deciding as Deciding
    from fabula.graph.service.handles import StoryRef as StoryRef
    from fabula.graph.service.pending import Listener as Listener
    from fabula.graph.service.pending import Pending as Pending
    from fabula.graph.service.pending import TurnEvent as TurnEvent
    from fabula.graph.service.stories import Making as Making
    from fabula.graph.service.stories import world_infos as world_infos

# where each name is defined: the module imported when the name is first asked for
_HOMES = {
    "Deciding": "fabula.graph.service.decisions",
    "Fabula": "fabula.graph.service.application",
    "Listener": "fabula.graph.service.pending",
    "Making": "fabula.graph.service.stories",
    "Pending": "fabula.graph.service.pending",
    "StoryRef": "fabula.graph.service.handles",
    "TurnEvent": "fabula.graph.service.pending",
    "TurnOutcome": "fabula.graph.service.core",
    "consolidator": "fabula.graph.service.consolidation",
    "world_infos": "fabula.graph.service.stories",
}
__all__ = sorted(_HOMES)
__getattr__, __dir__ = _exports(__name__, _HOMES)
