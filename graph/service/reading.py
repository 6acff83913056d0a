"""The read side of the service: a branch's text, its views of memory, who knows what.

Each function takes a :class:`~fabula.memory.store.StoryReads` (one branch of one story),
checks that the story and branch exist, and answers with a model of
:mod:`fabula.graph.service.responses`. ``as_of`` must name a turn of the branch (``0..head``).
"""

from __future__ import annotations

import html
import json
import re
from collections import defaultdict
from collections.abc import Mapping
from typing import TypedDict

from fabula.agents.usage import add_usage, cost_of
from fabula.errors import InvalidInput, NotFound
from fabula.graph.service.responses.reading import (
    BeliefOut,
    BeliefsOut,
    BranchOut,
    CardField,
    CellStatus,
    CharacterPageOut,
    EvidenceOut,
    FactOut,
    GridCell,
    GridRow,
    MindOut,
    MindsOut,
    PlotOut,
    WorldOut,
)
from fabula.graph.service.responses.stories import (
    CharacterOut,
    ExportOut,
    StoryText,
    TurnOut,
    TurnUsage,
    UsageOut,
    UsageTotal,
)
from fabula.memory.consolidation import PLOT_ID
from fabula.memory.hierarchy import nodes
from fabula.memory.hierarchy import scenes as hierarchy_scenes
from fabula.memory.index.general import the_place
from fabula.memory.projections import (
    mind_as_of,
    project_beliefs,
    project_developments,
    project_hypotheses,
    project_world,
)
from fabula.memory.records import Belief, HierarchyNode, State, slug
from fabula.memory.sentences import fact_sentence
from fabula.memory.store.view import StoryReads
from fabula.settings import Price
from fabula.worlds.pack import WorldPack
from fabula.worlds.voice import parse_voice

_EVENT_ID = re.compile(r"^e\d{1,9}\.\d{1,9}$")


async def check_as_of(store: StoryReads, as_of: int | None) -> int | None:
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


async def text(store: StoryReads, as_of: int | None = None) -> StoryText:
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


async def world(store: StoryReads, as_of: int | None = None) -> WorldOut:
    """W, sorted by subject and attribute."""
    await store.require()
    w = await project_world(store, as_of=await check_as_of(store, as_of))
    facts = sorted(w.states.values(), key=lambda s: (s.subject, s.attribute))
    return WorldOut(
        story=store.story, branch=store.branch, as_of=as_of, facts=[FactOut.of(s) for s in facts]
    )


async def beliefs(store: StoryReads, holder: list[str], as_of: int | None = None) -> BeliefsOut:
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


async def branches(store: StoryReads) -> list[BranchOut]:
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


async def plot(store: StoryReads) -> PlotOut:
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


# long (over 60 lines): one response model filled field by field from one snapshot of the
# story; each field is a line or two
async def minds(store: StoryReads, as_of: int | None = None) -> MindsOut:
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
    store: StoryReads,
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
    entities = await store.entities()
    named = {event.actor, event.place, *event.participants, *event.witnesses, *event.private_to}
    sentence = None
    if belief is not None:
        named.update((*belief.holder, belief.speaker, belief.subject, belief.value))
        sentence = fact_sentence(
            belief.subject, belief.attribute, belief.value, belief.polarity, entities
        )
    return EvidenceOut(
        story=store.story,
        branch=store.branch,
        event=event,
        text=text,
        start=start,
        end=end,
        belief=BeliefOut.of(belief) if belief is not None else None,
        sentence=sentence,
        names={i: entities[i].name for i in sorted(n for n in named if n in entities)},
    )


async def export(store: StoryReads, as_of: int | None = None) -> ExportOut:
    """The branch's text with its premise and characters, and W, every B[c], D and H as
    they are now (as of turn ``as_of``: the text to it, the views as they stood then).

    Raises :class:`InvalidInput` for an ``as_of`` that is not a turn of the branch."""
    passages = await text(store, as_of)
    document = await store.pack_document()
    premise = json.loads(document).get("premise") if document else None
    entities = await store.entities()
    cast = await store.characters()
    return ExportOut(
        story=store.story,
        branch=store.branch,
        title=passages.title,
        premise=premise if isinstance(premise, str) else None,
        characters=[CharacterOut(id=c, name=entities[c].name) for c in cast],
        as_of=as_of,
        turns=passages.turns,
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


async def markdown(store: StoryReads, as_of: int | None = None) -> str:
    """The branch's text (to turn ``as_of``) as markdown: the title, then one paragraph per
    turn (each text as :func:`markdown_text` gives it). Raises :class:`InvalidInput` for an
    ``as_of`` that is not a turn of the branch."""
    passages = await text(store, as_of)
    turns = "".join(markdown_text(t.text) + "\n\n" for t in passages.turns)
    return f"# {markdown_text(passages.title)}\n\n" + turns


def _summed(
    by_role: Mapping[str, Mapping[str, int | str]], prices: Mapping[str, Price]
) -> UsageTotal:
    return UsageTotal(
        roles={role: dict(u) for role, u in by_role.items()},
        input_tokens=sum(int(r.get("input_tokens", 0)) for r in by_role.values()),
        output_tokens=sum(int(r.get("output_tokens", 0)) for r in by_role.values()),
        cost_usd=cost_of(by_role, prices) if by_role else 0.0,
    )


async def usage(store: StoryReads, prices: Mapping[str, Price]) -> UsageOut:
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


CARD_FIELD_CHARS = 2_000  # a kept card field shown on a character's page, at most


async def character(store: StoryReads, who: str) -> CharacterPageOut:
    """``who`` (a character's id or name) as its card: its pack fields, what its source card kept
    verbatim, its voice exemplars (its keyspace's document, read by the author) and the
    names of its own books. Raises :class:`NotFound` for an unknown story or character."""
    await store.require()
    entity = await store.resolve(who, "character")
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


async def scenes(store: StoryReads) -> list[HierarchyNode]:
    """The branch's scenes, in story order."""
    await store.require()
    return list(await hierarchy_scenes(store))


async def moment(store: StoryReads) -> list[str]:
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
        return f"in {the_place(entity.name if entity else value)}"

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
