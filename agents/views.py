"""The author's admissible view: everything the planner, writer and critic may read.

W, every character's beliefs labelled by holder, D, H, the roster, the recent text and the
world pack — at the story's current time on one branch, read as one
:class:`~fabula.memory.snapshot.Snapshot`. Character agents never get this; they get a
:class:`fabula.memory.acl.CharacterMind`.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

from fabula.memory.places import place_of
from fabula.memory.records import Development, slug
from fabula.memory.snapshot import Moment, read_snapshot
from fabula.memory.store.view import StoryReads
from fabula.worlds.pack import CharacterSpec, WorldPack


@dataclass(frozen=True, kw_only=True)
class AuthorView(Moment):
    """The story as the author may see it, after turn ``turn``: the :class:`Moment` of
    its branch (by name), its world pack and the goal the branch pursues, if any."""

    branch: str
    pack: WorldPack | None = None
    pursue: str | None = None

    def name(self, entity_id: str) -> str:
        """The entity's name as written (its id if the story has no such entity)."""
        entity = self.entities.get(entity_id)
        return entity.name if entity else entity_id

    def characters(self) -> list[str]:
        """Every character's id, sorted (the cast and the extras: every mind)."""
        return sorted(e.id for e in self.entities.values() if e.kind == "character")

    def cast(self) -> list[str]:
        """The characters who take turns, sorted: every character but the extras, met
        only as the doers of a change ("a stray cat knocked over the basket")."""
        return sorted(
            e.id for e in self.entities.values() if e.kind == "character" and not e.is_extra
        )

    def kind(self, entity_id: str) -> str | None:
        """The entity's kind (None if the story has no such entity)."""
        entity = self.entities.get(entity_id)
        return entity.kind if entity else None

    def place_of(self, entity_id: str) -> str | None:
        """The place an entity is in, following containers and holders in W."""
        return place_of(entity_id, self.world.where, lambda e: self.kind(e) == "place")

    def present(self, place: str) -> list[str]:
        """The characters in ``place``."""
        return [c for c in self.characters() if self.world.where(c) == place]

    def character_spec(self, character: str) -> CharacterSpec | None:
        """The world pack's entry for ``character`` (None without a pack or an entry)."""
        return self._specs.get(character)

    @cached_property
    def _specs(self) -> dict[str, CharacterSpec]:
        """The pack's characters by id (the first of a name), built once per view: a
        town's tick asks for a thousand of them."""
        specs: dict[str, CharacterSpec] = {}
        for spec in self.pack.characters if self.pack is not None else ():
            specs.setdefault(slug(spec.name), spec)
        return specs

    def goals_of(self, character: str) -> list[str]:
        """``character``'s goals as the world pack states them, in order."""
        spec = self.character_spec(character)
        return list(spec.goals) if spec is not None else []

    def open_developments(self) -> list[Development]:
        """Developments neither resolved nor abandoned."""
        return [d for d in self.developments.values() if d.status not in ("resolved", "abandoned")]


async def author_view(store: StoryReads, *, recent_turns: int = 3) -> AuthorView:
    """Project everything the author may see, now, in one round trip (a snapshot)."""
    snap = await read_snapshot(store, recent_turns=recent_turns)
    return AuthorView(
        **snap.parts(),
        branch=snap.branch.name,
        pack=snap.pack_as(WorldPack),
        pursue=snap.branch.pursue,
    )
