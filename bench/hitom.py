"""Hi-ToM: higher-order beliefs, communication and deception, through the real store.

Input: JSON Lines, one item a line (``deception``, ``story_length``, ``question_order``,
``story``, ``question``, ``choices``, ``answer``). Identical stories are ingested once.

Ingestion: each distinct story is its own story in Redis with Hi-ToM's world rules (open
containers; trust the speaker whose information is fresher, i.e. who left the room later;
nested beliefs to depth 4), committed as ONE turn whose text is the story, one sentence a
line ("1 " numbering removed), so its events are ordered within the turn.

Figures: accuracy overall, by question order (0–4) and by deception, for Fabula and for the
shared-memory baseline.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fabula.bench.common import QuestionBench, Scored, bench_main, rate, rates_by
from fabula.bench.data import json_lines, malformed, parsing
from fabula.bench.report import print_table
from fabula.memory.rules import WorldRules

HITOM_RULES = WorldRules(open_containers=True, trust="fresher", belief_depth=4)
CONCURRENCY = 16
_NUMBER = re.compile(r"^\d+\s+")


@dataclass(frozen=True)
class HitomItem:
    index: int
    story: str  # one sentence a line, numbering removed
    question: str
    gold: str
    order: int
    deception: bool


def story_text(raw: str) -> str:
    """The story's sentences, one a line, without their numbers and blank lines."""
    lines = (_NUMBER.sub("", line).strip() for line in raw.splitlines())
    return "\n".join(line for line in lines if line)


KIND = "Hi-ToM"


def load_hitom(path: str | Path) -> list[HitomItem]:
    """Every question of a Hi-ToM file (JSON lines). Raises
    :class:`~fabula.errors.InvalidInput` for a file that is not one."""
    items: list[HitomItem] = []
    for where, raw in json_lines(path, KIND):
        with parsing(path, KIND, where):
            items.append(
                HitomItem(
                    index=len(items),
                    story=story_text(raw["story"]),
                    question=raw["question"].strip(),
                    gold=str(raw["answer"]).strip(),
                    order=int(raw["question_order"]),
                    deception=bool(raw["deception"]),
                )
            )
    if not items:
        raise malformed(path, KIND, "", "no questions")
    return items


def _deception(s: Scored) -> str:
    return "true" if s.extra and s.extra.get("deception") else "false"


def _figures(scored: Sequence[Scored], baseline: bool) -> dict[str, Any]:
    def hit(s: Scored) -> bool:
        return s.baseline_correct if baseline else s.correct

    return {
        "accuracy": rate(hit(s) for s in scored),
        "by_order": rates_by(scored, lambda s: s.group, hit),
        "by_deception": rates_by(scored, _deception, hit),
    }


def summarise(scored: Sequence[Scored], seconds: float, stories: int) -> dict[str, Any]:
    ours = _figures(scored, baseline=False)
    return {
        "benchmark": "hitom",
        "items": len(scored),
        **ours,
        "seconds": seconds,
        "stories": stories,
        "stories_per_second": round(stories / seconds, 1) if seconds else 0.0,
        "baselines": {"shared_memory": _figures(scored, baseline=True)},
        "misses": [
            {
                "index": s.index,
                "order": s.group,
                "deception": _deception(s) == "true",
                "question": s.question,
                "answer": s.answer,
                "gold": s.gold,
            }
            for s in scored
            if not s.correct
        ],
    }


def _print(result: dict[str, Any]) -> None:
    base = result["baselines"]["shared_memory"]
    rows: list[tuple[str, str, str]] = [
        (f"order {k}", f"{v:.4f}", f"{base['by_order'][k]:.4f}")
        for k, v in result["by_order"].items()
    ]
    rows += [
        (f"deception={k}", f"{v:.4f}", f"{base['by_deception'][k]:.4f}")
        for k, v in result["by_deception"].items()
    ]
    rows.append(("all", f"{result['accuracy']:.4f}", f"{base['accuracy']:.4f}"))
    title = (
        f"Hi-ToM: {result['items']} questions, {result['stories']} stories, "
        f"{result['seconds']} s ({result['stories_per_second']} stories/s)"
    )
    print_table(title, ["group", "fabula", "shared memory"], rows)


run_hitom = QuestionBench(
    "hitom",
    "Hi-ToM",
    HITOM_RULES,
    load_hitom,
    lambda item: str(item.order),
    summarise,
    _print,
    lambda s: s.extra or {},
    extra=lambda item: {"order": item.order, "deception": item.deception},
)
"""Run Hi-ToM on a file; print a table, write the JSON and answers if asked; return it."""


def main(argv: Sequence[str] | None = None) -> int:
    return bench_main("hitom", run_hitom, argv)


if __name__ == "__main__":
    raise SystemExit(main())
