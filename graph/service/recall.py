"""Recall: what memory gives a request within a budget — the writer's context, or a
character's own, read as its own Redis user — with the lore that fires for it and a
character's voice exemplars, beliefs and memories: the recall of
:mod:`fabula.agents.recall.viewer`, shaped for the service
(:class:`~fabula.graph.service.reader.Reader` reads through it).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable

from fabula.agents.recall.viewer import (
    CharacterRecall,
    RecallBudget,
    author_recall,
    character_recall,
)
from fabula.errors import ConfigError, InvalidInput
from fabula.graph.service.bounds import MAX_RECALL_BUDGET as MAX_RECALL_BUDGET
from fabula.graph.service.bounds import MAX_REQUEST_CHARS as MAX_REQUEST_CHARS
from fabula.graph.service.bounds import RECALL_BUDGET as RECALL_BUDGET
from fabula.graph.service.reading import check_as_of
from fabula.graph.service.responses.reading import (
    LoreBookOut,
    LoreEntryOut,
    LoreFired,
    LoreOut,
    WorldInfoOut,
    WorldInfoSetting,
)
from fabula.graph.service.responses.recall import (
    RecallBelief,
    RecallLine,
    RecallLore,
    RecallMemory,
    RecallOut,
    RecallPlanOut,
    RecallVoice,
)
from fabula.memory.acl import MindPool
from fabula.memory.index.vectors import Embedder
from fabula.memory.recall.assemble import Assembly, ManifestEntry
from fabula.memory.recall.plan import RecallPlan
from fabula.memory.store.view import StoryReads
from fabula.memory.tokens import TokenCounter, default_counter
from fabula.settings import LORE_BUDGET
from fabula.worlds.lore import (
    KEPT_SETTINGS,
    SETTINGS,
    LoreBook,
    WorldInfoSettings,
    audience,
    budget_from,
    lore_budget,
    split_decorators,
)
from fabula.worlds.pack import WorldPack
from fabula.worlds.recall import (
    Lit,
    Recalled,
    author_lore,
    own_lore,
    recall_chat,
    world_books,
)
from fabula.worlds.voice import Exemplar


async def recall(
    store: StoryReads,
    request: str,
    *,
    budget: int | None,
    counter: TokenCounter,
    minds: MindPool,
    character: str | None = None,
    as_of: int | None = None,
    embedder: Embedder | None = None,
    lore_budget: int = LORE_BUDGET,
) -> RecallOut:
    """What memory gives ``request`` (a question, what a turn is about) by turn ``as_of``
    within ``budget`` tokens (None: :data:`RECALL_BUDGET` for the author, a character's
    prompt's own, :meth:`RecallBudget.character`, for a character):
    the recall :mod:`fabula.agents.recall.viewer` builds — the one the writer's context and
    each character's prompt are built from — for the author, or with ``character`` (an id
    or name) for that character, read through its own Redis user, so it holds nothing the
    character did not live. The author's context fills ``budget`` tokens; a character's
    shares them with its voice (:meth:`RecallBudget.within`) and comes with its beliefs and
    last memories, as its prompt lists them. Beside either is the lore the turn activates
    with the request as the turn at hand (the world's books over the story's turns for the
    author; the character's own lore over the turns it lived, with its character filters)
    within ``lore_budget`` tokens, with the entries that did not fit. Raises
    :class:`InvalidInput` for an empty or overlong request, a budget out of range or an
    ``as_of`` outside the branch, :class:`NotFound` for an unknown story or character."""
    await store.require()
    request = _request(request, RECALL_BUDGET if budget is None else budget, store.story)
    as_of = await check_as_of(store, as_of)
    if character is not None and not character.strip():  # not the writer's whole context
        raise InvalidInput("character: an id or a name, not an empty one", story=store.story)
    if character is None:
        total = RECALL_BUDGET if budget is None else budget
        found = await author_recall(
            store,
            request,
            as_of=as_of,
            budget=RecallBudget(memory=total, voice=0, lore=lore_budget),
            counter=counter,
            embedder=embedder,
        )
        return _out(store, request, as_of, total, found.context, found.lore)
    who = await store.resolve(character, "character")
    mind = await minds.mind(store.story, who.id, store.branch)
    shares = (
        RecallBudget.character(lore=lore_budget)  # its prompt's very budget
        if budget is None
        else RecallBudget.within(budget, lore=lore_budget)
    )
    seen = await character_recall(
        mind, who.name, request, as_of=as_of, budget=shares, counter=counter
    )
    total = shares.memory + shares.voice
    return _out(store, request, as_of, total, seen.context, seen.lore, seen, counter)


def _out(
    store: StoryReads,
    request: str,
    as_of: int | None,
    budget: int,
    found: Assembly,
    lore: Recalled,
    seen: CharacterRecall | None = None,
    counter: TokenCounter | None = None,
) -> RecallOut:
    """The recall as the service shows it: with ``seen``, a character's, with its beliefs,
    its memories and its voice (each exemplar's tokens counted by ``counter``)."""
    count = (counter or default_counter()).count
    return RecallOut(
        story=store.story,
        branch=store.branch,
        request=request,
        holder=None if seen is None else seen.character,
        as_of=as_of,
        budget=budget,
        tokens=found.tokens,
        text=found.text,
        lines=[_line(m) for m in found.manifest],
        plan=None if found.plan is None else _plan(found.plan),
        lore=_lore(lore.lit),
        voice=[] if seen is None else _voice(seen, count),
        lore_budget=lore.budget,
        lore_left_out=_lore(lore.left_out),
        beliefs=[] if seen is None else _beliefs(seen),
        memories=[]
        if seen is None
        else [RecallMemory(turn=m.turn, event=m.event, quote=m.quote) for m in seen.memories],
    )


def _voice(seen: CharacterRecall, count: Callable[[str], int]) -> list[RecallVoice]:
    """A character's voice as its prompt shows it: the last things it said (``said``; its
    prompt's "Things you said"), then the exemplars nearest the request (never those)."""
    said = [Exemplar(w, "said") for w in seen.said]
    return [
        RecallVoice(text=x.text, source=x.source, tokens=count(x.text))
        for x in [*said, *seen.voice]
    ]


def _beliefs(seen: CharacterRecall) -> list[RecallBelief]:
    """A character's beliefs, in the order its prompt lists them (by subject, attribute)."""
    return [
        RecallBelief(
            subject=b.subject,
            attribute=b.attribute,
            value=b.value,
            polarity=b.polarity,
            mode=b.mode,
            speaker=b.speaker,
            turn=b.valid_from,
        )
        for b in sorted(seen.beliefs.beliefs.values(), key=lambda b: (b.subject, b.attribute))
    ]


def _request(request: str, budget: int, story: str) -> str:
    """The request stripped; :class:`InvalidInput` when it is empty or overlong, or the
    budget out of range."""
    request = request.strip()
    if not request:
        raise InvalidInput(
            "recall needs a request: a question, or what a turn is about", story=story
        )
    if len(request) > MAX_REQUEST_CHARS:
        raise InvalidInput(
            f"the request has {len(request)} characters; at most {MAX_REQUEST_CHARS} are read",
            story=story,
        )
    if not 1 <= budget <= MAX_RECALL_BUDGET:
        raise InvalidInput(
            f"the budget is {budget} tokens; it must be 1 to {MAX_RECALL_BUDGET}", story=story
        )
    return request


async def lore(
    store: StoryReads,
    turn: int | None = None,
    *,
    budget: int = LORE_BUDGET,
    counter: TokenCounter | None = None,
    minds: MindPool | None = None,
) -> LoreOut:
    """The story's lore by book, each entry with who knows it (the author a world book's,
    a character what its keyspace copy holds: see :func:`fabula.worlds.lore.audience`); with
    ``turn``, the entries the turns up to it activate: for the author, the world's books
    over the branch's turns (the writer's scan, :func:`fabula.worlds.recall.author_lore`);
    for each character, its own lore over the turns as it lived them, read through its
    own Redis user (``minds``; its prompt's scan, :func:`fabula.worlds.recall.own_lore`);
    each within the lore's own ``budget`` tokens (counted by ``counter``, as a recall counts
    them; None: in words), and those that activated but did not fit (``left_out``, with
    their size). Raises :class:`NotFound` for an unknown story and :class:`InvalidInput`
    for a turn outside the branch."""
    await store.require()
    head = await store.head()
    document = await store.pack_document()
    pack = None if document is None else WorldPack.model_validate_json(document)
    cast = [c.name for c in pack.characters] if pack else []
    books = [_book_out(book, cast) for book in (pack.lore.books if pack else ())]
    activated: list[LoreFired] = []
    left_out: list[LoreFired] = []
    if turn is not None:
        checked = await check_as_of(store, turn)
        if checked is None or checked < 1:
            raise InvalidInput(
                f"turn {turn}: lore is activated by a turn's text, 1 to {head}", story=store.story
            )
        count = None if counter is None else counter.count
        # the turns of this branch up to it, scanned as SillyTavern scans a chat: depth,
        # minimum activations, character filters, and the timed effects the turns before
        # leave (computed from them, so a rewind or a fork has its own)
        said = [t.text for t in await store.turn_texts(1, checked)]
        found = recall_chat(await world_books(store), said, budget=budget, count_tokens=count)
        scans: list[tuple[str | None, Recalled]] = [(None, found)]
        if cast and minds is None:
            raise ConfigError("the lore of a turn needs the characters' minds (Fabula.read)")
        for name in cast:
            if minds is None:
                break
            who = await store.resolve(name, "character")
            mind = await minds.mind(store.story, who.id, store.branch)
            own = await own_lore(mind, name, None, budget=budget, count_tokens=count, as_of=checked)
            scans.append((name, own))
        for holder, held in scans:
            activated += [_fired(holder, x, held.budget, True) for x in held.lit]
            left_out += [_fired(holder, x, held.budget, False) for x in held.left_out]
    settings = pack.lore.world_info if pack else None
    return LoreOut(
        story=store.story,
        branch=store.branch,
        head=head,
        books=books,
        turn=turn,
        activated=activated,
        left_out=left_out,
        lore_budget=budget if settings is None else lore_budget(settings, budget),
        world_info=None if settings is None else world_info_out(store.story, settings, budget),
    )


async def world_info(store: StoryReads) -> WorldInfoSettings:
    """The story's World Info settings (kept in its pack: imported from a SillyTavern
    ``settings.json``, or set since). Raises :class:`NotFound` for an unknown story and
    :class:`InvalidInput` for one with no world pack."""
    await store.require()
    document = await store.pack_document()
    if document is None:
        raise InvalidInput(
            f"story {store.story!r} has no world pack, so no World Info settings",
            story=store.story,
        )
    return WorldPack.model_validate_json(document).lore.world_info


def world_info_out(story: str, settings: WorldInfoSettings, default: int) -> WorldInfoOut:
    """The story's World Info ``settings`` as they are shown (the studio's Lore page, the
    API, ``fabula lore settings``): each of :data:`~fabula.worlds.lore.SETTINGS` with
    SillyTavern's name, its value and whether it is applied, and the lore budget they give
    (``default``: ``FABULA_LORE_BUDGET``, where no context is set)."""
    return WorldInfoOut(
        story=story,
        settings=[
            WorldInfoSetting(
                name=name,
                sillytavern=st_name,
                value=getattr(settings, name),
                applied=name not in KEPT_SETTINGS,
            )
            for name, st_name in SETTINGS.items()
        ],
        lore_budget=lore_budget(settings, default),
        budget_from=budget_from(settings, default),
    )


def _book_out(book: LoreBook, cast: list[str]) -> LoreBookOut:
    """A lorebook as the author reads it: each entry with its keys, flags and who knows it."""
    entries = []
    for i, entry in enumerate(book.entries):
        who = audience(book, entry, cast)
        entries.append(
            LoreEntryOut(
                index=i,
                name=entry.name,
                keys=list(entry.keys),
                secondary_keys=list(entry.secondary_keys) if entry.selective else [],
                constant=entry.constant,
                enabled=entry.enabled,
                use_regex=entry.use_regex,
                author=book.owner is None,
                known_to=sorted(who),
                text=split_decorators(entry.content)[1],
            )
        )
    return LoreBookOut(name=book.name, owner=book.owner, format=book.format, entries=entries)


def _fired(holder: str | None, x: Lit, budget: int, fits: bool) -> LoreFired:
    return LoreFired(
        holder=holder,
        book=x.book,
        name=x.activated.entry.name,
        fired=x.activated.fired,
        key=x.activated.key,
        text=x.text,
        tokens=x.activated.tokens,
        budget=budget,
        fits=fits,
    )


async def world_lore(
    store: StoryReads, request: str, *, budget: int, counter: TokenCounter, as_of: int | None
) -> Recalled:
    """The world's lorebooks' entries (the author's: no character's own book) activated for
    the turn after ``as_of`` with ``request`` as the turn at hand, within ``budget`` tokens
    and each book's own ``token_budget``, and those that did not fit: the writer's very
    scan (:func:`fabula.worlds.recall.author_lore`)."""
    return await author_lore(store, request, budget=budget, count_tokens=counter.count, as_of=as_of)


def _lore(lit: list[Lit]) -> list[RecallLore]:
    return [
        RecallLore(
            book=x.book,
            name=x.activated.entry.name,
            fired=x.activated.fired,
            key=x.activated.key,
            step=x.activated.step,
            tokens=x.activated.tokens,
            text=x.text,
        )
        for x in lit
    ]


def _plan(plan: RecallPlan) -> RecallPlanOut:
    def iso(day: int | None) -> str | None:
        return None if day is None else dt.date.fromordinal(day).isoformat()

    return RecallPlanOut(
        entities=list(plan.entities),
        implied=list(plan.implied),
        characters=list(plan.characters),
        terms=list(plan.terms),
        attributes=list(plan.attributes),
        developments=list(plan.developments),
        first_date=iso(plan.first_day),
        last_date=iso(plan.last_day),
        order=plan.order,
        asks_when=plan.asks_when,
    )


def _line(entry: ManifestEntry) -> RecallLine:
    return RecallLine(
        line=entry.line,
        section=entry.section,
        kind=entry.kind,
        id=entry.id,
        span=entry.span,
        members=list(entry.members),
    )
