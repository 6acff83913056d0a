"""The application every interface holds: :class:`Fabula`, the :class:`Core` (one Redis,
one checkpointer, one set of roles) with the parts that act on stories, each in its module:

- :class:`~fabula.graph.service.stories.Stories` — make (from a pack or uploaded files),
  list and delete stories; who plays whom;
- :class:`~fabula.graph.service.turns.Turns` — write a branch's next turns;
- :class:`~fabula.graph.service.decisions.Decisions` — what awaits a decision, and deciding;
- :class:`~fabula.graph.service.branches.Branches` — fork, rewind, retcon;
- :class:`~fabula.graph.service.alternatives.Alternatives` — several drafts of one turn;
- :class:`~fabula.graph.service.ticking.Ticking` — run a story in ticks (the whole town);
- :class:`~fabula.graph.service.reader.Reader` — every read (``fab.read(story, branch)``).

Each operation is a method of :class:`Fabula` (``fab.run``, ``fab.decide``, ...), defined on
the class with the part's own signature and delegating to the part (as httpx's ``Client``
defines ``request``, ``send`` and ``get``): ``dir(Fabula)`` lists the application's API, and
the parts are private (``_stories``, ``_turns``, ...).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal, Unpack

from fabula.agents.embeddings import make_embedder
from fabula.agents.factory import make_roles
from fabula.graph.service.alternatives import Alternatives
from fabula.graph.service.branches import Branches
from fabula.graph.service.consolidation import consolidator
from fabula.graph.service.core import Core, TurnOutcome
from fabula.graph.service.decisions import Deciding, Decisions
from fabula.graph.service.handles import StoryRef
from fabula.graph.service.listing import story_summaries
from fabula.graph.service.reader import Reader, Sources
from fabula.graph.service.responses.stories import StorySummary
from fabula.graph.service.stories import Making, Stories
from fabula.graph.service.ticking import Ticking, TickOut
from fabula.graph.service.turns import Turns
from fabula.memory.acl import sync_users
from fabula.memory.server import redis_url
from fabula.memory.store import StoryStore
from fabula.settings import Settings

if TYPE_CHECKING:
    from fabula.agents.contracts import Decision
    from fabula.graph.service.pending import Listener
    from fabula.graph.service.responses.turns import (
        DecisionOut,
        DraftsOut,
        PendingListed,
        PendingTurn,
        RetconOut,
        RewindOut,
        RunOut,
    )
    from fabula.graph.state import Part
    from fabula.worlds.imports.assemble import Imported
    from fabula.worlds.lore import WorldInfoSettings
    from fabula.worlds.pack import WorldPack


Story = StoryRef | StoryStore
"""What an operation acts on: a :class:`StoryRef` (what the interfaces hold), or the store
itself (what the service's own parts, the tests and the benchmarks hold)."""


def _ref(store: StoryStore) -> StoryRef:
    """The handle an operation hands back for a store it made: the ids, not the store (a
    caller that needs memory's methods opens it with :meth:`Core.store`)."""
    return StoryRef(store.story, store.branch)


class Fabula(Core):
    """The application: the :class:`Core` and its parts, one method per operation.

    Use it as an async context manager (``async with Fabula.from_settings(s) as fab``), or
    call :meth:`aclose`. Each operation is defined here and done by its part (see the module
    docstring); :meth:`read` is the one door for reads.
    """

    _stories: Stories
    _turns: Turns
    _decisions: Decisions
    _branches: Branches
    _alternatives: Alternatives
    _ticking: Ticking

    def _wire(self) -> None:
        """The parts, each named like its class; the operations below delegate to them."""
        self._stories = Stories(self)
        self._turns = Turns(self)
        self._decisions = Decisions(self, self._turns)
        self._branches = Branches(self)
        self._alternatives = Alternatives(self, self._turns)
        self._ticking = Ticking(self)

    # -- stories (:class:`~fabula.graph.service.stories.Stories`) --------------------------
    async def create_story(
        self,
        world: str | WorldPack,
        story: str | None = None,
        *,
        opening: bool = True,
        greeting: int | None = None,
        **making: Unpack[Making],
    ) -> StoryRef:
        """Create a story from a world pack (see :meth:`Stories.create_story`); its main
        branch's handle."""
        made = await self._stories.create_story(
            world, story, opening=opening, greeting=greeting, **making
        )
        return _ref(made)

    async def import_story(
        self,
        files: Sequence[tuple[str, bytes]] | Imported,
        story: str | None = None,
        *,
        user: str = "User",
        greeting: int | None = None,
    ) -> StoryRef:
        """Create a story from character cards and lorebooks (see :meth:`Stories.import_story`);
        its main branch's handle."""
        return _ref(await self._stories.import_story(files, story, user=user, greeting=greeting))

    async def delete_story(self, story: str) -> None:
        """Delete a story, its minds and its checkpoints (see :meth:`Stories.delete_story`)."""
        await self._stories.delete_story(story)

    async def stories(self) -> list[str]:
        """Every story id on this server, sorted."""
        return await self._stories.stories()

    async def set_played(self, store: Story, characters: Sequence[str]) -> list[str]:
        """Make ``characters`` the ones a person plays (see :meth:`Stories.set_played`)."""
        return await self._stories.set_played(self._open(store), characters)

    async def set_world_info(
        self, store: Story, changes: Sequence[tuple[str, str]]
    ) -> WorldInfoSettings:
        """Set the story's World Info settings (see :meth:`Stories.set_world_info`)."""
        return await self._stories.set_world_info(self._open(store), changes)

    async def commit_scripted(self, store: Story, text: str) -> str:
        """Commit a scripted turn of controlled English (see :meth:`Stories.commit_scripted`)."""
        return await self._stories.commit_scripted(self._open(store), text)

    # -- turns (:class:`~fabula.graph.service.turns.Turns`) -------------------------------
    async def run(
        self,
        store: Story,
        turns: int = 1,
        *,
        auto: bool,
        direction: str | None = None,
        listener: Listener | None = None,
        progress: Callable[[int, TurnOutcome], Awaitable[None]] | None = None,
        parts: Mapping[str, Part] | None = None,
    ) -> RunOut:
        """Write up to ``turns`` turns of the branch (see :meth:`Turns.run`)."""
        return await self._turns.run(
            self._open(store),
            turns,
            auto=auto,
            direction=direction,
            listener=listener,
            progress=progress,
            parts=parts,
        )

    async def check_steering(
        self, store: Story, text: str, kind: Literal["direction", "note"] = "direction"
    ) -> None:
        """Refuse a direction or note the planner cannot read (see :meth:`Turns.check_steering`)."""
        await self._turns.check_steering(self._open(store), text, kind)

    async def adopt_pending(
        self, story: str, branch: str, turn: int, values: dict[str, Any]
    ) -> None:
        """Put a turn drafted elsewhere on the branch's thread, waiting on approval (see
        :meth:`Turns.adopt`)."""
        await self._turns.adopt(self.store(story, branch), turn, values)

    def _open(self, story: Story) -> StoryStore:
        """The store an operation acts on: ``story`` itself, or the one its ids name."""
        if isinstance(story, StoryStore):
            return story
        return self.store(story)

    # -- decisions (:class:`~fabula.graph.service.decisions.Decisions`) -------------------
    async def decide(
        self, store: Story, decision: Decision, **deciding: Unpack[Deciding]
    ) -> DecisionOut:
        """Approve, edit or reject the pending turn (see :meth:`Decisions.decide`)."""
        return await self._decisions.decide(self._open(store), decision, **deciding)

    async def pending_details(self, store: Story) -> PendingTurn:
        """The pending turn as an approver reads it (see :meth:`Decisions.pending_details`)."""
        return await self._decisions.pending_details(self._open(store))

    async def all_pending(self) -> list[PendingListed]:
        """Every turn awaiting approval, on every branch of every story."""
        return await self._decisions.all_pending()

    # -- branches (:class:`~fabula.graph.service.branches.Branches`) ----------------------
    async def fork(
        self, store: Story, at_turn: int, branch: str | None = None, realise: str | None = None
    ) -> StoryRef:
        """Fork the branch at ``at_turn`` (see :meth:`Branches.fork`); the new branch's
        handle."""
        return _ref(await self._branches.fork(self._open(store), at_turn, branch, realise))

    async def rewind(self, store: Story, to_turn: int, keep: str | None = None) -> RewindOut:
        """Make turn ``to_turn`` the branch's head (see :meth:`Branches.rewind`)."""
        return await self._branches.rewind(self._open(store), to_turn, keep)

    async def retcon(
        self,
        store: Story,
        turn: int,
        text: str,
        *,
        branch: str | None = None,
        force: bool = False,
    ) -> RetconOut:
        """Edit committed turn ``turn`` on a new branch (see :meth:`Branches.retcon`)."""
        return await self._branches.retcon(
            self._open(store), turn, text, branch=branch, force=force
        )

    # -- alternative drafts (:class:`~fabula.graph.service.alternatives.Alternatives`) ----
    async def alternatives(
        self,
        store: Story,
        count: int,
        *,
        direction: str | None = None,
        listener: Listener | None = None,
    ) -> DraftsOut:
        """``count`` drafts of the next turn (see :meth:`Alternatives.alternatives`)."""
        return await self._alternatives.alternatives(
            self._open(store), count, direction=direction, listener=listener
        )

    async def drafts(
        self, store: Story, turn: int | None = None, *, note: str | None = None
    ) -> DraftsOut:
        """The alternative drafts kept for ``turn`` (see :meth:`Alternatives.drafts`)."""
        return await self._alternatives.drafts(self._open(store), turn, note=note)

    # -- ticks (:class:`~fabula.graph.service.ticking.Ticking`) ---------------------------
    async def tick(self, store: Story, ticks: int = 1) -> list[TickOut]:
        """Run up to ``ticks`` ticks of the branch (see :meth:`Ticking.tick`)."""
        return await self._ticking.tick(self._open(store), ticks)

    async def all_pending_ticks(self) -> list[TickOut]:
        """Every tick that waits for a decision, on every branch of every story."""
        return await self._ticking.all_waiting()

    async def draft_tick(self, store: Story, parts: Mapping[str, str] | None = None) -> TickOut:
        """Play the branch's next tick and keep it for a decision, played characters'
        ``parts`` in their scenes (see :meth:`Ticking.draft`)."""
        return await self._ticking.draft(self._open(store), parts)

    async def approve_tick(
        self, store: Story, expect: str | None = None, place: str | None = None
    ) -> TickOut:
        """Commit the tick that waits, as shown, or approve its scene at ``place`` (see
        :meth:`Ticking.approve`)."""
        return await self._ticking.approve(self._open(store), expect, place)

    async def edit_tick(
        self, store: Story, place: str, text: str, *, expect: str | None = None, force: bool = False
    ) -> TickOut:
        """Give one place's scene of the waiting tick a text (see :meth:`Ticking.edit`)."""
        return await self._ticking.edit(self._open(store), place, text, expect=expect, force=force)

    async def reject_tick(self, store: Story, expect: str | None = None) -> TickOut:
        """Drop the tick that waits (see :meth:`Ticking.reject`)."""
        return await self._ticking.reject(self._open(store), expect)

    # -- the application's life -----------------------------------------------------------
    @classmethod
    def from_settings(cls, settings: Settings) -> Fabula:
        """The application an entry point opens: Redis (the embedded server when none is
        configured, started if needed), roles and consolidation, all from ``settings``."""
        url = redis_url(settings)
        # offline, the roles are made when first used (Core.roles): a read runs none
        roles = None if settings.offline else make_roles(settings)
        summariser = roles.summariser if roles is not None else None
        return cls(
            url,
            settings,
            roles=roles,
            consolidate=consolidator(url, settings.consolidate, settings.rq_url, summariser),
            embedder=make_embedder(settings),
        )

    async def __aenter__(self) -> Fabula:
        # on a cluster, a node that joined since the users were made gets them now
        await sync_users(self.admin)
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    def read(self, story: str | Story, branch: str = "main") -> Reader:
        """The read side of one branch (``story`` an id with ``branch``, or a handle):
        its text, views, plot, evidence, exports, usage, characters, lore, recall, chat,
        the lived story, what waits and the summary. The interfaces read through it and
        nothing else."""
        store = self.store(story, branch) if isinstance(story, str) else self._open(story)
        sources = Sources(
            self.settings,
            counter=self._counter,
            minds=self.minds,
            embedder=self._embedder,
            voice=self.voice,
            pending=self._pending,
            waiting=self._waiting_parts,
        )
        return Reader(store, sources)

    async def summaries(self) -> list[StorySummary]:
        """Every story on the server, as listed (read at once: see :mod:`.listing`)."""
        return await story_summaries(self.admin, self.settings.limits)
