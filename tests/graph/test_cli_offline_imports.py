"""What the offline story commands import (issue 44: each within a second, nothing of
OpenAI or LangChain until a model is used), each run as a user runs it, in a process of
its own with no model configured."""

from __future__ import annotations

from fabula.testing.cli import fabula, modules_after

MODEL = ("openai", "langchain", "langchain_openai", "langchain_community")
"""A model client and LangChain itself: no offline command imports them."""

LANGCHAIN = (*MODEL, "langchain_core", "langsmith", "langgraph")
"""All of LangChain and LangGraph (langgraph-checkpoint loads langchain-core)."""


def _of(modules: set[str], packages: tuple[str, ...]) -> list[str]:
    return sorted(m for m in modules if m.split(".")[0] in packages)


def test_pending_show_and_stories_import_no_model_client_or_langchain(redis_url: str) -> None:
    """`show` and `stories` import nothing of LangChain or LangGraph; `pending`, which reads
    a waiting turn from its LangGraph checkpoint, reads it without LangGraph's saver or its
    ``Interrupt`` (which load langchain-core and LangSmith, most of its start)."""
    fabula(redis_url, "new", "--world", "hollow_book", "--id", "tale")
    fabula(redis_url, "run", "tale", "--turns", "1")  # a turn waits: pending lists it
    shown = modules_after(redis_url, "show", "tale", "world")
    assert "fabula.graph.cli.show" in shown  # it ran
    assert _of(shown, LANGCHAIN) == []
    listed = modules_after(redis_url, "stories")
    assert "fabula.graph.service.listing" in listed  # it ran
    assert _of(listed, LANGCHAIN) == []
    assert "fabula.graph.service.reading" not in listed  # no read it does not make
    waiting = modules_after(redis_url, "pending")
    assert "fabula.graph.checkpoint.waiting" in waiting  # it ran and read the checkpoint
    assert _of(waiting, ("langchain_core", "langsmith", *MODEL)) == []
    assert "langgraph.types" not in waiting


def test_commands_that_read_no_turn_thread_load_no_checkpointer(redis_url: str) -> None:
    """The checkpointer is made when a turn's thread is first read (``Core.saver``):
    `new`, `recall` and `chat` read none, and LangGraph's checkpoint base loads
    langchain-core (callbacks, messages, requests), a fifth of their start."""
    fabula(redis_url, "new", "--world", "hollow_book", "--id", "tale")
    for args in (
        ("new", "--world", "hollow_book", "--id", "other"),
        ("recall", "tale", "Where is the brass key?"),
        ("recall", "tale", "Where is the brass key?", "--as", "leo"),
        ("chat", "tale", "leo", "--ask", "Where is the brass key?"),
    ):
        modules = modules_after(redis_url, *args)
        assert "fabula.graph.service.application" in modules, args  # it opened the service
        assert _of(modules, ("langchain_core", "langsmith", *MODEL)) == [], args
        assert "langgraph.checkpoint.base" not in modules, args
        assert "fabula.graph.checkpoint.saver" not in modules, args
    # a recall runs no role: the offline roles (the memory-builder's reader) are not loaded
    recalled = modules_after(redis_url, "recall", "tale", "Where is the brass key?")
    assert "fabula.agents.factory" in recalled  # the application was opened
    assert "fabula.agents.memory_builder.offline" not in recalled
    assert "fabula.agents.reading.extract" not in recalled
