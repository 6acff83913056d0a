"""Forking a story: a branch sees its parent up to the fork turn, plus its own turns.

The fork copies the parent's *live* state at the fork turn (W, every mind's beliefs, D, H)
into the branch's keys in one transaction, and every mind's shared log up to the fork turn
(with its table of groups: what its nested chains are read from); turn texts and events are
not copied but read through the parent. The parent is never written.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from redis.exceptions import WatchError

from fabula.errors import Conflict, InvalidInput, NotFound
from fabula.memory import keys
from fabula.memory.connection import transaction
from fabula.memory.lineage import MAIN, Branch
from fabula.memory.payload import stored
from fabula.memory.projections import (
    WorldView,
    all_beliefs_as_of,
    project_developments,
    project_hypotheses,
    project_world,
    recall,
)
from fabula.memory.records import Belief, Development, Hypothesis, Memory
from fabula.memory.store import StoryStore


async def fork(
    parent: StoryStore, at_turn: int, branch: str, *, pursue: str | None = None
) -> StoryStore:
    """Start branch ``branch`` of ``parent``'s story from ``parent``'s branch at ``at_turn``.

    Raises :class:`NotFound` if the story does not exist, :class:`Conflict` if the branch
    exists already, :class:`InvalidInput` if ``at_turn`` is not a committed turn of the
    parent. ``pursue``
    (a hypothesis id) is kept with the branch: the planner pursues it.
    """
    await parent.require()
    keys.check_id(branch, "branch")
    child = parent.on_branch(branch)
    head = await parent.head()
    if not 0 <= at_turn <= head:
        raise InvalidInput(
            f"cannot fork at turn {at_turn}: branch {parent.branch!r} has turns 0..{head}",
            story=parent.story,
            branch=parent.branch,
        )
    live = await _live_at(parent, at_turn)
    story = parent.story
    branches_key = keys.branches(story)
    async with transaction(parent.client, branches_key) as pipe:
        try:
            await pipe.watch(branches_key)
            if branch == MAIN or await pipe.hexists(branches_key, branch):
                raise Conflict(
                    f"story {story!r} already has a branch {branch!r}", story=story, branch=branch
                )
            pipe.multi()
            entry = Branch(branch, parent=parent.branch, fork_turn=at_turn, pursue=pursue)
            pipe.hset(branches_key, branch, entry.to_stored())
            pipe.hset(keys.head(story, branch), "turn", at_turn)
            live.write(pipe, story, branch)
            await pipe.execute()
        except WatchError:
            raise Conflict(
                f"branch {branch!r} was created concurrently", story=story, branch=branch
            ) from None
    if not await child.exists():  # pragma: no cover - the story vanished meanwhile
        raise NotFound(f"story {story!r} does not exist", story=story)
    return child


@dataclass(frozen=True)
class _Live:
    """What the parent held live at the fork turn, which the branch starts with."""

    world: WorldView
    minds: dict[str, list[Belief]]
    """Each character's beliefs open at the fork."""
    shared: dict[str, tuple[list[str], dict[str, str]]]
    """Each character's shared log up to the fork, with the groups it names."""
    known: dict[str, dict[str, str]]
    """Each roster as it stood at the fork (the raw copies: who knew of what, from when)."""
    memories: dict[str, list[Memory]]
    devs: dict[str, Development]
    hyps: dict[str, Hypothesis]

    def write(self, pipe: Any, story: str, branch: str) -> None:
        """Queue the writes of the branch's own copies on ``pipe`` (in its MULTI)."""
        # what was still open at the fork is open on the branch
        # (as current records: in the current hashes and the valid_from index; the
        # branch's history hashes hold what it closes itself)
        # one command per key, not per record: a long story's fork writes tens of
        # thousands of records, and a command each cost more than the writing
        states = self.world.states.values()
        if states:
            pipe.hset(
                keys.world_current(story, branch),
                mapping={s.slot: stored(s.model_copy(update={"valid_to": None})) for s in states},
            )
            pipe.zadd(keys.world_from(story, branch), {s.id: s.valid_from for s in states})
        self._write_minds(pipe, story, branch)
        if self.devs:
            pipe.hset(
                keys.developments(story, branch),
                mapping={d.id: d.model_dump_json() for d in self.devs.values()},
            )
        if self.hyps:
            pipe.hset(
                keys.hypotheses(story, branch),
                mapping={h.id: h.model_dump_json() for h in self.hyps.values()},
            )

    def _write_minds(self, pipe: Any, story: str, branch: str) -> None:
        """Each mind's beliefs, shared log, roster and memories, as the branch's own."""
        for character, beliefs in self.minds.items():
            if not beliefs:
                continue
            by_chain: dict[str, dict[str, str]] = {}
            for belief in beliefs:
                by_chain.setdefault(belief.chain, {})[belief.slot] = stored(
                    belief.model_copy(update={"valid_to": None})
                )
            for chain, current in by_chain.items():
                pipe.hset(keys.beliefs_current(story, branch, chain), mapping=current)
            pipe.zadd(
                keys.belief_from(story, branch, character),
                {b.id: b.valid_from for b in beliefs},
            )
            pipe.sadd(keys.belief_chains(story, branch, character), *by_chain)
        for character, (lines, groups) in self.shared.items():
            if lines:
                pipe.rpush(keys.shared_log(story, branch, character), *lines)
                pipe.hset(keys.shared_groups(story, branch, character), mapping=groups)
        for character, roster in self.known.items():
            if roster:
                pipe.hset(keys.known_entities(story, branch, character), mapping=roster)
        for character, mems in self.memories.items():
            if mems:
                pipe.rpush(
                    keys.memories(story, branch, character),
                    *[m.model_dump_json() for m in mems],
                )


async def _live_at(parent: StoryStore, at_turn: int) -> _Live:
    """What ``parent`` held live at ``at_turn`` (read before the branch's transaction)."""
    world = await project_world(parent, as_of=at_turn)
    characters = await parent.characters()
    memories = {c: await recall(parent, c, last=1_000_000, as_of=at_turn) for c in characters}
    minds = {c: await all_beliefs_as_of(parent, c, at_turn) for c in characters}
    shared = {c: await _shared_through(parent, c, at_turn) for c in characters}
    known = {}
    for c in characters:
        raw = await parent.client.hgetall(keys.known_entities(parent.story, parent.branch, c))
        known[c] = {i: v for i, v in raw.items() if json.loads(v)["known_from"] <= at_turn}
    devs = await project_developments(parent, as_of=at_turn)
    hyps = await project_hypotheses(parent, as_of=at_turn)
    return _Live(world, minds, shared, known, memories, devs, hyps)


async def _shared_through(
    parent: StoryStore, character: str, at_turn: int
) -> tuple[list[str], dict[str, str]]:
    """``character``'s shared log on the parent up to ``at_turn`` (a prefix: the log is in
    story order), with the groups it names."""
    lines: list[str] = await parent.client.lrange(
        keys.shared_log(parent.story, parent.branch, character), 0, -1
    )
    cut = len(lines)
    while cut and json.loads(lines[cut - 1])["valid_from"] > at_turn:
        cut -= 1
    lines = lines[:cut]
    if not lines:
        return [], {}
    table: dict[str, str] = await parent.client.hgetall(
        keys.shared_groups(parent.story, parent.branch, character)
    )
    named = {json.loads(line)["gid"] for line in lines}
    return lines, {gid: members for gid, members in table.items() if gid in named}
