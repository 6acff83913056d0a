"""``fabula bench lore``: what lore activation costs, against the naive scan, in one run.

A generated lorebook (``--entries``, default 100 and 1,000; seeded): every entry keyed by a
name of its own, a third with a key of two words besides, some with a second one-word key,
secondary keys (AND ANY / NOT ANY), a few ``/regex/`` keys, a few constant entries, and a
text of its own about 300 words long; the text activated is a request and recent turns
(about 400 words) that name a few dozen of the entries. It reports, p50/p95 over the
repetitions:

- ``naive_ms``: the baseline, :func:`naive_activate` — every live entry's keys tested
  against the text one by one, its decorators read again at every call (the activation
  as it was first written, kept here as the reference);
- ``activate_ms``: :func:`fabula.worlds.activation.activate` on the same entries, warm
  (its compiled index reused, as it is for a story's pack); ``first_ms`` the first call,
  which compiles it;
- ``same``: whether both activated the same entries, by the same keys, at the same steps.

Then the assembly: a story made from a pack with that lorebook and the same story
without it, the writer's recall (``fabula recall``, its lore section included) timed on
each; ``lore_over_ms`` is the p50 difference (the target: at most 2 ms for 1,000 entries).
"""

from __future__ import annotations

import asyncio
import functools
import random
import re
import time
from collections.abc import Callable, Sequence
from typing import Any

from fabula.bench.common import private_redis_url
from fabula.bench.report import percentiles, print_table, write_json
from fabula.graph.service.recall import recall, world_lore
from fabula.memory.acl import MindPool
from fabula.memory.server import connect_async
from fabula.memory.store import StoryStore
from fabula.memory.tokens import default_counter
from fabula.worlds.activation import (
    Activated,
    Admission,
    Buffer,
    Fired,
    activate,
    decorators_of,
    delay_level,
    delayed,
    recurse,
    secondary_holds,
)
from fabula.worlds.imports.keys import KeyError_, is_regex_key, key_matches
from fabula.worlds.loader import load_world, setup_delta
from fabula.worlds.lore import Lore, LoreBook, LoreEntry, split_decorators

_WORD = re.compile(r"[A-Za-z0-9_]+")  # JavaScript's ASCII \w, as SillyTavern's \W bounds
REGEX_SHARE = 0.005
"""The share of entries with a regex key: a regular expression is no index's, every one is
a scan of the text (about 0.1 ms for this text here), so a book costs one per regex key."""

_SYLLABLES = (
    "ar",
    "bel",
    "cor",
    "dun",
    "el",
    "fen",
    "gar",
    "hal",
    "is",
    "jor",
    "kel",
    "lor",
    "mor",
    "nar",
    "or",
    "pel",
    "quin",
    "ros",
    "sar",
    "tor",
    "ul",
    "var",
    "wen",
    "yor",
    "zan",
)


def _word(rng: random.Random) -> str:
    return "".join(rng.choice(_SYLLABLES) for _ in range(rng.randint(2, 3)))


def lorebook(entries: int, seed: int = 7) -> tuple[list[LoreEntry], str]:
    """``entries`` generated entries and a text that names some of them (see the module)."""
    rng = random.Random(seed)
    names = [_word(rng).capitalize() + str(i) for i in range(entries + entries // 2)]
    out = []
    for i in range(entries):
        keys = [names[i]]
        if rng.random() < 0.3:
            keys.append(f"{names[i]} {rng.choice(['Keep', 'Hall', 'Gate'])}")
        if rng.random() < 0.2:
            keys.append(_word(rng))
        if rng.random() < REGEX_SHARE:
            keys.append(f"/{names[i][:3]}\\w+ing/i")
        extra: dict[str, Any] = {}
        if rng.random() < 0.1:
            extra = {
                "selective": True,
                "secondary_keys": (rng.choice(names),),
                "logic": rng.choice(["and_any", "not_any"]),
            }
        body = " ".join([_word(rng) for _ in range(300)] + rng.sample(names, 3))
        out.append(
            LoreEntry(
                keys=tuple(keys),
                content=body,
                name=f"entry {i}",
                order=rng.randint(0, 200),
                priority=rng.choice([None, 1, 5]),
                constant=rng.random() < 0.01,
                **extra,
            )
        )
    text = " ".join(
        rng.choice(names[:entries]) if rng.random() < 0.03 else _word(rng) for _ in range(400)
    )
    return out, text


# -- the baseline: the naive scan ----------------------------------------------------------
@functools.lru_cache(maxsize=8)
def _naive_lower(text: str) -> str:
    return text.lower()


@functools.lru_cache(maxsize=8)
def _naive_words(text: str) -> frozenset[str]:
    return frozenset(_WORD.findall(text))


def _naive_hits(
    keys: Sequence[str], text: str, entry: LoreEntry, case: bool, whole: bool
) -> list[str]:
    out = []
    for key in keys:
        if not entry.use_regex and not is_regex_key(key):
            # a plain key must be in the text as a substring: a fast test before the regex
            needle = key.strip() if case else key.strip().lower()
            hay = text if case else _naive_lower(text)
            if whole and _WORD.fullmatch(needle):
                if needle in _naive_words(hay):
                    out.append(key)
                continue
            if needle not in hay:
                continue
        try:
            if key_matches(
                key, text, use_regex=entry.use_regex, case_sensitive=case, whole_words=whole
            ):
                out.append(key)
        except KeyError_:
            continue
    return out


def _naive_match(
    entry: LoreEntry,
    deco: dict[str, str],
    text: str,
    case: bool,
    whole: bool,
    turn: int | None,
    context: str,
) -> str | None:
    def number(value: str | None) -> int | None:
        try:
            return int(value) if value is not None else None
        except ValueError:
            return None

    after, every = number(deco.get("activate_only_after")), number(deco.get("activate_only_every"))
    if turn is not None and ((after is not None and turn < after) or (every and turn % every)):
        return None
    case = entry.case_sensitive if entry.case_sensitive is not None else case
    whole = entry.whole_words if entry.whole_words is not None else whole
    hits = _naive_hits(entry.keys, text, entry, case, whole)
    if not hits:
        return None
    for name, wanted in (("additional_keys", True), ("exclude_keys", False)):
        if name in deco:
            listed = [k.strip() for k in deco[name].split(",") if k.strip()]
            if bool(_naive_hits(listed, context, entry, case, whole)) != wanted:
                return None
    if entry.selective and entry.secondary_keys:
        found = len(_naive_hits(entry.secondary_keys, context, entry, case, whole))
        if not secondary_holds(entry, found):
            return None
    return hits[0]


def naive_activate(
    entries: Sequence[LoreEntry],
    text: str,
    *,
    budget: int | None = None,
    count_tokens: Callable[[str], int] = lambda s: len(s.split()),
    recursive: bool = True,
    max_recursion: int = 0,
    case_sensitive: bool = False,
    whole_words: bool = True,
    turn: int | None = None,
) -> list[Activated]:
    """The same rules as :func:`~fabula.worlds.activation.activate`, written plainly: at
    every call each entry's decorators are read and every live entry's keys are tested
    against the text one by one (the bench's baseline, and the tests' oracle)."""
    live: dict[int, LoreEntry] = {}
    decos: dict[int, dict[str, str]] = {}
    for i, e in enumerate(entries):
        if not e.enabled:
            continue
        deco = decos[i] = decorators_of(e)
        if "dont_activate" not in deco or "activate" in deco:
            live[i] = e
    taken = Admission(budget)

    def found(i: int, fired: Fired, key: str | None, step: int) -> Activated:
        return Activated(
            i, live[i], fired, key, step, count_tokens(split_decorators(live[i].content)[1])
        )

    first: list[Activated] = []
    for i, e in live.items():
        if e.constant or "activate" in decos[i]:
            first.append(found(i, "constant" if e.constant else "decorator", None, 0))
        elif not delayed(e):
            key = _naive_match(e, decos[i], text, case_sensitive, whole_words, turn, text)
            if key is not None:
                first.append(found(i, "key", key, 0))

    def more(buffer: Buffer, done: set[int], step: int, level: int, _w: bool) -> list[Activated]:
        scan = buffer.get(None)
        out = []
        for i, e in live.items():
            if i in done or e.exclude_recursion or e.constant or "activate" in decos[i]:
                continue
            if delay_level(e) > level:
                continue
            key = _naive_match(e, decos[i], scan, case_sensitive, whole_words, turn, scan)
            if key is not None:
                out.append(found(i, "recursion", key, step))
        return out

    levels = sorted({delay_level(e) for e in live.values()} - {0})
    recurse(
        taken,
        first,
        Buffer(text),
        recursive,
        max_recursion,
        levels,
        lambda a: split_decorators(a.entry.content)[1],
        more,
    )
    return taken.in_order()


# -- the run -------------------------------------------------------------------------------
def _timed(call: Callable[[], object], repeat: int) -> list[float]:
    samples = []
    for _ in range(repeat):
        started = time.perf_counter()
        call()
        samples.append((time.perf_counter() - started) * 1000)
    return samples


def _activation(size: int, repeat: int, budget: int) -> dict[str, Any]:
    entries, text = lorebook(size)
    started = time.perf_counter()
    fast = activate(entries, text, budget=budget)
    first_ms = (time.perf_counter() - started) * 1000
    naive = naive_activate(entries, text, budget=budget)
    naive_ms = percentiles(_timed(lambda: naive_activate(entries, text, budget=budget), repeat))
    fast_ms = percentiles(_timed(lambda: activate(entries, text, budget=budget), repeat))

    def seen(found: list[Activated]) -> list[tuple[int, str, str | None, int]]:
        return [(a.index, a.fired, a.key, a.step) for a in found]

    return {
        "entries": size,
        "activated": len(fast),
        "naive_ms": naive_ms,
        "activate_ms": fast_ms,
        "first_ms": round(first_ms, 3),
        "speedup": round(naive_ms["p50"] / max(fast_ms["p50"], 1e-6), 1),
        "same": seen(fast) == seen(naive),
    }


async def _assembly(url: str | None, sizes: Sequence[int], repeat: int) -> list[dict[str, Any]]:
    base = load_world("lighthouse")
    counter = default_counter()
    rows = []
    with private_redis_url(url) as server:
        client = connect_async(server)
        pool = MindPool(client, server)
        request = "What does the keeper know about the lamp room?"
        for size in sizes:
            entries, text = lorebook(size)
            named = [w for w in text.split() if w[-1].isdigit()][:6]
            request_text = f"{request} And {', '.join(named)}?"
            book = LoreBook(name="generated", format="lorebook_v3", entries=tuple(entries))
            lore = Lore(books=(book,))
            stores = {}
            for tag, pack in (("without", base), ("with", base.model_copy(update={"lore": lore}))):
                store = stores[tag] = StoryStore(client, f"benchlore-{size}-{tag}")
                await store.create(setup_delta(pack), world=pack.id, title=pack.title, pack=pack)
                await recall(store, request_text, budget=2000, counter=counter, minds=pool)
            times: dict[str, list[float]] = {"without": [], "with": [], "lore": []}
            for _ in range(repeat):  # interleaved: the machine's load falls on both alike
                for tag, store in stores.items():
                    started = time.perf_counter()
                    await recall(store, request_text, budget=2000, counter=counter, minds=pool)
                    times[tag].append((time.perf_counter() - started) * 1000)
                started = time.perf_counter()
                await world_lore(
                    stores["with"], request_text, budget=500, counter=counter, as_of=None
                )
                times["lore"].append((time.perf_counter() - started) * 1000)
            for store in stores.values():
                await store.delete()
            without, with_lore = percentiles(times["without"]), percentiles(times["with"])
            rows.append(
                {
                    "entries": size,
                    "without_ms": without,
                    "with_ms": with_lore,
                    "lore_over_ms": round(with_lore["p50"] - without["p50"], 3),
                    "world_lore_ms": percentiles(times["lore"]),
                }
            )
        await pool.aclose()
        await client.aclose()
    return rows


async def run_lore(
    sizes: Sequence[int],
    repeat: int,
    json_out: str | None,
    assembly: bool = True,
    url: str | None = None,
) -> dict[str, Any]:
    """Measure activation (naive and compiled) and, with ``assembly``, the writer's recall
    with and without the lore, for each size (on ``url``'s Redis; None: a private one
    started here); print the tables, write ``json_out``."""
    activation = [_activation(size, repeat, budget=4000) for size in sizes]
    print_table(
        "lore activation (ms)",
        ["entries", "activated", "naive p50", "activate p50", "p95", "first", "x", "same"],
        [
            [
                r["entries"],
                r["activated"],
                r["naive_ms"]["p50"],
                r["activate_ms"]["p50"],
                r["activate_ms"]["p95"],
                r["first_ms"],
                r["speedup"],
                r["same"],
            ]
            for r in activation
        ],
    )
    assembled = await _assembly(url, sizes, repeat) if assembly else []
    if assembled:
        print_table(
            "writer's recall with lore (ms)",
            ["entries", "without p50", "with p50", "with p95", "over p50", "lore p50", "lore p95"],
            [
                [
                    r["entries"],
                    r["without_ms"]["p50"],
                    r["with_ms"]["p50"],
                    r["with_ms"]["p95"],
                    r["lore_over_ms"],
                    r["world_lore_ms"]["p50"],
                    r["world_lore_ms"]["p95"],
                ]
                for r in assembled
            ],
        )
    result = {"activation": activation, "assembly": assembled, "repeat": repeat}
    write_json(json_out, result)
    return result


def run(sizes: Sequence[int], repeat: int, json_out: str | None, assembly: bool = True) -> None:
    """Synchronous entry point for the command line."""
    asyncio.run(run_lore(sizes, repeat, json_out, assembly))
