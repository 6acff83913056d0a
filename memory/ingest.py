"""From a turn's story actions to its delta: the one build sequence every memory-builder runs.

A memory-builder reads a turn's text into :class:`~fabula.memory.actions.StoryAction` values
(the offline reader or a chat model); everything after that is here, the same for both:
read what the tracker needs from the store's views (:func:`read_prior`), apply the world's
rules (:func:`~fabula.memory.tracking.track`) and build the delta (:func:`build_turn`).
Nothing is kept between turns in the process: everything the next turn needs is in Redis,
so any process can extend a story.

A turn that is already committed is rebuilt from the views as of the turn before it
(:func:`basis`), so sending the same turn again yields the same delta and the commit reports
``duplicate``.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence

from fabula.memory import keys
from fabula.memory.actions import StoryAction
from fabula.memory.delta import DeltaBuilder, TurnDelta
from fabula.memory.lua import fcall_ro
from fabula.memory.projections import all_beliefs_as_of, parse_beliefs, project_world
from fabula.memory.records import Belief
from fabula.memory.rules import WorldRules
from fabula.memory.store.view import StoryReads
from fabula.memory.tracking import (
    Chain,
    Knowledge,
    PriorView,
    initial_scene,
    touched_slots,
    track,
)

_COMMUNICATION = ("tell", "claim", "say")


async def basis(store: StoryReads, turn: int) -> int | None:
    """The story time ``turn`` is built on: None (the current views) for a new turn, the
    turn before it for a committed one (a rebuild).

    Raises :class:`~fabula.errors.NotFound` when the story or branch does not exist.
    """
    await store.require()
    return None if turn > await store.head() else turn - 1


async def build_turn(
    store: StoryReads,
    turn: int,
    text: str,
    actions: Sequence[StoryAction],
    *,
    as_of: int | None,
) -> TurnDelta:
    """The delta of ``turn`` whose ``text`` tells ``actions``, on the views after ``as_of``
    (see :func:`basis`), under the story's rules of knowledge. Nothing is written.

    Raises :class:`~fabula.errors.LimitExceeded` as soon as the delta being built
    would be larger than a commit may send (:attr:`StoryReads.limits`), before the rest of
    it is made."""
    rules = await store.rules()
    prior = await read_prior(store, actions, as_of=as_of)
    where = {"story": store.story, "branch": store.branch, "turn": turn}
    builder = DeltaBuilder(turn, text, limit=store.limits.delta_bytes, context=where)
    # tracking and building are all computation: in a worker thread, so that the process's
    # event loop (the studio, a decision lock's renewal) goes on meanwhile
    return await asyncio.to_thread(_tracked, rules, prior, actions, builder)


def _tracked(
    rules: WorldRules, prior: PriorView, actions: Sequence[StoryAction], builder: DeltaBuilder
) -> TurnDelta:
    track(rules, prior, actions, builder)
    return builder.build()


async def read_prior(
    store: StoryReads, actions: Sequence[StoryAction], *, as_of: int | None = None
) -> PriorView:
    """What the tracker needs to apply ``actions`` after turn ``as_of`` (None: the head):
    the entities, W, every character's first-order beliefs (only those of the store's
    :attr:`~StoryReads.holders`, for a scene's store), and the scene the story is in.
    Nested chains are not read: the tracker writes what reaches a group once, whatever its
    chains held (:mod:`fabula.memory.tracking.nested`)."""
    entities = await store.entities(as_of)
    world = (await project_world(store, as_of)).states
    prior = PriorView(entities=entities, world=world)
    characters = sorted(i for i, e in entities.items() if e.kind == "character")
    if store.holders is not None:
        inside = set(store.holders)
        characters = [c for c in characters if c in inside]
    slots = touched_slots(actions, prior)
    if as_of is None:
        beliefs = await _current_beliefs(store, characters)
    else:
        beliefs = await _beliefs_as_of(store, characters, as_of)
    if any(a.kind in _COMMUNICATION for a in actions):
        prior.beliefs = await _with_sources(store, beliefs, slots)
    else:
        prior.beliefs = {
            chain: {slot: Knowledge(b.value, b.polarity, b.event) for slot, b in held.items()}
            for chain, held in beliefs.items()
        }
    prior.scene = await _latest_scene(store, as_of) or initial_scene(world, entities)
    return prior


async def _current_beliefs(
    store: StoryReads, characters: Sequence[str]
) -> dict[Chain, dict[str, Belief]]:
    """First-order beliefs of every character, in one read (the ``fabula_beliefs`` function,
    asked for no slot of a nested chain)."""
    out: dict[Chain, dict[str, Belief]] = {}
    if not characters:
        return out
    layout = json.dumps(keys.beliefs_layout(store.story, store.branch))
    reply = await fcall_ro(
        store.client,
        "fabula_beliefs",
        [keys.belief_chains(store.story, store.branch, characters[0])],
        [layout, json.dumps(list(characters))],
    )
    for c, (own, _nested) in zip(characters, reply, strict=True):
        out[(c,)] = dict(zip(own[::2], parse_beliefs(own[1::2]), strict=True))
    return out


async def _beliefs_as_of(
    store: StoryReads, characters: Sequence[str], as_of: int
) -> dict[Chain, dict[str, Belief]]:
    out: dict[Chain, dict[str, Belief]] = {}
    for c in characters:
        for belief in await all_beliefs_as_of(store, c, as_of):
            if len(belief.holder) == 1:
                out.setdefault(belief.holder, {})[belief.slot] = belief
    return out


async def _with_sources(
    store: StoryReads, beliefs: dict[Chain, dict[str, Belief]], slots: set[str]
) -> dict[Chain, dict[str, Knowledge]]:
    """Beliefs as knowledge with freshness; a told belief's comes from its telling's cause."""
    told = [
        b.event
        for chain, held in beliefs.items()
        if len(chain) == 1
        for slot, b in held.items()
        if slot in slots and b.mode in ("told_private", "told_public")
    ]
    causes = {e.id: (e.causes[0] if e.causes else None) for e in await store.events(told)}
    out: dict[Chain, dict[str, Knowledge]] = {}
    for chain, held in beliefs.items():
        mind = out[chain] = {}
        for slot, b in held.items():
            source = causes.get(b.event) if b.event in causes else b.event
            mind[slot] = Knowledge(b.value, b.polarity, source)
    return out


async def _latest_scene(store: StoryReads, as_of: int | None) -> str | None:
    """The place of the most recent entry: recorded with every committed turn (one read)."""
    last = await store.head() if as_of is None else as_of
    if last < 0:
        return None
    texts = await store.turn_texts(last, last)
    return texts[0].scene if texts else None
