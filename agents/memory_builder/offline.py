"""The offline memory-builder: a turn's accepted text → a validated delta (committed by the
one commit path, :mod:`fabula.graph.commit`).

A *reader* turns the text into story actions, given the entities the story already knows
(:data:`Reader`); the rest is memory's one build sequence (:mod:`fabula.memory.ingest`),
which the model-based builder runs too. The default reader is the controlled-English
rules (:func:`read_controlled`). A turn that is already committed is rebuilt from the
views as of the turn before it, so sending the same turn again yields the same delta and its
commit reports ``duplicate``.
"""

from __future__ import annotations

import asyncio
import functools
import re
from collections.abc import Callable, Collection, Mapping

from fabula.agents.memory_builder import readings
from fabula.agents.reading.extract import extract
from fabula.memory.actions import StoryAction
from fabula.memory.delta import TurnDelta
from fabula.memory.ingest import basis, build_turn
from fabula.memory.records import Entity
from fabula.memory.store.view import StoryReads
from fabula.memory.text import normalised

Reader = Callable[[str, Mapping[str, Entity]], list[StoryAction]]
"""Reads a turn's text into story actions with exact spans, anchored on the entities the
story knows before the turn (id → entity). Deterministic; never raises on prose it cannot
read (such a sentence is a ``narration`` action with its span)."""


def read_controlled(text: str, entities: Mapping[str, Entity]) -> list[StoryAction]:
    """The controlled-English rules as a :data:`Reader` (it needs no entities)."""
    del entities
    return extract(text)


class OfflineMemoryBuilder:
    """Builds the deltas of turns read by ``reader`` (by default the phased reader,
    :func:`~fabula.agents.reading.phases.read_story`: the prose reader's places,
    which reads controlled English exactly as :func:`read_controlled` does, with states,
    perception and mental states read in phases, within the store's
    :class:`~fabula.limits.Limits`)."""

    def __init__(self, reader: Reader | None = None) -> None:
        self.reader = reader

    async def build(self, store: StoryReads, turn: int, text: str) -> TurnDelta:
        """The delta of ``turn`` with ``text``, derived from the store's views before it.

        ``text`` is read and stored :func:`~fabula.memory.text.normalised`. Raises
        :class:`~fabula.errors.NotFound` when the story does not exist.
        """
        text = normalised(text)  # what is read is what is stored: see normalised
        as_of = await basis(store, turn)
        entities = await store.entities(as_of)
        if store.holders is not None:  # a tick's scene: read against what it can name
            entities = scene_entities(entities, text, store.holders)
        reader = self.reader
        if reader is None:
            from fabula.agents.reading.phases import read_story

            reader = functools.partial(read_story, limits=store.limits)
        # read in a worker thread: reading is all computation, and on the event loop it
        # would stall every other request of the process (the studio) and the renewal of
        # the decision lock held meanwhile, which would then expire under its holder
        actions = await asyncio.to_thread(reader, text, entities)
        readings.report_unsure(text, actions)
        return await build_turn(store, turn, text, actions, as_of=as_of)


_WORD = re.compile(r"[a-z0-9]+")


def scene_entities(
    entities: Mapping[str, Entity], text: str, cast: Collection[str]
) -> dict[str, Entity]:
    """The entities a tick's scene's ``text`` is read against: every one that is not a
    character (places, objects), the scene's ``cast``, and each other character a word of
    whose name the text holds (someone told about who is elsewhere). A scene's text names
    the people of its place; reading it against a town of 1,000 would cost each scene the
    town's size (the reader's work grows with the entities it is given)."""
    words = set(_WORD.findall(text.casefold()))
    inside = set(cast)
    return {
        ident: e
        for ident, e in entities.items()
        if e.kind != "character"
        or ident in inside
        or any(w in words for w in _WORD.findall(e.name.casefold()))
    }
