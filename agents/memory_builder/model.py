"""The memory-builder on a chat model: free prose → typed story actions → the same tracker.

:class:`MemoryBuilderReader` first reads the text with the offline reader (:mod:`.extract`):
a sentence in controlled English whose names are all the story's own is taken from it as it
is, exactly what the rules read offline. The model is asked only for the rest (its sentences
are the ones listed to read; with none, it is not asked at all): their
:class:`~fabula.memory.actions.StoryAction` values (an :class:`.schema.ExtractedActions`),
each with the span of the sentence it comes from. A model action that touches a sentence the
offline reader read is dropped (a second reading, never a second truth); where it differs
from what the reader read there, it is a warning for the critic and the approver (a
``reading`` :class:`~fabula.agents.contracts.Finding`, collected by :func:`second_readings`
around the build). The actors and listeners of a model action are only those its sentence
names or stands for with a pronoun; an action left without one it needs is narration (a
``reading`` finding too, :func:`.grounding._grounded`). Who perceives a model's action is
who the tracker places there: a witness the reply names (``seen_by``, on a state) who is
not at the action is a ``reading`` finding, never a belief (one the story never placed is
kept where the text names them), and one who did not perceive it (``unseen_by``) is kept
where the text names them (:func:`.grounding._witnessed`). The JSON schema sent
(:func:`.schema.actions_json_schema`, unless the role's ``schemas`` setting is ``generic``)
is the turn's: an action is a union by kind, each with only its fields, its span inside the
sentences to read, its names drawn from the story's entities of the kind each field takes
(or, for a new entity, from the words of those sentences), lists and words bounded. An empty
or inverted span (end at or before start, which no grammar rules out: a small model writes
``"start": 1, "end": 0``) is read as the sentence that holds its start (the last, for one at
the text's end). A sentence without a word (``"**"``) tells nothing: it is narration, never
asked about. A reply whose spans do not lie in the text, whose actions lack a field their
kind needs, or that names an entity the story does not know (or of the wrong kind) without
bringing it in explicitly, is shown back to the model and asked for again, within
``max_attempts`` replies, after which :class:`~fabula.errors.ModelOutputError` is raised and
nothing is built. Every sentence no action covers is kept as ``narration``, as the offline
reader does.

:class:`ModelMemoryBuilder` then runs exactly what the offline builder runs — memory's build
sequence, :func:`~fabula.memory.ingest.build_turn` — so access tracking, beliefs and
validation are the same code in both modes. A text is read once: the graph keeps the delta
it gave in the checkpointed turn state and commits that on approval, from any process.

This module asks the model; what it asks lives by concern: :mod:`.request` (what is left
to the model, where the turn starts, the request's text), :mod:`.schema` (the reply's type
and its JSON schema) and :mod:`.grounding` (what is kept of the reply).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
from typing import TYPE_CHECKING

from langchain_core.messages import HumanMessage, SystemMessage

from fabula.agents.contracts import Finding
from fabula.agents.memory_builder import readings
from fabula.agents.memory_builder.grounding import kept_reading, with_narration
from fabula.agents.memory_builder.offline import Reader
from fabula.agents.memory_builder.request import Setting, read_first, render_text, setting_of
from fabula.agents.memory_builder.schema import (
    ExtractedActions,
    actions_json_schema,
    actions_schema,
)
from fabula.agents.prompts import load_prompt
from fabula.agents.reading.phases import read_story
from fabula.errors import ModelOutputError
from fabula.limits import Limits
from fabula.memory.actions import StoryAction
from fabula.memory.delta import TurnDelta
from fabula.memory.ingest import basis, build_turn
from fabula.memory.records import Entity
from fabula.memory.store.view import StoryReads
from fabula.memory.text import normalised

if TYPE_CHECKING:
    # OpenAI and LangChain (seconds to import): loaded by the factory, only for a model
    from fabula.agents.llm import ModelClient


class MemoryBuilderReader:
    """The memory-builder's model reader: reads a turn's text into story actions with a chat
    model, asked only about the sentences the rules cannot read (see the module docstring)."""

    def __init__(
        self,
        client: ModelClient,
        *,
        reader: Reader | None = None,
        prompt_version: int | None = None,
    ) -> None:
        self.client = client
        # reads first (the phased reader within the store's limits, unless told); the
        # model is asked only about what it left
        self.reader = reader
        self.prompt = load_prompt("memory_builder", "extract", prompt_version)

    async def read(
        self,
        text: str,
        entities: dict[str, Entity],
        setting: Setting | None = None,
        limits: Limits | None = None,
    ) -> list[StoryAction]:
        """Every action ``text`` tells, unread sentences as narration, in story order.

        ``entities`` are the story's (their names are shown, so the model reuses them);
        ``setting`` is where the turn starts (v2 prompts show it, for pronouns).
        Raises ModelOutputError when no valid reply comes within ``max_attempts``.
        """
        reader = self.reader or functools.partial(read_story, limits=limits)
        # in a worker thread: reading is all computation (see OfflineMemoryBuilder.build)
        read, unread = await asyncio.to_thread(read_first, text, entities, reader)
        readings.report_unsure(text, read)
        if not unread:
            return with_narration(text, read)
        request = render_text(
            text, entities, setting if self.prompt.version >= 2 else None, unread=unread
        )
        messages = [SystemMessage(content=self.prompt.render()), HumanMessage(content=request)]
        wire = None
        if self.client.schemas == "story":
            wire = actions_json_schema(text, entities, unread, self.client.max_tokens)
        reply = await self.client.structured(
            actions_schema(text, entities), messages, shape=ExtractedActions, json_schema=wire
        )
        return kept_reading(text, reply, entities, setting, read=read, unread=unread)


def second_readings() -> contextlib.AbstractContextManager[list[Finding]]:
    """Collect the reading findings of a block (see :mod:`.readings`): a sentence the
    offline reader read that the model, asked about the rest, read otherwise (the reader's
    reading is the one kept), and what the reader was unsure of."""
    return readings.collect()


class ModelMemoryBuilder:
    """Builds the deltas of turns of free prose: the model extracts, the tracker tracks."""

    def __init__(self, client: ModelClient, *, reader: Reader | None = None) -> None:
        self.model_reader = MemoryBuilderReader(client, reader=reader)

    async def build(self, store: StoryReads, turn: int, text: str) -> TurnDelta:
        """The delta of ``turn`` with ``text``, derived from the store's views before it.

        Raises :class:`~fabula.errors.NotFound` when the story does not exist, and
        :class:`ModelOutputError` (with story, branch and turn) when the text cannot be read.
        """
        text = normalised(text)  # what is read is what is stored: see normalised
        as_of = await basis(store, turn)
        actions = await self._actions(store, turn, text, as_of)
        return await build_turn(store, turn, text, actions, as_of=as_of)

    async def _actions(
        self, store: StoryReads, turn: int, text: str, as_of: int | None
    ) -> list[StoryAction]:
        try:
            entities = await store.entities(as_of)
            setting = await setting_of(store, as_of, entities)
            return await self.model_reader.read(text, entities, setting, store.limits)
        except ModelOutputError as error:
            error.context.update(story=store.story, branch=store.branch, turn=turn)
            raise
