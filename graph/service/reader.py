"""The one door for reads: :class:`Reader`, one branch's read side.

:meth:`fabula.graph.service.application.Fabula.read` builds it; the CLI and the studio read
a story through it and nothing else (an import contract in ``pyproject.toml`` holds them to
it). Each method is a function of :mod:`~fabula.graph.service.reading`,
:mod:`~fabula.graph.service.cards` or :mod:`~fabula.graph.service.epub` on this branch. The recall's
limits (:data:`RECALL_BUDGET` and the most a request may ask) are named here for the
interfaces' parameters.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Unpack

from fabula.graph.service.reading import (  # the cards and EPUB modules load when asked for
    MAX_RECALL_BUDGET,
    MAX_REQUEST_CHARS,
    RECALL_BUDGET,
    EvidenceQuery,
    beliefs,
    branch_list,
    character_page,
    evidence,
    export,
    lore,
    markdown,
    minds,
    moment,
    plot,
    scenes,
    story_text,
    usage,
    world,
)
from fabula.graph.service.responses import (
    BeliefsOut,
    BranchOut,
    CharacterPageOut,
    EvidenceOut,
    ExportOut,
    LoreOut,
    MindsOut,
    PlotOut,
    StoryText,
    UsageOut,
    WorldOut,
)
from fabula.memory.records import HierarchyNode
from fabula.memory.store import StoryStore
from fabula.memory.tokens import TokenCounter
from fabula.settings import LORE_BUDGET, Price

__all__ = ["MAX_RECALL_BUDGET", "MAX_REQUEST_CHARS", "RECALL_BUDGET", "Reader"]


class Reader:
    """The read side of one branch: the one door the CLI and the studio read through.

    Built by :meth:`fabula.graph.service.application.Fabula.read`; each method is the
    module function of the same name on this branch (see there), so that an interface
    never assembles a read from the store itself."""

    def __init__(
        self,
        store: StoryStore,
        prices: Mapping[str, Price],
        *,
        lore_budget: int = LORE_BUDGET,
        counter: TokenCounter | None = None,
    ) -> None:
        self.store = store
        self.prices = prices
        self.lore_budget = lore_budget  # the lore's own budget (FABULA_LORE_BUDGET)
        self.counter = counter  # how the lore is counted (None: in words)

    async def text(self, as_of: int | None = None) -> StoryText:
        """The accepted passages through ``as_of``: :func:`story_text`."""
        return await story_text(self.store, as_of)

    async def world(self, as_of: int | None = None) -> WorldOut:
        """W at ``as_of``: :func:`world`."""
        return await world(self.store, as_of)

    async def beliefs(self, holder: list[str], as_of: int | None = None) -> BeliefsOut:
        """B[holder] at ``as_of``: :func:`beliefs`."""
        return await beliefs(self.store, holder, as_of)

    async def minds(self, as_of: int | None = None) -> MindsOut:
        """Every mind, D and H at ``as_of``: :func:`minds`."""
        return await minds(self.store, as_of)

    async def branches(self) -> list[BranchOut]:
        """Every branch of the story: :func:`branch_list`."""
        return await branch_list(self.store)

    async def scenes(self) -> list[HierarchyNode]:
        """The scenes, in story order: :func:`scenes`."""
        return await scenes(self.store)

    async def moment(self) -> list[str]:
        """The turn where the world and a character part, and where they meet again:
        :func:`moment`."""
        return await moment(self.store)

    async def plot(self) -> PlotOut:
        """The event → scene → plotline → plot hierarchy: :func:`plot`."""
        return await plot(self.store)

    async def evidence(self, event_id: str, **belief: Unpack[EvidenceQuery]) -> EvidenceOut:
        """An event, its passage and the span a belief came from: :func:`evidence`."""
        return await evidence(self.store, event_id, **belief)

    async def export(self, as_of: int | None = None) -> ExportOut:
        """The text and every view as they are now, or as of a turn: :func:`export`."""
        return await export(self.store, as_of)

    async def markdown(self, as_of: int | None = None) -> str:
        """The story (to a turn) as Markdown: :func:`markdown`."""
        return await markdown(self.store, as_of)

    async def usage(self) -> UsageOut:
        """Tokens and cost by turn and role, at the settings' prices: :func:`usage`."""
        return await usage(self.store, self.prices)

    async def character(self, character: str) -> CharacterPageOut:
        """A character as its card: :func:`character_page`."""
        return await character_page(self.store, character)

    async def lore(self, turn: int | None = None) -> LoreOut:
        """The lore by book, and what ``turn`` activates within the lore budget (and what
        did not fit): :func:`lore`."""
        return await lore(self.store, turn, budget=self.lore_budget, counter=self.counter)

    async def epub(self, as_of: int | None = None) -> bytes:
        """The story (to a turn) as an EPUB book:
        :func:`~fabula.graph.service.epub.story_epub`."""
        from fabula.graph.service.epub import story_epub  # ebooklib: loaded when asked for

        return await story_epub(self.store, as_of)

    async def card(self, character: str, as_of: int | None = None) -> tuple[bytes, str]:
        """A character as a V3 card, PNG or JSON, and which:
        :func:`~fabula.graph.service.cards.card_export`."""
        from fabula.graph.service.cards import card_export

        return await card_export(self.store, character, as_of)

    async def charx(self, character: str, as_of: int | None = None) -> bytes:
        """A character as a CHARX archive: :func:`~fabula.graph.service.cards.charx_export`."""
        from fabula.graph.service.cards import charx_export

        return await charx_export(self.store, character, as_of)

    async def lorebook(self, as_of: int | None = None) -> bytes:
        """W as a ``lorebook_v3``: :func:`~fabula.graph.service.cards.lorebook_export`."""
        from fabula.graph.service.cards import lorebook_export

        return await lorebook_export(self.store, as_of)
