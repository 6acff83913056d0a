"""How the studio's pages present records to people: filters of its templates.

:func:`actions` shows roleplay's ``*actions*`` (a card's greeting, a model's turn) in
italics, after escaping the text: nothing in the text itself ever becomes markup.

:func:`mutual` folds the nested rows of a turn's belief changes: a move seen by a group
adds, for every pair, what one would think the other now believes ("Ben → Dev",
"Dev → Ben", ... eight rows for a few people); those of one slot and one change become a
single row naming the group.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from markupsafe import Markup, escape

from fabula.graph.service.responses.turns import Change

_ACTION = re.compile(r"\*(?=\S)([^*\n]+?)(?<=\S)\*")


def actions(text: str) -> Markup:
    """``text`` as HTML: escaped, then each ``*action*`` within a line as ``<em>``."""
    return Markup(_ACTION.sub(r"<em>\1</em>", str(escape(text))))


@dataclass
class ChangeRow:
    """One row of the belief changes: a holder's own change, or a group's nested ones."""

    kind: str
    subject: str
    attribute: str
    before: str | None
    after: str | None
    mode: str | None
    holder: list[str]  # a chain's names; for a group, the first chain's
    group: list[str] = field(default_factory=list)  # nested rows folded: who, in order
    chains: int = 1  # how many nested chains the row stands for

    @property
    def who(self) -> str:
        """The row's holder as people read it."""
        if self.group:
            return f"{', '.join(self.group)}: each thinks the others believe"
        return " → ".join(self.holder)


def mutual(changes: Sequence[Change]) -> list[ChangeRow]:
    """``changes`` as rows: own beliefs one by one, nested chains of the same change of the
    same slot folded into one row naming the group (the tooltip keeps the chains)."""
    rows: list[ChangeRow] = []
    folded: dict[tuple[object, ...], ChangeRow] = {}
    for ch in changes:
        row = ChangeRow(
            ch.kind, ch.subject, ch.attribute, ch.before, ch.after, ch.mode, list(ch.holder)
        )
        if len(ch.holder) < 2:
            rows.append(row)
            continue
        key = (ch.kind, ch.subject, ch.attribute, ch.before, ch.after, ch.mode, len(ch.holder))
        if key not in folded:
            folded[key] = row
            rows.append(row)
            continue
        group = folded[key]
        if not group.group:
            group.group = list(dict.fromkeys(group.holder))
        group.group += [h for h in ch.holder if h not in group.group]
        group.chains += 1
    return rows
