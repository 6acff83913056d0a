"""The recall's bounds, named once for the service and the interfaces' parameters.

A module of constants only, so that an interface can declare its parameters (``fabula
recall --budget``, the API's query bounds) without loading the recall itself.
"""

from __future__ import annotations

RECALL_BUDGET = 1000
"""Tokens, when a recall names no budget."""

MAX_RECALL_BUDGET = 100_000
"""Tokens: more than any model's context a recall is meant for."""

MAX_REQUEST_CHARS = 4_000
"""The longest request (a question, or what a turn is about) a recall or a chat takes."""
