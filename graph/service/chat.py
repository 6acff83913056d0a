"""Talking to a character: its answer to a question, from only its own mind.

Every read goes through the character's :class:`~fabula.memory.acl.CharacterMind`, on its
own Redis user, which can read nothing but its keyspace (its beliefs, nested beliefs and
the episodes it witnessed, the names of the entities it knows of) and the story's branch
tree. So an
answer cannot hold what the character did not witness or was not told, whatever the
question: the story's world, another mind and the planner's plan are out of its reach.

* A question of the question-answerer's forms (:mod:`fabula.memory.answer`: "Where is the
  brass key?", "Where does Mara think the key is?", "What is the colour of the key?") is
  answered from the character's beliefs, as a sentence ("As far as I know, the brass key is
  in the desk drawer."), resting on the belief it read.
* Any other question is answered with what the character recalls of it (its own
  recall, within :data:`CHAT_BUDGET` tokens): the beliefs and episodes it finds.
* The entries of the character's own lore (its keyspace's copy: its card's book and what
  the author made known to it, never the world's other books) that the question activates,
  within the lore's own budget beside the recall's (``FABULA_LORE_BUDGET``), are records of
  the answer too (``lore``), and an offline answer to a free question says them.
* With a model configured for characters (``Roles.voice``), the model says the answer in
  the character's voice, given only that recall and lore, the question-answerer's answer,
  the exemplars of its voice nearest the question (its own keyspace's) and the character's
  own entry in the world pack (name, voice, secrets).

A chat is a conversation: the caller keeps it (the Chat page in its tab, ``fabula chat`` for
its session, an API client in its requests) and gives its last exchanges with the next
question, which is read against them ("And where is it now?" after "Where is the brass
key?"; "Why?" asks the grounds of the last answer: the episode its belief came from). A
chat is outside the story (DESIGN.md: a character's beliefs come from what it took part
in, observed, was told by someone in the story, inferred, or common knowledge; the person
asking is not in the story), so what the person says in it is never a belief of the
character's, is never read by a turn, and reaches no other character: each conversation
is with one character, and only that character's chat reads it.

Nothing of a chat is written: the story, its minds and its usage stay as they were.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from fabula.agents.character.followup import standalone
from fabula.agents.contracts import CHAT_MEMORY, CharacterBrief, ChatExchange, ChatRequest
from fabula.agents.recall.viewer import RecallBudget, character_recall
from fabula.agents.roles import ChatVoiceRole
from fabula.agents.shared.goals import Situation
from fabula.agents.shared.replies import (
    NO_ANSWER,
    asked_lore,
    card_answer,
    company,
    first_person,
    lore_said,
    place_texts,
    reply,
    situated,
    unheld,
)
from fabula.agents.views import author_view
from fabula.errors import InvalidInput
from fabula.graph.service.reading import check_as_of
from fabula.graph.service.recall import MAX_REQUEST_CHARS
from fabula.graph.service.responses.recall import ChatOut, ChatRecord
from fabula.memory.acl import CharacterMind, MindPool
from fabula.memory.answer import UNKNOWN, Question, parse_question, resolve_chain
from fabula.memory.index.general import the_place
from fabula.memory.recall.assemble import Assembly
from fabula.memory.records import Entity, slug
from fabula.memory.store.view import StoryReads
from fabula.memory.tokens import TokenCounter
from fabula.settings import LORE_BUDGET
from fabula.worlds.recall import Lit
from fabula.worlds.voice import VOICE_SHARE, Exemplar, parse_traits, parse_voice

CHAT_BUDGET = 400
"""Tokens of the character's own recall behind one answer: its beliefs about what the
question names and the few episodes that bear on it (a hollow_book recall is ~150)."""

_WHERE_IS = re.compile(r"^Where (?:is|are) (?P<who>[\w' -]+?)(?: now)?\?$", re.IGNORECASE)
_HOW = re.compile(r"\s*\([^()]*\)$")  # a recalled belief's "(participated, turn 2)"
_SHOWN = 3  # beliefs, then episodes, an offline answer from recall quotes at most


@dataclass(frozen=True)
class _Answer:
    """An answer before it is voiced: what is said, how it was found, the records it
    rests on, and what a voice is given (the recall, the plain answer, the lit lore)."""

    me: str
    said: str
    answered_by: Literal["question-answerer", "recall"]
    rests: list[ChatRecord]
    recalled: list[ChatRecord]
    found: Assembly
    plain: str | None
    lore: Sequence[Lit]
    voice: Sequence[Exemplar]  # the exemplars of its voice its recall holds


async def chat(
    store: StoryReads,
    character: str,
    question: str,
    *,
    minds: MindPool,
    counter: TokenCounter,
    voice: ChatVoiceRole | None = None,
    as_of: int | None = None,
    lore_budget: int = LORE_BUDGET,
    conversation: Sequence[ChatExchange] = (),
) -> ChatOut:
    """``character``'s answer to ``question`` on ``store``'s branch (``as_of``: as it stood
    after that turn), from its own mind only (see the module docstring); its own lore
    within ``lore_budget`` tokens, beside its recall's :data:`CHAT_BUDGET`.

    ``conversation`` is the person's conversation with this character so far (oldest
    first; the last :data:`CHAT_MEMORY` exchanges are read): a follow-up ("And where is it
    now?", "What about Mara?", "Why?") is read against it
    (:func:`~fabula.agents.character.followup.standalone`) and a model is given it. It is
    the caller's to keep: nothing of it is written, and it is never a belief.

    Raises :class:`InvalidInput` for an empty or overlong question or an ``as_of`` outside
    the branch, :class:`NotFound` for an unknown story, branch or character (named by id or
    name, in any case); a model's errors as the model client raises them.
    """
    await store.require()
    question = _question(question, store.story)
    as_of = await check_as_of(store, as_of)
    me = await store.resolve(character, "character")
    mind = await minds.mind(store.story, me.id, store.branch)
    entities = await mind.entities(as_of=as_of)
    talked = tuple(conversation)[-CHAT_MEMORY:]
    read = standalone(question, talked, entities, me.id)
    found = await _answer(mind, me, read.question, entities, counter, as_of, lore_budget)
    said: str = _because(found) if read.why else found.said
    answered_by: Literal["question-answerer", "recall", "model"] = found.answered_by
    rests = found.rests
    if voice is not None:
        request = await _voiced(store, me, question, found)
        request = request.model_copy(
            update={
                "reading": read.question if read.question != question else None,
                "conversation": talked,
            }
        )
        said = await voice.answer(request) or said
        answered_by = "model"
        rests = _merged(rests, found.recalled)
    return ChatOut(
        story=store.story,
        branch=store.branch,
        character=me.id,
        name=me.name,
        as_of=as_of,
        question=question,
        reading=read.question if read.question != question else None,
        answer=said,
        answered_by=answered_by,
        records=rests,
    )


async def _answer(
    mind: CharacterMind,
    me: Entity,
    question: str,
    entities: dict[str, Entity],
    counter: TokenCounter,
    as_of: int | None,
    lore_budget: int,
) -> _Answer:
    """The offline answer to ``question`` (a question standing alone) from ``me``'s own
    mind: its beliefs for a question of the question-answerer's forms, else its card's
    example, its traits and lore, or what it recalls."""
    seen = await character_recall(
        mind,
        me.name,
        question,
        as_of=as_of,
        budget=RecallBudget(memory=CHAT_BUDGET, voice=CHAT_BUDGET // VOICE_SHARE, lore=lore_budget),
        counter=counter,
    )
    lore, found = seen.lore.lit, seen.context
    lore_records = [
        ChatRecord(kind="lore", id=f"{x.book}:{x.activated.entry.name}", text=x.text) for x in lore
    ]
    recalled = [*_records(found), *lore_records]
    reading = _reading(question, entities, me.name)
    answered_by: Literal["question-answerer", "recall"]
    beliefs = seen.beliefs
    around = situated(question, company(Situation(me.id, beliefs, entities), None))
    if around is not None:  # "Where are we?", "Are you alone?", "How are you?"
        plain, rests = around, [r for r in recalled if r.kind == "belief"]
        answered_by = "question-answerer"
    elif reading is not None:
        plain, rests = await _from_beliefs(mind, reading, entities, recalled, as_of)
        answered_by = "question-answerer"
    else:
        plain, rests = None, recalled
        answered_by = "recall"
    said = plain
    doc = await mind.voice()
    lit = asked_lore(lore, question)  # what the question asks of its lore, not the turn's
    if said is None or around is not None:  # its card's own example first, as the
        # offline character answers (its "Where am I?" answers "Where are we?")
        examples = [e.text for e in parse_voice(doc)]
        said = card_answer(question, me.name, "you", lit, examples) or said
    if said is None:  # what its own lore the question lit says, or asked of itself
        # ("Who are you?"): its traits and description
        mine = reply(
            question,
            me.name,
            description=me.description,
            lore=lit,
            traits=parse_traits(doc),
            places=place_texts(question, entities),  # a place its own mind knows of
        )
        said = mine if mine != NO_ANSWER else None
    if said is None and unheld(question, [r.text for r in recalled]):
        said = f"{NO_ANSWER}."  # "What are your powers?" of a card that names none
    if said is None:
        said = _from_recall(recalled, me.name)
    return _Answer(me.name, said, answered_by, rests, recalled, found, plain, lore, seen.voice)


_HOW_SAID = {
    "participated": "Because I was there: I did it myself.",
    "observed": "Because I saw it.",
    "told_private": "Because I was told so.",
    "told_public": "Because I was told so.",
    "inferred": "Because I worked it out.",
    "common": "Because everybody knows it.",
}
_HOW_OF = re.compile(r"\((?P<how>[a-z_]+), turn \d+\)")


def _because(found: _Answer) -> str:
    """The grounds of an answer, asked "Why?": the episode its belief came from, in the
    first person ("Because I put the brass key in the desk drawer."), else how it came by
    the belief; that it does not know, when it did not."""
    if found.answered_by != "question-answerer":
        return "That is all I can say of it."
    if found.said.startswith("I don't know"):
        return "I don't know, so I cannot say why."
    episodes = [r.text for r in found.rests if r.kind == "episode"]
    if episodes:
        said = first_person(_sentence(episodes[-1]), found.me)
        if said.startswith(("The ", "A ", "An ")):
            said = said[0].lower() + said[1:]
        return f"Because {said}"
    for r in found.rests:
        if r.kind == "belief" and (m := _HOW_OF.search(r.text)):
            return _HOW_SAID.get(m["how"], "That is what I believe.")
    return "That is what I believe."


def _question(question: str, story: str) -> str:
    """The question on one line; :class:`InvalidInput` when empty or overlong."""
    question = " ".join(question.split())
    if not question:
        raise InvalidInput("a chat needs a question", story=story)
    if len(question) > MAX_REQUEST_CHARS:
        raise InvalidInput(
            f"the question has {len(question)} characters; at most {MAX_REQUEST_CHARS} are read",
            story=story,
        )
    return question


async def _voiced(store: StoryReads, me: Entity, question: str, answer: _Answer) -> ChatRequest:
    """What the voice model is given: the character's brief, what it recalls, the plain
    answer if any, its lore and the exemplars of its voice its recall holds (nearest the
    question as read)."""
    brief = await _brief(store, me)
    exemplars = answer.voice
    return ChatRequest(
        brief=brief,
        question=question,
        known=answer.found.text,
        plain=answer.plain,
        lore=tuple(x.text for x in answer.lore),
        voice=tuple(x.text for x in exemplars),
    )


def _records(found: Assembly) -> list[ChatRecord]:
    """The beliefs and episodes of a recalled context, with their lines."""
    lines = found.text.split("\n")
    return [
        ChatRecord(kind=e.kind, id=e.id, text=lines[e.line].removeprefix("- "))
        for e in found.manifest
        if e.kind in ("belief", "episode")
    ]


def _merged(first: list[ChatRecord], more: list[ChatRecord]) -> list[ChatRecord]:
    seen = {(r.kind, r.id) for r in first}
    return [*first, *(r for r in more if (r.kind, r.id) not in seen)]


def _reading(question: str, entities: dict[str, Entity], me: str) -> Question | None:
    """The question as the question-answerer reads it, its subject named as the story
    names it ("the key" for the brass key when only one thing is called a key), or None
    when it is not one of its forms."""
    text = question if question.endswith("?") else question + "?"
    text = text[0].upper() + re.sub(r"\s+(?:right\s+)?now\?$", "?", text[1:])
    try:
        q = parse_question(text)
    except InvalidInput:
        m = _WHERE_IS.match(text)  # "Where is Mara?", "Where are you?": a person, unnamed "the"
        if m is None:
            return None
        who = m["who"].strip()
        if who.casefold() in ("you", "you now"):
            who = me
        q = Question(kind="where", subject=who)
    wanted = q.subject.strip().casefold().removeprefix("the ")
    if slug(wanted) in entities:
        return q
    named = [e for e in entities.values() if e.name.casefold() == wanted]
    if not named:
        named = [e for e in entities.values() if e.name.casefold().endswith(" " + wanted)]
    if len(named) == 1:
        return q.model_copy(update={"subject": named[0].name})
    return q


async def _from_beliefs(
    mind: CharacterMind,
    q: Question,
    entities: dict[str, Entity],
    recalled: list[ChatRecord],
    as_of: int | None,
) -> tuple[str, list[ChatRecord]]:
    """The question-answerer's answer, said as a sentence, and the records it rests on
    (the belief it read, and the episode the character came by it in, when recalled)."""
    value = await mind.answer(q, as_of=as_of)
    chain = resolve_chain(mind.character, q)
    subject = slug(q.subject)
    attribute = q.attribute if q.kind == "attribute" else "location"
    rests: list[ChatRecord] = []
    if value != UNKNOWN and q.kind != "where_initially":
        view = await mind.beliefs(chain[1:], as_of=as_of)
        belief = view.get(subject, attribute)
        if belief is not None:
            line = next((r.text for r in recalled if r.id == belief.id), None)
            shown = _phrase(q, chain, value, entities, mind.character)
            rests.append(ChatRecord(kind="belief", id=belief.id, text=line or shown))
            rests += [r for r in recalled if r.kind == "episode" and r.id == belief.event]
    return _phrase(q, chain, value, entities, mind.character), rests


def _phrase(
    q: Question, chain: tuple[str, ...], value: str, entities: dict[str, Entity], me: str
) -> str:
    """The answer ``value`` (a name, an attribute's value or ``unknown``) as the asker says it."""

    def named(entity_id: str, fallback: str) -> str:
        if entity_id == me:
            return "I"
        entity = entities.get(entity_id)
        if entity is None:
            return f"the {fallback}"
        return entity.name if entity.kind == "character" else f"the {entity.name}"

    subject = slug(q.subject)
    thing = named(subject, q.subject)
    others = [named(c, c) for c in chain[1:]]
    thinks = "".join(f"{o} thinks " for o in others)
    be = "was" if q.kind == "where_initially" else ("am" if thing == "I" else "is")
    if value == UNKNOWN:
        if q.kind == "attribute":
            what = f"the {q.attribute} of {thing}"
            return f"I don't know what {thinks}{what} is." if others else f"I don't know {what}."
        when = " at the beginning" if q.kind == "where_initially" else ""
        return f"I don't know where {thinks}{thing} {be}{when}."
    if q.kind == "attribute":
        said = f"the {q.attribute} of {thing} is {value}"
    else:
        holder = next((e for e in entities.values() if e.name == value), None)
        if holder is not None and holder.kind == "character":
            place = "with me" if holder.id == me else f"with {holder.name}"
        else:
            place = f"in {the_place(holder.name if holder else value)}"
        said = f"{thing} {be} {place}"
    if q.kind == "where_initially":
        return f"At the beginning, {said}."
    if others:
        return "I think " + "".join(f"{o} believes " for o in others) + said + "."
    return f"As far as I know, {said}."


def _from_recall(recalled: list[ChatRecord], me: str) -> str:
    """An offline answer to a free question: the beliefs and episodes the character
    recalls of it, or that it knows nothing of it, said by ``me`` in the first person."""
    beliefs = [first_person(_HOW.sub("", r.text), me) for r in recalled if r.kind == "belief"]
    episodes = [first_person(_sentence(r.text), me) for r in recalled if r.kind == "episode"]
    beliefs, episodes = beliefs[:_SHOWN], episodes[-_SHOWN:]
    lore = [x for r in recalled if r.kind == "lore" for x in lore_said(r.text, me)][:_SHOWN]
    parts = []
    if beliefs:
        parts.append("As far as I know, " + "; ".join(beliefs) + ".")
    if episodes:
        parts.append("I remember: " + " ".join(episodes))
    if lore:
        parts.append("I know this: " + " ".join(lore))
    return " ".join(parts) or "I know nothing of that."


def _sentence(quote: str) -> str:
    """A quoted span as a sentence of its own (a clause gets its full stop)."""
    quote = quote.strip()
    return quote if quote.endswith((".", "!", "?", '"', "'")) else quote + "."


async def _brief(store: StoryReads, me: Entity) -> CharacterBrief:
    """The character's own entry in its world pack (name, voice, secrets): what a model
    speaking as it is told of who it is, besides its mind."""
    spec = (await author_view(store)).character_spec(me.id)
    return CharacterBrief(
        character=me.id,
        name=me.name,
        secrets=tuple(spec.secrets) if spec else (),
        voice=spec.voice if spec else "",
    )
