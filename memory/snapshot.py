"""A consistent picture of one branch, now, in one round trip: what the author may see.

:func:`read_snapshot` reads the head, the entities, W, every character's first-order
beliefs, D, H, the branch's entry, the world pack and the recent turns' text in one call of
the ``fabula_snapshot`` Redis function (a function runs atomically, so every part is of the
same moment). The planner, writer and critic work from it; a character agent never gets it.
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass, field, fields
from typing import Any, TypeVar, cast

from pydantic import BaseModel

from fabula.memory import keys
from fabula.memory.lineage import Branch
from fabula.memory.lua import fcall_ro
from fabula.memory.projections import BeliefView, WorldView, parse_beliefs, parse_states
from fabula.memory.records import Development, Entity, Hypothesis
from fabula.memory.store import TurnText
from fabula.memory.store.view import StoryReads

M = TypeVar("M", bound=BaseModel)


@functools.lru_cache(maxsize=64)
def _parse_document(model: type[BaseModel], stored: str) -> BaseModel:
    return model.model_validate(json.loads(stored))


@dataclass(frozen=True, kw_only=True)
class Moment:
    """What a story holds after turn ``turn``, all of one moment: its entities, W, every
    character's B, D, H and the ``recent`` turns' text (a :class:`Snapshot` as read, and
    the author's view made of one)."""

    story: str
    turn: int
    entities: dict[str, Entity]
    world: WorldView
    beliefs: dict[str, BeliefView]
    developments: dict[str, Development]
    hypotheses: dict[str, Hypothesis]
    recent: list[TurnText] = field(default_factory=list)

    def parts(self) -> dict[str, Any]:
        """The moment's fields by name, to build another kind of moment from this one."""
        return {f.name: getattr(self, f.name) for f in fields(Moment)}


@dataclass(frozen=True, kw_only=True)
class Snapshot(Moment):
    """One branch of a story after turn ``turn``, as read in one round trip: the
    :class:`Moment`, the branch's lineage entry and the stored world pack."""

    branch: Branch
    pack: str | None = field(default=None, repr=False)

    def pack_as(self, model: type[M]) -> M | None:
        """The world pack the story was created with, as ``model`` (None if it has none).

        Parsed once per distinct pack and model; raises pydantic's ``ValidationError`` if
        the stored pack does not fit ``model``.
        """
        if self.pack is None:
            return None
        return cast(M, _parse_document(model, self.pack))


def _pairs(flat: list[Any]) -> list[tuple[str, str]]:
    return list(zip(flat[::2], flat[1::2], strict=True))


async def read_snapshot(store: StoryReads, *, recent_turns: int = 3) -> Snapshot:
    """The store's branch as it stands now, with the text of its last ``recent_turns``
    turns, in one round trip (plus one per ancestor the first time a branch's lineage is
    read through this ``store``).

    Raises :class:`~fabula.errors.NotFound` for a branch that does not exist.
    """
    ancestors: list[str | int] = []
    for ancestor in await store.ancestry():
        ancestors += [keys.turns(store.story, ancestor.branch), ancestor.through]
    layout = json.dumps(keys.snapshot_layout(store.story, store.branch))
    reply = await fcall_ro(
        store.client,
        "fabula_snapshot",
        [keys.head(store.story, store.branch)],
        [layout, store.branch, max(0, recent_turns), *ancestors],
    )
    head, entities_raw, branch_raw, world_raw, characters, belief_raws = reply[:6]
    devs_raw, hyps_raw, pack, turns_raw = reply[6:]
    entities = {k: Entity.model_validate_json(v) for k, v in _pairs(entities_raw)}
    world = WorldView(store.story, store.branch, None, {s.slot: s for s in parse_states(world_raw)})
    beliefs = {
        c: BeliefView(
            store.story, store.branch, (c,), None, {b.slot: b for b in parse_beliefs(raw)}
        )
        for c, raw in zip(characters, belief_raws, strict=True)
    }
    return Snapshot(
        story=store.story,
        branch=Branch(store.branch)
        if branch_raw is None
        else Branch.from_stored(store.branch, branch_raw),
        turn=int(head),
        entities=entities,
        world=world,
        beliefs=beliefs,
        developments={k: Development.model_validate_json(v) for k, v in sorted(_pairs(devs_raw))},
        hypotheses={k: Hypothesis.model_validate_json(v) for k, v in sorted(_pairs(hyps_raw))},
        recent=[TurnText.from_stored(int(t), v) for t, v in turns_raw],
        pack=pack,
    )
