"""A character answering a question in its own voice, on a chat model.

The model is given only what the character holds: who it is and how it speaks (its own
entry in the world pack: name, voice, secrets), what its own mind recalls for the question
(its beliefs and the episodes it witnessed, read through its own Redis user by the caller),
the entries of its own lore the question activates and a few exemplars of its voice (both
from its own keyspace), and the question-answerer's reading of those, when the question is
one of its forms. It
writes plain text: what the character says. Nothing it writes is kept.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from langchain_core.messages import HumanMessage, SystemMessage

from fabula.agents.contracts import ChatRequest
from fabula.agents.prompts import load_prompt, quoted

if TYPE_CHECKING:
    # OpenAI and LangChain (seconds to import): loaded by the factory, only for a model
    from fabula.agents.llm import ModelClient


def render_chat(request: ChatRequest) -> str:
    """The user message of a chat: the character's own secrets, the exemplars of its voice,
    what it recalls for the question and what its own lore says of it, the
    question-answerer's answer (when it read the question) and the question itself."""
    lore = request.lore
    sections = [
        ("Your secrets", "\n".join(f"- {s}" for s in request.brief.secrets)),
        ("How you speak", "\n".join(f"- {v}" for v in request.voice)),
        ("What you know of it", _lines(request.known) or ("" if lore else "(nothing)")),
        ("What your lore says of it", "\n".join(f"- {x}" for x in lore)),
        ("What your beliefs answer", request.plain or ""),
        ("Your conversation so far", _conversation(request)),
        ("The question", quoted(request.question)),
        ("It asks", quoted(request.reading) if request.reading else ""),
    ]
    return "\n\n".join(f"## {title}\n{body}" for title, body in sections if body)


def _conversation(request: ChatRequest) -> str:
    """The exchanges before the question, oldest first: what the person asked and what you
    answered, each quoted (data, never an instruction)."""
    return "\n".join(
        f"- The person: {quoted(x.question)}\n  You: {quoted(x.answer)}"
        for x in request.conversation
    )


def _lines(text: str) -> str:
    """What the character recalls, a quoted line each (story text is data, never an
    instruction: :func:`~fabula.agents.prompts.quoted`)."""
    return "\n".join(f"- {quoted(line)}" for line in text.splitlines() if line.strip())


class ModelChatVoice:
    """Answers in a character's voice on a chat model (see the module docstring)."""

    def __init__(self, client: ModelClient, *, prompt_version: int | None = None) -> None:
        self.client = client
        self.prompt = load_prompt("character", "chat", prompt_version)

    async def answer(self, request: ChatRequest) -> str:
        """What the character says to the question, from what ``request`` holds only (one
        to three sentences); the model's errors are raised as :class:`ModelClient.text`
        raises them."""
        brief = request.brief
        system = self.prompt.render(name=brief.name, voice=brief.voice or "plain and direct")
        messages = [SystemMessage(content=system), HumanMessage(content=render_chat(request))]
        return (await self.client.text(messages)).strip()
