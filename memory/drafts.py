"""The alternative drafts of a turn: asked for together, compared, one chosen, all kept.

A writer may ask for N drafts of the next turn. Each is a :class:`DraftOption` — the text,
the critic's findings, the preview of what it would change and the very delta approving it
commits — stored in one hash per turn (``keys.drafts``), so that any process shows the same
drafts and choosing one commits exactly the delta that was shown. The drafts stay with the
turn after it is decided (``chosen`` names the one committed), so a later look can see what
was not chosen. A rewind drops the drafts of the turns it takes off a branch; the branch
that keeps those turns keeps their drafts.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict

from fabula.memory import keys
from fabula.memory.connection import transaction
from fabula.memory.store import StoryStore

CHOSEN = "chosen"  # the hash field naming the draft that was committed


class DraftOption(BaseModel):
    """One draft of a turn: ``id`` (``<turn>.d<k>``), its text, the critic's findings, the
    preview of its changes, the delta approving it commits, the plan it was written to."""

    model_config = ConfigDict(frozen=True)

    id: str
    text: str
    findings: list[dict[str, Any]] = []
    preview: dict[str, Any] = {}
    delta: dict[str, Any] = {}
    plan: dict[str, Any] = {}


class TurnDrafts(BaseModel):
    """The drafts of one turn, in the order they were written, and the one chosen."""

    turn: int
    options: list[DraftOption] = []
    chosen: str | None = None

    def get(self, draft_id: str) -> DraftOption | None:
        """The draft ``draft_id`` (its id, or its number ``k`` of ``<turn>.d<k>``)."""
        for option in self.options:
            if draft_id in (option.id, option.id.rpartition(".d")[2]):
                return option
        return None


async def save_drafts(store: StoryStore, turn: int, options: Sequence[DraftOption]) -> None:
    """Keep ``options`` as the drafts of ``turn`` (replacing any kept before), in one
    transaction."""
    key = keys.drafts(store.story, store.branch, turn)
    async with transaction(store.client, key) as pipe:
        pipe.multi()
        pipe.delete(key)
        if options:
            pipe.hset(key, mapping={o.id: o.model_dump_json() for o in options})
        await pipe.execute()


async def read_drafts(store: StoryStore, turn: int) -> TurnDrafts:
    """The drafts kept for ``turn`` (none: an empty :class:`TurnDrafts`)."""
    raw: dict[str, str] = await store.client.hgetall(keys.drafts(store.story, store.branch, turn))
    chosen = raw.pop(CHOSEN, None)
    options = [DraftOption.model_validate_json(v) for v in raw.values()]
    options.sort(key=lambda o: int(o.id.rpartition(".d")[2] or 0))
    return TurnDrafts(turn=turn, options=options, chosen=chosen)


async def choose_draft(store: StoryStore, turn: int, draft_id: str) -> None:
    """Record that draft ``draft_id`` of ``turn`` was the one committed."""
    await store.client.hset(keys.drafts(store.story, store.branch, turn), CHOSEN, draft_id)
