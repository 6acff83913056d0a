"""The long story: retention, knowledge boundaries, false belief and future leakage.

Input: JSON Lines with a ``meta`` line, ``turn`` lines (the accepted text of each turn, in
order) and ``probe`` lines (a question to ask after turn ``turn`` is committed).

The story is one story in Redis with the world rules its data states: closed containers,
and a listener believes what it is told (``trust="always"``: the story gives no reason to
distrust); nested beliefs to depth 4. Turn 0 introduces the cast, the places and the
containers of ``meta`` (entities only: nothing is known of them yet); each turn is then
committed through the offline memory-builder, and each probe is answered right after its
turn, from the asker's view: W for ``asker: null``, the character's own beliefs otherwise.
``as_of`` probes are answered once the whole story is in, by replaying memory as of their
turn. A probe counts as correct only if the answer is right (the expected value, or
``"unknown"`` for ``expect: refuse``) and the asker's assembled context passes its check
(the answer appears in it, or for ``refuse`` it does not).

The ``shared_memory`` baseline answers every probe from W and assembles every asker's
context from W: one memory that every character reads.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fabula.bench.common import (
    bench_main,
    bench_redis,
    commit_path,
    create_story,
    rate,
    run_id,
    write_answers,
)
from fabula.bench.data import json_lines, malformed, parsing
from fabula.bench.report import print_table, write_json
from fabula.graph.commit import commit_text
from fabula.memory.answer import UNKNOWN, answer
from fabula.memory.delta import DeltaBuilder, TurnDelta
from fabula.memory.recall.assemble import Assembly
from fabula.memory.recall.context import author_context, character_context
from fabula.memory.records import CONTAINER, slug
from fabula.memory.rules import WorldRules
from fabula.memory.store import StoryStore

LONGSTORY_RULES = WorldRules(open_containers=False, trust="always")
CONTEXT_BUDGET = 1200
KINDS = ("retention", "known", "unknown", "reality", "false_belief", "as_of")


@dataclass(frozen=True)
class Probe:
    index: int
    turn: int
    asker: str | None
    question: str
    expect: str  # "answer" or "refuse"
    fact: str  # the probe's answer field: what must (or must not) be known
    kind: str

    @property
    def gold(self) -> str:
        return self.fact if self.expect == "answer" else UNKNOWN


@dataclass(frozen=True)
class LongStory:
    meta: dict[str, Any]
    turns: dict[int, str]
    probes: list[Probe]


KIND = "long-story"


def load_longstory(path: str | Path) -> LongStory:
    """A long story's meta line, turns and probes. Raises
    :class:`~fabula.errors.InvalidInput` for a file that is not one."""
    meta: dict[str, Any] = {}
    turns: dict[int, str] = {}
    probes: list[Probe] = []
    for where, raw in json_lines(path, KIND):
        with parsing(path, KIND, where):
            kind = raw["type"]
            if kind == "meta":
                meta = raw
            elif kind == "turn":
                turns[int(raw["turn"])] = str(raw["text"])
            elif kind == "probe":
                probes.append(
                    Probe(
                        index=len(probes),
                        turn=int(raw["turn"]),
                        asker=raw.get("asker"),
                        question=str(raw["question"]),
                        expect=str(raw["expect"]),
                        fact=str(raw["answer"]),
                        kind=str(raw["kind"]),
                    )
                )
            else:
                raise ValueError(f"unknown type {kind!r} (meta, turn or probe)")
    if not turns:
        raise malformed(path, KIND, "", "no turns")
    return LongStory(meta, turns, probes)


def setup_delta(meta: dict[str, Any]) -> TurnDelta:
    """Turn 0: the cast, the places and their containers, as entities only."""
    characters = [str(c) for c in meta.get("characters", [])]
    places = [str(p) for p in meta.get("places", [])]
    containers: dict[str, list[str]] = meta.get("containers", {})
    text = (
        f"{meta.get('title', 'A story')}. Characters: {', '.join(characters)}. "
        f"Places: {', '.join(places)}."
    )
    builder = DeltaBuilder(0, text)
    for name in characters:
        builder.entity("character", name)
    for name in places:
        builder.entity("place", name)
    for place, names in containers.items():
        for name in names:
            builder.entity(
                "object", str(name), attributes={"role": CONTAINER}, description=f"in {place}"
            )
    return builder.build()


@dataclass
class _Outcome:
    answer: str
    context_ok: bool
    baseline: str
    baseline_context_ok: bool
    tokens: int = 0


def _passes(probe: Probe, given: str, context: str) -> bool:
    if probe.expect == "answer":
        return probe.fact in context
    return probe.fact not in context


async def _context(
    store: StoryStore, asker: str | None, question: str, as_of: int | None, budget: int
) -> Assembly:
    """The asker's planned-recall context: the author's, or the character's own."""
    if asker is None:
        return await author_context(store, question, budget=budget, as_of=as_of)
    await store.require_character(slug(asker))
    return await character_context(
        store.client, store.story, store.branch, slug(asker), question, budget=budget, as_of=as_of
    )


async def _ask(store: StoryStore, probe: Probe, as_of: int | None, budget: int) -> _Outcome:
    own = await answer(store, probe.question, asker=probe.asker, as_of=as_of)
    context = await _context(store, probe.asker, probe.question, as_of, budget)
    shared = await answer(store, probe.question, asker=probe.asker, as_of=as_of, shared=True)
    shared_context = await _context(store, None, probe.question, as_of, budget)
    return _Outcome(
        own,
        _passes(probe, own, context.text),
        shared,
        _passes(probe, shared, shared_context.text),
        context.tokens,
    )


async def run_longstory(
    path: str | Path,
    *,
    redis_url: str | None,
    json_out: str | Path | None = None,
    answers_out: str | Path | None = None,
    quiet: bool = False,
    budget: int = CONTEXT_BUDGET,
) -> dict[str, Any]:
    """Run the long story; print a table, write the JSON and answers if asked; return it.

    Every context is assembled within ``budget`` tokens.
    """
    story = load_longstory(path)
    outcomes: dict[int, _Outcome] = {}
    started = time.perf_counter()
    async with bench_redis(redis_url) as client:
        store = await create_story(
            client,
            f"longstory-{run_id()}",
            LONGSTORY_RULES,
            world="longstory",
            title=str(story.meta.get("title", "long story")),
            setup=setup_delta(story.meta),
        )
        try:
            commits = commit_path()
            live = [p for p in story.probes if p.kind != "as_of"]
            for turn in sorted(story.turns):
                await commit_text(commits, store, turn, story.turns[turn])
                for probe in (p for p in live if p.turn == turn):
                    outcomes[probe.index] = await _ask(store, probe, None, budget)
            for probe in (p for p in story.probes if p.kind == "as_of"):
                outcomes[probe.index] = await _ask(store, probe, probe.turn, budget)
        finally:
            await store.delete()
    seconds = round(time.perf_counter() - started, 3)
    result = summarise(story, outcomes, seconds)
    result["context_budget"] = budget
    result["mean_tokens"] = round(
        sum(o.tokens for o in outcomes.values()) / max(len(outcomes), 1), 1
    )
    if not quiet:
        _print(result)
    write_json(json_out, result)
    write_answers(answers_out, _answer_rows(story, outcomes))
    return result


def _answer_rows(story: LongStory, outcomes: dict[int, _Outcome]) -> Iterator[dict[str, Any]]:
    """Each probe asked, with its answer, the gold one, and how its context and the
    shared-memory baseline did, in the story's order."""
    return (
        {
            "index": p.index,
            "question": p.question,
            "answer": outcomes[p.index].answer,
            "gold": p.gold,
            "asker": p.asker,
            "turn": p.turn,
            "kind": p.kind,
            "expect": p.expect,
            "context_ok": outcomes[p.index].context_ok,
            "shared_memory": outcomes[p.index].baseline,
        }
        for p in story.probes
        if p.index in outcomes
    )


def _figures(story: LongStory, hits: dict[int, bool]) -> dict[str, Any]:
    by_kind: dict[str, list[bool]] = {}
    for probe in story.probes:
        by_kind.setdefault(probe.kind, []).append(hits[probe.index])
    ordered = [k for k in KINDS if k in by_kind] + sorted(set(by_kind) - set(KINDS))
    return {
        "accuracy": rate(hits[p.index] for p in story.probes),
        "by_kind": {k: rate(by_kind[k]) for k in ordered},
    }


def summarise(story: LongStory, outcomes: dict[int, _Outcome], seconds: float) -> dict[str, Any]:
    ours = {
        p.index: outcomes[p.index].answer == p.gold and outcomes[p.index].context_ok
        for p in story.probes
    }
    shared = {
        p.index: outcomes[p.index].baseline == p.gold and outcomes[p.index].baseline_context_ok
        for p in story.probes
    }
    return {
        "benchmark": "longstory",
        "probes": len(story.probes),
        "answers": _figures(story, ours),
        "seconds": seconds,
        "turns": len(story.turns),
        "baselines": {"shared_memory": _figures(story, shared)},
        "misses": [
            {
                "index": p.index,
                "turn": p.turn,
                "asker": p.asker,
                "kind": p.kind,
                "question": p.question,
                "answer": outcomes[p.index].answer,
                "gold": p.gold,
                "context_ok": outcomes[p.index].context_ok,
            }
            for p in story.probes
            if not ours[p.index]
        ],
    }


def _print(result: dict[str, Any]) -> None:
    ours = result["answers"]
    base = result["baselines"]["shared_memory"]
    rows = [(k, f"{v:.4f}", f"{base['by_kind'][k]:.4f}") for k, v in ours["by_kind"].items()]
    rows.append(("all", f"{ours['accuracy']:.4f}", f"{base['accuracy']:.4f}"))
    title = (
        f"Long story: {result['probes']} probes over {result['turns']} turns, contexts within "
        f"{result['context_budget']} tokens (mean {result['mean_tokens']}), {result['seconds']} s"
    )
    print_table(title, ["kind", "fabula", "shared memory"], rows)


def main(argv: Sequence[str] | None = None) -> int:
    return bench_main("longstory", run_longstory, argv)


if __name__ == "__main__":
    raise SystemExit(main())
