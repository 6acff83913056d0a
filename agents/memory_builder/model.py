"""The memory-builder on a chat model: free prose → typed story actions → the same tracker.

:class:`MemoryBuilderReader` first reads the text with the offline reader
(:mod:`.extract`): a sentence in controlled English whose names are all the story's own is
taken from it as it is, exactly what the rules read offline. The model is asked only for
the rest (its sentences are the ones listed to read; with none, it is not asked at all):
their :class:`~fabula.memory.actions.StoryAction` values (an :class:`ExtractedActions`),
each with the span of the sentence it comes from. A model action that touches a sentence the
offline reader read is dropped (a second reading, never a second truth); where it differs
from what the reader read there, it is a warning for the critic and the approver (a
``reading`` :class:`~fabula.agents.contracts.Finding`, collected by :func:`second_readings`
around the build). The actors and listeners of a model action are only those its sentence
names or stands for with a pronoun; an action left without one it needs is narration (a
``reading`` finding too, :func:`_grounded`). Who perceives a model's action is who the
tracker places there: a witness the reply names who is not at the action is a ``reading``
finding, never a belief (:func:`_witnessed`).
The JSON schema sent (:func:`actions_json_schema`, unless the role's ``schemas`` setting is
``generic``) is the turn's: an action is a union by kind, each with only its fields, its
span inside the sentences to read, its names drawn from the story's entities of the kind
each field takes (or, for a new entity, from the words of those sentences), lists and words
bounded.
An empty or inverted span (end at or before start, which no grammar rules out: a small
model writes ``"start": 1, "end": 0``) is read as the sentence that holds its start (the
last, for one at the text's end). A sentence without a word (``"**"``) tells nothing: it is
narration, never asked about. A reply whose spans do not lie in the text, whose actions lack
a field their kind needs, or that names an entity the story does not know (or of the wrong
kind) without bringing it in explicitly, is shown back to the model and asked for again,
within ``max_attempts``
replies, after which :class:`~fabula.errors.ModelOutputError` is raised and nothing is built.
Every sentence no action covers is kept as ``narration``, as the offline reader does.

:class:`ModelMemoryBuilder` then runs exactly what the offline builder runs — memory's build
sequence, :func:`~fabula.memory.ingest.build_turn` — so access tracking, beliefs and
validation are the same code in both modes. A text is read once: the graph keeps the delta
it gave in the checkpointed turn state and commits that on approval, from any process.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, get_args

from langchain_core.messages import HumanMessage, SystemMessage
from pydantic import BaseModel, ConfigDict, create_model, model_validator

from fabula.agents.contracts import LINE_CHARS, Finding
from fabula.agents.memory_builder import readings
from fabula.agents.memory_builder.offline import Reader
from fabula.agents.memory_builder.referents import NewEntity, Referents, RefKind, words
from fabula.agents.prompts import load_prompt
from fabula.agents.reading.phases import read_story
from fabula.agents.schemas import array, cached, closed, integer, line, maybe, one_of
from fabula.errors import ModelOutputError
from fabula.limits import Limits
from fabula.logs import get_logger
from fabula.memory.actions import REQUIRED_FIELDS, ActionKind, StoryAction
from fabula.memory.delta import TurnDelta
from fabula.memory.ingest import basis, build_turn
from fabula.memory.projections import project_world
from fabula.memory.records import Entity
from fabula.memory.store import StoryStore
from fabula.memory.text import has_word, normalised, split_sentences

if TYPE_CHECKING:
    # OpenAI and LangChain (seconds to import): loaded by the factory, only for a model
    from fabula.agents.llm import ModelClient

log = get_logger(__name__)

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
_NAMES = ("actors", "listeners")
# the fields each kind of story action uses: those it needs (REQUIRED_FIELDS) and these,
# nullable (None) or needed (the schema's own choice: a say has its words)
_MORE: dict[str, dict[str, bool]] = {
    "say": {"utterance": True, "clause": False},
    "see": {"utterance": False},
    "feel": {"verb": True},
    "think": {"obj": False},
    "inform": {"listeners": False},
}
_VERBS = ("likes", "loves", "hates", "dislikes")
_CAPITALISED = re.compile(r"\b[A-Z][\w'-]*")
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


def with_narration(text: str, actions: Sequence[StoryAction]) -> list[StoryAction]:
    """``actions`` in the order given (the story's order, as the model tells it: a span
    never reorders them) plus a ``narration`` action for every sentence none of them
    overlaps, each placed before the first action that comes after it in the text."""
    gaps = [
        StoryAction(kind="narration", start=start, end=end)
        for start, end in split_sentences(text)
        if not any(a.start < end and start < a.end for a in actions)
    ]
    out: list[StoryAction] = []
    for action in actions:
        while gaps and gaps[0].end <= action.start:
            out.append(gaps.pop(0))
        out.append(action)
    return out + gaps


@dataclass(frozen=True)
class Setting:
    """Where a turn starts, for resolving its pronouns: the scene (the place of the latest
    entry), where each character is, and the previous turn's text."""

    scene: str | None = None
    whereabouts: tuple[tuple[str, str], ...] = ()  # (character, place), by character
    previous: str = ""


def read_first(
    text: str, entities: Mapping[str, Entity], reader: Reader = read_story
) -> tuple[list[StoryAction], list[tuple[int, int]]]:
    """What the offline ``reader`` (the phased reader unless told) reads of ``text``: the
    actions whose names are all entities of the story of the right kinds (as the reader
    gives them), and the spans of the other sentences, left to the model."""
    referents = Referents(entities)
    names = set().union(*(_name_words(e.name) for e in entities.values()))
    read: list[StoryAction] = []
    unread: list[tuple[int, int]] = []
    for action in reader(text, entities):
        if action.kind != "narration" and not referents.check(action, "")[1]:
            read.append(action)
        elif may_tell(text[action.start : action.end], names):
            unread.append((action.start, action.end))
    return read, unread


# the words that can stand for an entity in a sentence that does not name one
_STANDS_FOR = frozenset(
    {"he", "she", "him", "her", "his", "hers", "himself", "herself", "it", "its", "itself"}
    | {"they", "them", "their", "theirs", "themselves", "i", "me", "my", "mine", "myself"}
    | {"we", "us", "our", "ours", "ourselves", "you", "your", "yours", "yourself"}
)
_CAPITALISED = re.compile(r"\b[A-Z][\w'-]*")
_OPENS = tuple(".!?:;\"“”‘'([—–-*_")  # what may come before a word that opens a sentence
_LETTERS = re.compile(r"[a-z0-9]+")
_ARTICLE_WORDS = frozenset({"the", "a", "an", "of", "and", "to", "in", "on", "at"})


def _name_words(name: str) -> set[str]:
    """The words of an entity's name that can name it in part ("bin" of "donation bin")."""
    return set(_LETTERS.findall(name.lower())) - _ARTICLE_WORDS


def may_tell(sentence: str, names: set[str]) -> bool:
    """Whether a sentence the offline reader left as narration may still tell an action a
    model could read: it names a known entity (one word of its name is enough), stands for
    one with a pronoun, or brings in a name (a capitalised word not opening the sentence).
    Any other sentence ("The wind rose over the sea.", "**") tells nobody anything: it stays
    narration and the model is not asked about it, which saves a model call a turn where
    nothing else is left."""
    if not has_word(sentence):
        return False
    said = set(_LETTERS.findall(sentence.lower()))
    if said & names or said & _STANDS_FOR:
        return True
    for word in _CAPITALISED.finditer(sentence):
        before = sentence[: word.start()].rstrip()
        if before and not before.endswith(_OPENS):
            return True
    return False


class MemoryBuilderReader:
    """The memory-builder's model reader: reads a turn's text into story actions with a chat
    model, asked only about the sentences the rules cannot read (see the module docstring)."""

    def __init__(
        self,
        client: ModelClient,
        *,
        reader: Reader | None = None,
        prompt_version: int | None = None,
    ) -> None:
        self.client = client
        # reads first (the phased reader within the store's limits, unless told); the
        # model is asked only about what it left
        self.reader = reader
        self.prompt = load_prompt("memory_builder", "extract", prompt_version)

    async def read(
        self,
        text: str,
        entities: dict[str, Entity],
        setting: Setting | None = None,
        limits: Limits | None = None,
    ) -> list[StoryAction]:
        """Every action ``text`` tells, unread sentences as narration, in story order.

        ``entities`` are the story's (their names are shown, so the model reuses them);
        ``setting`` is where the turn starts (v2 prompts show it, for pronouns).
        Raises ModelOutputError when no valid reply comes within ``max_attempts``.
        """
        reader = self.reader or functools.partial(read_story, limits=limits)
        # in a worker thread: reading is all computation (see OfflineMemoryBuilder.build)
        read, unread = await asyncio.to_thread(read_first, text, entities, reader)
        readings.report_unsure(text, read)
        if not unread:
            return with_narration(text, read)
        request = render_text(
            text, entities, setting if self.prompt.version >= 2 else None, unread=unread
        )
        messages = [SystemMessage(content=self.prompt.render()), HumanMessage(content=request)]
        wire = None
        if self.client.schemas == "story":
            wire = actions_json_schema(text, entities, unread, self.client.max_tokens)
        reply = await self.client.structured(
            actions_schema(text, entities), messages, shape=ExtractedActions, json_schema=wire
        )
        referents = Referents(entities, reply.new_entities)
        kept = _only_unread(text, reply.actions, read, unread, referents)
        grounded = [g for a in kept if (g := _grounded(text, a, referents)) is not None]
        there = _Presence(entities, setting)
        witnessed = [_witnessed(text, a, referents, there) for a in grounded]
        return with_narration(text, _merged(read, witnessed))


def second_readings() -> contextlib.AbstractContextManager[list[Finding]]:
    """Collect the reading findings of a block (see :mod:`.readings`): a sentence the
    offline reader read that the model, asked about the rest, read otherwise (the reader's
    reading is the one kept), and what the reader was unsure of."""
    return readings.collect()


def _only_unread(
    text: str,
    actions: Sequence[StoryAction],
    read: Sequence[StoryAction],
    unread: Sequence[tuple[int, int]],
    referents: Referents,
) -> list[StoryAction]:
    """The model's actions that touch only sentences left to it. One that touches a sentence
    the reader read is dropped and logged, and, where no action the reader read there is
    the same (kind and names, spans aside), given to :func:`second_readings` as a finding."""
    kept = []
    for action in actions:
        touches = [r for r in read if r.start < action.end and action.start < r.end]
        if touches or not any(s < action.end and action.start < e for s, e in unread):
            log.warning(
                "memory_builder_second_reading",
                role="memory_builder",
                kind=action.kind,
                span=(action.start, action.end),
                read_as=[r.kind for r in touches],
            )
            mine = _gist(action, referents)
            if touches and all(_gist(r, referents) != mine for r in touches):
                start, end = min(r.start for r in touches), max(r.end for r in touches)
                finding = Finding(
                    kind="reading",
                    severity="warning",
                    quote=text[start:end].strip(),
                    message=f"the model read this as {_told(action)}; kept as the rules read "
                    f"it: {'; '.join(_told(r) for r in touches)}",
                )
                readings.report(finding)
            continue
        kept.append(action)
    return kept


# pronouns that stand for one character, and for several
_ONE = frozenset({"he", "she", "him", "her", "his", "hers", "himself", "herself", "i", "me"})
_SEVERAL = frozenset({"they", "them", "their", "theirs", "themselves", "we", "us", "our"})


def _grounded(text: str, action: StoryAction, referents: Referents) -> StoryAction | None:
    """``action`` with only the actors and listeners its own sentence names (by a word of
    a name, id or alias), or stands for with a pronoun: one for "he" or "she", all for
    "they". None when an actor or listener its kind needs is left to none (the sentence is
    then narration). What is left out is a ``reading`` finding for :func:`second_readings`.

    Gemma 3 270M, for one, filled every list to its bound with the scene's characters
    ("Cora, Dev, Ada, Ben ask Cora, Dev, Ada, Ben"): a grammar can bound a list, not make
    its names the sentence's own."""
    span = text[action.start : action.end]
    said = words(span)

    def named(names: tuple[str, ...]) -> tuple[str, ...]:
        kept = tuple(n for n in names if referents.words(n) & said)
        if kept or not names:
            return kept
        if said & _SEVERAL:
            return names
        return names[:1] if said & _ONE else ()

    actors, listeners = named(action.actors), named(action.listeners)
    if (actors, listeners) == (action.actors, action.listeners):
        return action
    left_out = [n for n in (*action.actors, *action.listeners) if n not in (*actors, *listeners)]
    needed = REQUIRED_FIELDS[action.kind]
    dropped = ("actors" in needed and not actors) or ("listeners" in needed and not listeners)
    log.warning(
        "memory_builder_ungrounded",
        role="memory_builder",
        kind=action.kind,
        span=(action.start, action.end),
        left_out=left_out,
        dropped=dropped,
    )
    message = (
        f"the model read this as {_told(action)}; the sentence does not name "
        + ", ".join(left_out)
        + (": read as narration" if dropped else ": left out")
    )
    finding = Finding(kind="reading", severity="warning", quote=span.strip(), message=message)
    readings.report(finding)
    if dropped:
        return None
    return action.model_copy(update={"actors": actors, "listeners": listeners})


# what the offline reader alone fills: who perceived an act, or did not, as its text says;
# left out of every schema a model is given, so a reply that holds them is off its contract
_PERCEPTION = ("seen_by", "unseen_by", "unaware_of", "believed_seen_by", "unsure")


@dataclass(frozen=True)
class _Presence:
    """Who is where as a turn starts (its :class:`Setting`), by entity id, to judge the
    witnesses a model names."""

    entities: Mapping[str, Entity]
    setting: Setting | None

    def ids(self, names: Iterable[str]) -> set[str]:
        """The ids of the entities ``names`` (canonical names, as resolved) name."""
        by_name = {e.name: i for i, e in self.entities.items()}
        return {by_name.get(n, n) for n in names}

    def places(self, action: StoryAction) -> set[str]:
        """Where ``action`` happens: its place and where its doers are (the scene, when
        none of them is placed)."""
        where = dict(self.setting.whereabouts) if self.setting is not None else {}
        places = {where[a] for a in self.ids(action.actors) if a in where}
        if action.place is not None:
            places |= self.ids([action.place])
        if not places and self.setting is not None and self.setting.scene:
            places.add(self.setting.scene)
        return places

    def present(self, action: StoryAction) -> set[str]:
        """The ids of the characters at ``action``: its doers, its listeners and everyone
        placed where it happens."""
        where = self.setting.whereabouts if self.setting is not None else ()
        places = self.places(action)
        return self.ids((*action.actors, *action.listeners)) | {c for c, p in where if p in places}

    def name(self, sid: str) -> str:
        """``sid``'s name, for a finding."""
        entity = self.entities.get(sid)
        return entity.name if entity is not None else sid


def _witnessed(
    text: str, action: StoryAction, referents: Referents, presence: _Presence
) -> StoryAction:
    """``action`` without the perception fields a model may not fill (:data:`_PERCEPTION`).

    Who perceives a model's action is who the tracker places there, never whom the reply
    says: a witness it names who is not at the action as the turn starts (or no known
    character) is a ``reading`` finding for :func:`second_readings`, never a belief. A
    reply that said Cal, in the garden, saw a move in the kitchen used to give Cal the
    move (issue 45)."""
    if not any(getattr(action, f) for f in _PERCEPTION):
        return action
    present = presence.present(action)
    absent = []
    for name in action.seen_by:
        canonical, problem = referents.resolve(name, frozenset({"character"}), "seen_by")
        if problem or not presence.ids([canonical]) & present:
            absent.append(canonical)
    log.warning(
        "memory_builder_witnesses",
        role="memory_builder",
        kind=action.kind,
        span=(action.start, action.end),
        absent=absent,
        dropped=[f for f in _PERCEPTION if getattr(action, f)],
    )
    if absent:
        places = sorted(presence.name(p) for p in presence.places(action)) or ["unknown"]
        message = (
            f"the model says {', '.join(absent)} saw this; not there ({', '.join(places)}): "
            "left out, witnesses are who is present"
        )
        quote = text[action.start : action.end].strip()
        readings.report(Finding(kind="reading", severity="warning", quote=quote, message=message))
    return action.model_copy(update=dict.fromkeys(_PERCEPTION[:4], ()) | {"unsure": None})


def _gist(action: StoryAction, referents: Referents) -> dict[str, Any]:
    """What ``action`` says, names resolved and its span left out (to compare readings)."""
    resolved, _ = referents.check(action, "")
    fields = (f for f in StoryAction.model_fields if f not in ("start", "end"))
    values = {f: getattr(resolved, f) for f in fields}
    return {f: tuple(v) if isinstance(v, list) else v for f, v in values.items()}


def _told(action: StoryAction) -> str:
    """``action`` in a few words, for a finding: its kind and the names it gives."""
    names = (f for f in StoryAction.model_fields if f not in ("kind", "start", "end"))
    fields = {f: v for f in names if (v := getattr(action, f))}
    shown = {f: ", ".join(v) if isinstance(v, list | tuple) else v for f, v in fields.items()}
    return f"{action.kind} " + "; ".join(f"{f} {v}" for f, v in shown.items())


def _merged(read: Sequence[StoryAction], told: Sequence[StoryAction]) -> list[StoryAction]:
    """The offline reader's actions and the model's, in story order: the model's as it told
    them, each of the reader's before the first of the model's that comes after it."""
    pending = list(read)
    out: list[StoryAction] = []
    for action in told:
        while pending and pending[0].end <= action.start:
            out.append(pending.pop(0))
        out.append(action)
    return out + pending


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
    capitalised = [w for w in _CAPITALISED.findall(words) if w not in _NOT_NAMES]
    phrases = [p for m in _PHRASE.finditer(words) for p in (m[1], m[2] and f"{m[1]} {m[2]}") if p]
    new = [w for w in dict.fromkeys([*capitalised, *phrases]) if w.lower() not in known]
    attributes = {a for e in entities.values() for a in e.attributes} - _NOT_ATTRIBUTES
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


def render_text(
    text: str,
    entities: dict[str, Entity],
    setting: Setting | None = None,
    *,
    unread: Sequence[tuple[int, int]] | None = None,
) -> str:
    """The extraction request: known entities, where the turn starts, the text, and the
    sentences to read with their spans (``unread``; default: every sentence)."""
    known = []
    for kind in ("character", "place", "object"):
        names = sorted(e.name for e in entities.values() if e.kind == kind)
        if names:
            known.append(f"{kind}s: {', '.join(names)}")
    spans = list(split_sentences(text) if unread is None else unread)
    sentences = "\n".join(f"[{s}:{e}] {text[s:e]}" for s, e in spans)
    heading = "Sentences, with their spans [start:end]"
    if unread is not None and len(spans) < len(list(split_sentences(text))):
        heading = "Sentences to read, with their spans [start:end] (the others are read)"
    scene: list[str] = []
    if setting is not None:

        def name(i: str) -> str:
            return entities[i].name if i in entities else i

        if setting.scene:
            scene.append(f"latest entry: {name(setting.scene)}")
        scene += [f"{name(c)} is in {name(p)}" for c, p in setting.whereabouts]
    sections = [
        ("Known entities", "\n".join(known)),
        ("Scene", "\n".join(scene)),
        ("Previous turn", setting.previous if setting is not None else ""),
        (f"Text ({len(text)} characters)", text),
        (heading, sentences),
    ]
    return "\n\n".join(f"## {title}\n{body}" for title, body in sections if body)


async def setting_of(
    store: StoryStore, as_of: int | None, entities: Mapping[str, Entity]
) -> Setting:
    """Where a turn after ``as_of`` (None: the head) starts: the previous turn's scene,
    where each character is in W, and the previous turn's text."""
    last = await store.head() if as_of is None else as_of
    previous = await store.turn_texts(last, last) if last >= 1 else []
    if not previous:
        return Setting()
    world = await project_world(store, as_of)
    whereabouts = tuple(
        (c, place)
        for c in sorted(i for i, e in entities.items() if e.kind == "character")
        if (place := world.where(c)) is not None
    )
    return Setting(scene=previous[0].scene, whereabouts=whereabouts, previous=previous[0].text)


class ModelMemoryBuilder:
    """Builds the deltas of turns of free prose: the model extracts, the tracker tracks."""

    def __init__(self, client: ModelClient, *, reader: Reader | None = None) -> None:
        self.model_reader = MemoryBuilderReader(client, reader=reader)

    async def build(self, store: StoryStore, turn: int, text: str) -> TurnDelta:
        """The delta of ``turn`` with ``text``, derived from the store's views before it.

        Raises :class:`~fabula.errors.NotFound` when the story does not exist, and
        :class:`ModelOutputError` (with story, branch and turn) when the text cannot be read.
        """
        text = normalised(text)  # what is read is what is stored: see normalised
        as_of = await basis(store, turn)
        actions = await self._actions(store, turn, text, as_of)
        return await build_turn(store, turn, text, actions, as_of=as_of)

    async def _actions(
        self, store: StoryStore, turn: int, text: str, as_of: int | None
    ) -> list[StoryAction]:
        try:
            entities = await store.entities(as_of)
            setting = await setting_of(store, as_of, entities)
            return await self.model_reader.read(text, entities, setting, store.limits)
        except ModelOutputError as error:
            error.context.update(story=store.story, branch=store.branch, turn=turn)
            raise
