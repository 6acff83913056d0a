"""The offline memory-builder: controlled English → typed actions → access tracking → delta.

``extract`` reads a turn's text; ``OfflineMemoryBuilder`` turns it into a delta from the
store's views and commits it.
"""

from fabula.agents.memory_builder.builder import OfflineMemoryBuilder, Reader, read_controlled
from fabula.agents.memory_builder.extract import (
    extract,
    parse_clause,
    parse_sentence,
    split_sentences,
)

__all__ = [
    "OfflineMemoryBuilder",
    "Reader",
    "extract",
    "parse_clause",
    "parse_sentence",
    "read_controlled",
    "split_sentences",
]
