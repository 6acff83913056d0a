"""The service's answers about what a story holds: the world, the beliefs, the branches,
the minds and who knows what, the evidence behind a belief, the plot, the lore and a
character's card."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

from fabula.memory.records import AcquisitionMode, Attitude, Belief, Event, HierarchyNode, State

# Development and Hypothesis (D and H, as MindsOut holds them) are memory's records, named
# here for the interfaces: an API answers with them, and imports nothing of fabula.memory
from fabula.memory.records import Development as Development
from fabula.memory.records import Hypothesis as Hypothesis


class _Out(BaseModel):
    model_config = ConfigDict(frozen=True)


class FactOut(_Out):
    """A world state (W) with its validity in story time."""

    id: str
    subject: str
    attribute: str
    value: str
    polarity: bool = True
    valid_from: int
    valid_to: int | None = None
    event: str | None = None

    @classmethod
    def of(cls, state: State) -> FactOut:
        return cls.model_validate(state.model_dump(exclude={"span"}))


class WorldOut(_Out):
    """W on a branch, now (``as_of`` null) or as of a turn."""

    story: str
    branch: str
    as_of: int | None
    facts: list[FactOut]


class BeliefOut(_Out):
    """One belief of a holder chain, with how it was acquired."""

    id: str
    holder: list[str]
    subject: str
    attribute: str
    value: str
    polarity: bool = True
    attitude: Attitude = "believes"
    mode: AcquisitionMode
    event: str
    speaker: str | None = None
    valid_from: int
    valid_to: int | None = None

    @classmethod
    def of(cls, belief: Belief) -> BeliefOut:
        # a Belief is validated already: its fields are copied, not checked again (a minds
        # page holds thousands)
        fields = belief.model_dump(exclude={"span"})
        fields["holder"] = list(belief.holder)
        return cls.model_construct(**fields)


class BeliefsOut(_Out):
    """B[holder] on a branch; ``holder`` is a chain (``["mara", "leo"]``: Mara thinks Leo...)."""

    story: str
    branch: str
    holder: list[str]
    as_of: int | None
    beliefs: list[BeliefOut]


class BranchOut(_Out):
    """A branch: where it forked from (main has no parent), how far it is, what it pursues."""

    story: str
    branch: str
    parent: str | None = None
    fork_turn: int | None = None
    pursue: str | None = None
    head: int


CellStatus = Literal["true", "false", "unknown", "negative"]


class GridCell(_Out):
    """What one character holds about one fact, compared with the world.

    ``true``: believes the world's value; ``false``: believes something the world contradicts;
    ``negative``: knows only what the value is not (and is right); ``unknown``: holds nothing.
    """

    character: str
    status: CellStatus
    value: str | None = None
    polarity: bool = True
    mode: AcquisitionMode | None = None
    speaker: str | None = None
    event: str | None = None
    belief: str | None = None


class GridRow(_Out):
    """One fact of the world (a slot) with every character's cell."""

    subject: str
    attribute: str
    world: str | None
    cells: list[GridCell]


class MindOut(_Out):
    """One character's mind: its beliefs and the nested chains rooted at it."""

    character: str
    name: str
    beliefs: list[BeliefOut]
    nested: list[BeliefsOut]


class MindsOut(_Out):
    """W, every B[c] (nested too), D and H as of one turn, and who knows what."""

    story: str
    branch: str
    as_of: int
    head: int
    text: str | None  # the passage of turn ``as_of``
    names: dict[str, str]
    world: WorldOut
    minds: list[MindOut]
    grid: list[GridRow]
    developments: list[Development]
    hypotheses: list[Hypothesis]


class EvidenceOut(_Out):
    """How something was learned: the event, and the passage with the exact span marked;
    with a belief, the belief and ``sentence``, it said in names. ``names``: the name of
    each entity the event and the belief refer to, by id."""

    story: str
    branch: str
    event: Event
    text: str
    start: int
    end: int
    belief: BeliefOut | None = None
    sentence: str | None = None
    names: dict[str, str] = {}


class PlotOut(_Out):
    """A branch's hierarchy as it is now: the plot, its plotlines and the scenes, in story
    order (each node with its summary, who wrote it and its member ids)."""

    story: str
    branch: str
    head: int
    plot: HierarchyNode | None
    plotlines: list[HierarchyNode]
    scenes: list[HierarchyNode]


class LoreEntryOut(_Out):
    """One lore entry of a story's pack: its book's index and its own, its name, keys and
    flags, who knows it (``author``: the author sees it, the writer and planner; ``known_to``
    the characters whose own lore holds it, by name), and its text."""

    index: int
    name: str
    keys: list[str]
    secondary_keys: list[str]
    constant: bool
    enabled: bool
    use_regex: bool
    author: bool
    known_to: list[str]
    text: str


class LoreBookOut(_Out):
    """A lorebook of the story's pack: its name, its owner (a character's name; None: the
    world's, the author's), its source format and its entries."""

    name: str
    owner: str | None
    format: str
    entries: list[LoreEntryOut]


class LoreFired(_Out):
    """An entry a turn's text activated for one holder (``holder`` None: the author, the
    world's books; else a character's name, its own lore): its book, name, how it fired
    and which key, its size in tokens and the lore budget it was weighed against
    (``fits`` False: it activated but did not fit, so no context holds it)."""

    holder: str | None
    book: str
    name: str
    fired: str
    key: str | None = None
    text: str
    tokens: int = 0
    budget: int = 0
    fits: bool = True


class WorldInfoSetting(_Out):
    """One World Info setting of a story: Fabula's name for it, SillyTavern's
    (``world_info_depth``; ``max_context`` for the context), its value (a switch, a whole
    number, or None for no context) and whether activation applies it (False: kept, not
    applied)."""

    name: str
    sillytavern: str
    value: bool | int | None
    applied: bool


class WorldInfoOut(_Out):
    """A story's World Info settings as ``fabula lore settings`` shows them, each with
    SillyTavern's name, and the lore budget they give (``lore_budget``, in tokens; how:
    ``budget_from``, e.g. "25% of a context of 1000, capped at 200")."""

    story: str
    settings: list[WorldInfoSetting]
    lore_budget: int
    budget_from: str


class LoreOut(_Out):
    """A story's lore by book, with who knows each entry; with ``turn``, what that turn's
    text activated for the author and for each character (its own lore only): those within
    the lore budget (``activated``) and those that did not fit (``left_out``); and the
    story's World Info settings (``world_info``; None for a story with no world pack)."""

    story: str
    branch: str
    head: int
    books: list[LoreBookOut]
    turn: int | None = None
    activated: list[LoreFired] = []
    left_out: list[LoreFired] = []  # activated, but over the lore budget (``fits`` False)
    lore_budget: int = 0  # the lore's own budget, in tokens, each holder's activation had
    world_info: WorldInfoOut | None = None


class CardField(_Out):
    """A field of a character's source card that the pack has no place for, kept verbatim
    (``value`` its JSON, cut at 2,000 characters for display)."""

    field: str
    value: str


class CharacterPageOut(_Out):
    """A character as the author sees its card: its pack fields (name, aliases,
    description, voice, goals, example dialogues), what its source card kept (the spec and
    every other field), and its voice as its own keyspace holds it."""

    story: str
    character: str
    name: str
    aliases: list[str]
    description: str
    voice: str
    goals: list[str]
    examples: list[str]
    spec: str | None
    card: list[CardField]
    exemplars: list[str]
    books: list[str]
