"""The character agent on a chat model: its own mind in, a validated :class:`Proposal` out.

The prompt holds only what the character's :class:`~fabula.memory.acl.CharacterMind` returns (its
beliefs, its first-person memories, the names of the entities it knows of: met, believed
something of, or made common by the pack at the start) and its brief: never the world,
never another mind. The mind reads through the character's own Redis user, so nothing else
could reach the prompt even by mistake.

The model fills a :class:`CharacterProposal` (its actions and intent); the proposal's
``character`` is set here, not by the model. Its JSON schema (:func:`proposal_json_schema`)
is built from the same mind, since a schema is part of the prompt: an action is a union by
kind (:data:`~fabula.agents.contracts.INTENT_FIELDS`), each kind with only its fields, ids
as enums of the entities this character knows of, attribute names those it knows, every
array and string bounded; a kind it has nothing to use for is left out. Actions must name
entities the character has heard of (names are turned into ids) and carry the fields their
kind needs; anything else is shown back to the model, within ``max_attempts`` replies,
after which :class:`~fabula.errors.ModelOutputError` is raised.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Any

from langchain_core.messages import HumanMessage, SystemMessage
from pydantic import BaseModel, ConfigDict, create_model, model_validator

from fabula.agents.contracts import (
    INTENT_FIELDS,
    LINE_CHARS,
    MAX_ACTIONS,
    Action,
    CharacterBrief,
    IntentField,
    Proposal,
)
from fabula.agents.prompts import load_prompt, quoted
from fabula.agents.recall import viewer
from fabula.agents.recall.viewer import (
    CHARACTER_MEMORY,
    CHARACTER_VOICE,
    CharacterRecall,
    RecallBudget,
    bullet,
    character_recall,
)
from fabula.agents.recall.viewer import (
    MEMORIES as MEMORIES,  # the memories its prompt shows (tests read it here)
)
from fabula.agents.recall.viewer import (
    VOICE_LINES as VOICE_LINES,
)
from fabula.agents.schemas import array, cached, closed, line, maybe, one_of
from fabula.memory.acl import CharacterMind
from fabula.memory.projections import BeliefView
from fabula.memory.records import Entity, Memory, slug
from fabula.memory.tokens import TokenCounter
from fabula.settings import LORE_BUDGET

if TYPE_CHECKING:
    # OpenAI and LangChain (seconds to import): loaded by the factory, only for a model
    from fabula.agents.llm import ModelClient

RECALL_BUDGET = CHARACTER_MEMORY  # tokens of its own context recalled for its situation
VOICE_BUDGET = CHARACTER_VOICE  # tokens of the exemplars of its voice shown
CLAIM_CHARS = 80  # a claimed value that is no entity ("oak brown")
_ENTITY_KINDS = ("place", "object", "character")
# what each kind of action needs (from the one table, INTENT_FIELDS; ``attribute`` has its
# default, location)
_NEEDS: dict[str, tuple[str, ...]] = {
    kind: tuple(f.name for f in fields if f.required and f.name != "attribute")
    for kind, fields in INTENT_FIELDS.items()
}
_ID_FIELDS = ("object", "target", "listener", "about")
# the kinds of entity a field takes, by (action kind, field); ("", field) for a field the
# kind does not list (an old reply may fill one)
_KINDS: dict[tuple[str, str], tuple[str, ...]] = {
    (kind, f.name): tuple(t for t in f.takes if t in _ENTITY_KINDS)
    for kind, fields in INTENT_FIELDS.items()
    for f in fields
    if any(t in _ENTITY_KINDS for t in f.takes)
} | {("", "object"): ("object",), ("", "listener"): ("character",)}


class CharacterProposal(BaseModel):
    """What the character does next: its actions in order, and its intent."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    actions: tuple[Action, ...]
    intent: str


class ModelCharacter:
    """A character agent on a chat model (see the module docstring)."""

    def __init__(
        self,
        client: ModelClient,
        *,
        prompt_version: int | None = None,
        lore_budget: int = LORE_BUDGET,
    ) -> None:
        self.client = client
        self.prompt = load_prompt("character", "propose", prompt_version)
        self.lore_budget = lore_budget  # tokens (words) of its own lore its situation activates

    recalls = True  # it reads its episode index: the graph brings the index up to date first

    async def propose(self, mind: CharacterMind, brief: CharacterBrief) -> Proposal:
        """The character's proposal from its own mind; ModelOutputError if none validates."""
        seen = await mind_prompt(
            mind, brief, nested=self.prompt.version >= 2, lore_budget=self.lore_budget
        )
        messages = [
            SystemMessage(content=self.prompt.render(name=brief.name)),
            HumanMessage(content=seen.prompt),
        ]
        wire = None
        if self.client.schemas == "story":
            wire = proposal_json_schema(
                mind.character, seen.entities, known_attributes(seen.beliefs)
            )
        reply = await self.client.structured(
            proposal_schema(seen.entities), messages, shape=CharacterProposal, json_schema=wire
        )
        return Proposal(character=mind.character, actions=reply.actions, intent=reply.intent)


@dataclass(frozen=True)
class MindPrompt:
    """What a character agent is shown of its own mind: the rendered prompt, and the
    beliefs and entities its answer's schema is built from."""

    prompt: str
    beliefs: BeliefView
    entities: dict[str, Entity]
    recall: CharacterRecall  # what it was rendered from: what ``recall --as`` it shows


async def mind_prompt(
    mind: CharacterMind,
    brief: CharacterBrief,
    *,
    nested: bool = False,
    lore_budget: int = LORE_BUDGET,
    counter: TokenCounter | None = None,
) -> MindPrompt:
    """The prompt a character agent renders from its own mind and brief only: its recall
    for its situation (:func:`fabula.agents.recall.viewer.character_recall`, the very
    function ``fabula recall --as`` it calls: its beliefs, last memories, the episodes it
    recalls, its own words, lore and voice) and, with ``nested``, what it thinks each other
    character believes. The leak properties check exactly this text."""
    seen = await character_recall(
        mind,
        brief.name,
        None,
        as_of=None,
        budget=RecallBudget.character(lore=lore_budget),
        counter=counter,
        goals=brief.goals,
    )
    theirs: dict[str, BeliefView] | None = None
    if nested:
        others = sorted(i for i, e in seen.entities.items() if e.kind == "character")
        theirs = {o: await mind.beliefs([o]) for o in others if o != mind.character}
    prompt = render_mind(
        brief,
        seen.beliefs,
        seen.memories,
        seen.entities,
        theirs,
        recalled=recollections(seen),
        own_words=seen.said,
        lore=[f"- {x.text}" for x in seen.lore.lit],
        voice=[bullet(x.text) for x in seen.voice],
        traits=[f"- {t.category}: {', '.join(t.values)}" for t in seen.traits],
    )
    return MindPrompt(prompt, seen.beliefs, seen.entities, seen)


def known_attributes(beliefs: BeliefView) -> list[str]:
    """The attribute names a character may state: those of its own beliefs (telling what it
    has no belief about is a knowledge error to the critic), location first."""
    names = {b.attribute for b in beliefs.beliefs.values()}
    return ["location", *sorted(names - {"location"})]


def proposal_json_schema(
    me: str, entities: Mapping[str, Entity], attributes: Iterable[str] = ("location",)
) -> dict[str, Any]:
    """The strict JSON schema of a proposal by ``me``, from its own view only: the
    ``entities`` it knows of and the ``attributes`` it may state (:func:`known_attributes`).

    ``actions`` (1 to :data:`~fabula.agents.contracts.MAX_ACTIONS`) is a union by kind: each
    kind a closed object with a ``const`` kind, the fields
    :data:`~fabula.agents.contracts.INTENT_FIELDS` gives it and a ``reason``; an id field
    is an enum of the ids of the right kinds (a listener never ``me``), a field the kind may
    leave out is nullable, and a kind whose needed field has no candidate is left out. A
    ``tell`` is two objects: a location (the claim an entity's id) and, when it knows other
    attributes, any of those (the claim a short value). Built once per view (cached)."""
    ids = {kind: sorted(i for i, e in entities.items() if e.kind == kind) for kind in _ENTITY_KINDS}
    others = sorted(set(attributes) - {"location"})
    parts = {"me": me, "ids": ids, "attributes": others}
    return cached("character", parts, lambda: _proposal_json_schema(me, ids, others))


def _proposal_json_schema(
    me: str, ids: Mapping[str, list[str]], attributes: list[str]
) -> dict[str, Any]:
    reason = line(LINE_CHARS)
    members: list[dict[str, Any]] = []
    for kind, fields in INTENT_FIELDS.items():
        properties: dict[str, Any] = {"kind": {"type": "string", "const": kind}}
        usable = True
        for field in fields:
            if field.takes in (("attribute",), ("claim",)):
                continue  # a tell's attribute and claim: below
            value = _field_schema(field, me, ids)
            if value.get("type") == "null" and field.required:
                usable = False
                break
            properties[field.name] = value if field.required else maybe(value)
        if not usable:
            continue
        if any(f.takes == ("attribute",) for f in fields):
            everything = one_of(i for kind_ids in ids.values() for i in kind_ids)
            if everything.get("type") != "null":
                location = {"type": "string", "const": "location"}
                told = {"attribute": location, "claim": everything, "reason": reason}
                members.append(closed(properties | told))
            if attributes:
                claim = line(CLAIM_CHARS, min_chars=1)
                told = {"attribute": one_of(attributes), "claim": claim, "reason": reason}
                members.append(closed(properties | told))
            continue
        members.append(closed(properties | {"reason": reason}))
    action = {"anyOf": members}
    return closed({"actions": array(action, MAX_ACTIONS, min_items=1), "intent": line(LINE_CHARS)})


def _field_schema(field: IntentField, me: str, ids: Mapping[str, list[str]]) -> dict[str, Any]:
    if field.takes == ("words",):
        return line(LINE_CHARS, min_chars=1)
    candidates = {i for kind in field.takes for i in ids.get(kind, ())}
    if field.name == "listener":
        candidates.discard(me)
    return one_of(candidates)


def proposal_schema(entities: dict[str, Entity]) -> type[CharacterProposal]:
    """:class:`CharacterProposal`, refusing unknown entities, entities of the wrong kind
    (going to a character, giving to a place) and actions missing a field."""
    kinds: dict[str, str] = {i: e.kind for i, e in entities.items()}

    def known_entities(cls: type[CharacterProposal], data: Any) -> Any:  # a before-validator
        if not isinstance(data, dict) or not isinstance(data.get("actions"), list):
            return data
        return {**data, "actions": [_checked(a, kinds) for a in data["actions"]]}

    validators: dict[str, Any] = {"known_entities": model_validator(mode="before")(known_entities)}
    return create_model("CharacterProposal", __base__=CharacterProposal, __validators__=validators)


def _checked(action: Any, kinds: dict[str, str]) -> Any:
    if not isinstance(action, dict):
        return action
    action = dict(action)
    kind = action.get("kind")
    missing = [f for f in _NEEDS.get(str(kind), ()) if not action.get(f)]
    if missing:
        raise ValueError(f"a {kind} action needs {', '.join(missing)}")
    fields = [
        *_ID_FIELDS,
        *(["claim"] if action.get("attribute", "location") == "location" else []),
    ]
    for field in fields:
        value = action.get(field)
        if value is None:
            continue
        text = str(value).strip()
        text = text[4:] if text.lower().startswith("the ") else text
        sid = text if text in kinds else _slug(text)
        if sid not in kinds:
            raise ValueError(f"{field}: you know of nothing called {value!r}")
        allowed = _KINDS.get((str(kind), field)) or _KINDS.get(("", field))
        if allowed and kinds[sid] not in allowed:
            raise ValueError(f"{field}: {value!r} is a {kinds[sid]}, not a {' or '.join(allowed)}")
        action[field] = sid
    return action


def _slug(text: str) -> str:
    try:
        return slug(text)
    except ValueError:
        return ""


def recollections(seen: CharacterRecall) -> list[str]:
    """What the character recalls of its past that bears on its situation: the episode
    lines of its own recall that are not among the memories it is shown, quoted, under
    their dates or turns."""
    out: list[str] = []
    for heading, text in seen.episode_lines():
        if heading is not None:
            out.append(heading)
        out.append(f"- {quoted(text)}")
    return out


async def lore_lines(
    mind: CharacterMind,
    brief: CharacterBrief,
    beliefs: BeliefView,
    entities: dict[str, Entity],
    memories: Sequence[Memory] = (),
    *,
    budget: int = LORE_BUDGET,
) -> list[str]:
    """What the character's own lore says that bears on its situation (its goals, where it
    is, who is with it, what it just lived), one line an entry: the lore of its recall
    (:func:`fabula.agents.recall.viewer.character_recall`; its own lore only, read through
    its own connection) for its :func:`situation`, as its prompt shows it."""
    scan = situation(brief, beliefs, entities, memories)
    seen = await character_recall(
        mind, brief.name, scan, as_of=None, budget=RecallBudget.character(lore=budget)
    )
    return [f"- {x.text}" for x in seen.lore.lit]


def situation(
    brief: CharacterBrief,
    beliefs: BeliefView,
    entities: Mapping[str, Entity],
    memories: Sequence[Memory] = (),
) -> str:
    """The character's situation as it sees it (:func:`fabula.agents.recall.viewer.situation`
    for its brief): what its prompt recalls for."""
    return viewer.situation(brief.name, brief.character, brief.goals, beliefs, entities, memories)


async def voice_lines(
    mind: CharacterMind,
    brief: CharacterBrief,
    beliefs: BeliefView,
    entities: Mapping[str, Entity],
    memories: Sequence[Memory] = (),
) -> list[str]:
    """The few exemplars of the character's voice nearest its situation (:func:`situation`)
    as its prompt shows them: the voice of its recall
    (:func:`fabula.agents.recall.viewer.character_recall`: its card's example dialogues
    and role lines and what it said earlier, within :data:`VOICE_BUDGET` tokens, leaving
    out the last things it said, which the prompt shows as said)."""
    scan = situation(brief, beliefs, entities, memories)
    seen = await character_recall(
        mind, brief.name, scan, as_of=None, budget=RecallBudget.character()
    )
    return [bullet(ex.text) for ex in seen.voice]


def render_mind(
    brief: CharacterBrief,
    beliefs: BeliefView,
    memories: list[Memory],
    entities: dict[str, Entity],
    nested: Mapping[str, BeliefView] | None = None,
    *,
    recalled: Sequence[str] = (),
    own_words: Sequence[str] = (),
    lore: Sequence[str] = (),
    voice: Sequence[str] = (),
    traits: Sequence[str] = (),
) -> str:
    """The character's brief and own mind as compact sections, for its prompt.

    Where it is and who is with it are what it believes; nothing here comes from outside
    its brief (its own identity and goals) and its mind. With ``nested`` (prompt v2: what
    it thinks each other character believes, read from its own keyspace), that too, and
    who told it each belief it was told; ``recalled`` are the lines of its own recall
    (:func:`recollections`), ``own_words`` a few things it said (its voice), ``lore`` what
    its own lore says of its situation (:func:`lore_lines`), ``voice`` the exemplars of
    its voice nearest it (:func:`voice_lines`: its card's examples, as examples),
    ``traits`` what its card lists of it (its W++ or PList lists, one line a category).
    """
    name = partial(_name, entities)
    me = brief.character
    here = beliefs.where(me)
    with_me = sorted(
        name(c)
        for c, e in entities.items()
        if e.kind == "character" and c != me and here is not None and beliefs.where(c) == here
    )
    sections = [
        ("Who you are", f"{brief.name} (id {brief.character})"),
        ("Your voice", brief.voice),
        ("What you are like", "\n".join(traits)),
        ("Things you said", "\n".join(f"- {quoted(w)}" for w in own_words)),
        ("How you speak", "\n".join(voice)),
        ("Your goals", "\n".join(f"- {g}" for g in brief.goals)),
        ("Your secrets", "\n".join(f"- {s}" for s in brief.secrets)),
        ("What you know", "\n".join(lore)),
        ("Where you are", name(here) if here else ""),
        ("Who is with you", ", ".join(with_me) if here else ""),
        ("What you believe", _believed(beliefs, entities, told=nested is not None)),
        ("What you think the others believe", _theirs(nested or {}, entities)),
        (
            "What you remember",
            "\n".join(
                # one sentence can be several events (a "go" is an exit and an entry)
                dict.fromkeys(f"- turn {m.turn}: {quoted(m.quote)}" for m in memories)
            ),
        ),
        ("What you recall of earlier", "\n".join(recalled)),
        (
            "Things you know of",
            "\n".join(
                f"- {e.id}: {e.name} ({e.kind})"
                for e in sorted(entities.values(), key=lambda e: e.id)
            ),
        ),
    ]
    return "\n\n".join(f"## {title}\n{body}" for title, body in sections if body)


def _name(entities: Mapping[str, Entity], entity: str) -> str:
    """``entity``'s name, as the character knows it (its id when it knows no entity)."""
    e = entities.get(entity)
    return e.name if e else entity


def _believed(beliefs: BeliefView, entities: Mapping[str, Entity], *, told: bool) -> str:
    """The character's beliefs, one line each, with how it came by each (and, ``told``,
    who told it)."""
    lines = []
    for b in sorted(beliefs.beliefs.values(), key=lambda b: (b.subject, b.attribute)):
        by = f" by {_name(entities, b.speaker)}" if told and b.speaker else ""
        lines.append(
            f"- the {b.attribute} of {_name(entities, b.subject)} is {'not ' * (not b.polarity)}"
            f"{_name(entities, b.value)} ({b.mode}{by}, turn {b.valid_from})"
        )
    return "\n".join(lines)


def _theirs(nested: Mapping[str, BeliefView], entities: Mapping[str, Entity]) -> str:
    """What the character thinks each other character believes, one line each."""
    theirs = []
    for other, view in sorted(nested.items()):
        for b in sorted(view.beliefs.values(), key=lambda b: (b.subject, b.attribute)):
            value = f"{'not ' * (not b.polarity)}{_name(entities, b.value)}"
            theirs.append(
                f"- {_name(entities, other)}: the {b.attribute} of "
                f"{_name(entities, b.subject)} is {value}"
            )
    return "\n".join(theirs)
