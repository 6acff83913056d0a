"""The hierarchy above the atomic records: events are grouped into scenes.

A scene is a run of consecutive turns in one place. Each scene node keeps its atomic
closure — member events, the records they brought about, and their source spans — so a
retrieved scene can always be unfolded back to evidence. Consolidation runs off the turn's
path (an RQ job, see :mod:`fabula.memory.jobs`) and is idempotent: running it again for a turn
rebuilds the same node.
"""

from __future__ import annotations

from collections import Counter

from fabula.memory import keys
from fabula.memory.records import Closure, HierarchyNode
from fabula.memory.store import StoryStore

__all__ = ["consolidate_turn", "scenes"]


async def scenes(store: StoryStore) -> list[HierarchyNode]:
    """Every scene node of the branch, in story order."""
    raw = await store.client.hvals(keys.hierarchy(store.story, store.branch))
    nodes = [HierarchyNode.model_validate_json(v) for v in raw]
    return sorted((n for n in nodes if n.level == "scene"), key=lambda n: n.first_turn)


async def consolidate_turn(store: StoryStore, turn: int) -> HierarchyNode | None:
    """Add ``turn`` to the scene it continues, or open a new scene; return that scene."""
    texts = await store.turn_texts(turn, turn)
    if not texts:
        return None
    events = await store.events(list(texts[0].events))
    places = Counter(e.place for e in events if e.place)
    place = places.most_common(1)[0][0] if places else None
    existing = await scenes(store)
    previous = next((n for n in reversed(existing) if n.first_turn < turn), None)
    if any(n.first_turn <= turn <= n.last_turn and n.last_turn == turn for n in existing):
        # already consolidated (a re-run of the job): nothing to do
        return next(n for n in existing if n.first_turn <= turn <= n.last_turn)
    closure = Closure(
        events=tuple(e.id for e in events),
        records=tuple(s for e in events for s in e.effects),
        spans=tuple(e.span for e in events),
    )
    continues = (
        previous is not None
        and previous.last_turn == turn - 1
        and (place is None or previous.title == _title(place))
    )
    if continues and previous is not None:
        node = previous.model_copy(
            update={
                "last_turn": turn,
                "closure": Closure(
                    events=previous.closure.events + closure.events,
                    records=previous.closure.records + closure.records,
                    spans=previous.closure.spans + closure.spans,
                ),
                "summary": (previous.summary + " " + texts[0].text).strip()[:500],
            }
        )
    else:
        node = HierarchyNode(
            id=f"scene-{turn}",
            level="scene",
            title=_title(place),
            summary=texts[0].text[:500],
            first_turn=turn,
            last_turn=turn,
            closure=closure,
        )
    await store.client.hset(
        keys.hierarchy(store.story, store.branch), node.id, node.model_dump_json()
    )
    return node


def _title(place: str | None) -> str:
    return f"scene in the {place}" if place else "scene"
