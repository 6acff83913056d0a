"""Budgeted assembly of an asker's admissible view as text.

The author's admissible view is W, the shared world; a character's is B[character], its own
beliefs, each with how it came to hold it. Nothing outside that view is ever rendered, so a
fact a character never witnessed nor was told cannot reach its context, and a view replayed
``as_of`` a turn holds nothing from after it. Lines are ordered by relevance to ``query``
(records about the objects the query names come first), then newest first, and added while
they fit in ``budget`` tokens (counted by :func:`fabula.memory.tokens.default_counter` unless a
counter is given).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from functools import lru_cache

from fabula.memory.projections import project_beliefs, project_world
from fabula.memory.records import Belief, Entity, State, slug
from fabula.memory.store import StoryStore
from fabula.memory.tokens import default_counter

__all__ = ["TokenCounter", "assemble_context", "word_count"]

TokenCounter = Callable[[str], int]
_WORD = re.compile(r"[a-z0-9_]+")


def word_count(text: str) -> int:
    """A plain stand-in token count: white-space separated words."""
    return len(text.split())


@lru_cache(maxsize=1)
def _default_counter() -> TokenCounter:
    """The project's offline counter (:func:`fabula.memory.tokens.default_counter`)."""
    return default_counter().count


async def assemble_context(
    store: StoryStore,
    asker: str | None,
    as_of: int | None = None,
    budget: int = 1200,
    *,
    query: str | None = None,
    count_tokens: TokenCounter | None = None,
) -> str:
    """The asker's admissible view (W for ``asker=None``, else B[asker]) as text.

    Raises :class:`~fabula.errors.NotFound` for a character the story does not have.
    """
    count = count_tokens or _default_counter()
    entities = await store.entities(as_of)
    when = "now" if as_of is None else f"as of turn {as_of}"
    if asker is None:
        world = await project_world(store, as_of)
        header = f"W — the shared world ({when})"
        records: list[State | Belief] = [s for s in world.states.values() if s.polarity]
    else:
        holder = slug(asker)
        await store.require_character(holder)
        view = await project_beliefs(store, holder, as_of)
        name = entities[holder].name if holder in entities else asker
        header = f"B[{name}] — what {name} believes ({when})"
        records = [b for b in view.beliefs.values() if b.polarity]
    wanted = set(_WORD.findall((query or "").lower()))
    ranked = sorted(
        records,
        key=lambda r: (-_relevance(r, entities, wanted), -r.valid_from, r.slot),
    )
    lines = [header]
    used = count(header)
    for record in ranked:
        line = _render(record, entities)
        cost = count(line)
        if used + cost > budget:
            break
        lines.append(line)
        used += cost
    return "\n".join(lines)


def _name(entity_id: str, entities: dict[str, Entity]) -> str:
    entity = entities.get(entity_id)
    return entity.name if entity is not None else entity_id


def _relevance(record: State | Belief, entities: dict[str, Entity], wanted: set[str]) -> int:
    if not wanted:
        return 0
    words: Iterable[str] = _WORD.findall(
        f"{_name(record.subject, entities)} {record.attribute}".lower()
    )
    return len(wanted.intersection(words))


_HOW = {
    "participated": "took part",
    "observed": "saw it",
    "told_private": "told privately",
    "told_public": "heard it claimed",
    "inferred": "inferred",
    "common": "common knowledge",
}


def _noun(entity_id: str, entities: dict[str, Entity]) -> str:
    entity = entities.get(entity_id)
    if entity is not None and entity.kind == "character":
        return entity.name
    return f"the {_name(entity_id, entities)}"


def _render(record: State | Belief, entities: dict[str, Entity]) -> str:
    subject = _noun(record.subject, entities)
    if record.attribute == "location":
        text = f"{subject} is in {_noun(record.value, entities)}."
    else:
        text = f"the {record.attribute} of {subject} is {record.value}."
    if isinstance(record, Belief):
        how = _HOW.get(record.mode, record.mode)
        if record.speaker:
            how += f" by {_name(record.speaker, entities)}"
        return f"- {text} ({how}, turn {record.valid_from})"
    return f"- {text} (since turn {record.valid_from})"
