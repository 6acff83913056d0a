"""``fabula bench model``: model mode over a server that fails as real servers do.

Every role runs on the real ChatOpenAI client, over HTTP, against the test server
(:mod:`fabula.testing.fake_openai`) playing a model that writes the lighthouse story: it plans
(1–2 focal characters, a scene goal marked ``SECRET``), has the characters wait, writes
controlled-English prose (journeys, speech, weather) and reads it back (the offline
reader behind the HTTP API). On every request it injects faults with fixed odds: 429 or
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

With ``--base-url URL --model NAME`` it measures any OpenAI-compatible server instead, as a
user would before trusting it with a story (:func:`run_server`): every role on that server
at temperature 0 with a seed, through a recording :class:`~fabula.bench.relay.Relay`, for
``--turns`` autonomous turns of ``--world`` (its scripted opening committed offline
first). It reports turns committed; per role the share
of first replies that validate, re-asks, truncations, seconds per reply (p50/p95) and
tokens in and out; leaks (:func:`real_leaks`: what reached a character's prompt or schema
that it may not know); commits that differ from their preview; partial commits; failures
by cause; seconds and tokens per turn. The baseline in the same run: the same turns with
the generic schemas (``ModelSettings.schemas``).
"""

from __future__ import annotations

import asyncio
import json
import random
import re
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from fabula.agents.contracts import Finding
from fabula.agents.factory import make_roles
from fabula.agents.memory_builder.model import ModelMemoryBuilder
from fabula.agents.memory_builder.offline import read_controlled
from fabula.agents.reading.extract import extract
from fabula.agents.reading.prose import read_prose
from fabula.agents.usage import UsageMeter, metering
from fabula.bench.common import run_id
from fabula.bench.relay import Exchange, Relay
from fabula.bench.report import percentiles, print_table, write_json
from fabula.errors import FabulaError
from fabula.graph.build import thread_id
from fabula.graph.service import Fabula
from fabula.memory.records import Event, slug
from fabula.memory.store import StoryStore
from fabula.memory.text import split_sentences
from fabula.settings import MODEL_TIMEOUT_S, WRITER_MAX_TOKENS, ModelSettings, Role, Settings
from fabula.testing.fake_openai import TEXT, FakeOpenAI, Reply, message_text, request_schema
from fabula.worlds.loader import load_world
from fabula.worlds.pack import WorldPack

SECRET = "SECRET"
# narration about a character, which the offline readers leave to the model
FILLER = ("{name} watched the gulls.", "{name} stood still for a while.", "{name} hummed a tune.")
_WHO = re.compile(r"## Who you are\n.+ \(id ([a-z0-9_]+)\)")


@dataclass(frozen=True)
class Faults:
    """The odds of each fault, per request."""

    unavailable: float = 0.10  # 429 or 503, with Retry-After
    truncated: float = 0.05
    malformed: float = 0.05


NO_FAULTS = Faults(0.0, 0.0, 0.0)


@dataclass(frozen=True)
class Server:
    """An OpenAI-compatible server a run measures, and how every role asks it: at
    temperature 0 with ``seed``, each reply within ``max_tokens`` (the writer's within
    ``writer_tokens``, ``None``: ``max_tokens``; a passage of a few sentences needs far
    fewer tokens than a structured reply, and every token of it is read again by the
    memory-builder) and ``timeout_s`` seconds (a busy CPU server: more); ``reader``: what
    reads a passage before the model reader: ``phased`` (the default), or a baseline,
    ``prose`` (places alone) or ``controlled``."""

    base_url: str
    model: str
    api_key: str | None = None
    seed: int = 7
    max_tokens: int | None = 512
    writer_tokens: int | None = WRITER_MAX_TOKENS
    timeout_s: float = MODEL_TIMEOUT_S
    reader: str = "phased"  # "prose": the places alone; "controlled": the rules' baseline


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
            wait = {
                "kind": "wait",
                "object": None,
                "target": None,
                "listener": None,
                "about": None,
                "attribute": "location",
                "claim": None,
                "line": None,
                "reason": "watching",
            }
            return Reply(content=json.dumps({"actions": [wait], "intent": "bide my time"}))
        if schema == "ExtractedActions":
            read = []
            for line in re.finditer(r"^\[(\d+):\d+\] (.+)$", prompt, re.MULTILINE):
                start = int(line.group(1))
                for action in extract(line.group(2)):
                    if action.kind != "narration":
                        moved = {"start": action.start + start, "end": action.end + start}
                        read.append(action.model_copy(update=moved).model_dump(mode="json"))
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
                sentences.append(self.rng.choice(FILLER).format(name=name))
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
            store = app.store(await app.create_story(pack, story))
            characters = await store.characters()
            for _ in range(turns):
                await _one_turn(app, store, characters, tally)
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


@dataclass
class _TurnRun:
    """One timed turn: its number, outcome, why it failed, and the keys a turn that did not
    commit still changed (None: it changed nothing)."""

    turn: int
    outcome: str
    failure: str = ""
    error: FabulaError | None = None
    changed: list[str] | None = None


async def _timed_turn(
    app: Fabula, store: StoryStore, characters: list[str], tally: Tally
) -> _TurnRun:
    """Run one turn, timed, and tally its outcome: a commit checked, or a turn not
    committed that still changed the story (a partial commit, with what changed)."""
    before = await story_snapshot(store.client, store.story)
    run = _TurnRun(turn=await store.head() + 1, outcome="failed")
    started = time.perf_counter()
    try:
        done = await app.run(store, auto=True)
        # a story at rest is reported as the error a single turn raises
        run.outcome = done.outcome or "failed"
        run.failure = "" if done.rest is None else f"StoryAtRest: {done.rest}"
    except FabulaError as error:
        run.error, run.failure = error, f"{type(error).__name__}: {error.message}"
    tally.seconds.append(time.perf_counter() - started)
    tally.outcomes[run.outcome] = tally.outcomes.get(run.outcome, 0) + 1
    if run.outcome == "committed":
        await check_commit(app, store, run.turn, characters, tally)
    elif (after := await story_snapshot(store.client, store.story)) != before:
        tally.partial_commits += 1
        changed = {k for k in before.keys() | after.keys() if before.get(k) != after.get(k)}
        run.changed = sorted(str(k) for k in changed)[:5]
    return run


async def _one_turn(app: Fabula, store: StoryStore, characters: list[str], tally: Tally) -> None:
    """One turn of the fake-server loop (see :func:`_timed_turn`)."""
    run = await _timed_turn(app, store, characters, tally)
    if run.changed is not None:
        tally.problems.append(
            f"turn {run.turn} {run.outcome} ({run.failure}), changed: {run.changed}"
        )


async def check_commit(
    app: Fabula, store: StoryStore, turn: int, characters: list[str], tally: Tally
) -> None:
    """The committed records are the checkpointed delta; note what each character may not
    read of the turn's text from now on."""
    config = {"configurable": {"thread_id": thread_id(store.story, store.branch, turn)}}
    state = await app.graph.aget_state(config)  # type: ignore[arg-type]
    delta = state.values.get("delta")
    (text,) = await store.turn_texts(turn, turn)
    events = await store.events(list(text.events))
    if (
        delta is None
        or text.text != delta.text
        or [e.model_dump(mode="json") for e in events]
        != [e.model_dump(mode="json") for e in delta.events]
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
        counts = [
            r[k]
            for k in (
                "turns",
                "committed",
                "failed",
                "partial_commits",
                "leaks",
                "mismatched",
                "retries",
                "reasks",
            )
        ]
        rows.append(
            [name, *counts, sum(r["tokens"].values()), f"{seconds['p50']:.3f}/{seconds['p95']:.3f}"]
        )
    columns = [
        "run",
        "turns",
        "committed",
        "failed",
        "partial",
        "leaks",
        "mismatched",
        "retries",
        "re-asks",
        "tokens",
        "s/turn p50/p95",
    ]
    print_table("fabula bench model", columns, rows)
    write_json(json_out, result)
    return result


def run(url: str, turns: int, seed: int, json_out: str | None) -> dict[str, Any]:
    return asyncio.run(run_model(url, turns, seed=seed, json_out=json_out))


# --- any OpenAI-compatible server: `fabula bench model --base-url URL --model NAME` --------

SchemaMode = str  # "story" or "generic" (ModelSettings.schemas, where it exists)


@dataclass
class ServerRun:
    """What one loop against a real server saw (one schema mode)."""

    tally: Tally = field(default_factory=Tally)
    failures: dict[str, int] = field(default_factory=dict)  # "Cause (role)" -> turns
    texts: list[str] = field(default_factory=list)  # committed passages
    # what sent drafts back: the critic's errors by kind, and the first few as read
    critic_errors: dict[str, int] = field(default_factory=dict)
    critic_samples: list[str] = field(default_factory=list)

    def critiqued(self, turn: int, findings: list[Finding]) -> None:
        """Count a critique's errors (the graph's ``on_critique``)."""
        for f in findings:
            if f.severity != "error":
                continue
            self.critic_errors[f.kind] = self.critic_errors.get(f.kind, 0) + 1
            if len(self.critic_samples) < 8:
                quote = f' — "{f.quote[:80]}"' if f.quote else ""
                self.critic_samples.append(f"turn {turn}: {f.kind}: {f.message[:160]}{quote}")


def schema_modes() -> tuple[SchemaMode, ...]:
    """The schema modes this build of Fabula has: story-shaped and generic, where the
    ``schemas`` setting exists; else only the schemas there are."""
    if "schemas" in ModelSettings.model_fields:
        return ("story", "generic")
    return ("current",)


def server_settings(url: str, server: Server, mode: SchemaMode) -> Settings:
    """Every role on ``server`` (stories kept in the Redis at ``url``); ``mode`` picks the
    schemas (see :func:`schema_modes`)."""
    values: dict[str, Any] = {
        "base_url": server.base_url,
        "model": server.model,
        "api_key": server.api_key or "unused",
        "temperature": 0.0,
        "seed": server.seed,
        "max_tokens": server.max_tokens,
        "timeout_s": server.timeout_s,
        "max_retries": 2,
        "retry_initial_s": 0.5,
        "retry_max_s": 5.0,
    }
    if mode != "current":
        values["schemas"] = mode
    shared = ModelSettings.model_validate(values)
    roles: dict[Role, ModelSettings] = {}
    if server.writer_tokens is not None:
        roles["writer"] = shared.model_copy(update={"max_tokens": server.writer_tokens})
    return Settings(model=shared, roles=roles, redis_url=url)


def schema_enums(body: Mapping[str, Any]) -> set[str]:
    """Every string a request's schema (json_schema or tool parameters) names in an
    ``enum`` or ``const``."""
    response_format = body.get("response_format") or {}
    roots: list[Any] = []
    if response_format.get("type") == "json_schema":
        roots.append(response_format["json_schema"].get("schema"))
    roots += [(t.get("function") or {}).get("parameters") for t in body.get("tools") or []]
    found: set[str] = set()
    stack = [r for r in roots if r is not None]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            values = list(node.get("enum") or [])
            if "const" in node:
                values.append(node["const"])
            found.update(v for v in values if isinstance(v, str))
            stack += list(node.values())
        elif isinstance(node, list):
            stack += node
    return found


def real_leaks(
    bodies: list[dict[str, Any]],
    pack: WorldPack,
    forbidden: Mapping[str, set[str]],
    plans: list[str],
    texts: list[str],
    problems: list[str],
) -> int:
    """What reached a character that it may not know, in real requests: a sentence whose
    events it did not witness (``forbidden``, by character), the planner's goal or a beat
    (``plans``; those of at least 24 characters that no committed passage holds), or a
    world entity its schema names (an ``enum``) that its own prompt never mentions (the
    schema is part of what it is told)."""
    names = [c.name for c in pack.characters] + [p.name for p in pack.places]
    names += [o.name for o in pack.objects]
    entities = [(slug(name), name) for name in names]
    secret = [p for p in plans if len(p) >= 24 and not any(p in t for t in texts)]
    leaks = 0
    for body in bodies:
        if request_schema(body) != "CharacterProposal":
            continue
        prompt = message_text(body)
        who = _WHO.search(prompt)
        name = who.group(1) if who else "?"
        found = [p for p in secret if p in prompt]
        if who is not None:
            found += [s for s in forbidden.get(who.group(1), ()) if s in prompt]
        lowered = prompt.lower()
        for value in schema_enums(body):
            for entity_id, entity_name in entities:
                if value.lower() in (entity_id.lower(), entity_name.lower()) and not (
                    entity_id.lower() in lowered or entity_name.lower() in lowered
                ):
                    found.append(f"schema names {value!r}")
        leaks += len(found)
        if found:
            problems.append(f"leak to {name}: {found[:3]}")
    return leaks


def plan_strings(exchange: Exchange) -> list[str]:
    """The scene goal and beats of a planner reply (JSON content or a tool call)."""
    message = exchange.message
    raw = message.get("content") or ""
    calls = message.get("tool_calls") or []
    if calls:
        raw = calls[0].get("function", {}).get("arguments") or ""
    try:
        plan = json.loads(raw)
    except (json.JSONDecodeError, TypeError):
        return []
    if not isinstance(plan, dict):
        return []
    strings = [plan.get("scene_goal"), *(plan.get("beats") or [])]
    return [s.strip() for s in strings if isinstance(s, str) and s.strip()]


def by_role(meter: UsageMeter) -> dict[str, dict[str, Any]]:
    """Per role: the share of first replies that validate, re-asks, truncations, seconds
    per reply (p50/p95) and tokens in and out, from a meter open around the run."""
    out: dict[str, dict[str, Any]] = {}
    roles = sorted({r.role for r in meter.replies} | set(meter.roles))
    for role in roles:
        replies = [r for r in meter.replies if r.role == role]
        first = [r for r in replies if r.attempt == 1]
        valid = sum(r.outcome in ("valid", "cut") for r in first)
        seconds = percentiles([r.seconds for r in replies])
        usage = meter.roles.get(role)
        out[role] = {
            "first_valid": round(valid / len(first), 3) if first else 0.0,
            "first_replies": len(first),
            "reasks": sum(r.attempt > 1 for r in replies),
            "truncated": meter.truncated.get(role, 0),
            "p50_s": seconds["p50"],
            "p95_s": seconds["p95"],
            "tokens_in": usage.input_tokens if usage else 0,
            "tokens_out": usage.output_tokens if usage else 0,
        }
    return out


async def _server_loop(
    url: str,
    server: Server,
    *,
    world: str,
    turns: int,
    mode: SchemaMode,
    story: str,
    on_turn: Callable[[dict[str, Any]], None] | None = None,
) -> dict[str, Any]:
    pack = load_world(world)
    run = ServerRun()
    tally = run.tally
    # the relay waits longer than the client, so that the client's own timeout is what a
    # slow reply meets (and is counted as such)
    with Relay(server.base_url, timeout_s=2 * server.timeout_s) as relay, metering() as meter:
        settings = server_settings(url, replace(server, base_url=relay.base_url), mode)
        async with Fabula(url, Settings(redis_url=url)) as offline:
            await offline.create_story(pack, story)  # the scripted opening, read offline
        roles = make_roles(settings)
        baseline = {"controlled": read_controlled, "prose": read_prose}.get(server.reader)
        if baseline is not None and isinstance(roles.memory_builder, ModelMemoryBuilder):
            client = roles.memory_builder.model_reader.client  # a baseline reads first
            builder = ModelMemoryBuilder(client, reader=baseline)
            roles = replace(roles, memory_builder=builder)
        async with Fabula(url, settings, roles=roles, on_critique=run.critiqued) as app:
            store = app.store(story)
            characters = await store.characters()
            for _ in range(turns):
                await _server_turn(app, store, characters, run)
                if on_turn is not None:
                    on_turn(
                        _summary(run, meter, list(relay.exchanges), pack, mode, len(tally.seconds))
                    )
        exchanges = list(relay.exchanges)
    return _summary(run, meter, exchanges, pack, mode, turns)


async def _server_turn(
    app: Fabula, store: StoryStore, characters: list[str], run: ServerRun
) -> None:
    """One turn against the server (see :func:`_timed_turn`), with a failure counted by
    its cause (and role) and a committed passage kept."""
    tally = run.tally
    done = await _timed_turn(app, store, characters, tally)
    failure = done.failure
    if done.error is not None:
        role = str(done.error.context.get("role") or "")
        cause = type(done.error).__name__ + (f" ({role})" if role else "")
        run.failures[cause] = run.failures.get(cause, 0) + 1
        failure = f"{cause}: {done.error.message}"
        if len(tally.problems) < 10:
            tally.problems.append(f"turn {done.turn}: {failure}"[:300])
    if done.outcome == "abandoned":
        run.failures["abandoned"] = run.failures.get("abandoned", 0) + 1
    if done.outcome == "committed":
        (text,) = await store.turn_texts(done.turn, done.turn)
        run.texts.append(text.text)
    elif done.changed is not None:
        tally.problems.append(f"turn {done.turn} {done.outcome} ({failure}) changed the story")


def _summary(
    run: ServerRun,
    meter: UsageMeter,
    exchanges: list[Exchange],
    pack: WorldPack,
    mode: SchemaMode,
    turns: int,
) -> dict[str, Any]:
    """What one loop saw after ``turns`` turns, as the JSON reports it."""
    tally = run.tally
    plans = [p for e in exchanges if e.schema == "TurnPlan" for p in plan_strings(e)]
    bodies = [e.request for e in exchanges if not e.rejected]
    problems = list(tally.problems)
    leaks = real_leaks(bodies, pack, tally.forbidden, plans, run.texts, problems)
    server_usage = [e.usage for e in exchanges if e.usage]
    committed = tally.outcomes.get("committed", 0)
    tokens_total = sum(u.total_tokens for u in meter.roles.values())
    reader = meter.roles.get("memory_builder")
    return {
        "schemas": mode,
        # what the memory-builder's model was asked, a turn: the prose reader reads first
        # (issue 33)
        "memory_builder_calls_per_turn": round(
            sum(r.role == "memory_builder" for r in meter.replies) / max(turns, 1), 2
        ),
        "memory_builder_tokens_per_turn": round(
            (reader.total_tokens if reader else 0) / max(turns, 1), 1
        ),
        "turns": turns,
        "committed": committed,
        "failed": turns - committed,
        "leaks": leaks,
        "mismatched": tally.mismatched,
        "partial_commits": tally.partial_commits,
        "failures": dict(sorted(run.failures.items())),
        # the critic's errors, by kind: what sent drafts back (and, past the revisions
        # allowed, rejected the turn)
        "critic_errors": dict(sorted(run.critic_errors.items())),
        "critic_samples": run.critic_samples,
        "by_role": by_role(meter),
        "requests": len(exchanges),
        "server_tokens": {
            "prompt": sum(int(u.get("prompt_tokens", 0)) for u in server_usage),
            "completion": sum(int(u.get("completion_tokens", 0)) for u in server_usage),
        },
        "seconds_per_turn": percentiles(tally.seconds),
        "seconds_total": round(sum(tally.seconds), 1),
        "tokens_per_turn": round(tokens_total / max(turns, 1), 1),
        "problems": problems[:10],
    }


async def run_server(
    url: str,
    server: Server,
    *,
    world: str = "lighthouse",
    turns: int = 20,
    json_out: str | Path | None = None,
    modes: tuple[SchemaMode, ...] | None = None,
) -> dict[str, Any]:
    """``turns`` autonomous turns of ``world`` with every role on ``server``, stories kept
    in the Redis at ``url``, with the story-shaped schemas and, as the baseline in
    the same run, the generic ones (``modes``: the default); print and return both (the
    issue's JSON shape). The JSON is written after every turn too, marked ``"partial"``,
    so a long run that is stopped still leaves its figures."""
    tag = run_id()
    modes = modes or schema_modes()
    runs: list[dict[str, Any]] = []

    def partial(current: dict[str, Any]) -> None:
        done = [*runs, current]
        head: dict[str, Any] = {
            "benchmark": "model",
            "server": server.base_url,
            "model": server.model,
            "world": world,
            "partial": True,
            **done[0],
        }
        if len(done) > 1:
            head["baseline"] = done[1]
        write_json(json_out, head)

    for mode in modes:
        runs.append(
            await _server_loop(
                url,
                server,
                world=world,
                turns=turns,
                mode=mode,
                story=f"model-{tag}-{mode}",
                on_turn=partial,
            )
        )
    main, *rest = runs
    result: dict[str, Any] = {
        "benchmark": "model",
        "server": server.base_url,
        "model": server.model,
        "world": world,
        **main,
    }
    if rest:
        result["baseline"] = rest[0]
    _print_server(result, [main, *rest])
    write_json(json_out, result)
    return result


def _print_roles(runs: list[dict[str, Any]]) -> None:
    """The "by role" table: each run's replies by role (valid first, re-asked, cut),
    their seconds and tokens."""
    role_rows = []
    for r in runs:
        for role, s in r["by_role"].items():
            role_rows.append(
                [
                    r["schemas"],
                    role,
                    s["first_valid"],
                    s["reasks"],
                    s["truncated"],
                    f"{s['p50_s']:.1f}/{s['p95_s']:.1f}",
                    s["tokens_in"],
                    s["tokens_out"],
                ]
            )
    print_table(
        "by role",
        [
            "schemas",
            "role",
            "first valid",
            "re-asks",
            "truncated",
            "s p50/p95",
            "tokens in",
            "tokens out",
        ],
        role_rows,
    )


def _print_server(result: dict[str, Any], runs: list[dict[str, Any]]) -> None:
    rows = []
    for r in runs:
        seconds = r["seconds_per_turn"]
        rows.append(
            [
                r["schemas"],
                r["turns"],
                r["committed"],
                r["leaks"],
                r["mismatched"],
                r["partial_commits"],
                r["tokens_per_turn"],
                f"{seconds['p50']:.1f}/{seconds['p95']:.1f}",
            ]
        )
    columns = [
        "schemas",
        "turns",
        "committed",
        "leaks",
        "mismatched",
        "partial",
        "tokens/turn",
        "s/turn p50/p95",
    ]
    print_table(f"fabula bench model: {result['model']} at {result['server']}", columns, rows)
    _print_roles(runs)
    for r in runs:
        print(
            f"{r['schemas']} schemas: the memory-builder "
            f"{r['memory_builder_calls_per_turn']} calls and "
            f"{r['memory_builder_tokens_per_turn']} tokens a turn"
        )
        if r.get("critic_errors"):
            sent = ", ".join(f"{kind} {n}" for kind, n in r["critic_errors"].items())
            print(f"{r['schemas']} schemas: the critic's errors that sent drafts back: {sent}")


def run_against(
    url: str,
    server: Server,
    *,
    world: str,
    turns: int,
    json_out: str | None,
    modes: tuple[SchemaMode, ...] | None = None,
) -> dict[str, Any]:
    """:func:`run_server`, from the command line."""
    return asyncio.run(
        run_server(url, server, world=world, turns=turns, json_out=json_out, modes=modes)
    )
