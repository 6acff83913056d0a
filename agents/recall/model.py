"""The recall planner on a chat model: a request in, a validated :class:`RecallPlan` out.

The offline planner (:func:`fabula.memory.recall.plan.plan_request`) reads a request
with rules of English; this one asks a model, with structured output, for the same plan:
the entities a request is about (including those it refers to without their names), the
topic words a speaker might have used instead of the request's own, the attributes,
developments and dates it concerns. The model is shown the request, the roster, the
developments and the story's present date (for "last week"), nothing else (a character's
plan is made from what that character may see).

The reply's shape, :class:`PlanReading`, is the part of a :class:`RecallPlan` a reader
fills in, in a reader's units: entity names or ids (resolved to ids; an unknown one is
shown back to the model and asked for again), words (turned into index terms by the same
tokenizer and stemmer the index uses), ISO dates (turned into day numbers). Recall
never knows which planner ran. The JSON schema sent (:func:`reading_json_schema`, unless
the role's ``schemas`` setting is ``generic``) lists the roster's ids and the developments'
as enums, bounds every list and word, and gives dates their ``YYYY-MM-DD`` pattern.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Literal

from langchain_core.messages import HumanMessage, SystemMessage
from pydantic import BaseModel, ConfigDict, create_model, model_validator

from fabula.agents.prompts import load_prompt
from fabula.agents.schemas import array, cached, closed, line, maybe, one_of
from fabula.memory.index.terms import terms as index_terms
from fabula.memory.recall.plan import RecallPlan, RecallRequest
from fabula.memory.records import Development, Entity, slug

if TYPE_CHECKING:
    # OpenAI and LangChain (seconds to import): loaded by the factory, only for a model
    from fabula.agents.llm import ModelClient

MAX_ENTITIES = 8  # the most entities, terms, attributes and developments one reading lists
MAX_TERMS = 12
MAX_ATTRIBUTES = 4
WORD_CHARS = 40  # a topic word or an attribute name
_DATE = {"type": "string", "pattern": "^[0-9]{4}-[0-9]{2}-[0-9]{2}$"}


class PlanReading(BaseModel):
    """What a request depends on, as a model reads it (see the module docstring)."""

    model_config = ConfigDict(extra="forbid")

    entities: list[str]
    terms: list[str]
    attributes: list[str]
    developments: list[str]
    first_date: str | None
    last_date: str | None
    order: Literal["earliest", "latest"] | None
    asks_when: bool


class ModelRecallPlanner:
    """Plans recalls with a chat model (see the module docstring)."""

    def __init__(self, client: ModelClient) -> None:
        self.client = client
        self.prompt = load_prompt("recall", "plan")

    async def plan(self, recall: RecallRequest) -> RecallPlan:
        """The plan for the request (its ``today`` is shown to the model for relative
        dates; its ``focus`` joins the entities the model read).

        Raises :class:`~fabula.errors.ModelOutputError` when no valid reading comes
        back within the client's attempts.
        """
        request, entities = recall.text, recall.entities
        developments = recall.developments or {}
        messages = [
            SystemMessage(content=self.prompt.render()),
            HumanMessage(content=_render(request, entities, developments, recall.today)),
        ]
        schema = reading_schema(entities, developments)
        wire = None
        if self.client.schemas == "story":
            wire = reading_json_schema(entities, developments)
        reading = await self.client.structured(
            schema, messages, shape=PlanReading, json_schema=wire
        )
        involved = recall.involving(reading.entities)
        words = " ".join(reading.terms)
        names = {t for e in involved for t in index_terms(entities[e].name)}
        return RecallPlan(
            request=request,
            purpose=recall.purpose,
            entities=tuple(involved),
            implied=tuple(e for e in involved if e not in reading.entities),
            characters=tuple(e for e in involved if entities[e].kind == "character"),
            terms=tuple(t for t in dict.fromkeys(index_terms(words)) if t not in names),
            attributes=tuple(dict.fromkeys(a.lower() for a in reading.attributes)),
            developments=tuple(dict.fromkeys(reading.developments)),
            first_day=_day(reading.first_date),
            last_day=_day(reading.last_date),
            order=reading.order,
            asks_when=reading.asks_when,
        )


def reading_json_schema(
    entities: Mapping[str, Entity], developments: Mapping[str, Development]
) -> dict[str, Any]:
    """The strict JSON schema of a reading for this roster and these developments (see the
    module docstring); built once per set of ids (cached)."""
    parts = {"entities": sorted(entities), "developments": sorted(developments)}

    def build() -> dict[str, Any]:
        word = line(WORD_CHARS, min_chars=1)
        order = {"type": "string", "enum": ["earliest", "latest"]}
        return closed(
            {
                "entities": array(one_of(parts["entities"]), MAX_ENTITIES),
                "terms": array(word, MAX_TERMS),
                "attributes": array(word, MAX_ATTRIBUTES),
                "developments": array(
                    one_of(parts["developments"]),
                    min(MAX_ENTITIES, len(parts["developments"])),
                ),
                "first_date": maybe(_DATE),
                "last_date": maybe(_DATE),
                "order": maybe(order),
                "asks_when": {"type": "boolean"},
            }
        )

    return cached("recall", parts, build)


def reading_schema(
    entities: Mapping[str, Entity], developments: Mapping[str, Development]
) -> type[PlanReading]:
    """:class:`PlanReading`, refusing entities and developments the story does not have
    (names become ids) and dates that are not ``YYYY-MM-DD``."""
    by_name = {e.name.lower(): e.id for e in entities.values()} | {i: i for i in entities}

    def known(cls: type[PlanReading], data: Any) -> Any:  # a before-validator
        if not isinstance(data, dict):
            return data
        data = dict(data)
        if isinstance(data.get("entities"), list):
            data["entities"] = [_entity(n, by_name) for n in data["entities"]]
        if isinstance(data.get("developments"), list):
            unknown = [d for d in data["developments"] if d not in developments]
            if unknown:
                raise ValueError(f"no such development: {', '.join(map(str, unknown))}")
        for field in ("first_date", "last_date"):
            if isinstance(data.get(field), str):
                _day(data[field])
        return data

    validators: dict[str, Any] = {"known": model_validator(mode="before")(known)}
    return create_model("PlanReading", __base__=PlanReading, __validators__=validators)


def _entity(name: Any, by_name: Mapping[str, str]) -> str:
    text = str(name).strip()
    for key in (text.lower(), _slug(text)):
        if key in by_name:
            return by_name[key]
    raise ValueError(f"no such entity: {text!r} (use an id or a name from the roster)")


def _slug(text: str) -> str:
    try:
        return slug(text)
    except ValueError:
        return ""


def _day(date: str | None) -> int | None:
    if date is None:
        return None
    try:
        return dt.date.fromisoformat(date).toordinal()
    except ValueError as exc:
        raise ValueError(f"not a date as YYYY-MM-DD: {date!r}") from exc


def _render(
    request: str,
    entities: Mapping[str, Entity],
    developments: Mapping[str, Development],
    today: int | None = None,
) -> str:
    roster = "\n".join(
        f"- {e.id}: {e.name} ({e.kind})" for e in sorted(entities.values(), key=lambda e: e.id)
    )
    open_ = "\n".join(f"- {d.id}: {d.title} ({d.status})" for d in developments.values())
    present = "" if today is None else dt.date.fromordinal(today).isoformat()
    sections = [
        ("Request", request),
        ("Roster", roster),
        ("Developments", open_),
        ("The story's present date", present),
    ]
    return "\n\n".join(f"## {title}\n{body}" for title, body in sections if body)
