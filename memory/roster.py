"""A character's roster for a story made before rosters existed: rebuilt from its own mind.

Since rosters were added, each commit copies into a character's mind the entities its new
beliefs and the events it witnessed name (at turn 0 also the pack's places and cast), and
its roster is read from there only (see ``KnownColumns`` in :mod:`fabula.memory.payload`).
A story committed before has no roster at all: its characters would know of nothing, not
even their own goals. ``fabula migrate`` (a story of schema 1, see
:mod:`fabula.memory.schema`) rebuilds each missing one with :func:`missing_roster` from what
the commit would have copied — the pack's places and cast, and what the character's own
beliefs (every holder chain it roots, shared ones included) and memories name — each with
the earliest turn it came from. Nothing else is read, so the roster names only what the
character met. Nothing here runs when a mind is opened.
"""

from __future__ import annotations

import json

import redis.asyncio as aredis

from fabula.memory import keys
from fabula.memory.records import Belief, Memory
from fabula.memory.store import StoryStore
from fabula.memory.tracking.nested import parse_shared


async def missing_roster(
    admin: aredis.Redis, story: str, character: str, branch: str
) -> dict[str, str]:
    """``character``'s roster on ``branch`` as its commits would have written it, when the
    story has turns and the roster is missing (a story made before rosters): entity id ->
    its stored ``{"known_from", "entity"}``; else nothing. Nothing is written."""
    target = keys.known_entities(story, branch, character)
    if await admin.exists(target) or not await admin.exists(keys.meta(story)):
        return {}
    store = StoryStore(admin, story, branch)
    if await store.head() < 0:
        return {}
    raw = await admin.hgetall(keys.entities(story))
    kinds = {ident: json.loads(value).get("kind") for ident, value in raw.items()}
    since: dict[str, int] = {}

    def saw(turn: int, *named: str | None) -> None:
        for ident in named:
            if ident and ident in raw and turn < since.get(ident, turn + 1):
                since[ident] = turn

    cast_and_places = [i for i, k in kinds.items() if k in ("character", "place")]
    saw(0, character, *cast_and_places)  # the pack's, common knowledge from turn 0
    for chain in await admin.smembers(keys.belief_chains(story, branch, character)):
        for value in await admin.hvals(keys.beliefs_current(story, branch, chain)):
            b = Belief.model_validate_json(value)
            saw(b.valid_from, *b.holder, b.subject, b.value)
    for value in await admin.hvals(keys.belief_records(story, branch, character)):
        b = Belief.model_validate_json(value)
        saw(b.valid_from, *b.holder, b.subject, b.value)
    lines = await admin.lrange(keys.shared_log(story, branch, character), 0, -1)
    groups = await admin.hgetall(keys.shared_groups(story, branch, character))
    for shared in parse_shared(lines, groups):
        saw(shared.valid_from, *shared.group, shared.subject, shared.value)
    memories = [
        Memory.model_validate_json(v)
        for v in await admin.lrange(keys.memories(story, branch, character), 0, -1)
    ]
    for event in await store.events([m.event for m in memories]):
        turn = next(m.turn for m in memories if m.event == event.id)
        named = [event.actor, *event.participants, event.place]
        if event.content is not None:
            named += [event.content.subject, event.content.value]
        saw(turn, character, *named)
    return {i: f'{{"known_from":{t},"entity":{raw[i]}}}' for i, t in since.items()}
