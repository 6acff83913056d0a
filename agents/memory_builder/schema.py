"""What a chat model is asked to reply when it reads a turn for the memory-builder: the
reply's type (:class:`ExtractedActions`, checked against the turn's text and the story's
entities by :func:`actions_schema`) and the strict JSON schema sent with the request
(:func:`actions_json_schema`): an action is a union by kind, each with only its fields, its
span inside the sentences to read, its names drawn from the story's entities of the kind
each field takes (or, for a new entity, from the words of those sentences), lists and
words bounded. An empty or inverted span is read as the sentence that holds its start.

A clause's attribute is ``location`` (its value an entity) or one of a small typed base
set, :data:`~fabula.memory.actions.STATE_ATTRIBUTES` (``contents``, ``condition``: what
memory's readers write; open or locked, on or off, alive or dead are conditions), extended
by the attributes the pack's entities declare. A ``state`` (:data:`PERCEIVED`) carries
who the text says perceived it (``seen_by``) and who it says did not (``unseen_by``),
character names, empty when it says nothing: :mod:`.grounding` keeps only those it can
hold against presence and the text."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, get_args

from pydantic import BaseModel, ConfigDict, create_model, model_validator

from fabula.agents.contracts import LINE_CHARS
from fabula.agents.memory_builder.referents import NewEntity, Referents, RefKind
from fabula.agents.memory_builder.request import CAPITALISED
from fabula.agents.schemas import array, cached, closed, integer, line, maybe, one_of
from fabula.memory.actions import REQUIRED_FIELDS, STATE_ATTRIBUTES, ActionKind, StoryAction
from fabula.memory.records import Entity
from fabula.memory.text import split_sentences

PER_SENTENCE = 3  # the most actions read from one sentence
MAX_READ = 24  # the most actions one reply holds
# the tokens one action takes as a model writes it (indented, every field named, its lists
# filled: 2,191 tokens for 18 actions with 4 actors and 4 listeners each, 122 an action,
# Gemma 3 270M on llama.cpp), and what the rest of the reply takes: how many actions fit
# in a reply's token limit
ACTION_TOKENS = 128
REPLY_TOKENS = 32
MAX_NAMES = 4  # actors or listeners of one action
MAX_NEW = 4  # entities one reply brings in
CANDIDATES = 40  # words of the sentences to read offered as a new entity's name
UTTERANCE_CHARS = 2 * LINE_CHARS
VALUE_CHARS = 80  # a clause's value that is no entity ("oak brown")
_NAMES = ("actors", "listeners", "seen_by", "unseen_by")
# the kinds whose perception a model may tell (seen_by, unseen_by): a state, as the phased
# reader marks it. Offered on the deeds on a thing too (move, put, take, give, drop), the
# schema grew 8% (7,679 to 8,300 characters, lighthouse) against 2% for a state alone, and
# each deed a reply lists two fields more; who sees a deed is who is there
PERCEIVED: tuple[ActionKind, ...] = ("state",)
_SEEN = {"seen_by": False, "unseen_by": False}
# the fields each kind of story action uses: those it needs (REQUIRED_FIELDS) and these,
# nullable (None) or needed (the schema's own choice: a say has its words)
_MORE: dict[str, dict[str, bool]] = {
    "say": {"utterance": True, "clause": False},
    "see": {"utterance": False},
    "feel": {"verb": True},
    "think": {"obj": False},
    "inform": {"listeners": False},
} | {kind: _SEEN for kind in PERCEIVED}
_VERBS = ("likes", "loves", "hates", "dislikes")
_PHRASE = re.compile(r"\b(?:the|a|an) ([a-z][\w'-]*)(?: ([a-z][\w'-]*))?")
_NOT_NAMES = frozenset(
    {
        "The",
        "A",
        "An",
        "This",
        "That",
        "It",
        "He",
        "She",
        "They",
        "We",
        "I",
        "You",
        "His",
        "Her",
        "Their",
        "Its",
        "Then",
        "But",
        "And",
        "When",
    }
)
_NOT_ATTRIBUTES = frozenset({"aliases", "role"})


class ExtractedActions(BaseModel):
    """The story actions one turn's text tells, in story order, each with its span, and the
    entities the text brings into the story for the first time (with their kinds)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    actions: tuple[StoryAction, ...]
    new_entities: tuple[NewEntity, ...] = ()


def actions_schema(text: str, entities: Mapping[str, Entity]) -> type[ExtractedActions]:
    """:class:`ExtractedActions` for ``text``: every span inside it, every name a known
    entity of the right kind or one of ``new_entities`` (names become the entities' own;
    :mod:`.referents`), each action with its own fields (see
    :data:`~fabula.memory.actions.REQUIRED_FIELDS`)."""
    length = len(text)
    sentences = list(split_sentences(text))

    def checked(self: ExtractedActions) -> ExtractedActions:  # an after-validator
        problems = []
        referents = Referents(entities, self.new_entities)
        resolved = []
        for i, action in enumerate(self.actions):
            if 0 <= action.start == action.end <= length:  # an empty span: its sentence
                start, end = _sentence_at(sentences, action.start)
                action = action.model_copy(update={"start": start, "end": end})
            if not 0 <= action.start < action.end <= length:
                problems.append(
                    f"actions.{i}: span {action.start}..{action.end} is not inside the text "
                    f"(0..{length})"
                )
            fixed, found = referents.check(action, f"actions.{i}")
            problems += found
            resolved.append(fixed)
        if problems:
            raise ValueError("; ".join(problems))
        return self.model_copy(update={"actions": tuple(resolved)})

    def spans(data: Any) -> Any:  # a before-validator: an inverted span is an empty one
        actions = data.get("actions") if isinstance(data, dict) else None
        if not isinstance(actions, list):
            return data
        fixed = []
        for a in actions:
            start, end = (a.get("start"), a.get("end")) if isinstance(a, dict) else (None, None)
            inverted = isinstance(start, int) and isinstance(end, int) and end < start
            fixed.append({**a, "end": start} if inverted else a)
        return {**data, "actions": fixed}

    validators: dict[str, Any] = {
        "spans": model_validator(mode="before")(spans),
        "checked": model_validator(mode="after")(checked),
    }
    return create_model("ExtractedActions", __base__=ExtractedActions, __validators__=validators)


def _sentence_at(sentences: Sequence[tuple[int, int]], offset: int) -> tuple[int, int]:
    """The span of the sentence of ``sentences`` that holds ``offset`` (the next one after
    it, between two; the last, at its end; the offset alone, past it)."""
    for start, end in sentences:
        if offset < end or offset == end == sentences[-1][1]:
            return start, end
    return offset, offset


def actions_json_schema(
    text: str,
    entities: Mapping[str, Entity],
    unread: Sequence[tuple[int, int]] | None = None,
    max_tokens: int | None = None,
) -> dict[str, Any]:
    """The strict JSON schema of a reading of ``unread`` (spans of ``text``; default: all
    of it) with these ``entities``: see the module docstring. Built once per view (cached).

    The actions are at most :data:`PER_SENTENCE` per sentence to read, :data:`MAX_READ` in
    all and, with the reply's ``max_tokens``, as many as fit in it at
    :data:`ACTION_TOKENS` each: a model that lists actions until the schema stops it (a
    small one repeats the last) is stopped before its reply is cut, never after."""
    spans = list(unread) if unread is not None else list(split_sentences(text))
    names: dict[str, list[str]] = {
        kind: sorted(e.name for e in entities.values() if e.kind == kind)
        for kind in ("character", "place", "object")
    }
    known = {n.lower() for kind_names in names.values() for n in kind_names}
    words = " ".join(text[s:e] for s, e in spans)
    capitalised = [w for w in CAPITALISED.findall(words) if w not in _NOT_NAMES]
    phrases = [p for m in _PHRASE.finditer(words) for p in (m[1], m[2] and f"{m[1]} {m[2]}") if p]
    new = [w for w in dict.fromkeys([*capitalised, *phrases]) if w.lower() not in known]
    declared = {a for e in entities.values() for a in e.attributes} - _NOT_ATTRIBUTES
    attributes = declared | set(STATE_ATTRIBUTES)
    parts = {
        "names": names,
        "new": new[:CANDIDATES],
        "attributes": sorted(attributes - {"location"}),
        "span": [min(s for s, _ in spans), max(e for _, e in spans)] if spans else [0, 0],
        "sentences": len(spans),
        "most": most_actions(len(spans), max_tokens),
    }
    return cached("memory_builder", parts, lambda: _actions_json_schema(parts))


def most_actions(sentences: int, max_tokens: int | None = None) -> int:
    """The most actions a reading of ``sentences`` sentences lists in a reply of
    ``max_tokens`` tokens (None: the server's limit, unknown here): see
    :func:`actions_json_schema`; at least one."""
    most = min(MAX_READ, PER_SENTENCE * max(sentences, 1))
    if max_tokens is not None:
        most = min(most, (max_tokens - REPLY_TOKENS) // ACTION_TOKENS)
    return max(most, 1)


def _actions_json_schema(parts: dict[str, Any]) -> dict[str, Any]:
    names, new = parts["names"], parts["new"]
    people = one_of([*names["character"], *(w for w in new if w[:1].isupper())])
    things = [*names["object"], *new]
    anything = [*names["character"], *names["place"], *things]
    lo, hi = parts["span"]
    values: dict[str, dict[str, Any]] = {
        "actors": array(people, MAX_NAMES, min_items=1),
        "listeners": array(people, MAX_NAMES, min_items=1),
        "seen_by": array(people, MAX_NAMES),
        "unseen_by": array(people, MAX_NAMES),
        "place": one_of([*names["place"], *new]),
        "obj": one_of(things),
        "target": one_of([*names["place"], *things]),
        "clause": _clause(anything, [*names["character"], *things], parts["attributes"]),
        "utterance": line(UTTERANCE_CHARS, min_chars=1),
        "verb": one_of(_VERBS),
    }
    members = []
    for kind in get_args(ActionKind):
        if kind == "narration":
            continue  # what no action covers is kept as narration without asking
        fields = {f: True for f in REQUIRED_FIELDS[kind]} | _MORE.get(kind, {})
        properties: dict[str, Any] = {
            "kind": {"type": "string", "const": kind},
            "start": integer(lo, hi),
            "end": integer(lo, hi),
        }
        for field, needed in fields.items():
            value = values[field]
            if kind == "give" and field == "target":
                value = people
            elif kind in ("feel", "think") and field == "obj":
                value = one_of(anything)
            if field in _NAMES and not needed:
                value = array(people, MAX_NAMES)
            elif not needed:
                value = maybe(value)
            properties[field] = value
        if all(v.get("type") != "null" for v in properties.values()):
            members.append(closed(properties))
    most = parts["most"]
    entity = closed({"name": one_of(new), "kind": one_of(get_args(RefKind))})
    return closed(
        {
            "actions": array({"anyOf": members}, most),
            "new_entities": array(entity if new else {"type": "null"}, MAX_NEW),
        }
    )


def _clause(
    anything: Iterable[str], subjects: Iterable[str], attributes: Sequence[str]
) -> dict[str, Any]:
    """A clause: a location (its value an entity) or another attribute (a short value)."""
    subject = one_of(subjects)
    options = [
        closed(
            {
                "subject": subject,
                "attribute": {"type": "string", "const": "location"},
                "value": one_of(anything),
            }
        ),
    ]
    if attributes:
        options.append(
            closed(
                {
                    "subject": subject,
                    "attribute": one_of(attributes),
                    "value": line(VALUE_CHARS, min_chars=1),
                }
            )
        )
    return options[0] if len(options) == 1 else {"anyOf": options}
