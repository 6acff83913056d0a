"""The author's admissible view: everything the planner, writer and critic may read.

W, every character's beliefs labelled by holder, D, H, the roster, the recent text and the
world pack — at the story's current time on one branch. Character agents never get this;
they get a :class:`fabula.memory.acl.CharacterMind`.
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass, field

from fabula.memory import keys
from fabula.memory.projections import BeliefView, WorldView, parse_beliefs, parse_states
from fabula.memory.records import Development, Entity, Hypothesis
from fabula.memory.store import StoryStore, TurnText
from fabula.worlds.pack import WorldPack

__all__ = ["AuthorView", "author_view"]


@dataclass(frozen=True)
class AuthorView:
    """The story as the author may see it, after turn ``turn``."""

    story: str
    branch: str
    turn: int
    entities: dict[str, Entity]
    world: WorldView
    beliefs: dict[str, BeliefView]
    developments: dict[str, Development]
    hypotheses: dict[str, Hypothesis]
    recent: list[TurnText] = field(default_factory=list)
    pack: WorldPack | None = None
    pursue: str | None = None

    def name(self, entity_id: str) -> str:
        entity = self.entities.get(entity_id)
        return entity.name if entity else entity_id

    def characters(self) -> list[str]:
        return sorted(e.id for e in self.entities.values() if e.kind == "character")

    def kind(self, entity_id: str) -> str | None:
        entity = self.entities.get(entity_id)
        return entity.kind if entity else None

    def place_of(self, entity_id: str) -> str | None:
        """The place an entity is in, following containers and holders."""
        seen: set[str] = set()
        current: str | None = entity_id
        while current is not None and self.kind(current) != "place":
            if current in seen:
                return None
            seen.add(current)
            current = self.world.where(current)
        return current

    def present(self, place: str) -> list[str]:
        return [c for c in self.characters() if self.world.where(c) == place]

    def open_developments(self) -> list[Development]:
        return [d for d in self.developments.values() if d.status not in ("resolved", "abandoned")]


@functools.lru_cache(maxsize=64)
def _parse_pack(raw: str) -> WorldPack:
    return WorldPack.model_validate(json.loads(raw))


async def author_view(store: StoryStore, *, recent_turns: int = 3) -> AuthorView:
    """Project everything the author may see, now, in two round trips.

    The first reads the head, the entities and the branch table; the second (one pipeline)
    reads W, every character's B, D, H, the world pack and the recent text.
    """
    async with store.client.pipeline(transaction=False) as pipe:
        pipe.hget(keys.head(store.story, store.branch), "turn")
        pipe.hgetall(keys.entities(store.story))
        pipe.hgetall(keys.branches(store.story))
        head_raw, entities_raw, branches_raw = await pipe.execute()
    turn = -1 if head_raw is None else int(head_raw)
    entities = {k: Entity.model_validate_json(v) for k, v in entities_raw.items()}
    characters = sorted(e.id for e in entities.values() if e.kind == "character")
    info = json.loads(branches_raw.get(store.branch, "{}"))
    first = max(1, turn - recent_turns + 1)
    async with store.client.pipeline(transaction=False) as pipe:
        pipe.hvals(keys.world_current(store.story, store.branch))
        for c in characters:
            pipe.hvals(keys.beliefs_current(store.story, store.branch, c))
        pipe.hgetall(keys.developments(store.story, store.branch))
        pipe.hgetall(keys.hypotheses(store.story, store.branch))
        pipe.hget(keys.meta(store.story), "pack")
        replies = await pipe.execute()
    world_raw, *belief_raws, devs_raw, hyps_raw, pack_raw = replies
    world = WorldView(store.story, store.branch, None, {s.slot: s for s in parse_states(world_raw)})
    beliefs = {
        c: BeliefView(
            store.story, store.branch, (c,), None, {b.slot: b for b in parse_beliefs(raw)}
        )
        for c, raw in zip(characters, belief_raws, strict=True)
    }
    developments = {k: Development.model_validate_json(v) for k, v in sorted(devs_raw.items())}
    hypotheses = {k: Hypothesis.model_validate_json(v) for k, v in sorted(hyps_raw.items())}
    recent = await store.turn_texts(first, turn) if recent_turns > 0 and turn >= 1 else []
    pursue = info.get("pursue")
    return AuthorView(
        story=store.story,
        branch=store.branch,
        turn=turn,
        entities=entities,
        world=world,
        beliefs=beliefs,
        developments=developments,
        hypotheses=hypotheses,
        recent=recent,
        pack=None if pack_raw is None else _parse_pack(pack_raw),
        pursue=pursue if isinstance(pursue, str) else None,
    )
