"""One recall for every viewer: what memory gives a request, for the writer, a character
or a person asking as either.

A recall is built here and nowhere else: :func:`character_recall` for a character (what
its prompt holds, and what ``fabula recall --as`` it and the studio's Recall page show),
:func:`author_recall` for the author (the writer's context, and ``fabula recall`` without
``--as``). Each caller passes the same parameters — the viewer, the request (the turn at
hand: a question, a plan's text, a character's situation), the turn ``as_of`` and a
:class:`RecallBudget` — so what a person inspects is what the model is given.

A recall holds three parts, each read with the same request, turn and token counter:

- the memory's context (:func:`fabula.memory.recall.context.author_context` for the
  author; a character's own, :meth:`fabula.memory.acl.CharacterMind.recall`, read through
  its own Redis user), within ``budget.memory`` tokens;
- the lore the turn activates (:func:`fabula.worlds.recall.author_lore`, the world's books
  over the branch's turns; :func:`fabula.worlds.recall.own_lore`, a character's own lore
  over the turns it lived), within ``budget.lore`` tokens, with what did not fit;
- the exemplars of a voice nearest the request (:func:`fabula.worlds.voice.nearest`):
  a character's own, or each focal character's for the writer, within ``budget.voice``.

A character's recall also holds what its prompt shows beside those: its beliefs, its
last :data:`MEMORIES` memories, the entities it knows of, a few things it said and its
traits, all read as of the same turn through its own connection.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from fabula.logs import get_logger
from fabula.memory.acl import CharacterMind
from fabula.memory.index.vectors import Embedder
from fabula.memory.projections import BeliefView, WorldView
from fabula.memory.recall.assemble import Assembly
from fabula.memory.recall.context import author_context, own_words
from fabula.memory.recall.plan import Purpose, RecallPlan
from fabula.memory.records import Development, Entity, Hypothesis, Memory
from fabula.memory.store.view import StoryReads
from fabula.memory.tokens import TokenCounter, default_counter
from fabula.settings import LORE_BUDGET
from fabula.worlds.cardtext import Trait
from fabula.worlds.recall import Recalled, author_lore, own_lore
from fabula.worlds.voice import (
    VOICE_EXEMPLARS,
    VOICE_SHARE,
    Exemplar,
    nearest,
    parse_traits,
    parse_voice,
)

MEMORIES = 20  # a character's last first-person memories its recall holds
VOICE_LINES = 3  # the things it said last, shown as said (and not again as exemplars)
VOICE_SCAN = 12  # its last utterances looked through for exemplars of its voice
CHARACTER_MEMORY = 300  # tokens of a character's own context in its prompt
CHARACTER_VOICE = 150  # tokens of the exemplars of its voice in its prompt

log = get_logger(__name__)


@dataclass(frozen=True)
class RecallBudget:
    """The tokens a recall may fill: ``memory`` for the memory's context, ``voice`` for the
    exemplars of a voice, ``lore`` for the lore (each its own, beside the others)."""

    memory: int
    voice: int
    lore: int = LORE_BUDGET

    @classmethod
    def within(cls, total: int, *, lore: int = LORE_BUDGET) -> RecallBudget:
        """``total`` tokens shared as a person's recall shares them: an eighth
        (:data:`~fabula.worlds.voice.VOICE_SHARE`) for the voice, the rest for the memory."""
        voice = total // VOICE_SHARE
        return cls(memory=max(1, total - voice), voice=voice, lore=lore)

    @classmethod
    def character(cls, *, lore: int = LORE_BUDGET) -> RecallBudget:
        """A character's prompt's: :data:`CHARACTER_MEMORY` and :data:`CHARACTER_VOICE`."""
        return cls(memory=CHARACTER_MEMORY, voice=CHARACTER_VOICE, lore=lore)


@dataclass(frozen=True)
class CharacterRecall:
    """What a character recalls for ``request`` by turn ``as_of`` (None: the head), read
    through its own Redis user only (see the module docstring)."""

    character: str
    name: str
    request: str
    as_of: int | None
    budget: RecallBudget
    beliefs: BeliefView
    memories: list[Memory]
    entities: dict[str, Entity]
    said: list[str]  # the last things it said, oldest first
    context: Assembly  # its own context for the request
    lore: Recalled
    voice: list[Exemplar]
    traits: tuple[Trait, ...]

    def episode_lines(self) -> list[tuple[str | None, str]]:
        """The episodes of its context that are not among its :attr:`memories`, each with
        the date or turn heading it falls under (None: the same as the one before)."""
        skip = {m.event for m in self.memories}
        lines = self.context.text.split("\n")
        out: list[tuple[str | None, str]] = []
        heading = None
        for entry in self.context.manifest:
            if entry.kind == "turn":
                heading = lines[entry.line]
            elif entry.kind == "episode" and entry.id not in skip:
                out.append((heading, lines[entry.line].strip().removeprefix("- ")))
                heading = None
        return out


def situation(
    name: str,
    me: str,
    goals: Sequence[str],
    beliefs: BeliefView,
    entities: Mapping[str, Entity],
    memories: Sequence[Memory] = (),
) -> str:
    """A character's situation as it sees it, the request its prompt recalls for: its
    ``name`` and ``goals``, what it just lived, where it believes it is and who it
    believes is with it."""
    here = beliefs.where(me)
    parts = [name, *goals, *(m.quote for m in memories)]
    if here is not None and here in entities:
        parts.append(entities[here].name)
        parts += [
            e.name
            for c, e in entities.items()
            if e.kind == "character" and c != me and beliefs.where(c) == here
        ]
    return "\n".join(parts)


async def character_recall(
    mind: CharacterMind,
    name: str,
    request: str | None,
    *,
    as_of: int | None,
    budget: RecallBudget,
    counter: TokenCounter | None = None,
    goals: Sequence[str] = (),
) -> CharacterRecall:
    """The recall of ``mind``'s character (called ``name``) for ``request`` by turn
    ``as_of``: everything read through its own connection. ``request`` None: its
    :func:`situation` (with ``goals``), what its prompt for the next turn recalls for.
    ``counter`` (default :func:`~fabula.memory.tokens.default_counter`) counts every
    part's tokens."""
    counter = counter or default_counter()
    beliefs = await mind.beliefs(as_of=as_of)
    memories = await mind.memories(last=MEMORIES, as_of=as_of)
    entities = await mind.entities(as_of=as_of)
    if request is None:
        request = situation(name, mind.character, goals, beliefs, entities, memories)
    said = await mind.own_words(VOICE_LINES, as_of=as_of)
    lore = await own_lore(
        mind, name, request, budget=budget.lore, count_tokens=counter.count, as_of=as_of
    )
    document = await mind.voice()
    exemplars = [
        *parse_voice(document),
        *(Exemplar(w, "said") for w in await mind.own_words(VOICE_SCAN, as_of=as_of)),
    ]
    voice = nearest(
        exemplars,
        request,
        k=VOICE_EXEMPLARS,
        budget=budget.voice,
        count_tokens=counter.count,
        skip=said,
    )
    context = await mind.recall(request, budget=budget.memory, counter=counter, as_of=as_of)
    return CharacterRecall(
        character=mind.character,
        name=name,
        request=request,
        as_of=as_of,
        budget=budget,
        beliefs=beliefs,
        memories=memories,
        entities=entities,
        said=said,
        context=context,
        lore=lore,
        voice=voice,
        traits=parse_traits(document),
    )


@dataclass(frozen=True)
class AuthorViews:
    """The author's views a caller already holds (the writer's, projected for its turn),
    used as given instead of projected again; none given: projected ``as_of``."""

    entities: Mapping[str, Entity] | None = None
    world: WorldView | None = None
    beliefs: Mapping[str, BeliefView] | None = None
    developments: Mapping[str, Development] | None = None
    hypotheses: Mapping[str, Hypothesis] | None = None
    names: Mapping[str, str] = field(default_factory=dict)  # a focal character's name by id


@dataclass(frozen=True)
class AuthorRecall:
    """What the author recalls for ``request`` by turn ``as_of``: the memory's context
    (with the sections the caller framed it with, the lore's and the voices' among them),
    the lore the turn activates and each focal character's voice."""

    request: str
    as_of: int | None
    budget: RecallBudget
    context: Assembly
    lore: Recalled
    voices: dict[str, list[Exemplar]]


async def author_recall(
    store: StoryReads,
    request: str,
    *,
    as_of: int | None,
    budget: RecallBudget,
    counter: TokenCounter | None = None,
    embedder: Embedder | None = None,
    purpose: Purpose = "answer",
    focus: Sequence[str] = (),
    focal: Sequence[str] = (),
    plan: RecallPlan | None = None,
    views: AuthorViews | None = None,
    preface: Iterable[tuple[str, str]] = (),
    trailer: Iterable[tuple[str, str]] = (),
    framed: bool = False,
) -> AuthorRecall:
    """The author's recall for ``request`` by turn ``as_of`` (see the module docstring):
    the world's lore activated for the turn after it (each entry left out logged), the
    voices of the ``focal`` characters (an equal share of ``budget.voice`` each, read by the
    author), and the memory's context within ``budget.memory`` for ``purpose``, about
    ``focus`` (with ``plan``, a model planner's, and the ``views`` the caller holds;
    ``embedder``: dense retrieval).

    ``framed`` (the writer's context): the ``Lore`` and ``How they speak`` sections are
    rendered into the context after ``preface``, the lore's tokens beside the memory's;
    otherwise they are only returned beside it (a person's recall shows them apart)."""
    counter = counter or default_counter()
    views = views or AuthorViews()
    lore = await author_lore(
        store, request, budget=budget.lore, count_tokens=counter.count, as_of=as_of
    )
    for x in lore.left_out:
        log.info(
            "lore_left_out",
            turn=as_of,
            book=x.book,
            entry=x.activated.entry.name,
            tokens=x.activated.tokens,
            budget=lore.budget,
        )
    voices = await focal_voices(store, focal, request, budget.voice, counter, as_of)
    sections: list[tuple[str, str]] = [*preface]
    beside = 0
    if framed:
        lore_section, beside = _lore_section(lore, counter)
        sections += lore_section + _voice_section(voices, views.names)
    context = await author_context(
        store,
        request,
        plan=plan,
        budget=budget.memory + beside,
        counter=counter,
        as_of=as_of,
        purpose=purpose,
        focus=focus,
        entities=views.entities,
        world=views.world,
        beliefs=views.beliefs,
        developments=views.developments,
        hypotheses=views.hypotheses,
        preface=sections,
        embedder=embedder,
        trailer=trailer,
    )
    return AuthorRecall(
        request=request, as_of=as_of, budget=budget, context=context, lore=lore, voices=voices
    )


async def focal_voices(
    store: StoryReads,
    focal: Sequence[str],
    request: str,
    budget: int,
    counter: TokenCounter,
    as_of: int | None,
) -> dict[str, list[Exemplar]]:
    """For each ``focal`` character, the exemplars of its voice (its keyspace's voice
    document and its last :data:`VOICE_SCAN` utterances by turn ``as_of``, read by the
    author) nearest ``request``, in an equal share of ``budget`` tokens; a character with
    none is left out."""
    if not focal or budget < 1:
        return {}
    share = budget // len(focal)
    found: dict[str, list[Exemplar]] = {}
    for c in focal:
        document = await store.voice(c)
        said = await own_words(store.client, store.story, store.branch, c, VOICE_SCAN, as_of=as_of)
        exemplars = [*parse_voice(document), *(Exemplar(w, "said") for w in said)]
        chosen = nearest(
            exemplars, request, k=VOICE_EXEMPLARS, budget=share, count_tokens=counter.count
        )
        if chosen:
            found[c] = chosen
    return found


def bullet(text: str) -> str:
    """``text`` as one list item: ``- `` before it, its further lines indented."""
    return "- " + "\n  ".join(line.strip() for line in text.strip().splitlines())


def _lore_section(lore: Recalled, counter: TokenCounter) -> tuple[list[tuple[str, str]], int]:
    """The ``Lore`` section (none when nothing is lit), and the tokens it costs as rendered,
    which the memory's budget gets beside its own."""
    if not lore.lit:
        return [], 0
    body = "\n".join(f"- {x.text}" for x in lore.lit)
    cost = sum(counter.count(line) + 1 for line in body.split("\n")) + counter.count("## Lore") + 2
    return [("Lore", body)], cost


def _voice_section(
    voices: Mapping[str, list[Exemplar]], names: Mapping[str, str]
) -> list[tuple[str, str]]:
    """The ``How they speak`` section: each focal character's name and exemplars."""
    blocks = [
        "\n".join([f"{names.get(c, c)}:", *(bullet(ex.text) for ex in chosen)])
        for c, chosen in voices.items()
    ]
    return [("How they speak", "\n".join(blocks))] if blocks else []
