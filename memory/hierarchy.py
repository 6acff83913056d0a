"""The hierarchy above the episodes: event → scene → plotline → plot.

- A **scene** is a run of consecutive turns with continuity of place, date and
  participants: a turn opens a new scene when its place or its date changes, or when the
  characters acting in it share none with the scene so far.
- A **plotline** joins two or more scenes by a development (events in each scene move it)
  or by a state's trajectory (the same fact about an object, or a character's attribute
  other than where it is, changes in each) — never merely by sharing a character.
- The **plot** is the root: its children are the plotlines.

Each node carries an extractive summary (its most central lines; in model mode
:mod:`fabula.memory.summarise` has a model rewrite those of closed nodes, and a fold
rewrites a plotline only when it changed) and its member ids (``children``; a scene's are
its events), with its atomic closure (events, records, spans). :func:`unfold` walks down
one level. Beside the
nodes, consolidation keeps a scene index (scene ids by first turn) and each scene's
plotlines, so retrieval reads the nodes of the turns it ranks
(:func:`related_nodes`, a few round trips) instead of the whole tree.

:func:`consolidate` is the consolidation job: it folds every committed turn not yet folded
into the hierarchy, writing all changed nodes and the watermark in one transaction that
watches the watermark — run twice or concurrently, the result is the same, and a turn
never waits for it (it runs after the commit, inline or on RQ).
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence

from redis.exceptions import WatchError

from fabula.memory import keys
from fabula.memory.connection import transaction
from fabula.memory.index.terms import terms
from fabula.memory.records import Closure, Entity, Event, HierarchyNode
from fabula.memory.store import StoryStore
from fabula.memory.timeref import parse_clock

__all__ = [
    "PLOT_ID",
    "consolidate",
    "consolidate_turn",
    "nodes",
    "plotline_id",
    "related_nodes",
    "scenes",
    "unfold",
]

PLOT_ID = "plot"
SUMMARY_LINES = 3
SUMMARY_CHARS = 400
_MARK = "@through"  # the watermark's field in the threads hash


async def nodes(store: StoryStore) -> dict[str, HierarchyNode]:
    """Every node of the branch's hierarchy by id."""
    raw = await store.client.hgetall(keys.hierarchy(store.story, store.branch))
    return {k: HierarchyNode.model_validate_json(v) for k, v in raw.items()}


async def scenes(store: StoryStore) -> list[HierarchyNode]:
    """Every scene node of the branch, in story order."""
    found = [n for n in (await nodes(store)).values() if n.level == "scene"]
    return sorted(found, key=lambda n: n.first_turn)


def plotline_id(thread: str) -> str:
    """The node id of a plotline thread (``dev:<development>`` or ``slot:<subject|attr>``)."""
    return "plotline-" + "".join(c if c.isalnum() else "-" for c in thread)


async def related_nodes(
    store: StoryStore,
    turns: Sequence[int],
    developments: Sequence[str] = (),
    *,
    plotlines: int = 8,
) -> list[HierarchyNode]:
    """The consolidated scenes holding ``turns``, the plotlines of ``developments``, and up
    to ``plotlines`` more that those scenes belong to (the first turns' scenes' first) —
    three round trips, whatever the story's length (a scene is found by its first turn in
    the scene index, a plotline through the scene -> plotlines map). Turns not yet
    consolidated find nothing."""
    scene_key = keys.hierarchy_scenes(store.story, store.branch)
    tree_key = keys.hierarchy(store.story, store.branch)
    wanted = list(dict.fromkeys(turns))
    async with store.client.pipeline(transaction=False) as pipe:
        for turn in wanted:
            pipe.zrange(scene_key, turn, "-inf", desc=True, byscore=True, offset=0, num=1)
        found = await pipe.execute()
    scene_ids = list(dict.fromkeys(ids[0] for ids in found if ids))
    line_ids = [plotline_id(f"dev:{d}") for d in developments]
    if not scene_ids and not line_ids:
        return []
    async with store.client.pipeline(transaction=False) as pipe:
        pipe.hmget(tree_key, [*scene_ids, *line_ids])
        if scene_ids:
            pipe.hmget(keys.hierarchy_up(store.story, store.branch), scene_ids)
        got = await pipe.execute()
    raws = list(got[0])
    ups = list(got[1]) if scene_ids else []
    more = [i for up in ups if up for i in json.loads(up) if i not in line_ids]
    more = list(dict.fromkeys(more))[:plotlines]
    if more:
        raws += await store.client.hmget(tree_key, more)
    out = [HierarchyNode.model_validate_json(raw) for raw in raws if raw]
    return [n for n in dict((n.id, n) for n in out).values()]


async def unfold(store: StoryStore, node_id: str) -> list[HierarchyNode] | list[Event]:
    """One level down: a plot's plotlines, a plotline's scenes, a scene's events."""
    raw = await store.client.hget(keys.hierarchy(store.story, store.branch), node_id)
    if raw is None:
        return []
    node = HierarchyNode.model_validate_json(raw)
    if node.level == "scene":
        return await store.events(list(node.children))
    if not node.children:
        return []
    values = await store.client.hmget(keys.hierarchy(store.story, store.branch), node.children)
    return [HierarchyNode.model_validate_json(v) for v in values if v]


async def consolidate_turn(store: StoryStore, turn: int) -> HierarchyNode | None:
    """Fold the hierarchy up to ``turn`` and return the scene that holds it."""
    await consolidate(store, turn)
    for node in await scenes(store):
        if node.first_turn <= turn <= node.last_turn:
            return node
    return None


async def consolidate(store: StoryStore, through: int | None = None) -> int:
    """Fold every committed turn up to ``through`` (default: the head); return the watermark."""
    target = await store.head() if through is None else min(through, await store.head())
    threads_key = keys.hierarchy_threads(store.story, store.branch)
    while True:
        raw = await store.client.hget(threads_key, _MARK)
        mark = 0 if raw is None else int(raw)  # turn 0 is the setup, not a scene
        if mark >= target:
            return mark
        try:
            await _fold(store, mark, min(target, mark + 256))
        except WatchError:
            continue


def _summary(lines: Sequence[str]) -> str:
    """The most central lines (sharing the most terms with the others), in story order."""
    bags = [set(terms(line)) for line in lines]
    counts: Counter[str] = Counter(t for bag in bags for t in bag)
    ranked = sorted(range(len(lines)), key=lambda i: -sum(counts[t] - 1 for t in bags[i]))
    chosen = sorted(ranked[:SUMMARY_LINES])
    return " ".join(lines[i].strip() for i in chosen)[:SUMMARY_CHARS]


def _place(events: Sequence[Event], scene: str | None) -> str | None:
    places = Counter(e.place for e in events if e.place)
    return scene or (places.most_common(1)[0][0] if places else None)


def _actors(events: Sequence[Event], entities: dict[str, Entity]) -> set[str]:
    return {
        p
        for e in events
        for p in (e.actor, *e.participants)
        if p and p in entities and entities[p].kind == "character"
    }


_OPEN = "@open"  # the open scene's place, day and actors, to decide whether a turn continues it


async def _state_slots(store: StoryStore, state_ids: Sequence[str]) -> dict[str, str]:
    """``subject|attribute`` of each state id: from the branch's state history (closed
    states), else from W (a state still current is kept only there, by its slot)."""
    if not state_ids:
        return {}
    values = await store.client.hmget(keys.world_records(store.story, store.branch), state_ids)
    found = {i: raw for i, raw in zip(state_ids, values, strict=True) if raw}
    missing = {i for i in state_ids if i not in found}
    if missing:
        for raw in await store.client.hvals(keys.world_current(store.story, store.branch)):
            state_id = raw.removeprefix('{"id":"').partition('"')[0]  # a state's id is first
            if state_id in missing:
                found[state_id] = raw
    out = {}
    for state_id, raw in found.items():
        data = json.loads(raw)
        out[state_id] = f"{data['subject']}|{data['attribute']}"
    return out


def _trajectory(slot: str, entities: dict[str, Entity]) -> bool:
    """Whether a slot's changes join scenes: an object's facts, a character's attributes
    other than where it is (a character walking about joins nothing)."""
    subject, attribute = slot.split("|", 1)
    entity = entities.get(subject)
    return not (entity is not None and entity.kind == "character" and attribute == "location")


def _join(threads: dict[str, list[str]], thread: str, scene_id: str) -> None:
    members = threads.setdefault(thread, [])
    if scene_id not in members:
        members.append(scene_id)


def _continues(
    signature: dict[str, object] | None, turn: int, place: str | None, day: int | None,
    actors: set[str], last_turn: int,
) -> bool:  # fmt: skip
    if signature is None or last_turn != turn - 1:
        return False
    if place is not None and signature.get("place") not in (None, place):
        return False
    if day is not None and signature.get("day") not in (None, day):
        return False
    before = set(signature.get("actors") or [])  # type: ignore[call-overload]
    return not (actors and before and not actors & before)


def _title(place: str | None, clock: str | None, entities: dict[str, Entity]) -> str:
    where = f" in the {entities[place].name}" if place and place in entities else ""
    when = f" on {clock}" if clock else ""
    return f"scene{where}{when}"


def _plotlines(
    threads: dict[str, list[str]], known: dict[str, HierarchyNode], entities: dict[str, Entity]
) -> dict[str, HierarchyNode]:
    out: dict[str, HierarchyNode] = {}
    for thread, members in threads.items():
        joined = [known[m] for m in members if m in known]
        if len(joined) < 2:
            continue
        kind, _, what = thread.partition(":")
        if kind == "dev":
            title = f"development {what}"
        else:
            subject, attribute = what.split("|", 1)
            name = entities[subject].name if subject in entities else subject
            title = f"the {attribute} of {name}"
        node_id = plotline_id(thread)
        out[node_id] = HierarchyNode(
            id=node_id,
            level="plotline",
            title=title,
            summary=" / ".join(n.summary.split(". ")[0] for n in joined)[:SUMMARY_CHARS],
            children=tuple(n.id for n in joined),
            first_turn=min(n.first_turn for n in joined),
            last_turn=max(n.last_turn for n in joined),
            closure=Closure(events=tuple(e for n in joined for e in n.closure.events[:1])),
        )
    return out


async def _fold(store: StoryStore, mark: int, last: int) -> None:
    tree_key = keys.hierarchy(store.story, store.branch)
    threads_key = keys.hierarchy_threads(store.story, store.branch)
    texts = await store.turn_texts(mark + 1, last)
    events = await store.events([e for t in texts for e in t.events])
    entities = await store.entities()
    existing = await nodes(store)
    stored = await store.client.hgetall(threads_key)
    signature = json.loads(stored[_OPEN]) if _OPEN in stored else None
    threads = {k: json.loads(v) for k, v in stored.items() if not k.startswith("@")}
    open_scene = max(
        (n for n in existing.values() if n.level == "scene"),
        key=lambda n: n.first_turn,
        default=None,
    )
    effects = [s for e in events for s in e.effects]
    slots = await _state_slots(store, effects)
    changed: dict[str, HierarchyNode] = {}
    for text in texts:
        mine = [e for e in events if e.turn == text.turn]
        place = _place(mine, text.scene)
        clock = parse_clock(text.clock) if text.clock else None
        day = clock.day if clock else None
        actors = _actors(mine, entities)
        last_turn = open_scene.last_turn if open_scene else -1
        if open_scene is None or not _continues(signature, text.turn, place, day, actors,
                                                last_turn):  # fmt: skip
            open_scene = HierarchyNode(id=f"scene-{text.turn}", level="scene",
                                       title=_title(place, text.clock, entities),
                                       first_turn=text.turn, last_turn=text.turn)  # fmt: skip
            signature = {"place": place, "day": day, "actors": []}
        closure = open_scene.closure
        open_scene = open_scene.model_copy(update={
            "last_turn": text.turn,
            "children": (*open_scene.children, *(e.id for e in mine)),
            "closure": Closure(
                events=(*closure.events, *(e.id for e in mine)),
                records=(*closure.records, *(s for e in mine for s in e.effects)),
                spans=(*closure.spans, *(e.span for e in mine)),
            ),
        })  # fmt: skip
        assert signature is not None
        signature = {
            "place": signature.get("place") or place,
            "day": signature.get("day") or day,
            "actors": sorted(set(signature.get("actors") or []) | actors),
        }
        changed[open_scene.id] = open_scene
        for ev in mine:
            for dev in ev.developments:
                _join(threads, f"dev:{dev}", open_scene.id)
            for state_id in ev.effects:
                slot = slots.get(state_id)
                if slot and _trajectory(slot, entities):
                    _join(threads, f"slot:{slot}", open_scene.id)
    for node_id, scene in list(changed.items()):
        quotes = [span.quote for span in scene.closure.spans]
        changed[node_id] = scene.model_copy(update={"summary": _summary(quotes)})
    for node_id, line in _plotlines(threads, {**existing, **changed}, entities).items():
        # rewrite only what changed: an unchanged plotline keeps its model-written summary
        old = existing.get(node_id)
        if (
            old is None
            or old.children != line.children
            or (old.summary_by == "extractive" and old != line)
        ):
            changed[node_id] = line
    lines = [n for n in {**existing, **changed}.values() if n.level == "plotline"]
    up: dict[str, list[str]] = {}
    for line in sorted(lines, key=lambda n: n.id):
        for scene_id in line.children:
            up.setdefault(scene_id, []).append(line.id)
    ups = {k: json.dumps(v) for k, v in up.items()}
    if lines:
        changed[PLOT_ID] = HierarchyNode(
            id=PLOT_ID,
            level="plot",
            title="the plot",
            summary="; ".join(n.title for n in sorted(lines, key=lambda n: n.first_turn))[
                :SUMMARY_CHARS
            ],
            children=tuple(sorted(n.id for n in lines)),
            first_turn=min(n.first_turn for n in lines),
            last_turn=max(n.last_turn for n in lines),
        )
    async with transaction(store.client, threads_key) as pipe:
        await pipe.watch(threads_key)
        raw = await pipe.hget(threads_key, _MARK)
        if (0 if raw is None else int(raw)) != mark:
            raise WatchError("the watermark moved")
        pipe.multi()
        if changed:
            pipe.hset(tree_key, mapping={k: n.model_dump_json() for k, n in changed.items()})
        fields = {k: json.dumps(v) for k, v in threads.items()}
        fields[_MARK] = str(last)
        if signature is not None:
            fields[_OPEN] = json.dumps(signature)
        pipe.hset(threads_key, mapping=fields)
        new_scenes = {n.id: n.first_turn for n in changed.values() if n.level == "scene"}
        if new_scenes:
            pipe.zadd(keys.hierarchy_scenes(store.story, store.branch), new_scenes)
        if ups:
            pipe.hset(keys.hierarchy_up(store.story, store.branch), mapping=ups)
        await pipe.execute()
