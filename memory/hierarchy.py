"""The hierarchy above the episodes: event → scene → plotline → plot.

- A **scene** is a run of consecutive turns with continuity of place, date and
  participants: a turn opens a new scene when its place or its date changes, or when the
  characters acting in it share none with the scene so far.
- A **plotline** joins two or more scenes by a development (events in each scene move it)
  or by a state's trajectory (the same fact about an object, or a character's attribute
  other than where it is, changes in each) — never merely by sharing a character.
- The **plot** is the root: its children are the plotlines.

Each node carries an extractive summary (its most central lines; in model mode
:mod:`fabula.memory.summarise` has a model rewrite those of closed nodes, and consolidation
rewrites a plotline only when it changed) and its member ids (``children``; a scene's are
its events), with its atomic closure (events, records, spans). :func:`unfold` walks down
one level. Beside the nodes, consolidation keeps a scene index (scene ids by first turn)
and each scene's plotlines, so recall reads the nodes of the turns it ranks
(:func:`related_nodes`, a few round trips) instead of the whole tree.

:func:`consolidate` is the consolidation job: it consolidates every committed turn not yet
consolidated into the hierarchy, writing the changed nodes and the watermark in one
transaction that watches the watermark — run twice or concurrently, the result is the same,
and a turn never waits for it (it runs after the commit, inline or on RQ). A consolidation
pass reads only what its turns can change (:mod:`fabula.memory.consolidation`): the open
scene, the plotline threads they move with their plotlines, the plot — a few round trips,
whatever the story's length; consolidation's bookkeeping (``keys.hierarchy_threads``) keeps
the watermark, the open scene's signature and each thread's state.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field

from redis.exceptions import WatchError

from fabula.errors import StoryDeleted
from fabula.logs import get_logger
from fabula.memory import keys
from fabula.memory.connection import transaction
from fabula.memory.consolidation import (
    PLOT_ID,
    OpenScene,
    Thread,
    as_of,
    consolidate_scenes,
    plot,
    plotline,
    plotline_id,
    thread_names,
)
from fabula.memory.records import Development, Entity, Event, HierarchyNode
from fabula.memory.store import StoryStore
from fabula.memory.store.view import StoryReads

log = get_logger(__name__)

_MARK = "@through"  # the watermark's field in the threads hash (consolidation's bookkeeping)
_OPEN = "@open"  # the open scene's signature (consolidation.OpenScene); every other field: a Thread
_FORMAT = "@format"  # the layout of the bookkeeping
FORMAT = "3"
# earlier formats that a branch with no ancestors need not consolidate again: format 3 changed
# only how a fork reads the states of the turns it inherits
_CURRENT_ON_MAIN = frozenset({"2"})
BATCH = 256  # turns consolidated in one transaction at most
_NONE = "@none"  # a field never written, asked for where a command needs one


async def nodes(store: StoryReads) -> dict[str, HierarchyNode]:
    """Every node of the branch's hierarchy by id."""
    raw = await store.client.hgetall(keys.hierarchy(store.story, store.branch))
    return {k: HierarchyNode.model_validate_json(v) for k, v in raw.items()}


async def scenes(store: StoryReads) -> list[HierarchyNode]:
    """Every scene node of the branch, in story order."""
    found = [n for n in (await nodes(store)).values() if n.level == "scene"]
    return sorted(found, key=lambda n: n.first_turn)


async def related_nodes(
    store: StoryReads,
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
    """Consolidate the hierarchy up to ``turn`` and return the scene that holds it."""
    await consolidate(store, turn)
    found = await related_nodes(store, [turn], plotlines=0)
    return next((n for n in found if n.level == "scene" and n.last_turn >= turn), None)


async def consolidate(store: StoryStore, through: int | None = None) -> int:
    """Consolidate every committed turn up to ``through`` (default: the head); return the watermark.

    A hierarchy consolidated by an earlier layout of the bookkeeping (no ``@format``, or another)
    is consolidated again from the first turn, once, up to at least its old watermark: from then
    on each pass reads only what the new turns can change."""
    target = await store.head() if through is None else min(through, await store.head())
    threads_key = keys.hierarchy_threads(store.story, store.branch)
    while True:
        raw, layout = await store.client.hmget(threads_key, [_MARK, _FORMAT])
        mark = 0 if raw is None else int(raw)  # turn 0 is the setup, not a scene
        stale = mark > 0 and layout != FORMAT
        if stale and layout in _CURRENT_ON_MAIN and not await store.ancestry():
            stale = False
        if stale:
            target = max(target, mark)
        elif mark >= target:
            return mark
        start = 0 if stale else mark
        try:
            await _consolidate_batch(
                store, start, min(target, start + BATCH), seen=(raw, layout), reset=stale
            )
        except WatchError:
            continue
        except StoryDeleted:  # deleted meanwhile: nothing is left to consolidate, nothing written
            log.info("consolidation_of_deleted_story", story=store.story, branch=store.branch)
            return mark


async def _consolidate_batch(
    store: StoryStore, start: int, last: int, *, seen: Sequence[str | None], reset: bool
) -> None:
    """Consolidate turns ``start+1..last``, reading the open scene, the threads those turns move
    (and the open scene's) with their plotlines, and the plot; write what changed with the
    watermark, in one transaction that fails if the watermark or the layout moved from
    ``seen``. ``reset``: consolidate from scratch, replacing the whole hierarchy."""
    client = store.client
    tree_key = keys.hierarchy(store.story, store.branch)
    threads_key = keys.hierarchy_threads(store.story, store.branch)
    up_key = keys.hierarchy_up(store.story, store.branch)
    scenes_key = keys.hierarchy_scenes(store.story, store.branch)
    texts = await store.turn_texts(start + 1, last)
    events = await store.events([e for t in texts for e in t.events])
    signature, slots = await _signature_and_slots(store, events, reset=reset)
    open_threads = signature.threads if signature else []
    wanted = {p for e in events for p in (e.actor, *e.participants, e.place) if p}
    wanted |= {t.scene for t in texts if t.scene}
    wanted |= {slot.split("|", 1)[0] for slot in slots.values()}
    wanted |= {t[5:].split("|", 1)[0] for t in open_threads if t.startswith("slot:")}
    entities = await _entities(store, wanted)
    moved = {t for e in events for t in thread_names(e, slots, as_of(entities, e.turn))}
    names = sorted(moved | set(open_threads))
    async with client.pipeline(transaction=False) as pipe:
        pipe.hmget(threads_key, names or [_NONE])
        pipe.hget(tree_key, signature.scene if signature else _NONE)
        stored, open_raw = await pipe.execute()
    threads = {
        n: Thread.load(None if reset else raw) for n, raw in zip(names, stored, strict=False)
    }
    open_scene = None if open_raw is None else HierarchyNode.model_validate_json(open_raw)
    had = {open_scene.id: open_scene} if open_scene else {}
    changed, signature = consolidate_scenes(
        texts, events, slots, entities, open_scene, signature, threads
    )
    lines = {n: t for n, t in threads.items() if t.count >= 2 and (t.joined or t.last in changed)}
    written = await _plotlines(store, lines, had, changed, entities, reset=reset)
    async with transaction(client, threads_key) as pipe:
        await pipe.watch(threads_key)
        await store.watch_alive(pipe)
        if list(await pipe.hmget(threads_key, [_MARK, _FORMAT])) != list(seen):
            raise WatchError("the watermark moved")
        pipe.multi()
        if reset:  # the model summaries' bookkeeping goes with the nodes it describes
            summaries_key = keys.hierarchy_summaries(store.story, store.branch)
            pipe.delete(tree_key, threads_key, up_key, scenes_key, summaries_key)
        out = {**changed, **written.nodes}
        if out:
            pipe.hset(tree_key, mapping={k: n.model_dump_json() for k, n in out.items()})
        fields = {n: t.dump() for n, t in threads.items() if t.joined}
        fields.update({_MARK: str(last), _FORMAT: FORMAT})
        if signature is not None:
            fields[_OPEN] = signature.dump()
        pipe.hset(threads_key, mapping=fields)
        if changed:
            pipe.zadd(scenes_key, {n.id: n.first_turn for n in changed.values()})
        if written.up:
            pipe.hset(up_key, mapping={k: json.dumps(v) for k, v in written.up.items()})
        await pipe.execute()


async def _signature_and_slots(
    store: StoryStore, events: Sequence[Event], *, reset: bool
) -> tuple[OpenScene | None, dict[str, str]]:
    """The open scene's signature, and ``subject|attribute`` of each state the events
    brought about: from the state history (closed states) of the branch and of its
    ancestors (a fork inherits its turns before the fork, and their closed states stay with
    the branch that closed them), else from W (a state still current is kept only there,
    by its slot: W is read whole, as large as the world and not the story)."""
    state_ids = [s for e in events for s in e.effects]
    histories = [store.branch, *(a.branch for a in await store.ancestry())]
    async with store.client.pipeline(transaction=False) as pipe:
        pipe.hget(keys.hierarchy_threads(store.story, store.branch), _OPEN)
        for branch in histories:
            pipe.hmget(keys.world_records(store.story, branch), state_ids or [_NONE])
        raw_open, *values = await pipe.execute()
    found: dict[str, str] = {}
    for held in values:
        for state_id, raw in zip(state_ids, held, strict=False):
            if raw and state_id not in found:
                found[state_id] = raw
    missing = {i for i in state_ids if i not in found}
    if missing:
        for raw in await store.client.hvals(keys.world_current(store.story, store.branch)):
            state_id = raw.removeprefix('{"id":"').partition('"')[0]  # a state's id is first
            if state_id in missing:
                found[state_id] = raw
    slots = {}
    for state_id, raw in found.items():
        data = json.loads(raw)
        slots[state_id] = f"{data['subject']}|{data['attribute']}"
    return (None if reset else OpenScene.load(raw_open)), slots


async def _entities(store: StoryStore, ids: set[str]) -> dict[str, Entity]:
    wanted = sorted(ids)
    if not wanted:
        return {}
    values = await store.client.hmget(keys.entities(store.story), wanted)
    return {k: Entity.model_validate_json(v) for k, v in zip(wanted, values, strict=True) if v}


@dataclass
class _Written:
    nodes: dict[str, HierarchyNode] = field(default_factory=dict)  # plotlines and the plot
    up: dict[str, list[str]] = field(default_factory=dict)  # scene -> its plotlines


async def _plotlines(
    store: StoryStore,
    lines: dict[str, Thread],
    had: dict[str, HierarchyNode],
    changed: dict[str, HierarchyNode],
    entities: dict[str, Entity],
    *,
    reset: bool,
) -> _Written:
    """The plotlines of ``lines`` (threads of two scenes or more that joined a scene now or
    whose last scene changed), the plot, and the scene -> plotlines entries that change;
    read in one round trip: those plotlines, their members not at hand (``had``: the open
    scene as it was, ``changed``: the scenes consolidated now), the plot, the members' entries,
    the titles of the developments that join them."""
    out = _Written()
    if not lines:
        return out
    scenes = {**had, **changed}
    olds = [plotline_id(n) for n, t in lines.items() if t.before >= 2]
    missing = sorted({m for t in lines.values() for m in t.members} - scenes.keys())
    wanted = [*olds, *missing, *([] if reset else [PLOT_ID])]
    new_scenes = changed.keys() - had.keys()
    older = sorted({m for t in lines.values() for m in t.fresh} - new_scenes)
    devs = sorted({n.partition(":")[2] for n in lines if n.startswith("dev:")})
    async with store.client.pipeline(transaction=False) as pipe:
        pipe.hmget(keys.hierarchy(store.story, store.branch), wanted or [_NONE])
        pipe.hmget(keys.hierarchy_up(store.story, store.branch), older or [_NONE])
        pipe.hmget(keys.developments(store.story, store.branch), devs or [_NONE])
        found, ups, dev_records = await pipe.execute()
    titles = {
        d: Development.model_validate_json(v).title
        for d, v in zip(devs, dev_records, strict=False)
        if v
    }
    got = {
        i: HierarchyNode.model_validate_json(v) for i, v in zip(wanted, found, strict=False) if v
    }
    scenes.update({m: got[m] for m in missing if m in got})
    out.up = {m: json.loads(v) for m, v in zip(older, ups, strict=False) if v}
    born: list[tuple[int, str, str, HierarchyNode]] = []
    for name, thread in sorted(lines.items()):
        old = got.get(plotline_id(name)) if thread.before >= 2 else None
        if old is not None and not thread.joined and old.summary_by != "extractive":
            continue  # no scene joined it: it keeps the summary a model wrote
        node = plotline(name, thread, old, scenes, entities, titles)
        out.nodes[node.id] = node
        if old is None:
            born.append((thread.at or 0, node.id, name, node))
        for scene_id in thread.fresh:
            out.up[scene_id] = sorted({*out.up.get(scene_id, []), node.id})
    written = list(out.nodes.values())
    out.nodes[PLOT_ID] = plot(
        got.get(PLOT_ID), written, [b[3] for b in sorted(born, key=lambda b: b[:3])]
    )
    return out
