"""``fabula bench locomo``: recalling a question's evidence from a long conversation.

Each LoCoMo conversation becomes a story: its speakers are characters, each session
one turn (a scene) dated by its ``session_<n>_date_time``, each dialogue line an utterance
of its speaker heard by the others (a shared picture is kept as its caption). Only the
dialogue is read: the dataset's ``event_summary``, ``observation`` and ``session_summary``
are answers, never inputs.

The story is consolidated into its hierarchy (scenes, plotlines) as a writer's story is,
so the context holds what a writer's would: the summaries of the sessions it bears on
that its episodes do not show in full. For every question the author's context is
assembled with the question as the request
(:func:`fabula.memory.recall.context.author_context`), at each budget, and scored:
evidence recall (the share of the question's evidence lines whose full text appears
verbatim in the context, whitespace aside), the share of questions with all their evidence,
both per category, mean tokens, and assembly time. Evidence ids that name no line of the
dialogue (annotation slips, such as "D8:6; D9:17" written as one) are left out and counted,
as the dataset's README asks. Anyone who speaks besides the two named speakers
is a character of the story too, and a speaker's name is read without surrounding space.

The same questions are also put to the first speaker's own mind (``character``): its
context (:func:`fabula.memory.recall.context.character_context`), assembled through its
own read-only Redis user from what it witnessed and remembers — here every line, since both
speakers hear the whole conversation — scored the same way.

Baselines in the same run, each filling the same budget under the same token counter with
plain ``Speaker: text`` lines: ``recent`` (the most recent lines that fit), ``bm25`` (bm25s
over the raw lines) and ``bm25_window`` (bm25s over three-line windows within a session),
both stemmed with PyStemmer; and the whole conversation's token count.

With an embedder (``--embeddings MODEL``: dense retrieval, off by default), the episodes are
embedded as they are indexed and each request as it is assembled, as the application does;
the request's embedding time is inside the assembly time, and is reported on its own too
(``embed_ms``), with the time spent embedding the episodes (``index_embed_s``). The
baselines stay lexical. The run stops at once when the embedder cannot be reached, and
counts the embeddings that failed later (recall stays lexical for those).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import bm25s
import Stemmer

from fabula.bench.common import commit_path, create_story, private_redis_url, rate, run_id
from fabula.bench.data import malformed, parsing, read_json
from fabula.bench.report import print_table, write_json
from fabula.errors import ModelUnavailable
from fabula.graph.commit import commit_delta
from fabula.memory.acl import CharacterMind, open_mind
from fabula.memory.connection import connect_async
from fabula.memory.delta import DeltaBuilder, TurnDelta
from fabula.memory.index.vectors import Embedder
from fabula.memory.recall.context import author_context
from fabula.memory.records import slug
from fabula.memory.rules import WorldRules
from fabula.memory.store import StoryStore
from fabula.memory.tokens import TokenCounter, default_counter

CATEGORIES = ("1", "2", "3", "4", "5")
TARGET_CATEGORIES = frozenset({1, 2, 3, 4})


@dataclass(frozen=True)
class Line:
    id: str
    speaker: str
    text: str
    caption: str | None = None

    @property
    def words(self) -> str:
        """What the speaker shared: the line, and a shared picture as its caption."""
        return self.text + (f" [shares {self.caption}]" if self.caption else "")


@dataclass(frozen=True)
class Session:
    number: int
    date: str
    lines: tuple[Line, ...]


@dataclass(frozen=True)
class Question:
    question: str
    category: int
    evidence: tuple[str, ...]


@dataclass(frozen=True)
class Conversation:
    id: str
    speakers: tuple[str, ...]  # the two named speakers, then anyone else who speaks
    sessions: tuple[Session, ...]
    questions: tuple[Question, ...]
    missing_evidence: int = 0

    def lines(self) -> list[tuple[Session, Line]]:
        return [(s, line) for s in self.sessions for line in s.lines]


KIND = "LoCoMo"


def load_locomo(path: str | Path) -> list[Conversation]:
    """The conversations of a LoCoMo file: the dialogue and the questions, nothing else.
    Raises :class:`~fabula.errors.InvalidInput` for a file that is not one."""
    data = read_json(path, KIND)
    if not isinstance(data, list) or not data:
        raise malformed(path, KIND, "", "expected a non-empty list of conversations")
    out = []
    for number, item in enumerate(data):
        with parsing(path, KIND, f"conversation {number}"):
            out.append(_conversation(item))
    return out


def _conversation(item: dict[str, Any]) -> Conversation:
    conv = item["conversation"]
    sessions = []
    n = 1
    while f"session_{n}" in conv:
        lines = tuple(
            Line(
                str(raw["dia_id"]),
                _speaker(raw["speaker"], f"session_{n} line {raw['dia_id']}"),
                str(raw["text"]),
                raw.get("blip_caption"),
            )
            for raw in conv[f"session_{n}"]
        )
        sessions.append(Session(n, str(conv[f"session_{n}_date_time"]), lines))
        n += 1
    if not sessions:
        raise KeyError("session_1")
    named = (_speaker(conv["speaker_a"], "speaker_a"), _speaker(conv["speaker_b"], "speaker_b"))
    taken = {slug(name) for name in named}
    others = []
    for line in (line for s in sessions for line in s.lines):
        if slug(line.speaker) not in taken:
            taken.add(slug(line.speaker))
            others.append(line.speaker)
    known = {line.id for s in sessions for line in s.lines}
    questions, missing = [], 0
    for qa in item["qa"]:
        given = [str(e) for e in qa.get("evidence", [])]
        evidence = tuple(dict.fromkeys(e for e in given if e in known))
        missing += len([e for e in given if e not in known])
        if evidence:
            questions.append(Question(str(qa["question"]), int(qa["category"]), evidence))
    return Conversation(
        str(item["sample_id"]),
        (*named, *others),
        tuple(sessions),
        tuple(questions),
        missing,
    )


def _speaker(raw: object, where: str) -> str:
    """A speaker's name, without surrounding space; one that names no one is refused."""
    name = str(raw).strip()
    if not any(ch.isalnum() for ch in name):
        raise ValueError(f"{where}: the speaker {raw!r} names no one")
    return name


def session_delta(turn: int, session: Session, speakers: Sequence[str]) -> TurnDelta:
    """One session as one turn: a ``Speaker: words`` line per utterance, dated."""
    text = "\n".join(f"{line.speaker}: {line.words}" for line in session.lines)
    builder = DeltaBuilder(turn, text)
    builder.clock = session.date
    everyone = sorted(slug(s) for s in speakers)
    offset = 0
    for line in session.lines:
        start = offset + len(line.speaker) + 2
        end = start + len(line.words)
        who = slug(line.speaker)
        builder.event(
            "say", builder.span(start, end), actor=who, participants=(who,), witnesses=everyone
        )
        offset = end + 1
    return builder.build()


def _setup(speakers: Sequence[str]) -> TurnDelta:
    text = f"A conversation between {speakers[0]} and {speakers[1]}"
    if speakers[2:]:
        text += f", joined by {', '.join(speakers[2:])}"
    builder = DeltaBuilder(0, text + ".")
    for name in speakers:
        builder.entity("character", name)
    return builder.build()


def _normal(text: str) -> str:
    return " ".join(text.split())


# -- baselines --------------------------------------------------------------------------


@dataclass
class _Baselines:
    lines: list[Line]
    costs: list[int]
    line_index: bm25s.BM25
    windows: list[list[int]]
    window_index: bm25s.BM25
    stemmer: Stemmer.Stemmer

    @classmethod
    def build(cls, conv: Conversation, counter: TokenCounter) -> _Baselines:
        stemmer = Stemmer.Stemmer("english")
        pairs = conv.lines()
        lines = [line for _, line in pairs]
        rendered = [f"{line.speaker}: {line.words}" for line in lines]
        line_index = bm25s.BM25()
        line_index.index(
            bm25s.tokenize(rendered, stopwords="en", stemmer=stemmer, show_progress=False),
            show_progress=False,
        )
        windows = []
        for i, (session, _) in enumerate(pairs):
            windows.append(
                [j for j in range(i - 1, i + 2) if 0 <= j < len(pairs) and pairs[j][0] is session]
            )
        window_index = bm25s.BM25()
        window_index.index(
            bm25s.tokenize(
                [" ".join(rendered[j] for j in w) for w in windows],
                stopwords="en",
                stemmer=stemmer,
                show_progress=False,
            ),
            show_progress=False,
        )
        costs = [counter.count(r) + 1 for r in rendered]
        return cls(lines, costs, line_index, windows, window_index, stemmer)

    def _ranked(self, index: bm25s.BM25, question: str) -> list[int]:
        tokens = bm25s.tokenize(
            [question], stopwords="en", stemmer=self.stemmer, show_progress=False
        )
        if not tokens.vocab:
            return []
        docs, _ = index.retrieve(tokens, k=len(self.lines), show_progress=False)
        return [int(d) for d in docs[0]]

    def _fill(self, order: Sequence[int], budget: int) -> set[str]:
        used, got = 0, set()
        for i in order:
            if self.lines[i].id in got or used + self.costs[i] > budget:
                continue
            used += self.costs[i]
            got.add(self.lines[i].id)
        return got

    def contexts(self, question: str, budget: int) -> dict[str, set[str]]:
        recent = self._fill(range(len(self.lines) - 1, -1, -1), budget)
        bm25 = self._fill(self._ranked(self.line_index, question), budget)
        windows = [j for w in self._ranked(self.window_index, question) for j in self.windows[w]]
        return {"recent": recent, "bm25": bm25, "bm25_window": self._fill(windows, budget)}


# -- the run ----------------------------------------------------------------------------


_R = TypeVar("_R")


@dataclass
class _TimedEmbedder:
    """An embedder that keeps the time of each call (and counts the failed ones)."""

    inner: Embedder
    query_ms: list[float] = field(default_factory=list)
    documents_s: float = 0.0
    documents: int = 0
    failures: int = 0

    async def _timed(self, call: Awaitable[_R]) -> tuple[_R, float]:
        """``call``'s result and the seconds it took; a failure is counted, then raised."""
        started = time.perf_counter()
        try:
            result = await call
        except Exception:
            self.failures += 1
            raise
        return result, time.perf_counter() - started

    async def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        vectors, seconds = await self._timed(self.inner.embed_documents(texts))
        self.documents_s += seconds
        self.documents += len(texts)
        return vectors

    async def embed_query(self, text: str) -> list[float]:
        vector, seconds = await self._timed(self.inner.embed_query(text))
        self.query_ms.append(seconds * 1000)
        return vector

    async def probe(self) -> None:
        """Raise :class:`ModelUnavailable` when the embedder gives no vector."""
        try:
            await self.inner.embed_query("Can you hear me?")
        except Exception as exc:
            raise ModelUnavailable(f"the embedder gives no vector: {exc}") from exc

    def figures(self) -> dict[str, Any]:
        from fabula.bench.report import percentiles

        return {
            "embed_ms": percentiles(self.query_ms),
            "index_embed_s": round(self.documents_s, 2),
            "episodes_embedded": self.documents,
            "embedding_failures": self.failures,
        }


@dataclass
class _Tally:
    recall: dict[str, list[float]] = field(default_factory=dict)
    complete: dict[str, list[bool]] = field(default_factory=dict)
    tokens: list[int] = field(default_factory=list)
    ms: list[float] = field(default_factory=list)

    def add(self, category: int, share: float) -> None:
        self.recall.setdefault(str(category), []).append(share)
        self.complete.setdefault(str(category), []).append(share == 1.0)

    def figures(self, with_time: bool) -> dict[str, Any]:
        target = [v for c, vs in self.recall.items() if int(c) in TARGET_CATEGORIES for v in vs]
        whole = [v for c, vs in self.complete.items() if int(c) in TARGET_CATEGORIES for v in vs]
        out: dict[str, Any] = {
            "recall": round(sum(target) / len(target), 4) if target else 0.0,
            "all_evidence": rate(whole),
            "by_category": {
                c: round(sum(self.recall[c]) / len(self.recall[c]), 4)
                for c in CATEGORIES
                if c in self.recall
            },
            "all_evidence_by_category": {
                c: rate(self.complete[c]) for c in CATEGORIES if c in self.complete
            },
        }
        if with_time:
            from fabula.bench.report import percentiles

            out["mean_tokens"] = round(sum(self.tokens) / len(self.tokens), 1) if self.tokens else 0
            out["assemble_ms"] = percentiles(self.ms)
        return out


async def _run_conversation(
    store: StoryStore,
    conv: Conversation,
    budgets: Sequence[int],
    counter: TokenCounter,
    ours: dict[int, _Tally],
    baselines: dict[str, dict[int, _Tally]],
    embedder: Embedder | None = None,
    mind: CharacterMind | None = None,
    minds: dict[int, _Tally] | None = None,
) -> int:
    path = commit_path(embedder=embedder)  # each session indexed and consolidated
    for turn, session in enumerate(conv.sessions, start=1):
        await commit_delta(path, store, session_delta(turn, session, conv.speakers))
    texts = {line.id: _normal(line.text) for _, line in conv.lines()}
    base = _Baselines.build(conv, counter)
    for q in conv.questions:
        for budget in budgets:
            started = time.perf_counter()
            assembly = await author_context(
                store, q.question, budget=budget, counter=counter, embedder=embedder
            )
            ours[budget].ms.append((time.perf_counter() - started) * 1000)
            ours[budget].tokens.append(assembly.tokens)
            context = _normal(assembly.text)
            share = sum(texts[e] in context for e in q.evidence) / len(q.evidence)
            ours[budget].add(q.category, share)
            if mind is not None and minds is not None:
                started = time.perf_counter()
                recalled = await mind.recall(q.question, budget=budget, counter=counter)
                minds[budget].ms.append((time.perf_counter() - started) * 1000)
                minds[budget].tokens.append(recalled.tokens)
                found = _normal(recalled.text)
                minds[budget].add(
                    q.category, sum(texts[e] in found for e in q.evidence) / len(q.evidence)
                )
            for name, got in base.contexts(q.question, budget).items():
                hit = sum(e in got for e in q.evidence) / len(q.evidence)
                baselines[name][budget].add(q.category, hit)
    return sum(base.costs)


async def _run_stories(
    url: str,
    tag: str,
    conversations: Sequence[Conversation],
    budgets: Sequence[int],
    counter: TokenCounter,
    ours: dict[int, _Tally],
    baselines: dict[str, dict[int, _Tally]],
    timed: _TimedEmbedder | None,
    minds: dict[int, _Tally],
) -> list[int]:
    """Each conversation run as its own story (with its first speaker's mind) on the
    server at ``url``, deleted once run: the tokens of each one's full context."""
    full_tokens: list[int] = []
    client = connect_async(url, max_connections=64)
    try:
        for k, conv in enumerate(conversations):
            speakers = conv.speakers
            store = await create_story(
                client,
                f"locomo-{tag}-{k}",
                WorldRules(),
                world="locomo",
                title=conv.id,
                setup=_setup(speakers),
            )
            mind = await open_mind(client, url, store.story, slug(speakers[0]))
            try:
                tokens = await _run_conversation(
                    store, conv, budgets, counter, ours, baselines, timed, mind, minds
                )
                full_tokens.append(tokens)
            finally:
                await mind.close()
                await store.delete()
    finally:
        await client.aclose()
    return full_tokens


async def run_locomo(
    path: str | Path,
    *,
    redis_url: str | None,
    budgets: Sequence[int] = (500, 1000),
    json_out: str | Path | None = None,
    quiet: bool = False,
    counter: TokenCounter | None = None,
    embedder: Embedder | None = None,
    embeddings: str | None = None,
) -> dict[str, Any]:
    """Run the benchmark; print the table, write the JSON if asked, and return it.

    ``embedder``: dense retrieval for Fabula's contexts (``embeddings`` names its model in
    the report); raises :class:`ModelUnavailable` before anything runs when it gives no
    vector."""
    counter = counter or default_counter()
    timed = _TimedEmbedder(embedder) if embedder is not None else None
    if timed is not None:
        await timed.probe()
    conversations = load_locomo(path)
    ours = {b: _Tally() for b in budgets}
    minds = {b: _Tally() for b in budgets}
    baselines = {n: {b: _Tally() for b in budgets} for n in ("recent", "bm25", "bm25_window")}
    started = time.perf_counter()
    tag = run_id()
    with private_redis_url(redis_url) as url:
        full_tokens = await _run_stories(
            url, tag, conversations, budgets, counter, ours, baselines, timed, minds
        )
    result: dict[str, Any] = {
        "benchmark": "locomo",
        "conversations": len(conversations),
        "questions": sum(len(c.questions) for c in conversations),
        "missing_evidence_ids": sum(c.missing_evidence for c in conversations),
        "counter": getattr(counter, "name", type(counter).__name__),
        "embeddings": (embeddings or "unnamed") if timed is not None else None,
        **(timed.figures() if timed is not None else {}),
        "budgets": {str(b): ours[b].figures(True) for b in budgets},
        "character": {str(b): minds[b].figures(True) for b in budgets},
        "baselines": {
            name: {str(b): tallies[b].figures(False) for b in budgets}
            for name, tallies in baselines.items()
        },
        "full_context_tokens": round(sum(full_tokens) / max(len(full_tokens), 1)),
        "seconds": round(time.perf_counter() - started, 2),
    }
    if not quiet:
        _print(result, budgets)
    write_json(json_out, result)
    return result


def _print(result: dict[str, Any], budgets: Sequence[int]) -> None:
    rows = []
    for b in budgets:
        key = str(b)
        systems = [("fabula", result["budgets"][key])]
        if "character" in result:
            systems.append(("character", result["character"][key]))
        systems += [
            (name, result["baselines"][name][key]) for name in ("recent", "bm25", "bm25_window")
        ]
        for name, fig in systems:
            cats = fig["by_category"]
            rows.append(
                [
                    b,
                    name,
                    f"{fig['recall']:.3f}",
                    f"{fig['all_evidence']:.3f}",
                    *(f"{cats.get(c, 0):.3f}" for c in CATEGORIES),
                    fig.get("mean_tokens", ""),
                    (
                        f"{fig['assemble_ms']['p50']}/{fig['assemble_ms']['p95']}"
                        if "assemble_ms" in fig
                        else ""
                    ),
                ]
            )
    dense = ""
    if result["embeddings"] is not None:
        dense = (
            f"; dense retrieval: {result['embeddings']} (request embedding p50/p95 "
            f"{result['embed_ms']['p50']}/{result['embed_ms']['p95']} ms, inside the "
            f"assembly time; {result['embedding_failures']} failed)"
        )
    print_table(
        f"LoCoMo: {result['conversations']} conversations, {result['questions']} questions "
        f"(full conversation ~{result['full_context_tokens']} tokens), {result['seconds']} s"
        + dense,
        [
            "budget",
            "system",
            "recall 1-4",
            "all evid.",
            "cat 1",
            "cat 2",
            "cat 3",
            "cat 4",
            "cat 5",
            "mean tokens",
            "ms p50/p95",
        ],
        rows,
    )


def run(
    path: str,
    budgets: Sequence[int],
    json_out: str | None,
    redis_url: str | None,
    embedder: Embedder | None = None,
    embeddings: str | None = None,
) -> dict[str, Any]:
    """Synchronous entry point for the command line."""
    return asyncio.run(
        run_locomo(
            path,
            redis_url=redis_url,
            budgets=budgets,
            json_out=json_out,
            embedder=embedder,
            embeddings=embeddings,
        )
    )
