"""The roles of a run, from settings: each role offline or on its own chat model.

This is what an entry point calls once, with the settings it read::

    roles = make_roles(settings)            # offline when no model is configured
    async with Fabula(url, settings, roles=roles) as fab: ...

Each role runs with ``settings.model_for(role)``: the ``FABULA_MODEL_*`` defaults or its
own ``FABULA_MODEL_<ROLE>_*``; a role whose model is unset runs on the offline engine.
Every model role gets its own :class:`~fabula.agents.llm.ModelClient` (its own token limit,
structured-output method and usage), even when several share one server. The critic stays
symbolic in both modes. The summariser writes the hierarchy's summaries in consolidation
(offline: consolidation's extractive ones).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from fabula.agents.roles import Roles
from fabula.settings import Role, Settings

if TYPE_CHECKING:
    from fabula.agents.llm import ModelClient
    from fabula.agents.summariser.model import ModelSummariser


def offline_roles() -> Roles:
    """Every role on the deterministic offline engine (their modules loaded now: the
    memory-builder's is the whole reader, which a command that runs no role never needs)."""
    from fabula.agents.character.offline import OfflineCharacter
    from fabula.agents.critic.offline import OfflineCritic
    from fabula.agents.memory_builder.offline import OfflineMemoryBuilder
    from fabula.agents.planner.offline import OfflinePlanner
    from fabula.agents.writer.offline import OfflineWriter

    return Roles(
        planner=OfflinePlanner(),
        character=OfflineCharacter(),
        writer=OfflineWriter(),
        memory_builder=OfflineMemoryBuilder(),
        critic=OfflineCritic(),
    )


def make_summariser(settings: Settings) -> ModelSummariser | None:
    """The summariser on its model (``settings.model_for("summariser")``), or None when
    that is unset: consolidation's extractive summaries stay (an RQ worker builds only this)."""
    own = settings.model_for("summariser")
    if own.offline:
        return None
    from fabula.agents.llm import make_client  # OpenAI and LangChain: only for a model
    from fabula.agents.summariser.model import ModelSummariser

    return ModelSummariser(make_client(own, "summariser"))


def make_roles(settings: Settings) -> Roles:
    """Each role offline when its model is unset, else on a client built from its settings.

    Raises :class:`~fabula.errors.ConfigError` when a role's model settings cannot
    work (the OpenAI API without a key).
    """
    offline = offline_roles()
    if settings.offline:
        return offline
    # the model back ends import OpenAI and LangChain (seconds): only when a model is set
    from fabula.agents.character.chat import ModelChatVoice
    from fabula.agents.character.model import ModelCharacter
    from fabula.agents.llm import make_client
    from fabula.agents.memory_builder.model import ModelMemoryBuilder
    from fabula.agents.planner.model import ModelPlanner
    from fabula.agents.recall.model import ModelRecallPlanner
    from fabula.agents.writer.model import ModelWriter

    def client(role: Role) -> ModelClient | None:
        own = settings.model_for(role)
        return None if own.offline else make_client(own, role)

    planner, character, writer, memory_builder = (
        client("planner"),
        client("character"),
        client("writer"),
        client("memory_builder"),
    )
    return Roles(
        planner=ModelPlanner(planner, lore_budget=settings.lore_budget)
        if planner
        else offline.planner,
        character=ModelCharacter(character, lore_budget=settings.lore_budget)
        if character
        else offline.character,
        writer=ModelWriter(writer) if writer else offline.writer,
        memory_builder=ModelMemoryBuilder(memory_builder)
        if memory_builder
        else offline.memory_builder,
        critic=offline.critic,
        recall=ModelRecallPlanner(planner)
        if planner and settings.recall_planner == "model"
        else None,
        summariser=make_summariser(settings),
        # a chat speaks with the character role's model, on a client of its own
        voice=ModelChatVoice(make_client(settings.model_for("character"), "chat"))
        if character
        else None,
    )
