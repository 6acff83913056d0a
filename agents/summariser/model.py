"""The summariser on a chat model: a hierarchy node's text in, a validated summary out.

The consolidation step (:func:`fabula.memory.summarise.summarise_closed`) gives it one
closed scene (the author's text of its turns), one plotline (its scenes' summaries) or the
plot (its plotlines' summaries) as a
:class:`~fabula.memory.summarise.SummaryRequest`, and writes the
:class:`~fabula.memory.summarise.NodeSummary` it returns over the node's extractive one. The
reply is asked for with structured output: blank or overlong text is shown back to the
model and asked for again, within the client's attempts; then
:class:`~fabula.errors.ModelOutputError` is raised and the node keeps its extractive
summary. The offline summariser is consolidation's extractive summary itself (nothing to ask).
The JSON schema sent (:func:`summary_json_schema`, unless the role's ``schemas`` setting is
``generic``) bounds the title and the summary to one line of their lengths.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from langchain_core.messages import HumanMessage, SystemMessage

from fabula.agents.prompts import load_prompt
from fabula.agents.schemas import cached, closed, line
from fabula.memory.summarise import SUMMARY_CHARS, TITLE_CHARS, NodeSummary, SummaryRequest

if TYPE_CHECKING:
    # OpenAI and LangChain (seconds to import): loaded by the factory, only for a model
    from fabula.agents.llm import ModelClient


class ModelSummariser:
    """Writes node summaries with a chat model (see the module docstring)."""

    def __init__(self, client: ModelClient) -> None:
        self.client = client
        self.prompt = load_prompt("summariser", "summarise")

    async def summarise(self, request: SummaryRequest) -> NodeSummary:
        """The node's summary and title.

        Raises :class:`~fabula.errors.ModelOutputError` when no valid one comes
        back within the client's attempts, and the client's transport errors
        (:class:`~fabula.errors.ModelUnavailable`).
        """
        messages = [
            SystemMessage(content=self.prompt.render()),
            HumanMessage(content=render_request(request)),
        ]
        wire = summary_json_schema() if self.client.schemas == "story" else None
        return await self.client.structured(NodeSummary, messages, json_schema=wire)


def summary_json_schema() -> dict[str, Any]:
    """The strict JSON schema of a summary: a title of at most
    :data:`~fabula.memory.summarise.TITLE_CHARS` characters and a summary of at most
    :data:`~fabula.memory.summarise.SUMMARY_CHARS`, each on one line."""
    bounds = {"title": TITLE_CHARS, "summary": SUMMARY_CHARS}
    return cached(
        "summariser",
        bounds,
        lambda: closed({k: line(n, min_chars=1) for k, n in bounds.items()}),
    )


def render_request(request: SummaryRequest) -> str:
    """The user message for ``request``: what the node is, then its lines."""
    if request.level == "scene":
        head = f"A scene of the story, turns {request.first_turn}-{request.last_turn}."
        body = "## The text of its turns\n" + "\n\n".join(request.lines)
    elif request.level == "plot":
        head = f"The plot of the story so far, turns {request.first_turn}-{request.last_turn}."
        body = "## Its plotlines\n" + "\n".join(f"- {line}" for line in request.lines)
    else:
        head = (
            f"A plotline of the story, turns {request.first_turn}-{request.last_turn}, "
            f"joined by {request.joins or request.title}."
        )
        body = "## Its scenes\n" + "\n".join(f"- {line}" for line in request.lines)
    return f"{head}\n\n{body}"
