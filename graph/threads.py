"""The turn graph's checkpoint threads, named without loading LangGraph: one thread per
turn of a branch (:func:`thread_id`), under its story's prefix (:func:`story_threads`).
:mod:`fabula.graph.build` uses them; a command that never runs the graph (``recall``,
``chat``, ``new``) names a thread through here alone."""

from __future__ import annotations


def thread_id(story: str, branch: str, turn: int) -> str:
    """The checkpoint thread of one turn of one branch."""
    return f"{story}/{branch}/{turn}"


def story_threads(story: str) -> str:
    """The prefix of every checkpoint thread of ``story`` (:func:`thread_id`)."""
    return f"{story}/"
