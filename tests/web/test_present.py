"""How the studio presents a turn's belief changes (fabula.graph.web.present)."""

from __future__ import annotations

from fabula.graph.service.responses.turns import Change
from fabula.graph.web.present import mutual


def moved(*holder: str, after: str = "sea chest") -> Change:
    return Change(
        kind="changed",
        holder=list(holder),
        subject="spare key",
        attribute="location",
        before="cupboard",
        after=after,
        mode="inferred",
    )


def test_the_nested_chains_of_one_change_are_one_row() -> None:
    """A move seen by Ben and Dev listed Ben → Dev, Dev → Ben (and more) row by row; now
    their own beliefs stay one row each and the nested ones are one row naming them."""
    rows = mutual([moved("Ben"), moved("Dev"), moved("Ben", "Dev"), moved("Dev", "Ben")])
    assert [r.who for r in rows] == ["Ben", "Dev", "Ben, Dev: each thinks the others believe"]
    assert rows[2].chains == 2 and rows[2].after == "sea chest"


def test_different_changes_stay_apart() -> None:
    rows = mutual([moved("Ben", "Dev"), moved("Dev", "Ben", after="lantern box")])
    assert [r.who for r in rows] == ["Ben → Dev", "Dev → Ben"]
    assert [r.chains for r in rows] == [1, 1]
