"""A question in a conversation, read as a question of its own.

A person talking to a character asks "Where is the brass key?", then "And where is it
now?", "What about Mara?" or "Why?". Each follow-up means something only with the exchange
before it; :func:`standalone` reads it against the conversation so far (the person's own
questions and this character's answers, oldest first) into the question it stands for:

* "And …", "So …", "But …" and a trailing "now" are dropped: "And where is it now?" →
  "Where is it?";
* "it" is the thing, "he"/"she"/"him"/"her" the person, last named in the conversation
  (the latest question first, then the answer to it, then older exchanges): → "Where is
  the brass key?";
* "What about X?", "And X?", "How about X?" are the last question again, about X: after
  "Where is the brass key?", "And the lamp?" → "Where is the lamp?";
* "Why?", "How do you know?", "Are you sure?" ask for the grounds of the last answer:
  :attr:`Reading.why` is set and :attr:`Reading.question` is the last question.

Pure text over the names the character itself knows of (its own entities): nothing here
reads a mind or a store.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from fabula.agents.contracts import ChatExchange
from fabula.memory.records import Entity

_LEAD = re.compile(r"^(?:and|so|but|then|ok|okay|well|oh)\b[,]?\s+", re.IGNORECASE)
_NOW = re.compile(r"\s+(?:right\s+)?now(?=\s*[?.!]*$)", re.IGNORECASE)
_WHY = re.compile(
    r"^(?:why|why (?:is|was) that|why so|why do you (?:think|say) (?:so|that)|how come"
    r"|how do you know(?: (?:that|it))?|are you sure|what makes you (?:think|say) (?:so|that))"
    r"\s*[?.!]*$",
    re.IGNORECASE,
)
_ABOUT = re.compile(r"^(?:what about|how about|and|about)\s+(?P<who>.+?)\s*[?.!]*$", re.IGNORECASE)
_THING = re.compile(r"\b(it|its)\b", re.IGNORECASE)
_PERSON = re.compile(r"\b(he|she|him|her|his)\b", re.IGNORECASE)
_POSSESSIVE = frozenset({"its", "his"})


@dataclass(frozen=True)
class Reading:
    """A question as it stands alone (``question``); ``why``: it asks the grounds of the
    answer to that question rather than the question itself."""

    question: str
    why: bool = False


def standalone(
    question: str,
    conversation: Sequence[ChatExchange],
    entities: Mapping[str, Entity],
    me: str,
) -> Reading:
    """``question`` read against ``conversation`` (see the module docstring); ``me`` is the
    character asked (its name is never "he" or "she" to it: it is "you"). A question with
    nothing to refer back to is returned as asked."""
    earlier: list[ChatExchange] = []
    for exchange in conversation:  # each earlier question read against those before it
        asked = _read(exchange.question, earlier, entities, me)
        earlier.append(ChatExchange(question=asked.question, answer=exchange.answer))
    return _read(question, earlier, entities, me)


def _read(
    question: str, earlier: Sequence[ChatExchange], entities: Mapping[str, Entity], me: str
) -> Reading:
    text = " ".join(question.split())
    if not earlier:
        return Reading(text)
    last = earlier[-1].question
    if _WHY.match(_LEAD.sub("", text)):
        return Reading(last, why=True)
    text = _LEAD.sub("", text) if _LEAD.match(text) and len(_LEAD.sub("", text)) > 1 else text
    text = _NOW.sub("", text)
    text = text[:1].upper() + text[1:]
    if m := _ABOUT.match(text):
        other = _named(m["who"], entities, me)
        if other is not None:
            return Reading(_about(last, other, entities, me))
    thing = _last_named(earlier, entities, me, person=False)
    person = _last_named(earlier, entities, me, person=True)
    if thing is not None:
        text = _THING.sub(lambda w: _as(thing, w.group(1), entities), text)
    if person is not None:
        text = _PERSON.sub(lambda w: _as(person, w.group(1), entities), text)
    return Reading(text)


def _as(entity_id: str, word: str, entities: Mapping[str, Entity]) -> str:
    """The entity as the word it stands for is said: "the brass key", "Mara", "Mara's"."""
    entity = entities[entity_id]
    name = entity.name if entity.kind == "character" else f"the {entity.name}"
    return name + "'s" if word.casefold() in _POSSESSIVE else name


def _about(last: str, other: str, entities: Mapping[str, Entity], me: str) -> str:
    """``last`` asked again of ``other``: its mention of the same kind replaced (a person
    for a person, a thing for a thing), else its subject."""
    wanted = entities[other].kind == "character" if other != me else True
    mentions = _mentions(last, entities, me)
    same = [m for m in mentions if (entities[m[0]].kind == "character") == wanted]
    chosen = (same or mentions)[:1]
    if not chosen:
        return last
    _, start, end = chosen[0]
    if other == me:
        said = last[:start] + "you" + last[end:]
        said = re.sub(r"\bis you\b", "are you", said)
        said = re.sub(r"\bdoes you\b", "do you", said)
        return re.sub(r"\byou (?:thinks|believes)\b", lambda w: w.group(0)[:-1], said)
    entity = entities[other]
    name = entity.name if entity.kind == "character" else f"the {entity.name}"
    before = last[:start]
    if entity.kind != "character":
        before = re.sub(r"\bthe\s+$", "", before, flags=re.IGNORECASE)
    return before + name + last[end:]


def _named(words: str, entities: Mapping[str, Entity], me: str) -> str | None:
    """The entity ``words`` names ("Mara", "the key" when one thing is called a key,
    "you": the character asked), or None."""
    words = words.strip().casefold()
    if words in ("you", "yourself"):
        return me
    words = re.sub(r"^(?:the|a|an)\s+", "", words)
    found = _mentions(words, entities, me)
    return found[0][0] if found and found[0][1] == 0 and found[0][2] == len(words) else None


def _last_named(
    earlier: Sequence[ChatExchange], entities: Mapping[str, Entity], me: str, *, person: bool
) -> str | None:
    """The person (or thing) named last: in the latest question, then its answer, then
    older exchanges; None when none is."""
    for exchange in reversed(earlier):
        for text in (exchange.question, exchange.answer):
            for entity_id, _, _ in _mentions(text, entities, me):
                entity = entities[entity_id]
                is_person = entity.kind == "character"
                if is_person == person and entity.kind in ("character", "object"):
                    return entity_id
    return None


def _mentions(text: str, entities: Mapping[str, Entity], me: str) -> list[tuple[str, int, int]]:
    """The entities ``text`` names (not the character asked), in the order named, with
    where: by full name, or by the last word of a name only one entity ends with ("the
    key" for the brass key)."""
    names: dict[str, str] = {}
    ends: dict[str, list[str]] = {}
    for e in entities.values():
        if e.id == me or e.kind == "group":
            continue
        names[e.name.casefold()] = e.id
        tail = e.name.casefold().rsplit(" ", 1)[-1]
        ends.setdefault(tail, []).append(e.id)
    for tail, ids in ends.items():
        if len(ids) == 1 and tail not in names:
            names[tail] = ids[0]
    if not names:
        return []
    pattern = "|".join(re.escape(n) for n in sorted(names, key=len, reverse=True))
    found = re.finditer(rf"\b(?:{pattern})\b", text, re.IGNORECASE)
    return [(names[m.group(0).casefold()], m.start(), m.end()) for m in found]
