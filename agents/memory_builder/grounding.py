"""What is kept of a model's reading of a turn: only its actions on the sentences left to
it (one on a sentence the offline reader read is a second reading, a finding at most),
their actors and listeners only those the sentence names or stands for
(:func:`_grounded`), their witnesses only those the tracker places there or, placed
nowhere, the text names (:func:`_witnessed`); merged in story order with the reader's,
and every sentence no action covers kept as narration (:func:`with_narration`). What is
dropped is a ``reading`` finding (:mod:`.readings`)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from fabula.agents.contracts import Finding
from fabula.agents.memory_builder import readings
from fabula.agents.memory_builder.referents import Referents, words
from fabula.agents.memory_builder.request import Setting
from fabula.agents.memory_builder.schema import ExtractedActions
from fabula.agents.reading.phases.values import normal_value
from fabula.logs import get_logger
from fabula.memory.actions import REQUIRED_FIELDS, StoryAction
from fabula.memory.records import Entity
from fabula.memory.text import split_sentences

log = get_logger(__name__)


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


def kept_reading(
    text: str,
    reply: ExtractedActions,
    entities: Mapping[str, Entity],
    setting: Setting | None,
    *,
    read: Sequence[StoryAction],
    unread: Sequence[tuple[int, int]],
) -> list[StoryAction]:
    """What is kept of the model's ``reply`` on the ``unread`` sentences of ``text``, merged
    with what the offline reader ``read``, in story order, every sentence no action covers
    as narration (see the module docstring); what is dropped is reported as a finding."""
    referents = Referents(entities, reply.new_entities)
    kept = _only_unread(text, reply.actions, read, unread, referents)
    grounded = [g for a in kept if (g := _grounded(text, a, referents)) is not None]
    there = _Presence(entities, setting)
    witnessed = [_as_read(_witnessed(text, a, referents, there)) for a in grounded]
    return with_narration(text, _merged(read, witnessed))


def _as_read(action: StoryAction) -> StoryAction:
    """A model's condition in the words the reader gives one, so that a change told in
    any tense is one value: "has wilted", "wilts" → ``wilted``
    (:func:`~fabula.agents.reading.phases.values.normal_value`). Contents and places are
    names, kept as told ("milk" is no change)."""
    clause = action.clause
    if action.kind != "state" or clause is None or clause.attribute != "condition":
        return action
    value = normal_value(clause.value)
    if not value or value == clause.value:
        return action
    return action.model_copy(update={"clause": clause.model_copy(update={"value": value})})


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


# what the offline reader alone fills: left out of every schema a model is given, so a
# reply that holds them is off its contract; and what a model may tell of perception (on
# the kinds its schema offers them), held against presence and the text
_READERS_ONLY = ("unaware_of", "believed_seen_by", "unsure")
_TOLD = ("seen_by", "unseen_by")


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

    def placed(self, sid: str) -> bool:
        """Whether the tracker places character ``sid`` anywhere as the turn starts."""
        where = self.setting.whereabouts if self.setting is not None else ()
        return any(c == sid for c, _ in where)

    def name(self, sid: str) -> str:
        """``sid``'s name, for a finding."""
        entity = self.entities.get(sid)
        return entity.name if entity is not None else sid


def _witnessed(
    text: str, action: StoryAction, referents: Referents, presence: _Presence
) -> StoryAction:
    """``action`` with only the perception a model may tell and the turn can hold.

    Who perceives a model's action is who the tracker places there, and whom the text
    says. A witness (``seen_by``) the tracker places at the action as the turn starts is
    left to the tracker (it follows who leaves during the turn); one it places nowhere
    (a character the story never placed) is kept where the turn's text names them; one
    placed elsewhere, or no known character, or placed nowhere and never named, is a
    ``reading`` finding for :func:`second_readings`, never a belief. A reply that said
    Cal, in the garden, saw a move in the kitchen used to give Cal the move (issue 45).
    One who did not perceive it (``unseen_by``) is kept where the name is a known
    character the text names (it takes knowledge away, never gives it); otherwise a
    finding. The offline reader's own fields (:data:`_READERS_ONLY`) are dropped."""
    if not any(getattr(action, f) for f in (*_TOLD, *_READERS_ONLY)):
        return action
    present = presence.present(action)
    said = words(text)
    kept: dict[str, list[str]] = {"seen_by": [], "unseen_by": []}
    refused: list[tuple[str, str, str]] = []  # (field, name, why)
    for field in _TOLD:
        for name in getattr(action, field):
            canonical, problem = referents.resolve(name, frozenset({"character"}), field)
            ids = presence.ids([canonical])
            if problem:
                refused.append((field, name, "no known character"))
            elif field == "seen_by" and ids & present:
                continue  # there as the turn starts: where the tracker has them decides
            elif field == "seen_by" and any(presence.placed(i) for i in ids):
                refused.append((field, canonical, "not there"))
            elif not referents.words(canonical) & said:
                refused.append((field, canonical, "not named in the text"))
            else:
                kept[field].append(canonical)
    unseen = list(dict.fromkeys(kept["unseen_by"]))
    seen = [n for n in dict.fromkeys(kept["seen_by"]) if n not in unseen]  # not seeing wins
    log.warning(
        "memory_builder_witnesses",
        role="memory_builder",
        kind=action.kind,
        span=(action.start, action.end),
        seen_by=seen,
        unseen_by=unseen,
        refused=[n for _, n, _ in refused],
        dropped=[f for f in _READERS_ONLY if getattr(action, f)],
    )
    quote = text[action.start : action.end].strip()
    for field, why in dict.fromkeys((f, w) for f, _, w in refused):
        names = ", ".join(n for f, n, w in refused if (f, w) == (field, why))
        if why == "not there":
            places = sorted(presence.name(p) for p in presence.places(action)) or ["unknown"]
            why = f"not there ({', '.join(places)})"
        told = "saw this" if field == "seen_by" else "did not see this"
        message = f"the model says {names} {told}; {why}: left out, witnesses are who is present"
        readings.report(Finding(kind="reading", severity="warning", quote=quote, message=message))
    update: dict[str, Any] = dict.fromkeys(_READERS_ONLY[:2], ()) | {"unsure": None}
    return action.model_copy(update=update | {"seen_by": tuple(seen), "unseen_by": tuple(unseen)})


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
