"""``fabula bench model``: model mode over a server that fails as real servers do.

Every role runs on the real ChatOpenAI client, over HTTP, against the test server
(:mod:`fabula.bench.fake_openai`) playing a model that writes the lighthouse story: it plans
(1–2 focal characters, a scene goal marked ``SECRET``), has the characters wait, writes
controlled-English prose (journeys, speech, weather) and reads it back (the offline
extractor behind the HTTP API). On every request it injects faults with fixed odds: 429 or
503 with ``Retry-After`` (10 %), a reply cut at its token limit (5 %), malformed output
(5 %: broken JSON, or an empty passage). T turns run autonomously through the real graph
and Redis.

It checks, for every turn: a committed turn's records are exactly the delta its checkpoint
holds (what the critic read and approval passed); a turn that failed left every key of the
story as it was (a full DUMP compared: a *partial commit* otherwise); and no character's
prompt, in any later turn, held the planner's goal or a sentence whose events it did not
all witness (a *leak*). It reports turns, commits, failures, transport retries and
re-asks, tokens per role and seconds per turn (p50/p95). The baseline in the same run is
the same loop on the same seed with no faults injected.
"""

from __future__ import annotations

import asyncio
import json
import random
import re
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fabula.agents.factory import make_roles
from fabula.agents.memory_builder.extract import extract
from fabula.agents.usage import metering
from fabula.bench.common import run_id
from fabula.bench.fake_openai import TEXT, FakeOpenAI, Reply, message_text, request_schema
from fabula.bench.report import percentiles, print_table, write_json
from fabula.graph.build import thread_id
from fabula.graph.service import Fabula
from fabula.memory.errors import FabulaError
from fabula.memory.records import Event
from fabula.memory.settings import ModelSettings, Settings
from fabula.memory.store import StoryStore
from fabula.memory.text import split_sentences
from fabula.worlds.loader import load_world
from fabula.worlds.pack import WorldPack

__all__ = ["Faults", "StoryModel", "run", "run_model", "story_snapshot"]

SECRET = "SECRET"
FILLER = ("The wind rose.", "Gulls cried over the rocks.", "The lamp turned slowly.")
_WHO = re.compile(r"## Who you are\n.+ \(id ([a-z0-9_]+)\)")


@dataclass(frozen=True)
class Faults:
    """The odds of each fault, per request."""

    unavailable: float = 0.10  # 429 or 503, with Retry-After
    truncated: float = 0.05
    malformed: float = 0.05


NO_FAULTS = Faults(0.0, 0.0, 0.0)


@dataclass
class StoryModel:
    """The test server's model: answers each request by its schema, with faults injected."""

    pack: WorldPack
    faults: Faults
    rng: random.Random
    injected: dict[str, int] = field(default_factory=dict)
    plans: int = 0

    def __call__(self, body: dict[str, Any]) -> Reply:
        roll = self.rng.random()
        if roll < self.faults.unavailable:
            status = self.rng.choice((429, 503))
            self._count(f"http_{status}")
            return Reply(status=status, error="overloaded", retry_after=0.02)
        reply = self._answer(body)
        roll -= self.faults.unavailable
        text = reply.content or ""
        if roll < self.faults.truncated:
            self._count("truncated")
            return Reply(content=text[: len(text) // 2], finish_reason="length")
        roll -= self.faults.truncated
        if roll < self.faults.malformed:
            self._count("malformed")
            return Reply(content="" if request_schema(body) == TEXT else text[: len(text) // 3])
        return reply

    def _count(self, what: str) -> None:
        self.injected[what] = self.injected.get(what, 0) + 1

    def _answer(self, body: dict[str, Any]) -> Reply:
        schema = request_schema(body)
        prompt = message_text(body)
        names = [c.name for c in self.pack.characters]
        if schema == "TurnPlan":
            self.plans += 1
            chosen = self.rng.sample(names, self.rng.randint(1, 2))
            plan = {
                "scene_goal": f"{SECRET}-{self.plans}: the logbook is never where they think",
                "place": None,
                "focal": chosen,
                "beats": [f"{SECRET} beat"],
                "memory_needs": [],
                "developments": [],
                "hypothesis": None,
            }
            return Reply(content=json.dumps(plan))
        if schema == "CharacterProposal":
            wait = {"kind": "wait", "object": None, "target": None, "listener": None,
                    "about": None, "attribute": "location", "claim": None, "line": None,
                    "reason": "watching"}  # fmt: skip
            return Reply(content=json.dumps({"actions": [wait], "intent": "bide my time"}))
        if schema == "ExtractedActions":
            text = prompt.partition(" characters)\n")[2].partition("\n\n## Sentences")[0]
            actions = [a.model_dump(mode="json") for a in extract(text)]
            read = [a for a in actions if a["kind"] != "narration"]
            return Reply(content=json.dumps({"actions": read, "new_entities": []}))
        focal = re.search(r"focal: (.+)", prompt)
        who = focal.group(1).split(", ") if focal is not None else names[:1]
        places = [p.name for p in self.pack.places]
        sentences = []
        for name in who:
            if self.rng.random() < 0.7:
                sentences.append(f"{name} went to the {self.rng.choice(places)}.")
            else:
                sentences.append(f'"The tide is turning," said {name}.')
            if self.rng.random() < 0.4:
                sentences.append(self.rng.choice(FILLER))
        return Reply(content=" ".join(sentences))


@dataclass
class Tally:
    """What one loop saw."""

    seconds: list[float] = field(default_factory=list)
    outcomes: dict[str, int] = field(default_factory=dict)
    partial_commits: int = 0
    mismatched: int = 0
    problems: list[str] = field(default_factory=list)  # the first few, to read
    forbidden: dict[str, set[str]] = field(default_factory=dict)  # character -> sentences


async def story_snapshot(client: Any, story: str) -> dict[str, Any]:
    """Every key of ``story`` with its whole content, in a canonical form (a DUMP is not:
    a large hash's serialised order can change without a write). Three round trips."""
    names = [k async for k in client.scan_iter(match=f"fab:{{{story}}}:*", count=10_000)]
    async with client.pipeline(transaction=False) as pipe:
        for name in names:
            pipe.type(name)
        kinds = [k.decode() if isinstance(k, bytes) else str(k) for k in await pipe.execute()]
    readers = {
        "string": lambda p, k: p.get(k),
        "hash": lambda p, k: p.hgetall(k),
        "list": lambda p, k: p.lrange(k, 0, -1),
        "set": lambda p, k: p.smembers(k),
        "zset": lambda p, k: p.zrange(k, 0, -1, withscores=True),
    }
    async with client.pipeline(transaction=False) as pipe:
        for name, kind in zip(names, kinds, strict=True):
            readers.get(kind, lambda p, k: p.dump(k))(pipe, name)
        values = await pipe.execute()
    out: dict[str, Any] = {}
    for name, kind, value in zip(names, kinds, values, strict=True):
        if isinstance(value, dict):
            value = sorted(value.items())
        elif isinstance(value, set):
            value = sorted(value)
        key = name.decode() if isinstance(name, bytes) else str(name)
        out[key] = (kind, value)
    return out


def _witnessed_sentences(
    text: str, events: list[Event], characters: list[str]
) -> dict[str, set[str]]:
    """For each character, the sentences of ``text`` it did not witness whole: those whose
    events it was not a witness of, every one (narration: nobody)."""
    out: dict[str, set[str]] = {c: set() for c in characters}
    for start, end in split_sentences(text):
        told = [e for e in events if e.span.start < end and start < e.span.end]
        allowed = set(characters)
        for e in told:
            allowed &= set(e.witnesses) if e.kind != "narration" else set()
        if not told:
            allowed = set()
        for c in characters:
            if c not in allowed:
                out[c].add(text[start:end])
    return out


async def _loop(url: str, turns: int, faults: Faults, seed: int, story: str) -> dict[str, Any]:
    pack = load_world("lighthouse")
    model = StoryModel(pack, faults, random.Random(seed))
    tally = Tally()
    with FakeOpenAI() as server, metering() as meter:
        server.fallback = model
        settings = Settings(
            model=ModelSettings(
                base_url=server.base_url,
                model="fake-model",
                api_key="bench",
                max_tokens=400,
                timeout_s=10.0,
                retry_initial_s=0.01,
                retry_max_s=0.05,
            ),
            redis_url=url,
        )
        async with Fabula(url, settings, roles=make_roles(settings)) as app:
            store = await app.create_story(pack, story)
            characters = await store.characters()
            for _ in range(turns):
                before = await story_snapshot(store.client, store.story)
                failure = ""
                turn = await store.head() + 1
                started = time.perf_counter()
                try:
                    outcome: str = await app.run_turn(store, auto=True)
                except FabulaError as error:
                    outcome = "failed"
                    failure = f"{type(error).__name__}: {error.message}"
                tally.seconds.append(time.perf_counter() - started)
                tally.outcomes[outcome] = tally.outcomes.get(outcome, 0) + 1
                if outcome == "committed":
                    await _check_commit(app, store, turn, characters, tally)
                elif (after := await story_snapshot(store.client, store.story)) != before:
                    tally.partial_commits += 1
                    changed = {
                        k for k in before.keys() | after.keys() if before.get(k) != after.get(k)
                    }
                    keys = sorted(str(k) for k in changed)[:5]
                    tally.problems.append(f"turn {turn} {outcome} ({failure}), changed: {keys}")
            leaks = _leaks(server.requests, tally.forbidden, tally.problems)
            reasks = sum("That reply could not be used" in message_text(r) for r in server.requests)
    tokens = {role: u.input_tokens + u.output_tokens for role, u in sorted(meter.roles.items())}
    return {
        "turns": turns,
        "committed": tally.outcomes.get("committed", 0),
        "failed": tally.outcomes.get("failed", 0),
        "abandoned": tally.outcomes.get("abandoned", 0),
        "mismatched": tally.mismatched,
        "partial_commits": tally.partial_commits,
        "leaks": leaks,
        "retries": sum(u.retries for u in meter.roles.values()),
        "reasks": reasks,
        "requests": len(server.requests),
        "tokens": tokens,
        "seconds_per_turn": percentiles(tally.seconds),
        "faults_injected": dict(sorted(model.injected.items())),
        "problems": tally.problems[:10],
    }


async def _check_commit(
    app: Fabula, store: StoryStore, turn: int, characters: list[str], tally: Tally
) -> None:
    """The committed records are the checkpointed delta; note what each character may not
    read of the turn's text from now on."""
    config = {"configurable": {"thread_id": thread_id(store.story, store.branch, turn)}}
    state = await app.graph.aget_state(config)  # type: ignore[arg-type]
    delta = state.values.get("delta", {})
    (text,) = await store.turn_texts(turn, turn)
    events = await store.events(list(text.events))
    if text.text != delta.get("text") or [e.model_dump(mode="json") for e in events] != delta.get(
        "events"
    ):
        tally.mismatched += 1
    for c, sentences in _witnessed_sentences(text.text, events, characters).items():
        # as a memory of this turn would show it (the same words may tell another turn)
        tally.forbidden.setdefault(c, set()).update(f"- turn {turn}: {s}" for s in sentences)


def _leaks(
    requests: list[dict[str, Any]], forbidden: Mapping[str, set[str]], problems: list[str]
) -> int:
    """Character prompts holding the planner's goal or a sentence they may not read."""
    leaks = 0
    for body in requests:
        if request_schema(body) != "CharacterProposal":
            continue
        prompt = message_text(body)
        who = _WHO.search(prompt)
        found = [SECRET] if SECRET in prompt else []
        if who is not None:
            found += [s for s in forbidden.get(who.group(1), ()) if s in prompt]
        leaks += len(found)
        if found:
            problems.append(f"leak to {who.group(1) if who else '?'}: {found[:3]}")
    return leaks


async def run_model(
    url: str, turns: int = 50, *, seed: int = 7, json_out: str | Path | None = None
) -> dict[str, Any]:
    """Run the loop with faults and, as the baseline, without; print and return both."""
    tag = run_id()
    faulty = await _loop(url, turns, Faults(), seed, f"model-{tag}")
    clean = await _loop(url, turns, NO_FAULTS, seed, f"model-{tag}-clean")
    result = {"benchmark": "model", **faulty, "baselines": {"no_faults": clean}}
    rows = []
    for name, r in (("faults", faulty), ("no faults", clean)):
        seconds = r["seconds_per_turn"]
        counts = [r[k] for k in ("turns", "committed", "failed", "partial_commits", "leaks",
                                 "mismatched", "retries", "reasks")]  # fmt: skip
        rows.append([name, *counts, sum(r["tokens"].values()),
                     f"{seconds['p50']:.3f}/{seconds['p95']:.3f}"])  # fmt: skip
    columns = ["run", "turns", "committed", "failed", "partial", "leaks", "mismatched",
               "retries", "re-asks", "tokens", "s/turn p50/p95"]  # fmt: skip
    print_table("fabula bench model", columns, rows)
    write_json(json_out, result)
    return result


def run(url: str, turns: int, seed: int, json_out: str | None) -> dict[str, Any]:
    return asyncio.run(run_model(url, turns, seed=seed, json_out=json_out))
