"""Questions answered from the views of memory: W for the author, B[chain] for a character.

Question forms (``A``, ``B`` names; ``O`` an object)::

    Where is the O?   Where is the O really?           W (or the asker's own belief)
    Where was the O at the beginning?                   the first state in the history
    Where will A look for the O?                        B[A]
    Where does A (really) think the O is?               B[A]
    Where does A think that B searches for the O?       B[A→B]
    Where does A think B thinks … the O is?             B[A→B→…]
    What is the <attribute> of the O?                   W, or the asker's B
    What does A think the <attribute> of the O is?      B[A]

Asked by the author (``asker=None``) a question reads W, or the nested view it names; asked
as a character, the character's own chain is put in front (Leo asking "Where is the key?"
reads B[Leo]; Leo asking "Where does Mara think the key is?" reads B[Leo→Mara]). The answer
is the value's name, or ``"unknown"`` when the view holds nothing for the slot: the asker
cannot know. With ``shared=True`` every question reads W whoever asks: the conventional
single shared memory, kept as the benchmarks' baseline.
"""

from __future__ import annotations

import json
import re
from typing import Literal

from pydantic import BaseModel, ConfigDict

from fabula.errors import InvalidInput, NotFound
from fabula.memory import keys
from fabula.memory.projections import chain_history, project_beliefs, project_world
from fabula.memory.records import Belief, State, slug
from fabula.memory.store.view import StoryReads

UNKNOWN = "unknown"
QuestionKind = Literal["where", "where_initially", "attribute"]

_NAME = r"[A-Z][\w'-]*"
_NP = r"[^?]+?"
_THINK = r"(?:really )?(?:think|believe) (?:that )?"
_SEEK = r"(?:look|search)"
_WHERE_REALLY = re.compile(rf"^Where is the (?P<obj>{_NP})(?: really)?\?$")
_WHERE_FIRST = re.compile(rf"^Where was the (?P<obj>{_NP}) at the (?:beginning|start)\?$")
_WILL_LOOK = re.compile(rf"^Where will (?P<who>{_NAME}) {_SEEK} for the (?P<obj>{_NP})\?$")
_DOES_SEARCH = re.compile(rf"^Where does (?P<who>{_NAME}) {_SEEK} for the (?P<obj>{_NP})\?$")
_WHERE_THINK = re.compile(rf"^Where does (?P<who>{_NAME}) {_THINK}(?P<rest>.+)\?$")
_WHAT_THINK = re.compile(rf"^What does (?P<who>{_NAME}) {_THINK}(?P<rest>.+)\?$")
_WHAT_IS = re.compile(rf"^What is the (?P<attr>{_NP}) of the (?P<obj>{_NP})\?$")
_NESTED = re.compile(rf"^(?P<who>{_NAME}) (?:thinks|believes) (?:that )?(?P<rest>.+)$")
_SEARCHES = re.compile(rf"^(?P<who>{_NAME}) (?:searches|looks|will {_SEEK}) for the (?P<obj>.+)$")
_OBJ_IS = re.compile(r"^the (?P<obj>.+?) is$")
_ATTR_IS = re.compile(r"^the (?P<attr>.+?) of the (?P<obj>.+?) is$")


class Question(BaseModel):
    """A parsed question: the slot it asks about and the chain of minds it names."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: QuestionKind
    subject: str
    attribute: str = "location"
    chain: tuple[str, ...] = ()  # names as written: ("Avery", "Ella") = Avery thinks Ella …


def parse_question(text: str) -> Question:
    """Parse one of the question forms of the module docstring; InvalidInput otherwise."""
    q = " ".join(text.strip().split())
    if m := _WHERE_REALLY.match(q):
        return Question(kind="where", subject=m["obj"])
    if m := _WHERE_FIRST.match(q):
        return Question(kind="where_initially", subject=m["obj"])
    if m := (_WILL_LOOK.match(q) or _DOES_SEARCH.match(q)):
        return Question(kind="where", subject=m["obj"], chain=(m["who"],))
    if m := (_WHERE_THINK.match(q) or _WHAT_THINK.match(q)):
        parsed = _nested(m["rest"], (m["who"],))
        if parsed is not None:
            return parsed
    if m := _WHAT_IS.match(q):
        return Question(kind="attribute", subject=m["obj"], attribute=m["attr"])
    raise InvalidInput(f"not a question this answerer knows: {text!r}", question=text)


def _nested(rest: str, chain: tuple[str, ...]) -> Question | None:
    while m := _NESTED.match(rest):
        chain = (*chain, m["who"])
        rest = m["rest"]
    if m := _SEARCHES.match(rest):
        return Question(kind="where", subject=m["obj"], chain=(*chain, m["who"]))
    if m := _ATTR_IS.match(rest):
        return Question(kind="attribute", subject=m["obj"], attribute=m["attr"], chain=chain)
    if m := _OBJ_IS.match(rest):
        return Question(kind="where", subject=m["obj"], chain=chain)
    return None


def resolve_chain(asker: str | None, question: Question) -> tuple[str, ...]:
    """The holder chain a question reads: the asker first, adjacent repeats collapsed."""
    names = ([asker] if asker else []) + list(question.chain)
    chain: list[str] = []
    for name in names:
        sid = slug(name)
        if not chain or chain[-1] != sid:
            chain.append(sid)
    return tuple(chain)


async def answer(
    store: StoryReads,
    question: str | Question,
    *,
    asker: str | None = None,
    as_of: int | None = None,
    shared: bool = False,
) -> str:
    """The answer to ``question`` from the asker's view, or ``"unknown"``.

    ``asker`` is a character's name or id (None: the author); ``as_of`` replays memory as of
    that turn. Raises :class:`InvalidInput` for a question it cannot parse and
    :class:`NotFound` for an asker the story does not have.
    """
    q = parse_question(question) if isinstance(question, str) else question
    if asker is not None:
        await store.require_character(slug(asker))
    chain = () if shared else resolve_chain(asker, q)
    subject = slug(q.subject)
    attribute = q.attribute if q.kind == "attribute" else "location"
    if q.kind == "where_initially":
        value = await _first_value(store, chain, subject, attribute, as_of)
    elif not chain:
        value = (await project_world(store, as_of)).value(subject, attribute)
    else:
        try:
            view = await project_beliefs(store, chain, as_of)
        except NotFound:
            return UNKNOWN  # a chain through someone who is not a character of the story
        value = view.value(subject, attribute)
    if value is None:
        return UNKNOWN
    if attribute == "location":
        return await _display_name(store, value)
    return value


async def _display_name(store: StoryReads, entity_id: str) -> str:
    if store.viewer is not None:  # a character's store: the name as it knows it, if it does
        known = (await store.entities()).get(entity_id)
        return known.name if known is not None and known.name else entity_id
    raw = await store.client.hget(keys.entities(store.story), entity_id)
    if raw is None:
        return entity_id
    name = json.loads(raw).get("name")
    return name if isinstance(name, str) and name else entity_id


async def _first_value(
    store: StoryReads, chain: tuple[str, ...], subject: str, attribute: str, as_of: int | None
) -> str | None:
    """The slot's earliest value in the history of W (or of the chain's beliefs).

    Within a turn, records are ordered by their number, which follows the story's order.
    """
    slot = f"{subject}|{attribute}"
    sources: list[tuple[str, int | None]] = [
        (a.branch, a.through) for a in reversed(await store.ancestry())
    ]
    sources.append((store.branch, None))
    for branch, through in sources:
        bounds = [t for t in (through, as_of) if t is not None]
        limit = min(bounds) if bounds else None
        if chain:
            key = keys.belief_records(store.story, branch, chain[0])
            current = keys.beliefs_current(store.story, branch, ">".join(chain))
        else:
            key = keys.world_records(store.story, branch)
            current = keys.world_current(store.story, branch)
        # the slot's closed records, and its current one (kept only in its current hash)
        raw = await store.client.hgetall(key)
        now = await store.client.hget(current, slot)
        records: list[State | Belief] = []
        for value in [*raw.values(), *([now] if now is not None else [])]:
            record: State | Belief = (
                Belief.model_validate_json(value) if chain else State.model_validate_json(value)
            )
            if record.slot != slot or (chain and getattr(record, "holder", ()) != chain):
                continue
            if limit is not None and record.valid_from > limit:
                continue
            records.append(record)
        if records:
            first = min(records, key=lambda r: (r.valid_from, int(r.id.partition(".")[2])))
            if not chain or len(chain) == 1:
                return first.value if first.polarity else None
            break
    if chain and len(chain) > 1:
        # a nested chain: its own records and what its groups gave it (the shared log holds
        # the parent's up to the fork), on this branch, up to as_of
        own = [b for b in records if isinstance(b, Belief)]
        held = [
            b
            for b in await chain_history(store, chain, slot, own)
            if as_of is None or b.valid_from <= as_of
        ]
        if held:
            return held[0].value if held[0].polarity else None
    return None
