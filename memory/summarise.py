"""Summaries of the hierarchy's closed nodes written by a model (model mode).

Consolidation (:mod:`fabula.memory.hierarchy`) gives every node an extractive summary (its most
central lines) and a plain title; that is the offline summary, and it stays wherever no
model is configured. In model mode, :func:`summarise_closed` runs after consolidation, outside
its transaction, and asks a :class:`Summariser` for a short summary and a readable title:

- of a **closed scene** (any scene but the last, which may still grow), from the author's
  text of its turns — the omniscient view, shown to the author's roles only (characters
  never read the hierarchy);
- of a **plotline** whose scenes are all closed and summarised, from their summaries;
- of the **plot**, from its plotlines' summaries, when its extractive summary is new (the
  consolidation writes one each time a plotline is born, and leaves a model's alone otherwise).

Each answer is written with a compare-and-set (only if the node is unchanged since it was
read) and marked ``summary_by="model"``; a node the model gives no usable answer for keeps
its extractive summary, marked ``"kept"``, and a warning is logged; when the model cannot
be reached, the node stays as it is and the next run asks again. A run makes at most
``limit`` model calls; nothing it does can make consolidation fail or a turn wait.

Safe to run twice or concurrently: a node is asked for only while its summary is still
extractive, and only by the run holding its claim (a key with an expiry, re-read once
held), so two runs never ask for the same node. The bookkeeping hash holds the first turn
of the last closed scene that is done (a run reads only the scenes after it, not the whole
tree) and the plotlines waiting for an answer. A plotline is looked at when the scene that
joined it last is done; a plotline consolidation rebuilds (a new scene joined it) is extractive
again, and asked for again once that scene is done.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field, field_validator
from redis.exceptions import WatchError

from fabula.errors import FabulaError, ModelOutputError, StoryDeleted
from fabula.logs import get_logger
from fabula.memory import keys
from fabula.memory.connection import transaction
from fabula.memory.consolidation import PLOT_ID, plotline_id
from fabula.memory.projections import project_developments
from fabula.memory.records import Development, HierarchyNode
from fabula.memory.store import StoryStore

log = get_logger(__name__)

TITLE_CHARS = 80
SUMMARY_CHARS = 600
INPUT_CHARS = 8000  # the most text of a node's lines a request carries
CLAIM_S = 600  # a claim held by a run that died is free again after this
_MARK = "@through"


class SummaryRequest(BaseModel):
    """What a summariser is given for one node.

    A scene's ``lines`` are the author's text of its turns (each cut to share
    :data:`INPUT_CHARS`); a plotline's are its scenes' ``"turns a-b, title: summary"``,
    in story order, and ``joins`` says what joins them (a development, a state's changes);
    the plot's are its plotlines' the same way.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    node: str
    level: Literal["scene", "plotline", "plot"]
    first_turn: int
    last_turn: int
    title: str
    joins: str = ""
    lines: tuple[str, ...]


class NodeSummary(BaseModel):
    """A node's summary and title: plain text on one line each (whitespace is folded),
    neither blank, the title at most 80 characters and the summary at most 600."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    title: str = Field(min_length=1, max_length=TITLE_CHARS)
    summary: str = Field(min_length=1, max_length=SUMMARY_CHARS)

    @field_validator("title", "summary", mode="before")
    @classmethod
    def _one_line(cls, value: object) -> object:
        return " ".join(value.split()) if isinstance(value, str) else value


class Summariser(Protocol):
    """Writes one node's summary; raises :class:`~fabula.errors.ModelOutputError`
    when it gives no valid one, another :class:`~fabula.errors.FabulaError` when it
    cannot answer now (the model is unreachable)."""

    async def summarise(self, request: SummaryRequest) -> NodeSummary:
        """The summary and title of the node ``request`` describes."""
        ...


@dataclass(frozen=True)
class Summarised:
    """What one run did: summaries written by the model, nodes kept extractive for good,
    and whether nodes are left for a later run (its call limit, a model not reachable)."""

    model: int = 0
    kept: int = 0
    more: bool = False


Outcome = Literal["model", "kept", "busy", "failed"]


@dataclass
class _Run:
    """One run's model calls against its limit, and what they gave."""

    store: StoryStore
    summariser: Summariser
    limit: int
    calls: int = 0
    model: int = 0
    kept: int = 0
    stopped: bool = False  # the limit reached, or the model not reachable

    async def ask(self, node: HierarchyNode, raw: str, request: SummaryRequest) -> Outcome:
        self.calls += 1
        outcome = await _ask(self.store, self.summariser, node, raw, request)
        if outcome == "model":
            self.model += 1
        elif outcome == "kept":
            self.kept += 1
        elif outcome == "failed":
            self.stopped = True
        return outcome

    def may_ask(self) -> bool:
        if self.calls >= self.limit:
            self.stopped = True
        return not self.stopped


async def summarise_closed(
    store: StoryStore, summariser: Summariser, *, limit: int = 8
) -> Summarised:
    """Ask ``summariser`` for the closed nodes of the branch whose summaries are still
    extractive, at most ``limit`` of them (see the module docstring); returns what it did.
    Model failures are logged, never raised; Redis errors are raised."""
    run = _Run(store, summariser, limit)
    book = await store.client.hgetall(keys.hierarchy_summaries(store.story, store.branch))
    before = int(book.get(_MARK, -1))
    mark, passed = await _scenes(run, before)
    pending = {k for k in book if not k.startswith("@")}
    waiting = pending | await _plotlines_of(store, passed)
    done = await _plotlines(run, sorted(waiting), mark)
    await _plot(run)
    if mark != before or done or waiting != pending:
        await _book(store, mark, waiting - done, done & pending)
    return Summarised(model=run.model, kept=run.kept, more=run.stopped)


async def _scenes(run: _Run, mark: int) -> tuple[int, list[str]]:
    """Summarise the closed scenes after ``mark`` in story order; returns the new mark
    (the first turn of the last scene done, with none before it left) and the scenes it
    passed."""
    store = run.store
    after = await store.client.zrange(
        keys.hierarchy_scenes(store.story, store.branch), f"({mark}", "+inf", byscore=True
    )
    closed = list(after[:-1])  # the last scene may still grow
    raws = await _raw_nodes(store, closed)
    passed: list[str] = []
    for scene_id in closed:
        raw = raws.get(scene_id)
        if raw is None:
            break
        node = HierarchyNode.model_validate_json(raw)
        if node.summary_by == "extractive":
            if not run.may_ask():
                break
            request = await _scene_request(store, node)
            if await run.ask(node, raw, request) in ("busy", "failed"):
                break  # a run holding it moves the mark on; a model down: asked again later
        mark = node.first_turn
        passed.append(scene_id)
    return mark, passed


async def _plotlines(run: _Run, line_ids: Sequence[str], mark: int) -> set[str]:
    """Summarise those of ``line_ids`` whose scenes are all done (at or before ``mark``);
    returns the ids no longer waiting (done, gone, or not ready: a plotline is looked at
    again when the scene that joined it last is done)."""
    store = run.store
    lines = await _raw_nodes(store, line_ids)
    developments: dict[str, Development] | None = None
    done: set[str] = set()
    for line_id in line_ids:
        raw = lines.get(line_id)
        line = HierarchyNode.model_validate_json(raw) if raw else None
        if raw is None or line is None or line.summary_by != "extractive":
            done.add(line_id)
            continue
        children = await _raw_nodes(store, line.children)
        scenes = [
            HierarchyNode.model_validate_json(children[c]) for c in line.children if c in children
        ]
        ready = len(scenes) == len(line.children) and all(
            s.first_turn <= mark and s.summary_by != "extractive" for s in scenes
        )
        if not ready:
            done.add(line_id)
            continue
        if not run.may_ask():
            continue
        if developments is None:
            developments = await project_developments(store)
        request = _plotline_request(line, scenes, developments)
        if await run.ask(line, raw, request) in ("model", "kept"):
            done.add(line_id)
    return done


async def _plot(run: _Run) -> None:
    """Summarise the plot from its plotlines' summaries, if its summary is extractive."""
    store = run.store
    raw = (await _raw_nodes(store, [PLOT_ID])).get(PLOT_ID)
    if raw is None:
        return
    node = HierarchyNode.model_validate_json(raw)
    if node.summary_by != "extractive" or not run.may_ask():
        return
    found = await _raw_nodes(store, node.children)
    lines = sorted(
        (HierarchyNode.model_validate_json(v) for v in found.values()),
        key=lambda n: (n.first_turn, n.id),
    )
    if not lines:
        return
    request = SummaryRequest(
        node=node.id,
        level="plot",
        first_turn=node.first_turn,
        last_turn=node.last_turn,
        title=node.title,
        lines=_fit([_member_line(n) for n in lines]),
    )
    await run.ask(node, raw, request)


async def _raw_nodes(store: StoryStore, ids: Sequence[str]) -> dict[str, str]:
    if not ids:
        return {}
    values = await store.client.hmget(keys.hierarchy(store.story, store.branch), list(ids))
    return {i: v for i, v in zip(ids, values, strict=True) if v is not None}


async def _plotlines_of(store: StoryStore, scene_ids: Sequence[str]) -> set[str]:
    if not scene_ids:
        return set()
    ups = await store.client.hmget(keys.hierarchy_up(store.story, store.branch), scene_ids)
    return {line for up in ups if up for line in json.loads(up)}


async def _scene_request(store: StoryStore, scene: HierarchyNode) -> SummaryRequest:
    texts = await store.turn_texts(scene.first_turn, scene.last_turn)
    lines = _fit([t.text.strip() for t in texts if t.text.strip()] or [scene.summary])
    return SummaryRequest(
        node=scene.id,
        level="scene",
        first_turn=scene.first_turn,
        last_turn=scene.last_turn,
        title=scene.title,
        lines=lines,
    )


def _plotline_request(
    line: HierarchyNode, scenes: Sequence[HierarchyNode], developments: dict[str, Development]
) -> SummaryRequest:
    joins = line.title
    for dev in developments.values():
        if line.id == plotline_id(f"dev:{dev.id}"):
            joins = f"the development {dev.title!r} ({dev.kind})"
    lines = _fit([_member_line(s) for s in scenes])
    return SummaryRequest(
        node=line.id,
        level="plotline",
        first_turn=line.first_turn,
        last_turn=line.last_turn,
        title=line.title,
        joins=joins,
        lines=lines,
    )


def _member_line(node: HierarchyNode) -> str:
    """A member of a plotline (a scene) or of the plot (a plotline), as the model reads it."""
    return f"turns {node.first_turn}-{node.last_turn}, {node.title}: {node.summary}"


def _fit(lines: Sequence[str], chars: int = INPUT_CHARS) -> tuple[str, ...]:
    """``lines`` within about ``chars``: each cut to an equal share of at least 200
    characters; when even that is too much, the first line and the latest that fit, with
    a note of how many were left out between them."""
    share = max(200, chars // max(1, len(lines)))
    cut = [_cut(line, share) for line in lines]
    room = max(2, chars // share)
    if len(cut) <= room:
        return tuple(cut)
    latest = cut[len(cut) - room + 1 :]
    return (cut[0], f"[{len(cut) - room} more left out here]", *latest)


def _cut(text: str, chars: int) -> str:
    if len(text) <= chars:
        return text
    return text[:chars].rsplit(" ", 1)[0] + " …"


async def _ask(
    store: StoryStore,
    summariser: Summariser,
    node: HierarchyNode,
    raw: str,
    request: SummaryRequest,
) -> Outcome:
    """Claim ``node``, ask for its summary and write it if the node is unchanged."""
    client = store.client
    claim = keys.summary_claim(store.story, store.branch, node.id)
    token = secrets.token_hex(8)
    if not await client.set(claim, token, nx=True, ex=CLAIM_S):
        return "busy"
    where = {"story": store.story, "branch": store.branch, "node": node.id}
    try:
        # re-read once held: a run that wrote it and let its claim go came first
        if await client.hget(keys.hierarchy(store.story, store.branch), node.id) != raw:
            return "busy"
        try:
            answer = await summariser.summarise(request)
            new = node.model_copy(
                update={"title": answer.title, "summary": answer.summary, "summary_by": "model"}
            )
        except ModelOutputError as error:
            log.warning("summary_kept_extractive", **where, error=str(error))
            new = node.model_copy(update={"summary_by": "kept"})
        except Exception as error:  # a summary never breaks consolidation: asked again later
            if not isinstance(error, FabulaError):
                log.warning("summariser_error", **where, error=f"{type(error).__name__}: {error}")
            else:
                log.warning("summariser_unavailable", **where, error=str(error))
            return "failed"
        if not await _replace(store, node.id, raw, new):
            return "busy"
        return "model" if new.summary_by == "model" else "kept"
    finally:
        if await client.get(claim) == token:
            await client.delete(claim)


async def _replace(store: StoryStore, node_id: str, raw: str, new: HierarchyNode) -> bool:
    """Write ``new`` over ``node_id`` only if it still reads ``raw`` (False if it changed)."""
    tree_key = keys.hierarchy(store.story, store.branch)
    for _ in range(16):  # consolidation writing the tree meanwhile: read again
        try:
            async with transaction(store.client, tree_key) as pipe:
                await pipe.watch(tree_key)
                if await pipe.hget(tree_key, node_id) != raw:
                    return False
                pipe.multi()
                pipe.hset(tree_key, node_id, new.model_dump_json())
                await pipe.execute()
                return True
        except WatchError:
            continue
    return False


async def _book(store: StoryStore, mark: int, waiting: set[str], done: set[str]) -> None:
    """Move the mark on (never back) and note the plotlines still waiting."""
    book_key = keys.hierarchy_summaries(store.story, store.branch)
    while True:
        try:
            async with transaction(store.client, book_key) as pipe:
                await pipe.watch(book_key)
                try:
                    await store.watch_alive(pipe)
                except StoryDeleted:
                    return  # deleted meanwhile: no bookkeeping is left to keep
                raw = await pipe.hget(book_key, _MARK)
                pipe.multi()
                if raw is None or int(raw) < mark:
                    pipe.hset(book_key, _MARK, str(mark))
                if waiting:
                    pipe.hset(book_key, mapping=dict.fromkeys(sorted(waiting), "1"))
                if done:
                    pipe.hdel(book_key, *sorted(done))
                await pipe.execute()
                return
        except WatchError:
            continue
