"""ToMi: false-belief question answering, through the real store.

Input: a ToMi ``.txt`` (bAbI style: numbered lines, numbering restarts with each story, a
question line is ``question<TAB>answer<TAB>1``) and its ``.trace`` beside it (line N: the
type of question N). Every question carries its own copy of the story; identical copies
are ingested once (keyed by the story's text) and all their questions answered from it.

Ingestion: each distinct story is its own story in Redis, with the world rules of ToMi
(open containers; the default trust and depth), committed as ONE turn whose text is the
story, one sentence a line, so its events are ordered within the turn. Stories run
concurrently on one connection pool and are deleted once answered. "Where was the O at
the beginning?" reads the first state of the object's location in W's history.

Types: reality, memory, first_order_{true,false}_belief, second_order_{true,false}_belief.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fabula.bench.common import QuestionBench, Scored, bench_main, rate, rates_by
from fabula.bench.data import malformed, read_text
from fabula.bench.report import print_table
from fabula.errors import InvalidInput
from fabula.memory.rules import WorldRules

TOMI_RULES = WorldRules(open_containers=True)
TYPES = (
    "reality",
    "memory",
    "first_order_true_belief",
    "first_order_false_belief",
    "second_order_true_belief",
    "second_order_false_belief",
)


@dataclass(frozen=True)
class TomiItem:
    index: int
    story: str  # one sentence a line
    question: str
    gold: str
    type: str


def question_type(trace_line: str) -> str:
    """The question's type from its trace line.

    ``first_order_1_tom`` → ``first_order_false_belief``: a ``tom`` question is one whose
    belief differs from the world (it needs a theory of mind), a ``no_tom`` one a true
    belief. (The line's last field is the story's type, kept apart by ``story_type``.)
    """
    kind = trace_line.strip().split(",")[-2].strip()
    if kind in ("reality", "memory"):
        return kind
    order = "first_order" if kind.startswith("first_order") else "second_order"
    belief = "true_belief" if kind.endswith("no_tom") else "false_belief"
    return f"{order}_{belief}"


KIND = "ToMi"


def load_tomi(path: str | Path) -> list[TomiItem]:
    """Every question of a ToMi file with its story, gold answer and type (from the trace).
    Raises :class:`~fabula.errors.InvalidInput` for a file that is not one, or
    without its trace."""
    path = Path(path)
    trace_path = path.with_suffix(".trace")
    if not trace_path.exists():
        raise InvalidInput(
            f"no trace beside {path}: ToMi's question types are read from {trace_path}",
            path=str(trace_path),
        )
    trace = read_text(trace_path, "ToMi trace").splitlines()
    items: list[TomiItem] = []
    lines: list[str] = []
    for number, raw in enumerate(read_text(path, KIND).splitlines(), start=1):
        if not raw.strip():
            continue
        count, _, rest = raw.partition(" ")
        if not count.isdigit():
            raise malformed(path, KIND, f"line {number}", "a line starts with its number")
        if count == "1":
            lines = []
        if "\t" in rest:
            question, gold = [*rest.split("\t"), ""][:2]
            if not gold.strip():
                raise malformed(path, KIND, f"line {number}", "a question without its answer")
            kind = question_type(trace[len(items)]) if len(items) < len(trace) else "unknown"
            items.append(TomiItem(len(items), "\n".join(lines), question.strip(), gold, kind))
        else:
            lines.append(rest.strip())
    if not items:
        raise malformed(path, KIND, "", "no questions")
    return items


def summarise(scored: Sequence[Scored], seconds: float, stories: int) -> dict[str, Any]:
    """The benchmark's JSON: accuracy overall and by type, for Fabula and the baseline."""
    by_type = rates_by(scored, lambda s: s.group, lambda s: s.correct)
    base_by_type = rates_by(scored, lambda s: s.group, lambda s: s.baseline_correct)
    misses = [
        {
            "index": s.index,
            "type": s.group,
            "question": s.question,
            "answer": s.answer,
            "gold": s.gold,
        }
        for s in scored
        if not s.correct and not s.group.startswith("second_order")
    ]
    return {
        "benchmark": "tomi",
        "items": len(scored),
        "accuracy": rate(s.correct for s in scored),
        "by_type": {t: by_type[t] for t in TYPES if t in by_type},
        "by_order": rates_by(
            [s for s in scored if "order" in s.group],
            lambda s: s.group.split("_order")[0] + "_order",
            lambda s: s.correct,
        ),
        "seconds": seconds,
        "stories": stories,
        "stories_per_second": round(stories / seconds, 1) if seconds else 0.0,
        "baselines": {
            "shared_memory": {
                "accuracy": rate(s.baseline_correct for s in scored),
                "by_type": {t: base_by_type[t] for t in TYPES if t in base_by_type},
            }
        },
        "misses_outside_second_order": misses,
    }


def _print(result: dict[str, Any]) -> None:
    base = result["baselines"]["shared_memory"]
    rows = [
        (t, f"{result['by_type'][t]:.4f}", f"{base['by_type'][t]:.4f}") for t in result["by_type"]
    ]
    rows.append(("all", f"{result['accuracy']:.4f}", f"{base['accuracy']:.4f}"))
    title = (
        f"ToMi: {result['items']} questions, {result['stories']} stories, "
        f"{result['seconds']} s ({result['stories_per_second']} stories/s)"
    )
    print_table(title, ["type", "fabula", "shared memory"], rows)


run_tomi = QuestionBench(
    "tomi",
    "ToMi story",
    TOMI_RULES,
    load_tomi,
    lambda item: item.type,
    summarise,
    _print,
    lambda s: {"type": s.group},
)
"""Run ToMi on a file; print a table, write the JSON and answers if asked; return it."""


def main(argv: Sequence[str] | None = None) -> int:
    return bench_main("tomi", run_tomi, argv)


if __name__ == "__main__":
    raise SystemExit(main())
