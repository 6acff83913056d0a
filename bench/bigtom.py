"""BigToM: what changed, and whether the agent saw it, read by the memory-builder.

Input: BigToM's ``;``-separated CSV (19 fields a row, no header; see the data README). This
module is the only code that knows BigToM: its fields, how its conditions are built and
how its two answers are worded. Of a row it reads the ``story``, the four perception
sentences (``aware``, ``not_aware``, ``aware_random``, ``not_aware_random``), the
``random_event``, the belief question and its two answers (``belief_aware``: the final
state; ``belief_not_aware``: the initial one).

Conditions, as BigToM's own generator builds them (forward belief): the story's sentences,
with the "A believes ..." sentence kept (``init 1``) or dropped (``init 0``), then

* ``true_belief``: the story and ``aware``; A believes the final state;
* ``false_belief``: the story and ``not_aware``; A believes the initial state;
* ``true_control`` / ``false_control``: the causal event (the story's last sentence)
  replaced by ``random_event``, then ``aware_random`` / ``not_aware_random``; A believes
  the initial state.

Each item is a story in a private Redis whose pack declares only what the two answers
name: the agent (a character) and the thing asked about (an object: the words the two
answers share before their verb, "the package" of "the package contains ..."). The
condition's text is committed as one turn through the real memory-builder, and the item
is answered from the memory at the end:

* ``answer``: from A's own beliefs (B[A]), latest first, the first about the thing asked
  about (its subject or its value shares a word with it) whose value maps to one option;
  where B[A] holds none, A perceived nothing of a change, so to A the thing is as the
  story first had it: W's earliest such state (``"from": "assumed"``) — and where that
  state itself changed a slot (subject and attribute) the story had set in an earlier
  sentence, it is a change A did not see, so A assumes the other option; else ``None``;
* ``world``: the option W's latest such state maps to, or ``None``.

A value maps to an option by the words that tell the two options apart: the option whose
own words it shares more of (none, or as many of each: it maps to neither).

Keys and parts: a row's key is the first 12 hex of the SHA-256 of its ``story`` field;
the row is in the ``checking`` part when the first 8 hex of the SHA-256 of the key, as a
number, is divisible by 3, else in the ``working`` part. Rules are tuned on the working
part only; both are reported.

Scores per condition and part: accuracy, the answered share, the share answered right from
A's own mind (``from: belief``), and the world's accuracy (the final state for the true
belief and false belief conditions, the initial one for the controls); for each offline
reader and, in the same run, the baselines "always initial", "always final" and "W
alone" (A's belief taken to be whatever the world holds); and, given a model
(``fabula bench bigtom --base-url URL --model M``), the model memory-builder (the phased
reader first, the model asked only about what it left), as the ``model`` column: an item
whose reading the model could not give is unanswered (``null``), counted in ``failed``.
``limit`` keeps the first N items of each part, in the file's order (a small model on a
CPU reads a few).

Backward belief, reported beside the forward figures with no target (``"backward"`` in the
JSON, the last rows of the table): the story and A's action (``action_aware`` for true
belief, ``action_not_aware`` for false belief), no perception sentence, with and without
the "A believes" sentence; read by the measured reader alone and scored as above, beside
"always initial" and "always final". The reader does not infer a belief from an action,
so what it answers is what A saw of the story itself. ``--answers`` holds forward items
only, as the issue's format has them.

Speed: the reader's milliseconds per 1,000 words, as wall time (it grows with the
machine's load, since items are read concurrently) and as the CPU time of the reading
thread (what the reader itself costs).
"""

from __future__ import annotations

import asyncio
import bisect
import csv
import hashlib
import itertools
import re
import time
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import redis.asyncio as aredis

from fabula.agents.memory_builder.offline import OfflineMemoryBuilder, Reader, read_controlled
from fabula.agents.reading.phases import read_story
from fabula.agents.reading.phases.lexicon import root, verb
from fabula.agents.reading.prose import read_prose
from fabula.agents.roles import MemoryBuilderRole
from fabula.bench.common import (
    bench_redis,
    commit_path,
    create_story,
    part_of,
    run_id,
    write_answers,
)
from fabula.bench.data import malformed, read_text
from fabula.bench.report import print_table, write_json
from fabula.errors import ModelError
from fabula.graph.commit import commit_text
from fabula.memory import keys
from fabula.memory.delta import DeltaBuilder, TurnDelta
from fabula.memory.records import Belief, Event, State, slug
from fabula.memory.rules import WorldRules
from fabula.memory.store import StoryStore
from fabula.memory.tracking.prior import name_id

KIND = "BigToM"
FIELDS = 19
BIGTOM_RULES = WorldRules()
CONCURRENCY = 16
MODEL_CONCURRENCY = 2  # items read by a model at once (a small server serves few)
Condition = Literal["true_belief", "false_belief", "true_control", "false_control"]
CONDITIONS: tuple[Condition, ...] = ("true_belief", "false_belief", "true_control", "false_control")
# backward belief: the story and A's action, no perception sentence (no controls here)
BACKWARD: tuple[Condition, ...] = ("true_belief", "false_belief")
Direction = Literal["forward", "backward"]
Part = Literal["working", "checking"]
From = Literal["belief", "assumed"]

# words that carry no content: they never tell two options apart
_FUNCTION = frozenset(
    [
        "a",
        "an",
        "the",
        "of",
        "to",
        "in",
        "on",
        "at",
        "by",
        "for",
        "with",
        "from",
        "into",
        "onto",
        "and",
        "or",
        "but",
        "that",
        "this",
        "these",
        "those",
        "it",
        "its",
        "is",
        "are",
        "was",
        "were",
        "be",
        "been",
        "being",
        "has",
        "have",
        "had",
        "does",
        "do",
        "did",
        "will",
        "would",
        "can",
        "could",
        "his",
        "her",
        "their",
        "them",
        "they",
        "she",
        "he",
        "him",
        "i",
        "we",
        "you",
        "our",
        "your",
        "my",
    ]
)
_DENIALS = frozenset(["not", "no", "never"])
_WORD = re.compile(r"[a-z0-9]+(?:[-'][a-z0-9]+)*")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
_AUX = frozenset(
    [
        "is",
        "are",
        "was",
        "were",
        "has",
        "have",
        "had",
        "does",
        "do",
        "will",
        "can",
        "contains",
        "contain",
        "holds",
    ]
)


def words(text: str) -> frozenset[str]:
    """``text``'s content words, each reduced to its root as the phased reader reduces a
    value's (:func:`~fabula.agents.reading.phases.lexicon.root`: "wilted" → wilt)."""
    found = _WORD.findall(text.lower().replace("-", " "))
    out = {root(w) for w in found if w not in _FUNCTION}
    # "turned on" and "turned off" are opposites, not one word "turn": a verb with the
    # particle "on" or "off" is a word of its own
    for before, w in itertools.pairwise(found):
        if w in ("on", "off") and verb(before) is not None:
            out.discard(root(before))
            out.add(f"{root(before)} {w}")
    return frozenset(out)


def row_key(story: str) -> str:
    """A row's key: the first 12 hex of the SHA-256 of its story field."""
    return hashlib.sha256(story.encode("utf-8")).hexdigest()[:12]


@dataclass(frozen=True)
class Item:
    """One condition of one row: the text read, the two options and the right one."""

    key: str
    part: Part
    condition: Condition
    init: int
    agent: str
    thing: str  # the thing asked about, as the options write it ("package")
    text: str
    final: str  # the option sentence of the final state (``belief_aware``)
    initial: str  # the option sentence of the initial state (``belief_not_aware``)
    direction: Direction = "forward"

    @property
    def gold(self) -> str:
        return self.final if self.condition == "true_belief" else self.initial

    @property
    def world_gold(self) -> str:
        return self.final if self.condition in ("true_belief", "false_belief") else self.initial


def _proposition(option: str, agent: str) -> str:
    """``"Azola believes the package contains X."`` → ``"the package contains X"``."""
    rest = option.strip().rstrip(".")
    prefix = f"{agent} believes "
    return rest[len(prefix) :] if rest.startswith(prefix) else rest


def thing_asked(final: str, initial: str) -> str:
    """The words two propositions share before their verb: the thing the question is
    about (``"the package contains X"``, ``"the package contains Y"`` → ``"package"``);
    empty where they share none."""
    a, b = final.split(), initial.split()
    common: list[str] = []
    for x, y in zip(a, b, strict=False):
        if x.lower() != y.lower() or x.lower() in _AUX:
            break
        common.append(x)
    while common and common[0].lower() in ("the", "a", "an", "her", "his", "their"):
        common.pop(0)
    return " ".join(common).strip(",")


def _row_items(path: Path, n: int, row: list[str], direction: Direction) -> list[Item]:
    if len(row) != FIELDS:
        raise malformed(path, KIND, f"row {n}", f"{len(row)} fields, not {FIELDS}")
    story, aware, not_aware = row[0], row[1], row[2]
    key = row_key(story)
    where = f"row {n} (key {key})"
    m = re.match(r"^Does (.+?) believe ", row[5])
    if m is None:
        raise malformed(path, KIND, where, "field 'belief_q' is not 'Does A believe ...'")
    agent = m[1]
    final, initial = row[8].strip(), row[11].strip()
    for name, value in (("belief_aware", final), ("belief_not_aware", initial)):
        if not value.startswith(f"{agent} believes "):
            raise malformed(path, KIND, where, f"field {name!r} is not '{agent} believes ...'")
    if final == initial:
        raise malformed(path, KIND, where, "fields 'belief_aware' and 'belief_not_aware' agree")
    sentences = [s for s in _SENTENCE_END.split(story.strip()) if s]
    opener = re.compile(rf"^(?:{re.escape(agent)}|He|She|They) (?:believes?|thinks?) ")
    believes = [s for s in sentences if opener.match(s)][:1]
    if not believes or len(sentences) < 3:
        raise malformed(path, KIND, where, "field 'story' has no 'A believes' sentence")
    random_event, aware_random, not_aware_random = row[14], row[15], row[16]
    thing = thing_asked(_proposition(final, agent), _proposition(initial, agent))
    texts: dict[Condition, list[str]] = {
        "true_belief": [*sentences, aware],
        "false_belief": [*sentences, not_aware],
        "true_control": [*sentences[:-1], random_event, aware_random],
        "false_control": [*sentences[:-1], random_event, not_aware_random],
    }
    if direction == "backward":
        # A's action tells what A believes; nothing says what A perceived
        texts = {"true_belief": [*sentences, row[3]], "false_belief": [*sentences, row[4]]}
    out = []
    for condition in CONDITIONS if direction == "forward" else BACKWARD:
        for init in (0, 1):
            kept = [s for s in texts[condition] if init or s not in believes]
            out.append(
                Item(
                    key=key,
                    part=part_of(key),
                    condition=condition,
                    init=init,
                    agent=agent,
                    thing=thing,
                    text=" ".join(s.strip() for s in kept),
                    final=final,
                    initial=initial,
                    direction=direction,
                )
            )
    return out


def load_bigtom(path: str | Path, direction: Direction = "forward") -> list[Item]:
    """Every item of a BigToM file: forward belief (8 a row), or backward belief (4 a
    row: true and false belief, each with and without the "A believes" sentence). Raises
    :class:`~fabula.errors.InvalidInput` naming the row, its key and the field of a
    malformed row."""
    path = Path(path)
    text = read_text(path, KIND)
    items: list[Item] = []
    for n, row in enumerate(csv.reader(text.splitlines(), delimiter=";"), start=1):
        if row:
            items.extend(_row_items(path, n, row, direction))
    if not items:
        raise malformed(path, KIND, "", "no rows")
    return items


def setup_delta(item: Item) -> TurnDelta:
    """Turn 0: the agent and the thing asked about, with no fact."""
    builder = DeltaBuilder(0, "")
    builder.entity("character", item.agent)
    if name_id(item.thing) not in (None, name_id(item.agent)):
        builder.entity("object", item.thing)
    return builder.build()


# --- answering from memory ------------------------------------------------------------


def option_of(text: str, item: Item) -> str | None:
    """The option ``text`` (a state's subject and value) maps to, or None."""
    a = words(_proposition(item.final, item.agent))
    b = words(_proposition(item.initial, item.agent))
    got = words(text)
    to_final, to_initial = len(got & (a - b)), len(got & (b - a))
    if got & _DENIALS and not (a ^ b) & _DENIALS:
        # a denied value ("not pearl") speaks against the option that says it, where
        # neither option is itself a denial
        to_final, to_initial = to_initial, to_final
    if to_final > to_initial:
        return item.final
    if to_initial > to_final:
        return item.initial
    return None


def _about(record: State | Belief, item: Item) -> bool:
    """Whether a record is about the thing asked about: its subject names it, or shares a
    word with it, or its value does ("a large crack" → "form in the marble block")."""
    thing = words(item.thing)
    subject = record.subject.replace("-", " ").replace("_", " ")
    return (
        not thing
        or record.subject == name_id(item.thing)
        or bool(words(subject) & thing)
        or bool(words(record.value) & thing)
    )


async def history(store: StoryStore, chain: tuple[str, ...]) -> list[State | Belief]:
    """Every record of W (``chain`` empty) or of a first-order holder's beliefs, in story
    order (turn, then record number)."""
    if chain:
        closed = keys.belief_records(store.story, store.branch, chain[0])
        current = keys.beliefs_current(store.story, store.branch, chain[0])
    else:
        closed = keys.world_records(store.story, store.branch)
        current = keys.world_current(store.story, store.branch)
    raw = [*(await store.client.hvals(closed)), *(await store.client.hvals(current))]
    records: dict[str, State | Belief] = {}
    for value in raw:
        record: State | Belief = (
            Belief.model_validate_json(value) if chain else State.model_validate_json(value)
        )
        if chain and getattr(record, "holder", ()) != chain:
            continue
        records[record.id] = record
    return sorted(records.values(), key=lambda r: (r.valid_from, int(r.id.partition(".")[2])))


async def sentences(store: StoryStore, text: str) -> dict[str, int]:
    """Each event's id → the index of the sentence of ``text`` its span starts in."""
    starts = [0, *(m.end() for m in _SENTENCE_END.finditer(text))]
    raw = await store.client.hvals(keys.events(store.story, store.branch))
    events = (Event.model_validate_json(v) for v in raw)
    return {e.id: bisect.bisect_right(starts, e.span.start) - 1 for e in events}


def _other(option: str, item: Item) -> str:
    return item.initial if option == item.final else item.final


Sentences = Mapping[str, int]  # an event's id → its sentence's index


def _sentence(record: State | Belief, at: Sentences) -> int | None:
    """Where the text a record was read from starts (its event's span)."""
    return at.get(record.event) if record.event else None


def _mapped(records: Sequence[State | Belief], item: Item) -> list[tuple[int, str]]:
    """(index, option) of each record about the thing whose value maps to an option."""
    out = []
    for k, record in enumerate(records):
        if not record.polarity or not _about(record, item):
            continue
        option = option_of(f"{record.subject.replace('-', ' ')} {record.value}", item)
        if option is not None:
            out.append((k, option))
    return out


def believed(records: Sequence[State | Belief], item: Item) -> str | None:
    """The option of the latest record about the thing that maps to one."""
    mapped = _mapped(records, item)
    return mapped[-1][1] if mapped else None


def changed(
    own: Sequence[State | Belief], world: Sequence[State | Belief], item: Item, at: Sentences
) -> str | None:
    """A's option: :func:`believed` of A's records — but where A's latest record that maps
    to the initial option is followed, in a later sentence, by A's record of another value
    of the same slot that the world holds too (a change A perceived, not A's own opinion),
    A saw the thing change: the final option."""
    mapped = _mapped(own, item)
    if not mapped:
        return None
    k, option = mapped[-1]
    if option != item.initial:
        return option
    was = own[k]
    facts = {(r.subject, r.attribute, r.value) for r in world if r.polarity}
    for r in own[k + 1 :]:
        same_slot = r.subject == was.subject and r.attribute == was.attribute
        later = at.get(r.event or "") != at.get(was.event or "")
        if (
            same_slot
            and later
            and r.value != was.value
            and (r.subject, r.attribute, r.value) in facts
        ):
            return item.final
    return option


def assumed(world: Sequence[State | Belief], item: Item, at: Sentences) -> str | None:
    """What A, holding nothing of the thing, takes it to be: as the story first had it
    (W's earliest state that maps to an option); where that state is a change of a slot
    the story set earlier, a change A did not see, so the other option."""
    mapped = _mapped(world, item)
    if not mapped:
        return None
    k, option = mapped[0]
    record = world[k]
    earlier = any(
        r.subject == record.subject
        and r.attribute == record.attribute
        and _sentence(r, at) != _sentence(record, at)
        for r in world[:k]
    )
    return _other(option, item) if earlier else option


@dataclass(frozen=True)
class Answer:
    answer: str | None
    source: From
    world: str | None


async def answer_item(store: StoryStore, item: Item) -> Answer:
    """The item's answer from A's beliefs, else assumed from W; and W's latest."""
    world = await history(store, ())
    own = await history(store, (slug(item.agent),))
    at = await sentences(store, item.text)
    world_now = believed(world, item)
    mine = changed(own, world, item, at)
    if mine is not None:
        return Answer(mine, "belief", world_now)
    return Answer(assumed(world, item, at), "assumed", world_now)


async def run_item(
    client: aredis.Redis, story_id: str, item: Item, builder: MemoryBuilderRole
) -> Answer:
    """``item``'s text committed as one turn by ``builder``, answered from the memory."""
    store = await create_story(
        client, story_id, BIGTOM_RULES, world="bigtom", title=item.key, setup=setup_delta(item)
    )
    try:
        await commit_text(commit_path(builder), store, 1, item.text)
        return await answer_item(store, item)
    finally:
        await store.delete()


async def run_model(
    client: aredis.Redis, builder: MemoryBuilderRole, items: Sequence[Item]
) -> tuple[list[Answer], list[str], float]:
    """Every item read by the model memory-builder ``builder``, a few at once: the
    answers (an item the model could not read: unanswered), the keys of those items, and
    the seconds the run took."""
    gate = asyncio.Semaphore(MODEL_CONCURRENCY)
    tag = run_id()
    failed: list[str] = []
    began = time.perf_counter()

    async def one(k: int, item: Item) -> Answer:
        async with gate:
            try:
                return await run_item(client, f"bigtom-model-{tag}-{k}", item, builder)
            except ModelError:
                failed.append(f"{item.key}.{item.condition}.init{item.init}")
                return Answer(None, "assumed", None)

    done = await asyncio.gather(*(one(k, item) for k, item in enumerate(items)))
    return list(done), failed, round(time.perf_counter() - began, 3)


@dataclass(frozen=True)
class Speed:
    """A reader's milliseconds per 1,000 words read: wall time and CPU time."""

    wall: float
    cpu: float


async def run_reader(
    client: aredis.Redis, name: str, reader: Reader, items: Sequence[Item]
) -> tuple[list[Answer], Speed]:
    """Every item read by ``reader``, concurrently; and the reader's ms per 1,000 words:
    wall time (what a caller waits, which grows with the machine's load) and CPU time
    (this thread's, what the reader itself costs)."""
    spent = [0.0, 0.0]
    count = [0]

    def timed(text: str, entities: Mapping[str, Any]) -> Any:
        began, cpu = time.perf_counter(), time.thread_time()
        try:
            return reader(text, entities)
        finally:
            spent[0] += time.perf_counter() - began
            spent[1] += time.thread_time() - cpu
            count[0] += len(text.split())

    if items:  # its data loaded once, before the timing (a cost of the process, not the text)
        reader(items[0].text, {})
    gate = asyncio.Semaphore(CONCURRENCY)
    tag = run_id()

    async def one(k: int, item: Item) -> Answer:
        async with gate:
            story = f"bigtom-{name}-{tag}-{k}"
            return await run_item(client, story, item, OfflineMemoryBuilder(timed))

    done = await asyncio.gather(*(one(k, item) for k, item in enumerate(items)))
    per = 1_000_000 / count[0] if count[0] else 0.0
    return list(done), Speed(round(spent[0] * per, 3), round(spent[1] * per, 3))


# --- scoring ----------------------------------------------------------------------------


def _cell(pairs: Sequence[tuple[Item, Answer]]) -> dict[str, Any]:
    n = len(pairs)
    if not n:
        return {"n": 0}

    def share(hits: Iterable[bool]) -> float:
        return round(sum(hits) / n, 4)

    return {
        "n": n,
        "accuracy": share(a.answer == i.gold for i, a in pairs),
        "answered": share(a.answer is not None for _, a in pairs),
        "right_from_belief": share(a.answer == i.gold and a.source == "belief" for i, a in pairs),
        "world": share(a.world == i.world_gold for i, a in pairs),
    }


def figures(items: Sequence[Item], answers: Sequence[Answer]) -> dict[str, Any]:
    """Per part, per condition (and per condition and init), and overall."""
    out: dict[str, Any] = {}
    for part in ("working", "checking", "all"):
        cells: dict[str, list[tuple[Item, Answer]]] = defaultdict(list)
        for item, ans in zip(items, answers, strict=True):
            if part != "all" and item.part != part:
                continue
            cells[item.condition].append((item, ans))
            cells[f"{item.condition}.init{item.init}"].append((item, ans))
            cells["all"].append((item, ans))
        out[part] = {name: _cell(cells[name]) for name in sorted(cells)}
    return out


def baselines(items: Sequence[Item], world: Sequence[Answer]) -> dict[str, list[Answer]]:
    """Always initial, always final, and W alone (A believes what the world holds, as read
    by the measured reader)."""
    return {
        "always_initial": [Answer(i.initial, "assumed", i.initial) for i in items],
        "always_final": [Answer(i.final, "assumed", i.final) for i in items],
        "w_alone": [Answer(a.world, "assumed", a.world) for a in world],
    }


READERS: dict[str, Reader] = {
    "phased": read_story,
    "prose": read_prose,
    "controlled": read_controlled,
}


def limited(items: Sequence[Item], limit: int | None) -> list[Item]:
    """The first ``limit`` items of each part, in the file's order (all: None)."""
    if limit is None:
        return list(items)
    taken: dict[Part, int] = defaultdict(int)
    out = []
    for item in items:
        if taken[item.part] < limit:
            taken[item.part] += 1
            out.append(item)
    return out


# long (over 60 lines): the keyword-only options of the bench are most of its lines
async def run_bigtom(
    path: str | Path,
    *,
    redis_url: str | None,
    json_out: str | Path | None = None,
    answers_out: str | Path | None = None,
    reader: str = "phased",
    limit: int | None = None,
    model: Callable[[], MemoryBuilderRole] | None = None,
    quiet: bool = False,
) -> dict[str, Any]:
    """Run BigToM on ``path`` (the first ``limit`` items of each part): every offline
    reader, the baselines and, given ``model`` (which makes the model memory-builder), the
    model's column; print a table, write the JSON and the measured reader's answers if
    asked; return the JSON."""
    items = limited(load_bigtom(path), limit)
    back = limited(load_bigtom(path, "backward"), limit)
    answers: dict[str, list[Answer]] = {}
    speed: dict[str, Speed] = {}
    failed: list[str] = []
    seconds = 0.0
    async with bench_redis(redis_url) as client:
        for name, fn in READERS.items():
            answers[name], speed[name] = await run_reader(client, name, fn, items)
        backward, _ = await run_reader(client, f"{reader}-back", READERS[reader], back)
        if model is not None:
            answers["model"], failed, seconds = await run_model(client, model(), items)
    answers.update(baselines(items, answers[reader]))
    result: dict[str, Any] = {
        "benchmark": "bigtom",
        "reader": reader,
        "rows": len({i.key for i in items}),
        "items": len(items),
        "limit": limit,
        "parts": {p: len({i.key for i in items if i.part == p}) for p in ("working", "checking")},
        "systems": {},
    }
    for name in (reader, *(n for n in answers if n != reader)):
        entry = figures(items, answers[name])
        if name in speed:
            entry["reader_ms_per_1000_words"] = speed[name].wall
            entry["reader_cpu_ms_per_1000_words"] = speed[name].cpu
        if name == "model":
            entry |= {"failed": failed, "seconds": seconds}
        result["systems"][name] = entry
    # backward belief, reported beside (no target): the measured reader and two constants
    result["backward"] = {
        "items": len(back),
        reader: figures(back, backward),
        "always_initial": figures(back, [Answer(i.initial, "assumed", None) for i in back]),
        "always_final": figures(back, [Answer(i.final, "assumed", None) for i in back]),
    }
    if not quiet:
        show(result)
    write_json(json_out, result)
    write_answers(
        answers_out,
        (
            {
                "key": i.key,
                "condition": i.condition,
                "init": i.init,
                "answer": a.answer,
                "from": a.source,
                "world": a.world,
            }
            for i, a in zip(items, answers[reader], strict=True)
        ),
    )
    return result


_SHORT = {"true_belief": "TB", "false_belief": "FB", "true_control": "TC", "false_control": "FC"}


def show(result: dict[str, Any]) -> None:
    """Accuracy per condition, working / checking, a system a column."""
    systems = result["systems"]
    names = list(systems)
    rows: list[list[str]] = []
    for cond in (*CONDITIONS, "all"):
        for figure in ("accuracy", "right_from_belief", "world"):
            short = {"accuracy": "acc", "right_from_belief": "from B", "world": "W"}[figure]
            label = f"{_SHORT.get(cond, cond)} {short}"
            cells = []
            for n in names:
                w = systems[n]["working"].get(cond, {}).get(figure, 0.0)
                c = systems[n]["checking"].get(cond, {}).get(figure, 0.0)
                cells.append(f"{w:.3f}/{c:.3f}")
            rows.append([label, *cells])
    rows.append(
        ["ms/1k words", *(str(systems[n].get("reader_ms_per_1000_words", "-")) for n in names)]
    )
    rows.append(
        [
            "CPU ms/1k words",
            *(str(systems[n].get("reader_cpu_ms_per_1000_words", "-")) for n in names),
        ]
    )
    back = result["backward"]
    for cond in BACKWARD:
        cells = []
        for n in names:
            fig = back.get(n, {})
            w = fig.get("working", {}).get(cond, {}).get("accuracy") if fig else None
            c = fig.get("checking", {}).get(cond, {}).get("accuracy") if fig else None
            cells.append("-" if w is None or c is None else f"{w:.3f}/{c:.3f}")
        rows.append([f"backward {_SHORT[cond]} acc", *cells])
    parts = result["parts"]
    title = (
        f"BigToM: {result['rows']} rows ({parts['working']} working / {parts['checking']} "
        f"checking), {result['items']} items; working/checking (reader {result['reader']})"
    )
    print_table(title, ["figure", *names], rows)
