"""Small helpers every benchmark shares: percentiles, tables, JSON output."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table


def percentiles(samples_ms: Sequence[float]) -> dict[str, float]:
    """``{"p50": …, "p95": …}`` of samples in milliseconds (nearest-rank)."""
    if not samples_ms:
        return {"p50": 0.0, "p95": 0.0}
    ordered = sorted(samples_ms)

    def rank(q: float) -> float:
        index = min(len(ordered) - 1, max(0, round(q * len(ordered) + 0.5) - 1))
        return round(ordered[index], 3)

    return {"p50": rank(0.50), "p95": rank(0.95)}


def print_table(title: str, columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
    table = Table(title=title)
    for column in columns:
        table.add_column(column, justify="right")
    for row in rows:
        table.add_row(*(str(v) for v in row))
    Console().print(table)


def write_json(path: str | Path | None, data: dict[str, Any]) -> None:
    if path is None:
        return
    Path(path).write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
