"""The one door for reads: :class:`Reader`, one branch's read side.

:meth:`fabula.graph.service.application.Fabula.read` builds it with every source a read
needs (:class:`Sources`: the minds, the token counter, the embedder, the chat's voice, what
waits for a decision); the command line's light way in (``fabula show``,
:class:`~fabula.graph.service.light.Stores`) builds it with the settings alone, for the reads
that need no more. The CLI and the studio read a story through it and nothing else (import
contracts in ``pyproject.toml`` hold them to it). Its reads are
the functions of :mod:`~fabula.graph.service.reading` (the same names),
:mod:`~fabula.graph.service.chat`, :mod:`~fabula.graph.service.lived`,
:mod:`~fabula.graph.service.cards`, :mod:`~fabula.graph.service.epub`,
:mod:`~fabula.graph.service.town` and :mod:`~fabula.graph.service.spread` on this branch.
The recall's limits (:data:`RECALL_BUDGET` and the most a request may ask) are named here for
the interfaces' parameters.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Unpack

from fabula.errors import ConfigError, NotFound
from fabula.graph.service.bounds import MAX_RECALL_BUDGET as MAX_RECALL_BUDGET
from fabula.graph.service.bounds import MAX_REQUEST_CHARS as MAX_REQUEST_CHARS
from fabula.graph.service.bounds import RECALL_BUDGET as RECALL_BUDGET

# Each read loads the module that does it when it is first made (``reading``, ``recall``,
# ``pictures``, ``town``, ``spread`` and their response models): a command loads only what
# its own read needs (``fabula stories`` none of them; issue 44: each command within a second).
if TYPE_CHECKING:  # annotations only: `fabula show` loads no minds, roles or graph
    from fabula.agents.character.played import PlayedView
    from fabula.agents.contracts import ChatExchange
    from fabula.agents.roles import ChatVoiceRole
    from fabula.graph.service.pending import Pending
    from fabula.graph.service.reading import EvidenceQuery
    from fabula.graph.service.responses.reading import (
        BeliefsOut,
        BranchOut,
        CharacterPageOut,
        EvidenceOut,
        LoreOut,
        MindsOut,
        PlotOut,
        WorldInfoOut,
        WorldOut,
    )
    from fabula.graph.service.responses.recall import ChatOut, RecallOut
    from fabula.graph.service.responses.stories import (
        ExportOut,
        LivedOut,
        StorySummary,
        StoryText,
        UsageOut,
    )
    from fabula.graph.service.spread import SpreadOut
    from fabula.graph.service.ticking import TickOut
    from fabula.graph.service.town import TownOut
    from fabula.graph.state import PartRequest
    from fabula.memory.acl import MindPool
    from fabula.memory.index.vectors import Embedder
    from fabula.memory.records import Entity, EntityKind, HierarchyNode
    from fabula.memory.store import StoryInfo, TurnText
    from fabula.memory.store.view import StoryReads
    from fabula.memory.tokens import TokenCounter
    from fabula.settings import Settings
    from fabula.worlds.lore import WorldInfoSettings


@dataclass(frozen=True)
class Sources:
    """What the reads draw on besides the story: the settings (prices, the lore's budget),
    and, from the application, the minds (a character's own Redis user), the token counter,
    the embedder, the chat's voice and what waits for a decision. A read whose source is
    missing (the light way in) raises :class:`ConfigError`."""

    settings: Settings
    counter: TokenCounter | None = None  # None: counted in words
    minds: MindPool | None = None
    embedder: Embedder | None = None
    voice: ChatVoiceRole | None = None
    pending: Callable[[StoryReads], Awaitable[Pending | None]] | None = None
    waiting: Callable[[StoryReads], Awaitable[list[PartRequest]]] | None = None

    def mind_pool(self) -> MindPool:
        """The minds, for a read inside a character's own mind."""
        if self.minds is None:
            raise ConfigError("this read needs the application's minds (use Fabula.read)")
        return self.minds


class Reader:
    """The read side of one branch: the one door the CLI and the studio read through.

    Built by :meth:`fabula.graph.service.application.Fabula.read`; each method reads this
    branch (see the module function of the same name), so that an interface never
    assembles a read from the store itself."""

    def __init__(self, store: StoryReads, sources: Sources) -> None:
        self._store = store
        self.sources = sources

    # -- the story itself ----------------------------------------------------------------
    @property
    def story(self) -> str:
        """The story's id."""
        return self._store.story

    @property
    def branch(self) -> str:
        """The branch read."""
        return self._store.branch

    async def exists(self) -> bool:
        """Whether the story exists (on any branch, stored by any version of Fabula)."""
        return await self._store.exists()

    async def require(self, *, any_version: bool = False) -> None:
        """Raise :class:`NotFound` unless the story and this branch exist (``StoryDeleted``
        for one just deleted), and ``StoryOutdated`` for a story stored by an older Fabula
        unless ``any_version``."""
        await self._store.require(any_version=any_version)

    async def pending(self) -> Pending | None:
        """The turn of this branch waiting for a decision, if any (its draft's id and
        request; ``Fabula.pending_details`` gives the draft as an approver reads it)."""
        if self.sources.pending is None:
            raise ConfigError("what waits for a decision needs the application (Fabula.read)")
        return await self.sources.pending(self._store)

    async def waiting_parts(self) -> list[PartRequest]:
        """The parts this branch's next turn waits for (one per played character; none
        when it waits for nothing, or for a decision), each with its character's own view."""
        if self.sources.waiting is None:
            raise ConfigError("what a turn waits for needs the application (Fabula.read)")
        return await self.sources.waiting(self._store)

    async def info(self) -> StoryInfo:
        """What the story was created with (title, world, origin, when); :class:`NotFound`
        if it does not exist."""
        return await self._store.info()

    async def resolve(self, name: str, kind: EntityKind | None = None) -> Entity:
        """The entity ``name`` designates (its id or its name, in any case), of ``kind``
        when given; :class:`NotFound` naming what the story has of that kind otherwise."""
        return await self._store.resolve(name, kind)

    # -- the story's text and views ----------------------------------------------------
    async def text(self, as_of: int | None = None) -> StoryText:
        """The accepted passages through ``as_of``."""
        from fabula.graph.service import reading

        return await reading.text(self._store, as_of)

    async def head(self) -> int:
        """The branch's last committed turn (0: its setup only)."""
        return await self._store.head()

    async def turns(self, first: int, last: int) -> list[TurnText]:
        """Turns ``first`` to ``last`` (within the branch's head) as committed."""
        return await self._store.turn_texts(first, last) if first <= last else []

    async def turn(self, turn: int) -> str:
        """The text of committed turn ``turn``; :class:`NotFound` for one the branch does
        not have."""
        await self._store.require()
        head = await self._store.head()
        found = await self._store.turn_texts(turn, turn) if 0 <= turn <= head else []
        if not found:
            raise NotFound(
                f"branch {self._store.branch!r} has no turn {turn}", story=self._store.story
            )
        return found[0].text

    async def first_own(self) -> int:
        """The first turn that is the branch's own, where a rewind may go back to: its fork
        (main: the setup, 0)."""
        ancestry = await self._store.ancestry()
        return ancestry[0].through if ancestry else 0

    async def world(self, as_of: int | None = None) -> WorldOut:
        """W at ``as_of``."""
        from fabula.graph.service import reading

        return await reading.world(self._store, as_of)

    async def beliefs(self, holder: list[str], as_of: int | None = None) -> BeliefsOut:
        """B[holder] at ``as_of``."""
        from fabula.graph.service import reading

        return await reading.beliefs(self._store, holder, as_of)

    async def minds(self, as_of: int | None = None) -> MindsOut:
        """Every mind, D and H at ``as_of``."""
        from fabula.graph.service import reading

        return await reading.minds(self._store, as_of)

    async def branches(self) -> list[BranchOut]:
        """Every branch of the story."""
        from fabula.graph.service import reading

        return await reading.branches(self._store)

    async def scenes(self) -> list[HierarchyNode]:
        """The scenes, in story order."""
        from fabula.graph.service import reading

        return await reading.scenes(self._store)

    async def moment(self) -> list[str]:
        """The turn where the world and a character part, and where they meet again."""
        from fabula.graph.service import reading

        return await reading.moment(self._store)

    async def plot(self) -> PlotOut:
        """The event → scene → plotline → plot hierarchy."""
        from fabula.graph.service import reading

        return await reading.plot(self._store)

    async def evidence(self, event_id: str, **belief: Unpack[EvidenceQuery]) -> EvidenceOut:
        """An event, its passage and the span a belief came from."""
        from fabula.graph.service import reading

        return await reading.evidence(self._store, event_id, **belief)

    async def usage(self) -> UsageOut:
        """Tokens and cost by turn and role, at the settings' prices."""
        from fabula.graph.service import reading

        return await reading.usage(self._store, self.sources.settings.prices)

    # -- a story run in ticks ----------------------------------------------------------
    async def last_tick(self) -> int:
        """The branch's last committed tick (0: it has run none)."""
        from fabula.graph.service.town import last_tick_of

        return await last_tick_of(self._store)

    async def pending_tick(self) -> TickOut | None:
        """The tick that waits for a person's decision on the branch (None: none does)."""
        from fabula.graph.service.ticking import waiting_tick

        return await waiting_tick(self._store)

    async def town(self, tick: int | None = None) -> TownOut:
        """Every place and who is there at ``tick`` (default: the last):
        :func:`~fabula.graph.service.town.town_view`."""
        from fabula.graph.service.town import town_view

        return await town_view(self._store, tick)

    async def spread(self, clause: str | None) -> SpreadOut:
        """The share of characters holding ``clause``, tick by tick, read from their own
        minds: :func:`~fabula.graph.service.spread.spread_view`."""
        from fabula.graph.service.spread import spread_view

        await self._store.require()
        return await spread_view(self._store, clause)

    # -- the cast ------------------------------------------------------------------------
    async def entities(self) -> dict[str, Entity]:
        """Every entity of the story, by id (what the pages name people and places by)."""
        return await self._store.entities()

    async def characters(self) -> list[str]:
        """The story's characters' ids."""
        return await self._store.characters()

    async def pictures(self) -> dict[str, str]:
        """The characters that have a picture: id to the asset it is kept as."""
        from fabula.graph.service import pictures

        return await pictures.pictures(self._store)

    async def picture(self, character: str) -> tuple[str, bytes | None]:
        """``character``'s name and its picture's bytes, if it has one."""
        from fabula.graph.service import pictures

        return await pictures.picture(self._store, character)

    async def turn_pictures(self, first: int, last: int) -> dict[int, str]:
        """For each turn from ``first`` to ``last``, the pictured character it is about."""
        from fabula.graph.service import pictures

        return await pictures.turn_pictures(self._store, first, last)

    async def character(self, character: str) -> CharacterPageOut:
        """A character as its card."""
        from fabula.graph.service import reading

        return await reading.character(self._store, character)

    async def played(self) -> list[str]:
        """The characters a person plays in the story (ids, sorted)."""
        return await self._store.played()

    async def lore(self, turn: int | None = None) -> LoreOut:
        """The lore by book, and what ``turn`` activates within the lore budget (and what
        did not fit)."""
        from fabula.graph.service import recall

        budget = self.sources.settings.lore_budget
        return await recall.lore(
            self._store,
            turn,
            budget=budget,
            counter=self.sources.counter,
            minds=self.sources.minds,
        )

    async def world_info(self) -> WorldInfoSettings:
        """The story's World Info settings (see :func:`recall.world_info`)."""
        from fabula.graph.service import recall

        return await recall.world_info(self._store)

    async def world_info_out(self) -> WorldInfoOut:
        """The story's World Info settings as they are shown, each with SillyTavern's name
        and whether it is applied, and the lore budget they give (see
        :func:`recall.world_info_out`)."""
        from fabula.graph.service import recall

        found = await recall.world_info(self._store)
        return recall.world_info_out(self._store.story, found, self.sources.settings.lore_budget)

    # -- inside a character's own mind ---------------------------------------------------
    async def recall(
        self,
        request: str,
        *,
        budget: int | None = None,
        character: str | None = None,
        as_of: int | None = None,
    ) -> RecallOut:
        """What memory gives ``request`` within ``budget`` tokens: the writer's context, or
        with ``character`` that character's own, read as its Redis user — the very recall
        its prompt is built from (None: its prompt's budget; see :func:`recall.recall`)."""
        from fabula.graph.service import recall

        counter = self.sources.counter
        if counter is None:
            raise ConfigError("a recall needs the application's token counter")
        return await recall.recall(
            self._store,
            request,
            budget=budget,
            counter=counter,
            minds=self.sources.mind_pool(),
            character=character,
            as_of=as_of,
            embedder=self.sources.embedder,
            lore_budget=self.sources.settings.lore_budget,
        )

    async def chat(
        self,
        character: str,
        question: str,
        *,
        as_of: int | None = None,
        conversation: Sequence[ChatExchange] = (),
    ) -> ChatOut:
        """``character``'s answer to ``question`` from only its own mind, read as its Redis
        user, in its voice when a model is configured; a follow-up read against
        ``conversation`` (the caller's with this character so far, oldest first). Nothing
        of it is written."""
        from fabula.graph.service.chat import chat
        from fabula.memory.tokens import default_counter

        return await chat(
            self._store,
            character,
            question,
            minds=self.sources.mind_pool(),
            counter=self.sources.counter or default_counter(self.sources.settings.token_counter),
            voice=self.sources.voice,
            as_of=as_of,
            lore_budget=self.sources.settings.lore_budget,
            conversation=conversation,
        )

    async def played_views(self) -> list[PlayedView]:
        """Each played character's own view at the branch's head (where it believes it is,
        with whom, what it believes, its last memories, its goals), read from only its own
        mind as its Redis user: shown beside its part before a turn is run, so that a part
        is written and the turn played in one step."""
        from fabula.agents.character.played import played_view
        from fabula.agents.contracts import TurnPlan
        from fabula.agents.shared.brief import brief_for
        from fabula.agents.views import author_view

        played = await self.played()
        if not played:
            return []
        view = await author_view(self._store)
        pool = self.sources.mind_pool()
        out = []
        for character in played:
            # a brief holds the character's own goals, secrets and voice; the plan's scene
            # goal and beats never reach it (brief_for), so an empty one is no loss
            plan = TurnPlan(scene_goal="", focal=(character,))
            mind = await pool.mind(self._store.story, character, self._store.branch)
            out.append(await played_view(mind, brief_for(view, character, plan)))
        return out

    async def lived(self, character: str, *, as_of: int | None = None) -> LivedOut:
        """The story as ``character`` lived it: what it witnessed and believes, read from
        only its own mind as its Redis user."""
        from fabula.graph.service.lived import lived

        return await lived(self._store, character, minds=self.sources.mind_pool(), as_of=as_of)

    # -- the story as listed ---------------------------------------------------------------
    async def summary(self) -> StorySummary:
        """The story as listed: title, world, head of main, branches, turns awaiting
        approval."""
        from fabula.graph.service.responses.stories import StorySummary
        from fabula.graph.service.responses.turns import PendingSummary

        pending_of = self.sources.pending
        if pending_of is None:
            raise ConfigError("a story's summary needs the application (use Fabula.read)")
        store = self._store.on_branch("main")
        info = await store.info()
        branches = await store.branches()
        pending = []
        for name in branches:
            found = await pending_of(store.on_branch(name))
            if found is not None:
                pending.append(
                    PendingSummary(
                        story=store.story, branch=name, turn=found.turn, pending_id=found.id
                    )
                )
        return StorySummary(
            id=store.story,
            title=info.title,
            world=info.world,
            head=await store.head(),
            branches=len(branches),
            created_at=info.created_at,
            pending=pending,
        )

    # -- exports ---------------------------------------------------------------------------
    async def export(self, as_of: int | None = None) -> ExportOut:
        """The text and every view as they are now, or as of a turn."""
        from fabula.graph.service import reading

        return await reading.export(self._store, as_of)

    async def markdown(self, as_of: int | None = None) -> str:
        """The story (to a turn) as Markdown."""
        from fabula.graph.service import reading

        return await reading.markdown(self._store, as_of)

    async def epub(self, as_of: int | None = None) -> bytes:
        """The story (to a turn) as an EPUB book:
        :func:`~fabula.graph.service.epub.story_epub`."""
        from fabula.graph.service.epub import story_epub  # ebooklib: loaded when asked for

        return await story_epub(self._store, as_of)

    async def card(self, character: str, as_of: int | None = None) -> tuple[bytes, str]:
        """A character as a V3 card, PNG or JSON, and which:
        :func:`~fabula.graph.service.cards.card_export`."""
        from fabula.graph.service.cards import card_export

        return await card_export(self._store, character, as_of)

    async def charx(self, character: str, as_of: int | None = None) -> bytes:
        """A character as a CHARX archive: :func:`~fabula.graph.service.cards.charx_export`."""
        from fabula.graph.service.cards import charx_export

        return await charx_export(self._store, character, as_of)

    async def lorebook(self, as_of: int | None = None, fmt: str = "sillytavern") -> bytes:
        """W as SillyTavern's World Info (or, ``fmt="lorebook_v3"``, a V3 lorebook):
        :func:`~fabula.graph.service.cards.lorebook_export`."""
        from fabula.graph.service.cards import lorebook_export

        return await lorebook_export(self._store, as_of, fmt)
