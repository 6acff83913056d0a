"""The offline memory-builder: controlled English → typed actions → access tracking → delta.

``extract`` reads a turn's text; ``OfflineMemoryBuilder`` turns it into a delta from the
store's views (committed by :mod:`fabula.graph.commit`).
"""

from fabula.agents.memory_builder.extract import (
    extract,
    parse_clause,
    parse_sentence,
    split_sentences,
)
from fabula.agents.memory_builder.offline import OfflineMemoryBuilder, Reader, read_controlled

__all__ = [
    "OfflineMemoryBuilder",
    "Reader",
    "extract",
    "parse_clause",
    "parse_sentence",
    "read_controlled",
    "split_sentences",
]
