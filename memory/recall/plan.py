"""Planning a recall: what a request depends on, read before anything is fetched.

A request is the planner's plan for a turn, a question, or a character's situation, as
text, plus whatever the caller already knows (the focal characters, the place). The
offline planner reads it with general rules of English and the story's own roster:

- the entities it names (by whole words of their names, from the story's entities);
- the topic terms (index terms of the request that are not names of entities);
- what it says about time (:func:`fabula.memory.timeref.time_reference`);
- the attributes it asks about ("the colour of the scarf" → ``colour``), and the
  developments whose titles share its terms.

A model planner (``fabula.agents``) fills the same :class:`RecallPlan` with structured
output; recall never knows which one ran.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel, ConfigDict

from fabula.memory.episodes import EntityMatcher
from fabula.memory.index.terms import terms
from fabula.memory.records import Development, Entity
from fabula.memory.timeref import TimeRef, time_reference

Purpose = Literal["write", "answer", "character"]
_ATTRIBUTE = re.compile(r"\bthe (\w+) of\b", re.I)


class RecallPlan(BaseModel):
    """What a request depends on: entities, topic terms, attributes, developments, time.

    ``purpose`` decides the sections: ``write`` includes H (possible worlds), ``answer``
    and ``character`` never do.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    request: str
    purpose: Purpose = "answer"
    entities: tuple[str, ...] = ()
    implied: tuple[str, ...] = ()  # of ``entities``, those the caller's focus added unnamed
    characters: tuple[str, ...] = ()
    terms: tuple[str, ...] = ()
    attributes: tuple[str, ...] = ()
    developments: tuple[str, ...] = ()
    first_day: int | None = None
    last_day: int | None = None
    order: Literal["earliest", "latest"] | None = None
    asks_when: bool = False

    @property
    def time(self) -> TimeRef:
        return TimeRef(self.first_day, self.last_day, self.order, self.asks_when)


@dataclass(frozen=True)
class RecallRequest:
    """What a recall planner (offline or a model) is given: the request's ``text``, the
    story's ``entities`` it may name (a character's own, for a character), what the
    recall is for, the story's developments (None: none to relate), ``focus`` (entities
    the caller already knows matter: the focal characters, the place) and ``today`` (the
    story's present day number, for "last spring" and the like; None: no calendar)."""

    text: str
    entities: Mapping[str, Entity]
    purpose: Purpose = "answer"
    developments: Mapping[str, Development] | None = None
    focus: tuple[str, ...] = ()
    today: int | None = None

    def involving(self, named: Sequence[str]) -> list[str]:
        """The entities a plan involves: those the request ``named``, then the focus's."""
        return list(dict.fromkeys([*named, *(f for f in self.focus if f in self.entities)]))


def plan_request(recall: RecallRequest) -> RecallPlan:
    """The offline planner: read the request's text against the story's entities."""
    request, entities, developments = recall.text, recall.entities, recall.developments
    named = EntityMatcher(entities).find(request)
    involved = recall.involving(named)
    name_terms = {t for e in involved for t in terms(entities[e].name)}
    topic = [t for t in dict.fromkeys(terms(request)) if t not in name_terms]
    wanted = set(topic)
    related = tuple(
        d.id
        for d in (developments or {}).values()
        if wanted & set(terms(d.title)) or set(involved) & set(d.participants)
    )
    when = time_reference(request, recall.today)
    return RecallPlan(
        request=request,
        purpose=recall.purpose,
        entities=tuple(involved),
        implied=tuple(e for e in involved if e not in named),
        characters=tuple(e for e in involved if entities[e].kind == "character"),
        terms=tuple(topic),
        attributes=tuple(dict.fromkeys(m.lower() for m in _ATTRIBUTE.findall(request))),
        developments=related,
        first_day=when.first_day,
        last_day=when.last_day,
        order=when.order,
        asks_when=when.asks_when,
    )
