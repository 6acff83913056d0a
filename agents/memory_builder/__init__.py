"""The offline memory-builder: controlled English → typed actions → access tracking → delta.

``extract`` reads a turn's text; ``OfflineMemoryBuilder`` turns it into a delta from the
store's views (committed by :mod:`fabula.graph.commit`).
"""

from fabula.agents.memory_builder.offline import OfflineMemoryBuilder as OfflineMemoryBuilder
from fabula.agents.memory_builder.offline import Reader as Reader
from fabula.agents.memory_builder.offline import read_controlled as read_controlled
from fabula.agents.reading.extract import extract as extract
from fabula.agents.reading.extract import parse_clause as parse_clause
from fabula.agents.reading.extract import parse_sentence as parse_sentence
