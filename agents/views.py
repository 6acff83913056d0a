"""The author's admissible view: everything the planner, writer and critic may read.

W, every character's beliefs labelled by holder, D, H, the roster, the recent text and the
world pack — at the story's current time on one branch. Character agents never get this;
they get a :class:`memory.acl.CharacterMind`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from memory import keys
from memory.projections import (
    BeliefView,
    WorldView,
    project_beliefs,
    project_developments,
    project_hypotheses,
    project_world,
)
from memory.records import Development, Entity, Hypothesis
from memory.store import StoryStore, TurnText
from worlds.pack import WorldPack

__all__ = ["AuthorView", "author_view", "load_pack"]


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


async def load_pack(store: StoryStore) -> WorldPack | None:
    """The world pack the story was created from (kept in its metadata), if any."""
    raw = await store.client.hget(keys.meta(store.story), "pack")
    return None if raw is None else WorldPack.model_validate(json.loads(raw))


async def author_view(store: StoryStore, *, recent_turns: int = 3) -> AuthorView:
    """Project everything the author may see, now."""
    turn = await store.head()
    entities = await store.entities()
    characters = sorted(e.id for e in entities.values() if e.kind == "character")
    branches = await store.branches()
    info = branches.get(store.branch, {})
    pursue = info.get("pursue") if isinstance(info.get("pursue"), str) else None
    return AuthorView(
        story=store.story,
        branch=store.branch,
        turn=turn,
        entities=entities,
        world=await project_world(store),
        beliefs={c: await project_beliefs(store, c) for c in characters},
        developments=await project_developments(store),
        hypotheses=await project_hypotheses(store),
        recent=await store.turn_texts(max(1, turn - recent_turns + 1), turn),
        pack=await load_pack(store),
        pursue=pursue,  # type: ignore[arg-type]
    )
