"""What a pending turn would do: its delta read as changes to W and to each mind, and its
draft cut into sentences with the critic's findings beside the sentences they concern."""

from __future__ import annotations

from collections.abc import Sequence

from fabula.agents.contracts import Finding
from fabula.errors import NotFound
from fabula.graph.service.responses.turns import Change, ChangeKind, ChangesOut, SentenceOut
from fabula.memory.delta import TurnDelta
from fabula.memory.projections import project_beliefs, project_developments, project_world
from fabula.memory.records import Belief, SharedBelief, State
from fabula.memory.store.view import StoryReads
from fabula.memory.text import split_sentences
from fabula.memory.tracking.nested import merged


def sentences_of(text: str, findings: Sequence[Finding]) -> list[SentenceOut]:
    """``text`` cut into sentences (as memory cuts them), each with the findings whose quote
    lies in it.

    A finding with no quote, or one that no sentence contains, goes with the last sentence.
    """
    parts = [text[a:b] for a, b in split_sentences(text)] or [text]
    attached: list[list[Finding]] = [[] for _ in parts]
    for finding in findings:
        quote = finding.quote.strip()
        index = next((i for i, p in enumerate(parts) if quote and quote in p), None)
        if index is None and quote:
            index = next((i for i, p in enumerate(parts) if p and p in quote), None)
        attached[len(parts) - 1 if index is None else index].append(finding)
    return [SentenceOut(text=p, findings=f) for p, f in zip(parts, attached, strict=True)]


def _shown(value: str, polarity: bool, names: dict[str, str]) -> str:
    name = names.get(value, value)
    return name if polarity else f"not {name}"


def _change(
    before: State | Belief | None,
    after: State | Belief,
    names: dict[str, str],
    holder: tuple[str, ...] = (),
) -> Change | None:
    """How ``after`` changes the slot ``before`` held, or None when it changes nothing."""
    if before is not None and (before.value, before.polarity) == (after.value, after.polarity):
        return None
    kind: ChangeKind
    if before is None:
        kind = "added"
    elif before.polarity and not after.polarity:
        kind = "closed"
    else:
        kind = "changed"
    return Change(
        kind=kind,
        holder=[names.get(h, h) for h in holder],
        subject=names.get(after.subject, after.subject),
        attribute=after.attribute,
        before=None if before is None else _shown(before.value, before.polarity, names),
        after=_shown(after.value, after.polarity, names),
        mode=after.mode if isinstance(after, Belief) else None,
    )


SHOWN_GROUP = 8
"""The largest group whose chains of two a pending turn's changes list one by one (what
each member would think each other believes); a larger group's is one change, its holder
the group."""


async def _shared_changes(
    store: StoryReads, delta: TurnDelta, names: dict[str, str]
) -> list[Change]:
    """What the delta's shared beliefs would change in the nested chains of two over their
    groups (a larger group: one change for the group, as against nothing held)."""
    out: list[Change] = []
    reached: dict[tuple[tuple[str, ...], str], list[SharedBelief]] = {}
    for shared in delta.shared:
        if len(shared.group) > SHOWN_GROUP:
            out.append(
                Change(
                    kind="changed",
                    holder=[names.get(h, h) for h in shared.group],
                    subject=names.get(shared.subject, shared.subject),
                    attribute=shared.attribute,
                    after=_shown(shared.value, shared.polarity, names),
                    mode=shared.mode,
                )
            )
            continue
        for a in shared.group:
            for b in shared.group:
                if a != b:
                    reached.setdefault(((a, b), shared.slot), []).append(shared)
    last: dict[tuple[tuple[str, ...], str], Belief] = {}
    for (chain, slot), records in reached.items():
        taken = merged(chain, records, []).get(slot)
        if taken:
            last[(chain, slot)] = taken[-1]
    for (chain, slot), belief in sorted(last.items(), key=lambda kv: kv[0]):
        try:
            held = (await project_beliefs(store, chain)).beliefs
        except NotFound:  # a character this very turn brings into the story
            held = {}
        change = _change(held.get(slot), belief, names, chain)
        if change is not None:
            out.append(change)
    return out


async def changes_of(store: StoryReads, delta: TurnDelta) -> ChangesOut:
    """What committing ``delta`` on ``store``'s branch would change, compared with now."""
    names = {e.id: e.name for e in (await store.entities()).values()}
    names.update({e.id: e.name for e in delta.entities})
    current = await project_world(store)
    world: list[Change] = []
    last_state: dict[str, State] = {}
    for state in delta.states:
        last_state[state.slot] = state
    for slot, state in last_state.items():
        change = _change(current.states.get(slot), state, names)
        if change is not None:
            world.append(change)
    minds: list[Change] = []
    by_chain: dict[tuple[str, ...], dict[str, Belief]] = {}
    for belief in delta.beliefs:
        by_chain.setdefault(belief.holder, {})[belief.slot] = belief
    for chain in sorted(by_chain):
        try:
            held = (await project_beliefs(store, chain)).beliefs
        except NotFound:  # a character this very turn brings into the story
            held = {}
        for slot, belief in by_chain[chain].items():
            change = _change(held.get(slot), belief, names, chain)
            if change is not None:
                minds.append(change)
    minds += await _shared_changes(store, delta, names)
    titles = {d.id: d.title for d in (await project_developments(store)).values()}
    proposed = [f"proposed: {h.premise}" for h in delta.hypotheses]
    return ChangesOut(
        events=[f"{e.kind}: {e.span.quote}" for e in delta.events],
        world=world,
        beliefs=minds,
        developments=[
            f"{d.title or titles.get(d.id, d.id)}: {d.change.status}"
            + (f" ({d.change.note})" if d.change.note else "")
            for d in delta.developments
        ],
        hypotheses=proposed + [f"realised: {h.premise}" for h in delta.realised],
    )
