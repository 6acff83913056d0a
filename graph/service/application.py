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

Each operation has one name, on :class:`Fabula` (``fab.run``, ``fab.decide``, ...), bound to
the part that does it.
"""

from __future__ import annotations

from fabula.agents.embeddings import make_embedder
from fabula.agents.factory import make_roles
from fabula.graph.service.alternatives import Alternatives
from fabula.graph.service.branches import Branches
from fabula.graph.service.consolidation import consolidator
from fabula.graph.service.core import Core
from fabula.graph.service.decisions import Decisions
from fabula.graph.service.listing import story_summaries
from fabula.graph.service.reader import Reader, Sources
from fabula.graph.service.responses.stories import StorySummary
from fabula.graph.service.stories import Stories
from fabula.graph.service.ticking import Ticking
from fabula.graph.service.turns import Turns
from fabula.memory.acl import sync_users
from fabula.memory.server import redis_url
from fabula.memory.store import StoryStore
from fabula.settings import Settings


class Fabula(Core):
    """The application: the :class:`Core` and its parts, one name per operation.

    Use it as an async context manager (``async with Fabula.from_settings(s) as fab``), or
    call :meth:`aclose`. Its operations are the parts' methods (see the module docstring);
    :meth:`read` is the one door for reads.
    """

    def _wire(self) -> None:
        """The parts, and each operation's one name bound to the part that does it."""
        self.making = stories = Stories(self)
        self.turns = turns = Turns(self)
        self.decisions = decisions = Decisions(self, turns)
        self.branching = branches = Branches(self)
        self.drafting = alternatives = Alternatives(self, turns)
        self.ticking = ticking = Ticking(self)
        # stories
        self.create_story = stories.create_story
        self.import_story = stories.import_story
        self.delete_story = stories.delete_story
        self.stories = stories.stories
        self.set_played = stories.set_played
        self.set_world_info = stories.set_world_info
        self.commit_scripted = stories.commit_scripted
        # turns
        self.run = turns.run
        self.check_steering = turns.check_steering
        # decisions
        self.pending_details = decisions.pending_details
        self.all_pending = decisions.all_pending
        self.decide = decisions.decide
        # branches
        self.fork = branches.fork
        self.rewind = branches.rewind
        self.retcon = branches.retcon
        # alternative drafts
        self.alternatives = alternatives.alternatives
        self.drafts = alternatives.drafts
        # ticks
        self.tick = ticking.tick

    @classmethod
    def from_settings(cls, settings: Settings) -> Fabula:
        """The application an entry point opens: Redis (the embedded server when none is
        configured, started if needed), roles and consolidation, all from ``settings``."""
        url = redis_url(settings)
        roles = make_roles(settings)
        return cls(
            url,
            settings,
            roles=roles,
            consolidate=consolidator(url, settings.consolidate, settings.rq_url, roles.summariser),
            embedder=make_embedder(settings),
        )

    async def __aenter__(self) -> Fabula:
        # on a cluster, a node that joined since the users were made gets them now
        await sync_users(self.admin)
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    def read(self, story: str | StoryStore, branch: str = "main") -> Reader:
        """The read side of one branch (``story`` an id, or a handle from :meth:`store`):
        its text, views, plot, evidence, exports, usage, characters, lore, recall, chat,
        the lived story and the summary. The interfaces read through it and nothing else."""
        store = story if isinstance(story, StoryStore) else self.store(story, branch)
        sources = Sources(
            self.settings,
            counter=self._counter,
            minds=self.minds,
            embedder=self.embedder,
            voice=self.roles.voice,
            pending=self.pending,
        )
        return Reader(store, sources)

    async def summaries(self) -> list[StorySummary]:
        """Every story on the server, as listed (read at once: see :mod:`.listing`)."""
        return await story_summaries(self.admin, self.settings.limits)
