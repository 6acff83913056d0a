"""The offline memory-builder: controlled English → typed actions → access tracking → delta.

``extract`` reads a turn's text; ``OfflineMemoryBuilder`` turns it into a delta from the
store's views (committed by :mod:`fabula.graph.commit`). Each name loads its module when
first asked for (:mod:`fabula.lazy`): what needs only the builder's small modules (the
narrative's :func:`~fabula.agents.memory_builder.narrative.enrich`) loads none of the reader.
"""

from typing import TYPE_CHECKING

from fabula.lazy import exports as _exports

if TYPE_CHECKING:
    from fabula.agents.memory_builder.offline import OfflineMemoryBuilder as OfflineMemoryBuilder
    from fabula.agents.memory_builder.offline import Reader as Reader
    from fabula.agents.memory_builder.offline import read_controlled as read_controlled
    from fabula.agents.reading.extract import extract as extract
    from fabula.agents.reading.extract import parse_clause as parse_clause
    from fabula.agents.reading.extract import parse_sentence as parse_sentence

_HOMES = {
    "OfflineMemoryBuilder": "fabula.agents.memory_builder.offline",
    "Reader": "fabula.agents.memory_builder.offline",
    "read_controlled": "fabula.agents.memory_builder.offline",
    "extract": "fabula.agents.reading.extract",
    "parse_clause": "fabula.agents.reading.extract",
    "parse_sentence": "fabula.agents.reading.extract",
}
__getattr__, __dir__ = _exports(__name__, _HOMES)
