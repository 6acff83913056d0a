"""Rewinding a branch: turn T becomes its head, and what came after is kept as a branch.

:func:`rewind` copies every key of the branch (its turns, events, W, every mind's beliefs,
shared logs, rosters and memories, D, H, the hierarchy, the usage) to a new branch forked
from it at T, whose own keys so hold the turns after T, then truncates the branch in place
to T, in one transaction: a record opened after T goes, a record closed after T is open
again (its stored JSON as it was before it was closed), D and H are as they stood at T
(``as_of``). Nothing is deleted from the story: the turns after T are the new branch's.

The episode indexes and the hierarchy are derived data: the branch's are dropped and built
again from its turns (the caller does so, see :meth:`fabula.graph.service.Fabula.rewind`),
and the new branch's index is built for its own turns.

Refused, with one line and nothing written: a branch with a child forked after T (it reads
turns the branch would no longer have), a T outside the branch's own turns, a name taken.
A turn awaiting approval is the caller's to refuse (the checkpointer knows it).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from redis.exceptions import WatchError

from fabula.errors import Conflict, InvalidInput
from fabula.memory import keys
from fabula.memory.connection import transaction
from fabula.memory.lineage import MAIN, Branch
from fabula.memory.projections import parse_beliefs, parse_states
from fabula.memory.records import Belief, Development, Hypothesis, State, event_turn
from fabula.memory.store import StoryStore

_CLOSED = ',"valid_to":'


@dataclass(frozen=True)
class RewindPlan:
    """What a rewind did: the branch now ends at ``turn``; ``kept`` holds what came after
    (turns ``turn + 1`` .. ``old_head``)."""

    story: str
    branch: str
    turn: int
    old_head: int
    kept: str


def _reopened(raw: str) -> str:
    """A closed record's stored JSON as it was while it was open (see
    :mod:`fabula.memory.payload`: closing appends ``,"valid_to":<turn>`` before ``}``)."""
    at = raw.rfind(_CLOSED)
    return raw if at < 0 else raw[:at] + "}"


def _cut(
    records: Sequence[State | Belief], raws: Sequence[str], turn: int
) -> tuple[dict[str, str], dict[str, str], dict[str, int]]:
    """Records (``raws``, parsed as ``records``) truncated to ``turn``: the current ones by
    id (to be placed by slot), the closed ones by id, and every kept id's ``valid_from``."""
    cur: dict[str, str] = {}
    rec: dict[str, str] = {}
    frm: dict[str, int] = {}
    for record, raw in zip(records, raws, strict=True):
        if record.valid_from > turn:
            continue
        frm[record.id] = record.valid_from
        if record.valid_to is None or record.valid_to > turn:
            cur[record.id] = _reopened(raw)
        else:
            rec[record.id] = raw
    return cur, rec, frm


def branch_keys(story: str, branch: str, characters: Iterable[str]) -> tuple[str, ...]:
    """The SCAN patterns of every key of ``branch`` (its own keys and its minds')."""
    own = f"{keys.meta(story)[: -len('meta')]}b:{branch}:*"
    return (own, *(f"{keys.mind_prefix(story, c)}{branch}:*" for c in characters))


def _renamed(key: str, story: str, branch: str, to: str, characters: Iterable[str]) -> str:
    """``key`` of ``branch`` as the same key of branch ``to``."""
    own = f"{keys.meta(story)[: -len('meta')]}b:{branch}:"
    if key.startswith(own):
        return f"{own[: -len(branch) - 1]}{to}:{key[len(own) :]}"
    for c in characters:
        mind = f"{keys.mind_prefix(story, c)}{branch}:"
        if key.startswith(mind):
            return f"{keys.mind_prefix(story, c)}{to}:{key[len(mind) :]}"
    raise AssertionError(f"{key} is not a key of branch {branch}")  # pragma: no cover


def _derived(story: str, branch: str, characters: Iterable[str]) -> tuple[str, ...]:
    """Prefixes of the branch's derived keys (episode indexes of every generation, the
    hierarchy) and of its transient ones (locks, claims, fences): never copied."""
    out = [
        keys.hierarchy(story, branch),
        keys.decision_lock(story, branch, 0)[:-1],
        keys.fence(story, branch, 0)[:-1],
    ]
    for generation in range(1, keys.INDEX_GENERATION + 1):
        out.append(keys.index_prefix(story, branch, None, generation))
        out.extend(keys.index_prefix(story, branch, c, generation) for c in characters)
    return tuple(out)


async def rewind(store: StoryStore, to_turn: int, keep: str) -> RewindPlan:
    """Make ``to_turn`` the head of ``store``'s branch; its later turns become branch
    ``keep``, forked from it at ``to_turn`` (see the module docstring).

    Raises (nothing written) :class:`InvalidInput` for a turn that is not one of the
    branch's own before its head, :class:`Conflict` for a taken name, a child branch forked
    after ``to_turn``, or a branch that moved while it was read.
    """
    await store.require()
    keys.check_id(keep, "branch")
    story, branch = store.story, store.branch
    where = {"story": story, "branch": branch}
    head, table = await _checked(store, to_turn, keep)
    characters = await store.characters()
    client = store.client
    every: list[str] = []
    for pattern in branch_keys(story, branch, characters):
        every.extend([k async for k in client.scan_iter(match=pattern, count=1000)])
    copied, gone = _sorted_keys(every, story, branch, characters, to_turn)
    # what the branch holds, truncated to the turn (read before the transaction, checked by
    # the head it was read at: every commit moves it)
    cut = await _truncated(store, to_turn, characters, every)
    entry = Branch(
        keep,
        parent=branch,
        fork_turn=to_turn,
        pursue=table[branch].pursue if branch in table else None,
    )
    async with transaction(client, keys.head(story, branch)) as pipe:
        try:
            await pipe.watch(keys.head(story, branch), keys.branches(story))
            now = await pipe.hget(keys.head(story, branch), "turn")
            if now is None or int(now) != head or await pipe.hexists(keys.branches(story), keep):
                raise WatchError
            pipe.multi()
            for key in copied:
                pipe.copy(key, _renamed(key, story, branch, keep, characters))
            pipe.hset(keys.branches(story), keep, entry.to_stored())
            if gone:
                pipe.delete(*gone)
            cut.write(pipe, story, branch)
            pipe.hset(keys.head(story, branch), "turn", to_turn)
            await pipe.execute()
        except WatchError:
            raise Conflict(
                f"branch {branch!r} of {story!r} moved while it was rewound (a turn was "
                "committed or a branch made): nothing changed, try again",
                **where,
            ) from None
    return RewindPlan(story, branch, to_turn, head, keep)


async def _checked(store: StoryStore, to_turn: int, keep: str) -> tuple[int, dict[str, Branch]]:
    """The branch's head and the story's branch table, once ``to_turn`` and ``keep`` are
    checked: :class:`InvalidInput` for a turn outside the branch's own before its head,
    :class:`Conflict` for a taken name or a child branch forked after ``to_turn``."""
    story, branch = store.story, store.branch
    where = {"story": story, "branch": branch}
    head = await store.head()
    ancestry = await store.ancestry()
    first = ancestry[0].through if ancestry else 0
    if not first <= to_turn < head:
        forked = f", it forked at {first})" if ancestry else ")"
        if to_turn < 0:
            why = "turns are numbered from 0"
        elif first >= head:
            why = f"it has no turn of its own before its head to go back to (its head is {head}"
            why += forked
        else:
            why = f"it can go back to a turn in {first}..{head - 1} (its head is {head}{forked}"
        raise InvalidInput(
            f"cannot rewind branch {branch!r} to turn {to_turn}: {why}", **where, turn=to_turn
        )
    table = await store.branches()
    if keep == MAIN or keep in table:
        raise Conflict(f"story {story!r} already has a branch {keep!r}", **where)
    later = sorted(
        n
        for n, b in table.items()
        if b.parent == branch and b.fork_turn is not None and b.fork_turn > to_turn
    )
    if later:
        raise Conflict(
            f"cannot rewind branch {branch!r} to turn {to_turn}: branch {later[0]!r} was "
            f"forked from it at turn {table[later[0]].fork_turn} and reads those turns",
            **where,
            turn=to_turn,
        )
    return head, table


def _sorted_keys(
    every: Sequence[str], story: str, branch: str, characters: Iterable[str], to_turn: int
) -> tuple[list[str], list[str]]:
    """The branch's keys (``every``) sorted for a rewind to ``to_turn``: those copied to the
    kept branch (all but the derived and transient ones), and those deleted (the derived
    ones, the fences and alternative drafts of the later turns)."""
    derived = _derived(story, branch, characters)
    fence = keys.fence(story, branch, 0)[:-1]
    copied = sorted(k for k in every if not k.startswith(derived))
    dropped = sorted(k for k in every if k.startswith(derived) and not k.startswith(fence))
    fences = [k for k in every if k.startswith(fence) and int(k.rsplit(":", 1)[1]) > to_turn]
    # the alternative drafts of the later turns go with them (the kept branch has copies)
    drafts = keys.drafts(story, branch, 0)[:-1]
    fences += [k for k in every if k.startswith(drafts) and int(k.rsplit(":", 1)[1]) > to_turn]
    return copied, [*dropped, *fences]


@dataclass
class _Truncated:
    """The branch's own records truncated to the turn: W, the later turns', events' and
    usage's fields (to go), D and H as they stood, every mind."""

    world: tuple[dict[str, str], dict[str, str], dict[str, int]]
    late_turns: list[str]
    late_events: list[str]
    late_usage: list[str]
    devs: dict[str, str]
    hyps: dict[str, str]
    minds: dict[str, _Mind]

    def write(self, pipe: object, story: str, branch: str) -> None:
        """Queue the truncated records in ``pipe`` (a transaction)."""
        from typing import Any, cast

        p = cast(Any, pipe)
        _rewrite_records(
            p,
            keys.world_current(story, branch),
            keys.world_records(story, branch),
            keys.world_from(story, branch),
            self.world,
            parse_states(list(self.world[0].values())),
        )
        if self.late_turns:
            p.hdel(keys.turns(story, branch), *self.late_turns)
        if self.late_events:
            p.hdel(keys.events(story, branch), *self.late_events)
        if self.late_usage:
            p.hdel(keys.usage(story, branch), *self.late_usage)
        for key, values in (
            (keys.developments(story, branch), self.devs),
            (keys.hypotheses(story, branch), self.hyps),
        ):
            p.delete(key)
            if values:
                p.hset(key, mapping=values)
        for character, mind in self.minds.items():
            mind.write(p, story, branch, character)


async def _truncated(
    store: StoryStore, to_turn: int, characters: Iterable[str], every: Sequence[str]
) -> _Truncated:
    """What the store's branch holds, truncated to ``to_turn``."""
    story, branch, client = store.story, store.branch, store.client
    raws = [
        *await client.hvals(keys.world_current(story, branch)),
        *await client.hvals(keys.world_records(story, branch)),
    ]
    world = _cut(parse_states(raws), raws, to_turn)
    late_turns = [f for f in await client.hkeys(keys.turns(story, branch)) if int(f) > to_turn]
    events = await client.hkeys(keys.events(story, branch))
    late_events = [e for e in events if event_turn(e) > to_turn]
    late_usage = [f for f in await client.hkeys(keys.usage(story, branch)) if int(f) > to_turn]
    devs = {}
    for ident, raw in (await client.hgetall(keys.developments(story, branch))).items():
        dev = Development.model_validate_json(raw)
        then = dev.as_of(to_turn)
        if then is not None:
            devs[ident] = raw if then.history == dev.history else then.model_dump_json()
    hyps = {}
    for ident, raw in (await client.hgetall(keys.hypotheses(story, branch))).items():
        hyp = Hypothesis.model_validate_json(raw)
        was = hyp.as_of(to_turn)
        if was is not None:
            hyps[ident] = raw if was is hyp else was.model_dump_json()
    minds = {c: await _mind(store, c, to_turn, every) for c in characters}
    return _Truncated(world, late_turns, late_events, late_usage, devs, hyps, minds)


def _rewrite_records(
    pipe: object,
    cur_key: str | None,
    rec_key: str,
    from_key: str,
    cut: tuple[dict[str, str], dict[str, str], dict[str, int]],
    current: Sequence[State] | Sequence[Belief],
    cur_keys: dict[str, str] | None = None,
) -> None:
    """Queue the truncated records: ``cur_key`` by slot (or, for beliefs, the chain's key
    from ``cur_keys``), ``rec_key`` by id, ``from_key`` by ``valid_from``."""
    from typing import Any, cast

    p = cast(Any, pipe)
    cur, rec, frm = cut
    p.delete(rec_key, from_key)
    if rec:
        p.hset(rec_key, mapping=rec)
    if frm:
        p.zadd(from_key, frm)
    by_key: dict[str, dict[str, str]] = {}
    for record in current:
        key = cur_key if cur_keys is None else cur_keys[record.chain]  # type: ignore[union-attr]
        assert key is not None
        by_key.setdefault(key, {})[record.slot] = cur[record.id]
    if cur_key is not None:
        p.delete(cur_key)
    for key, mapping in by_key.items():
        p.hset(key, mapping=mapping)


@dataclass
class _Mind:
    """One character's keys on the branch, truncated to the turn."""

    cut: tuple[dict[str, str], dict[str, str], dict[str, int]]
    current: list[Belief]
    old_cur: list[str]
    chains: set[str]
    shared: list[str]
    groups: dict[str, str]
    memories: list[str]
    known: dict[str, str]

    def write(self, pipe: object, story: str, branch: str, character: str) -> None:
        """Queue this mind's truncated keys in ``pipe`` (a transaction)."""
        from typing import Any, cast

        p = cast(Any, pipe)
        if self.old_cur:
            p.delete(*self.old_cur)
        cur_keys = {c: keys.beliefs_current(story, branch, c) for c in self.chains}
        _rewrite_records(
            p,
            None,
            keys.belief_records(story, branch, character),
            keys.belief_from(story, branch, character),
            self.cut,
            self.current,
            cur_keys,
        )
        for key, values in (
            (keys.belief_chains(story, branch, character), self.chains),
            (keys.shared_log(story, branch, character), self.shared),
            (keys.shared_groups(story, branch, character), self.groups),
            (keys.memories(story, branch, character), self.memories),
            (keys.known_entities(story, branch, character), self.known),
        ):
            p.delete(key)
            if not values:
                continue
            if isinstance(values, dict):
                p.hset(key, mapping=values)
            elif isinstance(values, set):
                p.sadd(key, *sorted(values))
            else:
                p.rpush(key, *values)


async def _mind(store: StoryStore, character: str, turn: int, every: Sequence[str]) -> _Mind:
    """``character``'s keys on the store's branch, truncated to ``turn``."""
    story, branch, client = store.story, store.branch, store.client
    prefix = keys.beliefs_current(story, branch, character)[: -len(character)]
    old_cur = [k for k in every if k.startswith(prefix)]
    raws: list[str] = []
    for key in old_cur:
        raws.extend(await client.hvals(key))
    raws.extend(await client.hvals(keys.belief_records(story, branch, character)))
    beliefs = parse_beliefs(raws)
    cut = _cut(beliefs, raws, turn)
    kept_ids = set(cut[2])
    chains = {b.chain for b in beliefs if b.id in kept_ids}
    current = [b for b in beliefs if b.id in cut[0]]
    lines: list[str] = await client.lrange(keys.shared_log(story, branch, character), 0, -1)
    shared = [line for line in lines if json.loads(line)["valid_from"] <= turn]
    table = await client.hgetall(keys.shared_groups(story, branch, character))
    named = {json.loads(line)["gid"] for line in shared}
    groups = {g: m for g, m in table.items() if g in named}
    mems: list[str] = await client.lrange(keys.memories(story, branch, character), 0, -1)
    memories = [m for m in mems if json.loads(m)["turn"] <= turn]
    raw_known = await client.hgetall(keys.known_entities(story, branch, character))
    known = {i: v for i, v in raw_known.items() if json.loads(v)["known_from"] <= turn}
    return _Mind(cut, current, old_cur, chains, shared, groups, memories, known)


async def drop_branch(store: StoryStore) -> int:
    """Delete a branch that has no child: its keys, its minds' keys on it, its entry.
    Returns the keys removed. Raises :class:`InvalidInput` for main, :class:`Conflict` for
    a branch with a child (that reads through it)."""
    story, branch = store.story, store.branch
    table = await store.branches()
    children = sorted(n for n, b in table.items() if b.parent == branch)
    if branch == MAIN:
        raise InvalidInput(
            f"cannot delete branch {branch!r}: it is the story's first", story=story, branch=branch
        )
    if children:
        raise Conflict(
            f"cannot delete branch {branch!r}: branch {children[0]!r} reads it",
            story=story,
            branch=branch,
        )
    found: list[str] = []
    for pattern in branch_keys(story, branch, await store.characters()):
        found.extend([k async for k in store.client.scan_iter(match=pattern, count=1000)])
    removed = 0
    for i in range(0, len(found), 1000):
        removed += await store.client.delete(*found[i : i + 1000])
    await store.client.hdel(keys.branches(story), branch)
    return removed
