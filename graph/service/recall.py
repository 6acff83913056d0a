"""Recall: what memory gives a request within a budget — the writer's context, or a
character's own, read as its own Redis user — with the lore that fires for it and a
character's voice exemplars (:class:`~fabula.graph.service.reader.Reader` reads through it).
"""

from __future__ import annotations

import datetime as dt

from fabula.errors import ConfigError, InvalidInput
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
    RecallLine,
    RecallLore,
    RecallOut,
    RecallPlanOut,
    RecallVoice,
)
from fabula.memory.acl import CharacterMind, MindPool
from fabula.memory.index.vectors import Embedder
from fabula.memory.recall.assemble import Assembly, ManifestEntry
from fabula.memory.recall.context import author_context
from fabula.memory.recall.plan import RecallPlan
from fabula.memory.store import StoryStore
from fabula.memory.tokens import TokenCounter
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
from fabula.worlds.voice import VOICE_SHARE, Exemplar, nearest, parse_voice

RECALL_BUDGET = 1000  # tokens, when a recall names no budget
MAX_RECALL_BUDGET = 100_000  # tokens: more than any model's context a recall is meant for
MAX_REQUEST_CHARS = 4_000
VOICE_SCAN = 12  # a character's last utterances looked through for exemplars of its voice


async def recall(
    store: StoryStore,
    request: str,
    *,
    budget: int,
    counter: TokenCounter,
    minds: MindPool,
    character: str | None = None,
    as_of: int | None = None,
    embedder: Embedder | None = None,
    lore_budget: int = LORE_BUDGET,
) -> RecallOut:
    """What memory gives ``request`` (a question, what a turn is about) within ``budget``
    tokens: the author's context, or with ``character`` (an id or name) that character's
    own, read through its own Redis user, so it holds nothing the character did not live;
    and beside it the lore activated for the turn after ``as_of`` with the request as the
    turn at hand, as the writer's context and the character's own have it (the world's
    books over the story's turns for the author; the character's own lore over the turns
    it lived, with its character filters, for it) within ``lore_budget`` tokens, with the
    entries that did not fit. Raises :class:`InvalidInput` for an empty or overlong request,
    a budget out of range or an ``as_of`` outside the branch, :class:`NotFound` for an
    unknown story or character."""
    await store.require()
    request = _request(request, budget, store.story)
    as_of = await check_as_of(store, as_of)
    holder = None
    voice: list[RecallVoice] = []
    if character is not None and not character.strip():  # not the writer's whole context
        raise InvalidInput("character: an id or a name, not an empty one", story=store.story)
    if character is None:
        lore = await world_lore(store, request, budget=lore_budget, counter=counter, as_of=as_of)
        found: Assembly = await author_context(
            store, request, budget=budget, counter=counter, as_of=as_of, embedder=embedder
        )
    else:
        who = await store.resolve(character, "character")
        holder = who.id
        mind = await minds.mind(store.story, holder, store.branch)
        lore = await own_lore(
            mind, who.name, request, budget=lore_budget, count_tokens=counter.count, as_of=as_of
        )
        voice = await own_voice(
            mind, request, budget=budget // VOICE_SHARE, counter=counter, as_of=as_of
        )
        rest = max(1, budget - sum(x.tokens for x in voice))
        found = await mind.recall(request, budget=rest, counter=counter, as_of=as_of)
    return RecallOut(
        story=store.story,
        branch=store.branch,
        request=request,
        holder=holder,
        as_of=as_of,
        budget=budget,
        tokens=found.tokens,
        text=found.text,
        lines=[_line(m) for m in found.manifest],
        plan=None if found.plan is None else _plan(found.plan),
        lore=_lore(lore.lit),
        voice=voice,
        lore_budget=lore.budget,
        lore_left_out=_lore(lore.left_out),
    )


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


async def own_voice(
    mind: CharacterMind,
    request: str,
    *,
    budget: int,
    counter: TokenCounter,
    as_of: int | None = None,
) -> list[RecallVoice]:
    """The few exemplars of the character's voice (its card's dialogues and role lines,
    what it said in the story by turn ``as_of``: read through its own connection) nearest
    ``request``, within ``budget`` tokens (see :mod:`fabula.worlds.voice`)."""
    exemplars = [
        *parse_voice(await mind.voice()),
        *(Exemplar(w, "said") for w in await mind.own_words(VOICE_SCAN, as_of=as_of)),
    ]
    chosen = nearest(exemplars, request, budget=budget, count_tokens=counter.count)
    return [RecallVoice(text=x.text, source=x.source, tokens=counter.count(x.text)) for x in chosen]


async def lore(
    store: StoryStore,
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


async def world_info(store: StoryStore) -> WorldInfoSettings:
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
    store: StoryStore, request: str, *, budget: int, counter: TokenCounter, as_of: int | None
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
