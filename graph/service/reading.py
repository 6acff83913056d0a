"""The read side of the service: a branch's text, its views of memory, who knows what.

Each function takes a :class:`~fabula.memory.store.StoryStore` (one branch of one story),
checks that the story and branch exist, and answers with a model of
:mod:`fabula.graph.service.responses`. ``as_of`` must name a turn of the branch (``0..head``).
"""

from __future__ import annotations

import datetime as dt
import html
import json
import re
from collections import defaultdict
from collections.abc import Mapping
from typing import TypedDict

from fabula.agents.usage import add_usage, cost_of
from fabula.errors import InvalidInput, NotFound
from fabula.graph.service.responses import (
    BeliefOut,
    BeliefsOut,
    BranchOut,
    CardField,
    CellStatus,
    CharacterOut,
    CharacterPageOut,
    EvidenceOut,
    ExportOut,
    FactOut,
    GridCell,
    GridRow,
    LoreBookOut,
    LoreEntryOut,
    LoreFired,
    LoreOut,
    MindOut,
    MindsOut,
    PlotOut,
    RecallLine,
    RecallLore,
    RecallOut,
    RecallPlan,
    RecallVoice,
    StoryText,
    TurnOut,
    TurnUsage,
    UsageOut,
    UsageTotal,
    WorldOut,
)
from fabula.memory.acl import CharacterMind, MindPool
from fabula.memory.hierarchy import PLOT_ID, nodes
from fabula.memory.hierarchy import scenes as hierarchy_scenes
from fabula.memory.index.vectors import Embedder
from fabula.memory.projections import (
    mind_as_of,
    project_beliefs,
    project_developments,
    project_hypotheses,
    project_world,
)
from fabula.memory.records import Belief, HierarchyNode, State, slug
from fabula.memory.retrieval.assemble import Assembly, ManifestEntry
from fabula.memory.retrieval.context import author_context
from fabula.memory.retrieval.plan import RetrievalPlan
from fabula.memory.store import StoryStore
from fabula.memory.tokens import TokenCounter
from fabula.settings import Price
from fabula.worlds.lore import audience, known_to, split_decorators
from fabula.worlds.pack import WorldPack
from fabula.worlds.recall import (
    LORE_BUDGET,
    Books,
    Lit,
    Recalled,
    books_of,
    character_lore,
    recall_books,
    world_books,
)
from fabula.worlds.voice import VOICE_SHARE, Exemplar, nearest, parse_voice

__all__ = [
    "LORE_BUDGET",
    "MAX_RECALL_BUDGET",
    "MAX_REQUEST_CHARS",
    "RECALL_BUDGET",
    "EvidenceQuery",
    "beliefs",
    "branch_list",
    "character_page",
    "check_as_of",
    "evidence",
    "export",
    "lore",
    "markdown",
    "markdown_text",
    "minds",
    "moment",
    "own_lore",
    "own_voice",
    "plot",
    "recall",
    "scenes",
    "story_text",
    "usage",
    "world",
    "world_lore",
]

_EVENT_ID = re.compile(r"^e\d{1,9}\.\d{1,9}$")


async def check_as_of(store: StoryStore, as_of: int | None) -> int | None:
    """``as_of`` if it names a turn of the branch; raises :class:`InvalidInput` otherwise."""
    if as_of is None:
        return None
    head = await store.head()
    if not 0 <= as_of <= head:
        raise InvalidInput(
            f"as_of {as_of} is not a turn of branch {store.branch!r} (turns 0..{head})",
            story=store.story,
            branch=store.branch,
        )
    return as_of


async def story_text(store: StoryStore, as_of: int | None = None) -> StoryText:
    """The accepted passages of turns 1..``as_of`` (all when ``as_of`` is None)."""
    info = await store.info()
    last = await check_as_of(store, as_of)
    texts = await store.turn_texts(1, last)
    return StoryText(
        story=store.story,
        branch=store.branch,
        title=info.title,
        head=await store.head(),
        turns=[TurnOut(turn=t.turn, text=t.text) for t in texts],
    )


async def world(store: StoryStore, as_of: int | None = None) -> WorldOut:
    """W, sorted by subject and attribute."""
    await store.require()
    w = await project_world(store, as_of=await check_as_of(store, as_of))
    facts = sorted(w.states.values(), key=lambda s: (s.subject, s.attribute))
    return WorldOut(
        story=store.story, branch=store.branch, as_of=as_of, facts=[FactOut.of(s) for s in facts]
    )


async def beliefs(store: StoryStore, holder: list[str], as_of: int | None = None) -> BeliefsOut:
    """B[holder] (a chain of characters, each by id or name in any case), sorted by subject
    and attribute. Raises :class:`NotFound` naming the story's characters for an unknown one."""
    await store.require()
    if not holder or not all(holder):
        raise InvalidInput("beliefs need a character, or a chain such as mara>leo")
    holder = [(await store.resolve(c, "character")).id for c in holder]
    b = await project_beliefs(store, holder, as_of=await check_as_of(store, as_of))
    found = sorted(b.beliefs.values(), key=lambda x: (x.subject, x.attribute))
    return BeliefsOut(
        story=store.story,
        branch=store.branch,
        holder=list(holder),
        as_of=as_of,
        beliefs=[BeliefOut.of(x) for x in found],
    )


async def branch_list(store: StoryStore) -> list[BranchOut]:
    """Every branch of the story, main first, each with its parent, fork turn and head."""
    await store.require()
    return [
        BranchOut(
            story=store.story,
            branch=b.name,
            parent=b.parent,
            fork_turn=b.fork_turn,
            pursue=b.pursue,
            head=await store.on_branch(b.name).head(),
        )
        for b in (await store.branches()).values()
    ]


def _order(b: Belief) -> tuple[str, str]:
    return (b.subject, b.attribute)


def _status(world_state: State | None, belief: Belief | None) -> CellStatus:
    if belief is None:
        return "unknown"
    truth = world_state.value if world_state is not None and world_state.polarity else None
    if belief.polarity:
        return "true" if belief.value == truth else "false"
    return "false" if belief.value == truth else "negative"


async def plot(store: StoryStore) -> PlotOut:
    """The branch's hierarchy as it is now: the plot, its plotlines and scenes in story
    order (empty before the first consolidation)."""
    await store.require()
    tree = await nodes(store)
    by_level: dict[str, list[HierarchyNode]] = defaultdict(list)
    for node in tree.values():
        by_level[node.level].append(node)

    def ordered(level: str) -> list[HierarchyNode]:
        return sorted(by_level[level], key=lambda n: (n.first_turn, n.last_turn, n.id))

    return PlotOut(
        story=store.story,
        branch=store.branch,
        head=await store.head(),
        plot=tree.get(PLOT_ID),
        plotlines=ordered("plotline"),
        scenes=ordered("scene"),
    )


async def minds(store: StoryStore, as_of: int | None = None) -> MindsOut:
    """Everything an approver looks into at turn ``as_of`` (default: the branch's head)."""
    await store.require()
    head = await store.head()
    turn = head if as_of is None else await check_as_of(store, as_of)
    assert turn is not None
    entities = await store.entities(as_of=turn)
    names = {e.id: e.name for e in entities.values()}
    characters = sorted(e.id for e in entities.values() if e.kind == "character")
    w = await project_world(store, as_of=turn)
    by_chain: dict[str, dict[tuple[str, ...], list[Belief]]] = {}
    for c in characters:
        by_chain[c] = await mind_as_of(store, c, turn)
    mind_list = []
    for c in characters:
        own = sorted(by_chain[c].get((c,), []), key=_order)
        nested = [
            BeliefsOut(
                story=store.story,
                branch=store.branch,
                holder=list(chain),
                as_of=turn,
                beliefs=[BeliefOut.of(b) for b in sorted(found, key=_order)],
            )
            for chain, found in sorted(by_chain[c].items())
            if len(chain) > 1
        ]
        mind_list.append(
            MindOut(
                character=c,
                name=names.get(c, c),
                beliefs=[BeliefOut.of(b) for b in own],
                nested=nested,
            )
        )
    grid = []
    for state in sorted(w.states.values(), key=lambda s: (s.subject, s.attribute)):
        cells = []
        for c in characters:
            held = {b.slot: b for b in by_chain[c].get((c,), [])}.get(state.slot)
            cells.append(
                GridCell(
                    character=c,
                    status=_status(state, held),
                    value=held.value if held else None,
                    polarity=held.polarity if held else True,
                    mode=held.mode if held else None,
                    speaker=held.speaker if held else None,
                    event=held.event if held else None,
                    belief=held.id if held else None,
                )
            )
        grid.append(
            GridRow(
                subject=state.subject,
                attribute=state.attribute,
                world=state.value if state.polarity else None,
                cells=cells,
            )
        )
    texts = await store.turn_texts(turn, turn) if turn >= 1 else []
    facts = sorted(w.states.values(), key=lambda s: (s.subject, s.attribute))
    return MindsOut(
        story=store.story,
        branch=store.branch,
        as_of=turn,
        head=head,
        text=texts[0].text if texts else None,
        names=names,
        world=WorldOut(
            story=store.story,
            branch=store.branch,
            as_of=turn,
            facts=[FactOut.of(s) for s in facts],
        ),
        minds=mind_list,
        grid=grid,
        developments=list((await project_developments(store, as_of=turn)).values()),
        hypotheses=list((await project_hypotheses(store, as_of=turn)).values()),
    )


class EvidenceQuery(TypedDict, total=False):
    """Which belief of an event :func:`evidence` shows, beside the event and its passage."""

    holder: list[str] | None
    """The belief's holder chain (``["ava", "ben"]``: Ava thinks Ben thinks)."""
    subject: str | None
    """The subject of the belief's slot."""
    attribute: str | None
    """The attribute of the belief's slot."""
    as_of: int | None
    """The turn to read the belief as of (default: now)."""


async def evidence(
    store: StoryStore,
    event_id: str,
    *,
    holder: list[str] | None = None,
    subject: str | None = None,
    attribute: str | None = None,
    as_of: int | None = None,
) -> EvidenceOut:
    """The event ``event_id`` and its passage; with ``holder``/``subject``/``attribute``, the
    belief it gave that holder, and the span the belief was read from."""
    await store.require()
    if not _EVENT_ID.match(event_id):
        raise InvalidInput(f"{event_id!r} is not an event id (e<turn>.<n>)", story=store.story)
    found = await store.events([event_id])
    if not found:
        raise NotFound(
            f"story {store.story!r} has no event {event_id!r} on branch {store.branch!r}",
            story=store.story,
            branch=store.branch,
        )
    event = found[0]
    belief = None
    if holder and subject and attribute:
        view = await project_beliefs(store, holder, as_of=await check_as_of(store, as_of))
        belief = view.get(subject, attribute)
        if belief is not None and belief.event != event_id:
            belief = None
    span = belief.span if belief is not None and belief.span is not None else event.span
    texts = await store.turn_texts(span.turn, span.turn)
    if span.turn == 0 or not texts:
        text = span.quote
        start, end = 0, len(span.quote)
    else:
        text, start, end = texts[0].text, span.start, span.end
    return EvidenceOut(
        story=store.story,
        branch=store.branch,
        event=event,
        text=text,
        start=start,
        end=end,
        belief=BeliefOut.of(belief) if belief is not None else None,
    )


async def export(store: StoryStore, as_of: int | None = None) -> ExportOut:
    """The branch's text with its premise and characters, and W, every B[c], D and H as
    they are now (as of turn ``as_of``: the text to it, the views as they stood then).

    Raises :class:`InvalidInput` for an ``as_of`` that is not a turn of the branch."""
    text = await story_text(store, as_of)
    document = await store.pack_document()
    premise = json.loads(document).get("premise") if document else None
    entities = await store.entities()
    cast = await store.characters()
    return ExportOut(
        story=store.story,
        branch=store.branch,
        title=text.title,
        premise=premise if isinstance(premise, str) else None,
        characters=[CharacterOut(id=c, name=entities[c].name) for c in cast],
        as_of=as_of,
        turns=text.turns,
        world=await world(store, as_of),
        beliefs={c: await beliefs(store, [c], as_of) for c in cast},
        developments=list((await project_developments(store, as_of)).values()),
        hypotheses=list((await project_hypotheses(store, as_of)).values()),
    )


_CONTROL_CHARS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def markdown_text(text: str) -> str:
    """``text`` as Markdown shows it as written: HTML escaped (a name or a greeting with
    ``<script>`` is prose, as the studio and the EPUB show it), control characters dropped
    (newlines and tabs kept)."""
    return html.escape(_CONTROL_CHARS.sub("", text), quote=False)


async def markdown(store: StoryStore, as_of: int | None = None) -> str:
    """The branch's text (to turn ``as_of``) as markdown: the title, then one paragraph per
    turn (each text as :func:`markdown_text` gives it). Raises :class:`InvalidInput` for an
    ``as_of`` that is not a turn of the branch."""
    text = await story_text(store, as_of)
    turns = "".join(markdown_text(t.text) + "\n\n" for t in text.turns)
    return f"# {markdown_text(text.title)}\n\n" + turns


def _summed(
    by_role: Mapping[str, Mapping[str, int | str]], prices: Mapping[str, Price]
) -> UsageTotal:
    return UsageTotal(
        roles={role: dict(u) for role, u in by_role.items()},
        input_tokens=sum(int(r.get("input_tokens", 0)) for r in by_role.values()),
        output_tokens=sum(int(r.get("output_tokens", 0)) for r in by_role.values()),
        cost_usd=cost_of(by_role, prices) if by_role else 0.0,
    )


async def usage(store: StoryStore, prices: Mapping[str, Price]) -> UsageOut:
    """The model usage of each committed turn, of the branch's work outside its turns (the
    model-written summaries) and in all, by role, with its cost in US dollars where the
    price table names every model used (else None)."""
    await store.require()
    turns = []
    total: dict[str, dict[str, int | str]] = {}
    for turn, roles in (await store.turn_usage()).items():
        by_role: dict[str, dict[str, int | str]] = {
            role: {k: v for k, v in u.items() if isinstance(v, int | str)}
            for role, u in roles.items()
        }
        total = add_usage(total, by_role)
        turns.append(TurnUsage(turn=turn, **_summed(by_role, prices).model_dump()))
    background = await store.background_usage()
    total = add_usage(total, background)
    return UsageOut(
        story=store.story,
        branch=store.branch,
        turns=turns,
        background=_summed(background, prices),
        total=_summed(total, prices),
    )


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
    and beside it the lore the request activates (the world's books for the author, the
    character's own lore for it) within ``lore_budget`` tokens, with the entries that did
    not fit. Raises :class:`InvalidInput` for an empty or overlong request, a budget out of range or
    an ``as_of`` outside the branch, :class:`NotFound` for an unknown story or character."""
    await store.require()
    request = request.strip()
    if not request:
        raise InvalidInput(
            "recall needs a request: a question, or what a turn is about", story=store.story
        )
    if len(request) > MAX_REQUEST_CHARS:
        raise InvalidInput(
            f"the request has {len(request)} characters; at most {MAX_REQUEST_CHARS} are read",
            story=store.story,
        )
    if not 1 <= budget <= MAX_RECALL_BUDGET:
        raise InvalidInput(
            f"the budget is {budget} tokens; it must be 1 to {MAX_RECALL_BUDGET}", story=store.story
        )
    as_of = await check_as_of(store, as_of)
    holder = None
    voice: list[RecallVoice] = []
    if character is None or not character.strip():
        lore = await world_lore(store, request, budget=lore_budget, counter=counter, as_of=as_of)
        found: Assembly = await author_context(
            store, request, budget=budget, counter=counter, as_of=as_of, embedder=embedder
        )
    else:
        holder = (await store.resolve(character, "character")).id
        mind = await minds.mind(store.story, holder, store.branch)
        lore = await own_lore(mind, request, budget=lore_budget, counter=counter)
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


CARD_FIELD_CHARS = 2_000  # a kept card field shown on a character's page, at most


async def character_page(store: StoryStore, character: str) -> CharacterPageOut:
    """``character`` (id or name) as its card: its pack fields, what its source card kept
    verbatim, its voice exemplars (its keyspace's document, read by the author) and the
    names of its own books. Raises :class:`NotFound` for an unknown story or character."""
    await store.require()
    entity = await store.resolve(character, "character")
    document = await store.pack_document()
    pack = None if document is None else WorldPack.model_validate_json(document)
    spec = next((c for c in pack.characters if slug(c.name) == entity.id), None) if pack else None
    kept = pack.lore.card_of(spec.name) if pack and spec else None
    card = []
    if kept is not None:
        for key, value in sorted({**kept.top, **kept.data}.items()):
            text = json.dumps(value, ensure_ascii=False)
            cut = text if len(text) <= CARD_FIELD_CHARS else text[:CARD_FIELD_CHARS] + " …"
            card.append(CardField(field=key, value=cut))
    books = [b.name for b in pack.lore.books_of(spec.name)] if pack and spec else []
    return CharacterPageOut(
        story=store.story,
        character=entity.id,
        name=entity.name,
        aliases=list(spec.aliases) if spec else [],
        description=spec.description if spec else entity.description,
        voice=spec.voice if spec else "",
        goals=list(spec.goals) if spec else [],
        examples=list(spec.examples) if spec else [],
        spec=kept.spec if kept else None,
        card=card,
        exemplars=[x.text for x in parse_voice(await store.voice(entity.id))],
        books=books,
    )


async def lore(
    store: StoryStore,
    turn: int | None = None,
    *,
    budget: int = LORE_BUDGET,
    counter: TokenCounter | None = None,
) -> LoreOut:
    """The story's lore by book, each entry with who knows it (the author a world book's,
    a character what its keyspace copy holds: see :func:`fabula.worlds.lore.audience`); with
    ``turn``, the entries that turn's text activates for the author (the world's books)
    and for each character (its own lore), each within the lore's own ``budget`` tokens
    (counted by ``counter``, as a recall counts them; None: in words), and those that
    activated but did not fit (``left_out``, with their size). Raises
    :class:`NotFound` for an unknown story and :class:`InvalidInput` for a turn outside
    the branch."""
    await store.require()
    head = await store.head()
    document = await store.pack_document()
    pack = None if document is None else WorldPack.model_validate_json(document)
    books: list[LoreBookOut] = []
    cast = [c.name for c in pack.characters] if pack else []
    for book in pack.lore.books if pack else ():
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
        books.append(
            LoreBookOut(name=book.name, owner=book.owner, format=book.format, entries=entries)
        )
    activated: list[LoreFired] = []
    left_out: list[LoreFired] = []
    if turn is not None:
        checked = await check_as_of(store, turn)
        if checked is None or checked < 1:
            raise InvalidInput(
                f"turn {turn}: lore is activated by a turn's text, 1 to {head}", story=store.story
            )
        (said,) = await store.turn_texts(checked, checked)
        holders: list[tuple[str | None, Books | None]] = [(None, await world_books(store))]
        if pack is not None:
            holders += [(name, books_of(known_to(pack.lore, name, cast).books)) for name in cast]
        for holder, held in holders:
            found = recall_books(
                held,
                said.text,
                budget=budget,
                turn=checked,
                count_tokens=None if counter is None else counter.count,
            )
            activated += [_fired(holder, x, found.budget, True) for x in found.lit]
            left_out += [_fired(holder, x, found.budget, False) for x in found.left_out]
    return LoreOut(
        story=store.story,
        branch=store.branch,
        head=head,
        books=books,
        turn=turn,
        activated=activated,
        left_out=left_out,
        lore_budget=budget,
    )


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
    """The world's lorebooks' entries (the author's: no character's own book) that the
    request and the last three turns' text activate, within ``budget`` tokens and each
    book's own ``token_budget``, and those that did not fit (see
    :mod:`fabula.worlds.recall`)."""
    books = await world_books(store)
    if books is None:
        return Recalled([], [], budget)
    head = as_of if as_of is not None else await store.head()
    recent = await store.turn_texts(max(1, head - 2), head) if head >= 1 else []
    scan = "\n".join([request, *(t.text for t in recent)])
    return recall_books(books, scan, budget=budget, count_tokens=counter.count, turn=head)


async def own_lore(
    mind: CharacterMind, request: str, *, budget: int, counter: TokenCounter
) -> Recalled:
    """The character's own lore (read through its own connection) that ``request``
    activates, within ``budget`` tokens, and what did not fit."""
    books = character_lore(await mind.lore())
    return recall_books(books, request, budget=budget, count_tokens=counter.count)


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


def _plan(plan: RetrievalPlan) -> RecallPlan:
    def iso(day: int | None) -> str | None:
        return None if day is None else dt.date.fromordinal(day).isoformat()

    return RecallPlan(
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


async def scenes(store: StoryStore) -> list[HierarchyNode]:
    """The branch's scenes, in story order."""
    await store.require()
    return list(await hierarchy_scenes(store))


async def moment(store: StoryStore) -> list[str]:
    """The moment a story is about, as lines to print: the first turn where the world and
    a character's belief about where an object is part (the character believes it is
    somewhere it is not), and the turn where they meet again (if they do)."""
    head = await store.head()
    entities = await store.entities()
    characters = sorted(e for e, ent in entities.items() if ent.kind == "character")
    things = sorted(
        e for e, ent in entities.items() if ent.kind == "object" and not ent.is_container
    )

    def where(value: str | None) -> str:
        if value is None:
            return "nowhere it knows"
        entity = entities.get(value)
        if entity is not None and entity.kind == "character":
            return f"with {entity.name}"
        return f"in the {entity.name if entity else value}"

    worlds = [await project_world(store, as_of=t) for t in range(head + 1)]
    for t in range(head + 1):
        for c in characters:
            mind = await project_beliefs(store, c, as_of=t)
            for obj in things:
                believed, actual = mind.where(obj), worlds[t].where(obj)
                if believed is None or actual is None or believed == actual:
                    continue
                who, name = entities[c].name, entities[obj].name
                lines = [
                    f"turn {t}: the world and {who} part. The world: the {name} is "
                    f"{where(actual)}; {who} believes: {where(believed)}."
                ]
                for later in range(t + 1, head + 1):
                    now = (await project_beliefs(store, c, as_of=later)).where(obj)
                    if now is not None and now == worlds[later].where(obj):
                        lines.append(
                            f"turn {later}: they meet again. The world: the {name} is "
                            f"{where(worlds[later].where(obj))}; {who} believes: {where(now)}."
                        )
                        break
                else:
                    lines.append(f"they have not met again by turn {head}.")
                return lines
    return ["the world and every character agree on where everything is, at every turn."]
