"""The handles an interface holds, named by the service: :class:`StoryStore`, one branch
of one story as :meth:`~fabula.graph.service.core.Core.store` gives it (an interface passes
it back to the service's operations and reads it through
:meth:`~fabula.graph.service.application.Fabula.read`, never itself), and
:class:`TurnText`, a committed turn as :meth:`~fabula.graph.service.reader.Reader.turns`
gives it. The interfaces import them from here, not from :mod:`fabula.memory` (an import
contract in ``pyproject.toml`` holds them to it).
"""

from __future__ import annotations

from fabula.memory.store import StoryStore as StoryStore
from fabula.memory.store import TurnText as TurnText
