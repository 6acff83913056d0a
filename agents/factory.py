"""The roles of a run, from settings: the offline engine, or every role on one chat model.

This is what an entry point calls once, with the settings it read::

    roles = make_roles(settings)            # offline when no model is configured
    async with Fabula(url, settings, roles=roles) as fab: ...

In model mode the planner, the character agents, the writer and the memory-builder share
one :class:`~langchain_openai.ChatOpenAI`; the critic stays symbolic in both modes. A
structured reply is asked for at most ``settings.model.max_retries + 1`` times.
"""

from __future__ import annotations

from langchain_core.language_models import BaseChatModel

from fabula.agents.character.model import ModelCharacter
from fabula.agents.llm import make_chat_model
from fabula.agents.memory_builder.model import ModelMemoryBuilder
from fabula.agents.planner.model import ModelPlanner
from fabula.agents.roles import Roles, offline_roles
from fabula.agents.writer.model import ModelWriter
from fabula.memory.settings import Settings

__all__ = ["make_roles", "model_roles"]


def make_roles(settings: Settings) -> Roles:
    """Offline roles when ``settings.model`` names no model, else :func:`model_roles` on a
    chat model built from it.

    Raises :class:`~fabula.memory.errors.ConfigError` when the model settings cannot work (the
    OpenAI API without a key).
    """
    if settings.model.offline:
        return offline_roles()
    model = make_chat_model(settings.model)
    return model_roles(model, max_attempts=max(1, settings.model.max_retries + 1))


def model_roles(model: BaseChatModel, *, max_attempts: int = 3) -> Roles:
    """Every role but the critic on ``model``; ``max_attempts`` replies per structured call."""
    return Roles(
        planner=ModelPlanner(model, max_attempts=max_attempts),
        character=ModelCharacter(model, max_attempts=max_attempts),
        writer=ModelWriter(model),
        builder=ModelMemoryBuilder(model, max_attempts=max_attempts),
    )
