"""The service: every operation the command line, the web studio and the API perform.

A :class:`Fabula` holds the admin Redis connection, the checkpointer and the roles, and runs
one turn at a time through the turn graph. Each turn is its own checkpoint thread
(``story/branch/turn``), so a turn started in one process can be approved from another.
Deciding on a turn holds the turn's lock (``StoryStore.decision_lock``), so two approvers
never act on the same turn at once. Reads answer with the models of
:mod:`fabula.graph.service.responses` (see :mod:`fabula.graph.service.reading`).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import tempfile
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path, PurePath
from typing import Any, Literal, TypedDict, Unpack

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
from langgraph.types import Command
from redis.exceptions import LockError, RedisError
from structlog.contextvars import bound_contextvars

from fabula.agents.contracts import Decision, Finding, TurnPlan
from fabula.agents.critic.offline import OfflineCritic
from fabula.agents.embeddings import make_embedder
from fabula.agents.factory import make_roles, offline_roles
from fabula.agents.memory_builder.narrative import enrich
from fabula.agents.memory_builder.offline import OfflineMemoryBuilder
from fabula.agents.roles import Roles
from fabula.agents.views import author_view
from fabula.errors import (
    Conflict,
    EditRefused,
    InvalidInput,
    InvalidWorld,
    NotFound,
    StoryAtRest,
    StoryDeleted,
    TurnConflict,
)
from fabula.graph.build import build_turn_graph, thread_id
from fabula.graph.checkpoint import RedisCheckpointSaver, delete_threads
from fabula.graph.commit import CommitPath, commit_delta, commit_text
from fabula.graph.runtime import CommitObserver, Consolidator, CritiqueObserver, TurnContext
from fabula.graph.service import reading
from fabula.graph.service.changes import changes_of, sentences_of
from fabula.graph.service.chat import chat
from fabula.graph.service.consolidation import (
    CLOSING_SUMMARIES_S,
    InlineConsolidation,
    consolidator,
)
from fabula.graph.service.listing import story_summaries
from fabula.graph.service.lived import lived
from fabula.graph.service.pending import (
    Listener,
    Pending,
    check_bounds,
    edit_problem,
    parts_in,
    pending_in,
    raise_if_edit_not_taken,
    tell,
)
from fabula.graph.service.reader import Reader
from fabula.graph.service.responses import (
    ChatOut,
    DecisionOut,
    DraftOut,
    DraftsOut,
    LivedOut,
    PendingListed,
    PendingSummary,
    PendingTurn,
    RecallOut,
    RetconOut,
    RewindOut,
    RunOut,
    StorySummary,
    WorldInfo,
)
from fabula.graph.state import CHECKPOINT_TYPES, ApprovalRequest, Part, PartRequest, TurnState
from fabula.logs import get_logger
from fabula.memory import hierarchy
from fabula.memory.acl import MindPool, drop_character_users, ensure_character_user, sync_users
from fabula.memory.branching import fork
from fabula.memory.connection import connect_async
from fabula.memory.delta import TurnDelta
from fabula.memory.drafts import DraftOption, choose_draft, read_drafts, save_drafts
from fabula.memory.index.build import index_through
from fabula.memory.index.indexer import Indexer
from fabula.memory.index.vectors import Embedder
from fabula.memory.leases import renewed
from fabula.memory.projections import project_hypotheses
from fabula.memory.records import slug
from fabula.memory.rewind import drop_branch, rewind
from fabula.memory.server import redis_url
from fabula.memory.store import StoryStore, list_stories
from fabula.memory.tokens import default_counter
from fabula.settings import Settings
from fabula.worlds.imports import ImportLimits, import_paths
from fabula.worlds.imports.bookworld import is_preset
from fabula.worlds.loader import (
    builtin_worlds,
    load_world,
    minds_lore,
    pack_assets,
    parse_world,
    setup_delta,
)
from fabula.worlds.pack import WorldPack
from fabula.worlds.voice import minds_voice

__all__ = ["Deciding", "Fabula", "Making", "TurnOutcome", "world_infos"]

log = get_logger(__name__)

TurnOutcome = Literal["committed", "duplicate", "pending", "part", "abandoned"]


class Making(TypedDict, total=False):
    """How :meth:`Fabula.new_story` and :meth:`Fabula.create_story` make a story."""

    origin: str | None
    """What made it when no person did (``fabula demo``: ``"demo"``)."""
    assets: Mapping[str, bytes] | None
    """The files its characters' ``image`` fields name (default: read from the pack's
    folder, see :func:`~fabula.worlds.loader.pack_assets`)."""


class Deciding(TypedDict, total=False):
    """How :meth:`Fabula.decide` and :meth:`Fabula.decide_turn` act on a decision."""

    force: bool
    """Commit an edit the critic finds errors in (the human commits it explicitly)."""
    expect: str | None
    """The id of the draft the decision's maker read (:attr:`Pending.id`)."""
    listener: Listener | None
    """Hears the turn's graph as :meth:`Fabula.run_turn`'s does."""


def _is_preset(data: bytes, limits: ImportLimits) -> bool:
    """Whether uploaded ``data`` is a BookWorld preset (JSON naming its roles' folders)."""
    if b"role_agent_codes" not in data or len(data) > limits.max_card_bytes:
        return False
    try:
        return is_preset(json.loads(data))
    except ValueError:
        return False


MAX_ALTERNATIVES = 6  # drafts of one turn asked for at once (each is a whole turn's work)
MAX_IMPORT_FILES = 16  # files one studio import reads (cards and lorebooks: one cast)
UPLOAD_LIMITS = ImportLimits(max_import_bytes=8 * 1024 * 1024)
"""An upload's import bounds: as the command line's, but one request (one story) holds at
most 8 MiB, files and unpacked archives together. The studio takes bodies of some hundreds
of KiB, so real cards unpack to a few MiB at most (pictures hardly compress); an archive
that inflates is stopped at this, whatever it says of itself."""
MAX_UPLOAD_NAME = 100  # characters of an uploaded file's name kept (its suffix kept whole)


def _upload_name(name: str) -> str:
    """An uploaded file's base name as a name a file may have: cut to
    :data:`MAX_UPLOAD_NAME` characters and 200 bytes (its suffix, such as ``.charx``,
    kept), NUL and what UTF-8 cannot write dropped. It names a file in a temporary folder,
    and a name past the system's 255 bytes could not."""
    base = PurePath(name.replace("\\", "/").replace("\0", "")).name
    base = base.encode("utf-8", "ignore").decode("utf-8")

    def fits(text: str) -> bool:
        return len(text) <= MAX_UPLOAD_NAME and len(text.encode("utf-8")) <= 200

    if fits(base):
        return base
    suffix = PurePath(base).suffix
    suffix = suffix if len(suffix) <= 16 else ""
    stem = base[: len(base) - len(suffix)][:MAX_UPLOAD_NAME]
    while stem and not fits(stem + suffix):
        stem = stem[:-1]
    return stem + suffix


# A turn is checkpointed when its run stops — at the approval interrupt or at its end —
# not after every step: a run that dies midway starts the turn over, which is safe
# because everything before the commit is a pure read and the commit is idempotent.
DURABILITY: Literal["exit"] = "exit"


def _option(ident: str, request: ApprovalRequest) -> DraftOption:
    """A pending draft, as the story's memory keeps it beside the turn's other drafts."""
    return DraftOption(
        id=ident,
        text=request.draft.text,
        findings=[f.model_dump() for f in request.findings],
        preview=request.preview.model_dump(),
        delta=request.delta.model_dump(mode="json") if request.delta is not None else {},
        plan=request.plan.model_dump() if request.plan is not None else {},
    )


def world_infos() -> list[WorldInfo]:
    """The world packs shipped with Fabula."""
    packs = [load_world(name) for name in builtin_worlds()]
    return [WorldInfo(id=p.id, title=p.title, premise=p.premise) for p in packs]


class Fabula:
    """The application: one Redis, one checkpointer, one set of roles.

    ``roles`` default to the offline engine; ``consolidate`` runs after each commit;
    ``checkpointer`` defaults to a :class:`RedisCheckpointSaver` on ``url`` (made only then);
    ``on_commit`` is told of every committed turn, ``on_critique`` of every critique's
    findings. Use it as an async context manager, or call :meth:`aclose`.
    """

    def __init__(
        self,
        url: str,
        settings: Settings,
        roles: Roles | None = None,
        consolidate: Consolidator | None = None,
        checkpointer: BaseCheckpointSaver[Any] | None = None,
        on_commit: CommitObserver | None = None,
        embedder: Embedder | None = None,
        on_critique: CritiqueObserver | None = None,
    ) -> None:
        self.url = url
        self.settings = settings
        self.admin = connect_async(url)
        self.minds = MindPool(self.admin, url)
        # once: it may hash a cached tiktoken file
        self.counter = default_counter(settings.token_counter)
        self.roles = roles or offline_roles()
        self.consolidate = consolidate
        self.on_commit = on_commit
        self.on_critique = on_critique
        self.embedder = embedder
        self.indexer = Indexer(embedder)
        self._own_saver: RedisCheckpointSaver | None = None
        if checkpointer is None:
            # the turn's typed values are built again from their checkpoints, no others
            serde = JsonPlusSerializer(allowed_msgpack_modules=CHECKPOINT_TYPES)
            checkpointer = self._own_saver = RedisCheckpointSaver.from_url(url, serde=serde)
        self.saver: BaseCheckpointSaver[Any] = checkpointer
        self.graph = build_turn_graph(checkpointer)

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

    async def aclose(self) -> None:
        """Close the connections this application opened (not an injected checkpointer),
        once the background indexing they serve is done."""
        await self.indexer.drain()
        if isinstance(self.consolidate, InlineConsolidation):
            # the folds are waited for; model-written summaries only a while (the next
            # run writes what is left: a short `fabula run` does not wait for eight calls)
            await self.consolidate.drain(summaries_s=CLOSING_SUMMARIES_S)
        await self.minds.aclose()
        if self._own_saver is not None:
            await self._own_saver.aclose()
        await self.admin.aclose()

    async def __aenter__(self) -> Fabula:
        # on a cluster, a node that joined since the users were made gets them now
        await sync_users(self.admin)
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    def store(self, story: str, branch: str = "main") -> StoryStore:
        """A handle on one branch of one story (nothing is read: see ``require``)."""
        return StoryStore(self.admin, story, branch, limits=self.settings.limits)

    def read(self, story: str | StoryStore, branch: str = "main") -> Reader:
        """The read side of one branch (``story`` an id, or a handle from :meth:`store`):
        its text, W, B, D, H, plot, evidence, exports, usage, characters and lore. The
        interfaces read through it and nothing else."""
        store = story if isinstance(story, StoryStore) else self.store(story, branch)
        return Reader(
            store, self.settings.prices, lore_budget=self.settings.lore_budget, counter=self.counter
        )

    def context(self, *, auto: bool) -> TurnContext:
        """The run-scoped context the turn graph's nodes are given."""
        return TurnContext(
            admin=self.admin,
            url=self.url,
            minds=self.minds,
            roles=self.roles,
            settings=self.settings,
            auto=auto,
            consolidate=self.consolidate,
            on_commit=self.on_commit,
            on_critique=self.on_critique,
            counter=self.counter,
            indexer=self.indexer,
            embedder=self.embedder,
        )

    # -- stories --------------------------------------------------------------------
    async def new_story(
        self,
        world: str | WorldPack,
        story: str | None = None,
        *,
        finished: bool = True,
        **making: Unpack[Making],
    ) -> StoryStore:
        """Create a story from a world pack (a name, a path, or a loaded pack), made as
        ``making`` says (:class:`Making`: its ``origin`` and ``assets``). Unless
        ``finished`` is False (the caller commits more first, then calls
        :meth:`~fabula.memory.store.StoryStore.finish`), the story is marked whole once its
        characters' users exist; one never marked whole is refused by :meth:`run_turn`. A
        creation that fails (a write refused, a user not made) removes what it wrote.
        """
        pack = world if isinstance(world, WorldPack) else load_world(world)
        assets = making.get("assets")
        store = self.store(story or pack.id)
        await store.create(
            setup_delta(pack, limit=self.settings.limits.delta_bytes),
            world=pack.id,
            title=pack.title,
            rules=pack.rules,
            pack=pack,
            origin=making.get("origin"),
            assets=pack_assets(pack) if assets is None else assets,
            unfinished=True,
            lore=minds_lore(pack),
            voices=minds_voice(pack),
        )
        try:
            for character in await store.characters():
                await ensure_character_user(self.admin, store.story, character)
            await store.set_played(slug(c.name) for c in pack.characters if c.played)
            if finished:
                await store.finish()
        except BaseException:
            await self.delete_story(store.story)  # never left half-made, hidden or not
            raise
        return store

    async def delete_story(self, story: str) -> None:
        """Delete a story: its keys on every branch, its minds and their Redis users, and its
        checkpoint threads. Nothing happens for a story that does not exist."""
        await self.indexer.wait(story)
        if isinstance(self.consolidate, InlineConsolidation):
            await self.consolidate.wait(story)
        store = self.store(story)
        characters = await store.characters() if await store.exists() else []
        await self.minds.forget(story)
        await store.delete()
        # the story's turn threads go too, so a story created again under this id starts clean
        await delete_threads(self.saver, prefix=f"{story}/")
        await drop_character_users(self.admin, story, characters)

    async def stories(self) -> list[str]:
        """Every story id on this server, sorted."""
        return await list_stories(self.admin)

    async def create_story_from_text(
        self, toml: str, source: str, story: str | None = None
    ) -> StoryStore:
        """Like :meth:`create_story`, from the text of an uploaded ``world.toml`` (``source``
        names it in errors)."""
        return await self.create_story(parse_world(toml, source), story)

    async def import_story(
        self,
        files: Sequence[tuple[str, bytes]],
        story: str | None = None,
        *,
        user: str = "User",
        greeting: int | None = None,
    ) -> StoryStore:
        """Like ``fabula import FILE... --id STORY``, from uploaded files (name and bytes):
        character cards (JSON, PNG, CHARX) and lorebooks, several making one cast. Each is
        named in errors by its file name only; at most :data:`MAX_IMPORT_FILES` files, each
        within the import's file limit, all of them holding at most :data:`UPLOAD_LIMITS`'
        ``max_import_bytes`` unpacked. Raises :class:`InvalidInput` for a bad file (one
        line naming it, as the command line's) and writes nothing then."""
        limits = UPLOAD_LIMITS
        if not files:
            raise InvalidInput("an import needs at least one file: a card or a lorebook")
        if len(files) > MAX_IMPORT_FILES:
            raise InvalidInput(f"{len(files)} files; at most {MAX_IMPORT_FILES} import at once")
        names: list[str] = []
        for name, data in files:
            base = _upload_name(name)
            if not base or base.startswith("."):
                raise InvalidInput(f"{name[:80]!r}: a file to import needs a name")
            if base in names:
                raise InvalidInput(f"{base}: two files of that name")
            if len(data) > limits.max_file_bytes:
                raise InvalidInput(
                    f"{base}: {len(data)} bytes, more than the "
                    f"{limits.max_file_bytes} a file may have"
                )
            if _is_preset(data, limits):  # its files are beside it, not in the upload
                raise InvalidInput(
                    f"{base}: a BookWorld preset reads the folders beside it; "
                    "import it with the command line: fabula import PATH"
                )
            names.append(base)
        with tempfile.TemporaryDirectory(prefix="fabula-import-") as folder:
            paths = []
            for base, (_, data) in zip(names, files, strict=True):
                path = Path(folder) / base
                path.write_bytes(data)
                paths.append(path)
            try:
                imported = await asyncio.to_thread(
                    import_paths, paths, story_id=story, user=user, limits=limits
                )
            except InvalidInput as exc:  # named by the file's own name, not the folder's
                line = str(exc).replace(f"{folder}/", "")
                raise InvalidInput(line) from None
        return await self.create_story(
            imported.pack, story, assets=imported.assets, greeting=greeting
        )

    async def summary(self, story: str) -> StorySummary:
        """One story as listed: title, world, head of main, branches, turns awaiting approval."""
        store = self.store(story)
        info = await store.info()
        branches = await store.branches()
        pending = []
        for name in branches:
            found = await self.pending_turn(store.on_branch(name))
            if found is not None:
                pending.append(
                    PendingSummary(story=story, branch=name, turn=found.turn, pending_id=found.id)
                )
        return StorySummary(
            id=story,
            title=info.title,
            world=info.world,
            head=await store.head(),
            branches=len(branches),
            created_at=info.created_at,
            pending=pending,
        )

    async def recall(
        self,
        store: StoryStore,
        request: str,
        *,
        budget: int,
        character: str | None = None,
        as_of: int | None = None,
    ) -> RecallOut:
        """What memory gives ``request`` within ``budget`` tokens: the writer's context, or
        with ``character`` that character's own, read as its Redis user (see
        :func:`fabula.graph.service.reading.recall`)."""
        return await reading.recall(
            store,
            request,
            budget=budget,
            counter=self.counter,
            minds=self.minds,
            character=character,
            as_of=as_of,
            embedder=self.embedder,
            lore_budget=self.settings.lore_budget,
        )

    async def chat(
        self, store: StoryStore, character: str, question: str, *, as_of: int | None = None
    ) -> ChatOut:
        """``character``'s answer to ``question`` from only its own mind, read as its Redis
        user, in its voice when a model is configured (see :mod:`fabula.graph.service.chat`).
        Nothing of it is written."""
        return await chat(
            store,
            character,
            question,
            minds=self.minds,
            counter=self.counter,
            voice=self.roles.voice,
            as_of=as_of,
            lore_budget=self.settings.lore_budget,
        )

    async def lived(
        self, store: StoryStore, character: str, *, as_of: int | None = None
    ) -> LivedOut:
        """The story as ``character`` lived it: what it witnessed and believes, read from
        only its own mind as its Redis user (see :mod:`fabula.graph.service.lived`)."""
        return await lived(store, character, minds=self.minds, as_of=as_of)

    async def summaries(self) -> list[StorySummary]:
        """Every story on the server, as listed (read at once: see :mod:`.listing`)."""
        return await story_summaries(self.admin, self.settings.limits)

    async def create_story(
        self,
        world: str | WorldPack,
        story: str | None = None,
        *,
        greeting: int | None = None,
        **making: Unpack[Making],
    ) -> StoryStore:
        """Create a story (made as ``making`` says: see :meth:`new_story`) and commit its
        pack's scripted opening, each turn checked first.

        An opening turn the critic finds an error in (a character out of nowhere, a place
        put inside something, ...) raises :class:`InvalidWorld` naming the pack's file and
        the turn (``opening.turns[i]``), and the story is removed again: nothing remains.
        ``greeting`` chooses one of the pack's ``opening.greetings`` (prose: an imported card's
        first message), committed after the scripted turns; :class:`InvalidInput` if there is
        no such greeting.
        """
        pack = world if isinstance(world, WorldPack) else load_world(world)
        if greeting is not None and not 0 <= greeting < len(pack.opening.greetings):
            raise InvalidInput(
                f"--greeting {greeting}: the world has {len(pack.opening.greetings)} greetings "
                f"(0 to {len(pack.opening.greetings) - 1})",
                path=pack.source,
            )
        store = await self.new_story(pack, story, finished=False, **making)
        try:
            for i, text in enumerate(pack.opening.turns):
                errors = [
                    f for f in await self.check_scripted(store, text) if f.severity == "error"
                ]
                if errors:
                    field = f"opening.turns[{i}]"
                    quote = f" ({errors[0].quote!r})" if errors[0].quote else ""
                    raise InvalidWorld(
                        f"{pack.source}: {field}: {errors[0].message}{quote}",
                        path=pack.source,
                        field=field,
                    )
                await self.commit_scripted(store, text)
            if greeting is not None:
                await self.commit_scripted(store, pack.opening.greetings[greeting].text)
        except BaseException:
            await self.delete_story(store.story)
            raise
        await store.finish()  # a maker killed before this leaves a story marked unfinished
        return store

    async def require_finished(self, store: StoryStore) -> None:
        """Raise :class:`Conflict` (one line) for a story its maker never finished (killed
        while it committed the opening): continued, it would lack its opening. The request
        is sound; the story's state refuses it."""
        if await store.unfinished():
            raise Conflict(
                f"story {store.story!r} was never finished being made (its maker stopped "
                f"before its opening was committed): delete it (fabula delete {store.story}) "
                "and make it again",
                story=store.story,
            )

    async def check_scripted(self, store: StoryStore, text: str) -> list[Finding]:
        """The symbolic critic's findings on a scripted turn as the next turn (nothing is
        written). Scripted text is controlled English: the offline builder and critic read
        it whatever back end the roles run on."""
        turn = await store.head() + 1
        delta = await OfflineMemoryBuilder().build(store, turn, text)
        return OfflineCritic().critique(await author_view(store), delta, None)

    async def commit_scripted(self, store: StoryStore, text: str) -> str:
        """Commit a scripted turn of controlled English (the pack's opening).

        Scripted text is controlled English by definition, so it is always read by the
        offline memory-builder, whatever back end the roles run on.
        """
        turn = await store.head() + 1
        offline = replace(
            CommitPath.of(self.context(auto=True)), memory_builder=OfflineMemoryBuilder()
        )
        return (await commit_text(offline, store, turn, text)).status

    # -- turns ----------------------------------------------------------------------
    def _config(self, store: StoryStore, turn: int) -> RunnableConfig:
        # max_concurrency bounds the tasks of one step: the fanned-out character agents'
        # model calls (FABULA_MODEL_CONCURRENCY)
        return {
            "configurable": {"thread_id": thread_id(store.story, store.branch, turn)},
            "max_concurrency": self.settings.model_concurrency,
        }

    async def pending_turn(self, store: StoryStore) -> Pending | None:
        """The turn of this branch waiting for a decision, if any."""
        turn = await store.head() + 1
        snapshot = await self.graph.aget_state(self._config(store, turn))
        return pending_in(store, turn, snapshot)

    @contextlib.asynccontextmanager
    async def _turn_lock(
        self, store: StoryStore, turn: int, doing: str, where: dict[str, Any]
    ) -> AsyncIterator[None]:
        """Hold the turn's decision lock (shared by every process) for the body;
        TurnConflict when another holder keeps it past the lock's wait."""
        lock = store.decision_lock(turn)
        try:
            acquired = await lock.acquire()
        except LockError:
            acquired = False
        if not acquired:
            raise TurnConflict(
                f"another {doing} on turn {turn} is still running; try again", **where
            )
        async with renewed(lock):  # renewed while the decision runs, then released
            yield

    async def run_turn(
        self,
        store: StoryStore,
        *,
        auto: bool,
        direction: str | None = None,
        listener: Listener | None = None,
        parts: Mapping[str, Part] | None = None,
    ) -> TurnOutcome:
        """Write the branch's next turn; stop at approval unless ``auto``.

        A story with played characters (:meth:`set_played`) takes each one's part of the
        turn from ``parts`` (by character id or name); a turn that lacks one stops before
        its draft, ``"part"``, asking for it (see :meth:`waiting_parts`), and a run given the
        parts it waits for goes on from there. An ``auto`` run is played by nobody: the
        engine plays each played character whose part it was not given.

        ``listener`` hears each node finish and the prose as it is written. (A run takes no
        lock: a run killed midway must not hold up the next; two runs of one turn commit it
        once, the commit being idempotent.)

        Raises :class:`StoryAtRest` when no character has anything to do: a plan whose
        characters all turn out idle is planned again with the next anchor, once for each
        character, before the story is declared at rest.

        A turn whose last run failed (a model's reply that never validated, say: the error
        is raised and the story left as it was) is run again as its next attempt, planned
        anew as after a rejection: at temperature 0 the same attempt would fail the same
        way, every time. The attempt is read from the turn's checkpoint, not the story.
        """
        await store.require()
        await self.require_finished(store)
        turn = await store.head() + 1
        config = self._config(store, turn)
        snapshot = await self.graph.aget_state(config)
        if pending_in(store, turn, snapshot) is not None:
            return "pending"
        given = await self._parts(store, parts or {})
        if waiting := parts_in(snapshot):
            return await self._answer_parts(store, turn, waiting, given, auto, listener)
        if any(p.accept for p in given.values()):
            raise InvalidInput(
                "a part can take the engine's proposal only when the turn has asked for it "
                "(and shown it): give the part's words",
                story=store.story,
            )
        if direction:  # refused before anything runs (a failed run would be run again)
            await self.check_steering(store, direction)
        first = 0
        if snapshot.values and not snapshot.next:
            # an earlier run of this turn ended without a commit (abandoned): start afresh
            await self.saver.adelete_thread(thread_id(store.story, store.branch, turn))
        elif snapshot.next and isinstance(last := snapshot.values.get("attempt"), int):
            # an earlier run of this turn failed: at the attempt its plan began, or at the
            # next one if it failed while planning (the state still holds the one before)
            first = last + (2 if "plan" in snapshot.next else 1)
            log.warning(
                "turn_run_again",
                story=store.story,
                branch=store.branch,
                turn=turn,
                attempt=first,
                failed_at=list(snapshot.next),
            )
        tries = max(1, len(await store.characters()))
        for attempt in range(first, first + tries):
            start: TurnState = {
                "story": store.story,
                "branch": store.branch,
                "turn": turn,
                "direction": direction,
                "attempt": attempt - 1,
                "parts": {c: p.words or "" for c, p in given.items()},
            }
            try:
                return await self._drive(start, store, turn, auto=auto, listener=listener)
            except StoryAtRest as rest:
                await self.saver.adelete_thread(thread_id(store.story, store.branch, turn))
                if not rest.idle or attempt == first + tries - 1:
                    raise StoryAtRest(rest.message, **rest.context) from None
        raise AssertionError("unreachable")  # pragma: no cover

    async def check_steering(
        self, store: StoryStore, text: str, kind: Literal["direction", "note"] = "direction"
    ) -> None:
        """Raise :class:`InvalidInput` (one line; nothing changes) when the story's planner
        cannot read ``text`` — a direction for the next turn, or a rejection's ``note`` —
        as something to steer the turn by (the offline planner reads a character and a
        goal; a model reads plain words)."""
        if kind == "direction":
            check_bounds(direction=text)
        else:
            check_bounds(note=text)
        why = self.roles.planner.unread(await author_view(store), text, kind)
        if why is not None:
            raise InvalidInput(why, story=store.story, branch=store.branch)

    async def _drive(
        self,
        graph_input: TurnState | Command[Any],
        store: StoryStore,
        turn: int,
        *,
        auto: bool,
        listener: Listener | None,
    ) -> TurnOutcome:
        """Run the turn's graph from ``graph_input`` until it ends or waits for approval.

        A story deleted meanwhile (by another command) raises :class:`StoryDeleted`, once
        what this turn wrote after the deletion is removed too (see :meth:`_swept`)."""
        async with self._sweeping(store):
            config = self._config(store, turn)
            context = self.context(auto=auto)
            with bound_contextvars(story=store.story, branch=store.branch, turn=turn):
                if listener is None:
                    result = await self.graph.ainvoke(
                        graph_input, config, context=context, durability=DURABILITY
                    )
                    if result.get("__interrupt__"):
                        return await self._waiting(config)
                    outcome: TurnOutcome = result.get("outcome", "abandoned")
                    return outcome
                interrupted = False
                async for mode, chunk in self.graph.astream(
                    graph_input,
                    config,
                    context=context,
                    durability=DURABILITY,
                    stream_mode=["updates", "messages", "custom"],
                ):
                    interrupted |= await tell(listener, store, turn, mode, chunk)
            if interrupted:
                return await self._waiting(config)
            final: TurnOutcome = (await self.graph.aget_state(config)).values.get(
                "outcome", "abandoned"
            )
            return final

    async def _waiting(self, config: RunnableConfig) -> TurnOutcome:
        """What an interrupted turn waits for: a played character's part, or a decision."""
        return "part" if parts_in(await self.graph.aget_state(config)) else "pending"

    async def _parts(self, store: StoryStore, parts: Mapping[str, Part]) -> dict[str, Part]:
        """``parts`` by character id, each for a played character; InvalidInput (one line)
        for another character, NotFound for no such character."""
        played = await store.played()
        given: dict[str, Part] = {}
        for who, part in parts.items():
            ident = (await store.resolve(who, "character")).id
            if ident not in played:
                raise InvalidInput(
                    f"{who!r} is not played in story {store.story!r} (played: "
                    f"{', '.join(played) or 'none'}; `fabula play {store.story} {ident}` "
                    "plays it)",
                    story=store.story,
                )
            given[ident] = part
        return given

    async def _answer_parts(
        self,
        store: StoryStore,
        turn: int,
        waiting: Mapping[str, PartRequest],
        given: Mapping[str, Part],
        auto: bool,
        listener: Listener | None,
    ) -> TurnOutcome:
        """Resume the turn waiting for played characters' parts with those ``given``
        (``"part"`` again while one is still missing)."""
        answers = {i: given[r.character] for i, r in waiting.items() if r.character in given}
        if auto:  # an autonomous run plays the parts it was not given: each agent's proposal
            answers |= {i: Part(accept=True) for i in waiting if i not in answers}
        if not answers:
            return "part"
        where = {"story": store.story, "branch": store.branch, "turn": turn}
        async with self._turn_lock(store, turn, "part", where):
            if parts_in(await self.graph.aget_state(self._config(store, turn))) != waiting:
                raise TurnConflict(
                    f"turn {turn}'s parts were given by another run meanwhile; yours changed "
                    "nothing",
                    **where,
                )
            resume = {i: p.model_dump(exclude_defaults=True) for i, p in answers.items()}
            return await self._drive(
                Command(resume=resume), store, turn, auto=auto, listener=listener
            )

    async def set_played(self, store: StoryStore, characters: Sequence[str]) -> list[str]:
        """Make ``characters`` (ids or names) the ones a person plays in the story (none:
        the engine plays them all); the ids played, sorted. NotFound for an unknown one."""
        await store.require()
        ids = [(await store.resolve(c, "character")).id for c in characters]
        await store.set_played(ids)
        return await store.played()

    async def waiting_parts(self, store: StoryStore) -> list[PartRequest]:
        """The parts the branch's next turn waits for (one per played character; none when
        it waits for nothing, or for a decision), each with its character's own view."""
        turn = await store.head() + 1
        return list(parts_in(await self.graph.aget_state(self._config(store, turn))).values())

    @contextlib.asynccontextmanager
    async def _sweeping(self, store: StoryStore) -> AsyncIterator[None]:
        """Raise :class:`StoryDeleted` after the block, or instead of what it raised, when
        the story was deleted meanwhile (once :meth:`_swept` removed what it wrote)."""
        try:
            yield
        except Exception:
            if await self._swept(store):
                raise store.deleted_error(meanwhile=True) from None
            raise
        if await self._swept(store):
            raise store.deleted_error(meanwhile=True)

    async def _swept(self, store: StoryStore) -> bool:
        """Whether the story was deleted while this process wrote it; if so, what it wrote
        since (index keys, checkpoints, a character's user) is removed now: the deletion
        refused its commits, not the writes around them."""
        try:
            if not await store.was_deleted():
                return False
            await self.minds.forget(store.story)
            await store.delete()
            await delete_threads(self.saver, prefix=f"{store.story}/")
            await drop_character_users(self.admin, store.story, [])
        except RedisError:
            return False  # the server cannot say: the error met is the one to report
        return True

    async def decide(
        self,
        store: StoryStore,
        decision: Decision,
        *,
        force: bool = False,
        expect: str | None = None,
        listener: Listener | None = None,
    ) -> TurnOutcome:
        """Resume the pending turn with a human decision (approve, edit or reject).

        Approval commits the delta the approver was shown (from the checkpoint: it is never
        read again), and returns once the server confirms it is on disk (``WAITAOF``); if
        the server cannot confirm it, the outcome is still ``"committed"`` (the turn is in
        the story) and :meth:`decide_turn` reports it as not durable, with why. An edit is
        read once, by the memory-builder and the critic: it then awaits a decision again
        (``"pending"``, shown with its findings), or, with ``decision.now``, is committed.
        An edit the critic finds errors in raises :class:`EditRefused` listing them, unless
        ``force`` (the human commits it explicitly, at once); an edit that cannot be read
        raises :class:`InvalidInput`. Either way the turn still awaits a decision, as it
        was, and nothing is written.

        One decision at a time resumes a turn (a lock shared by every process): a decision
        that finds the turn decided meanwhile, or its draft rejected and rewritten, raises
        :class:`TurnConflict` instead of acting on what its maker did not see. An edit's
        text longer than the settings' limit raises :class:`LimitExceeded` before the turn
        is touched. ``expect`` is the id of the draft the decision's maker read
        (:attr:`Pending.id`): another draft, or none, is :class:`TurnConflict` too.
        ``listener`` hears the turn's graph as :meth:`run_turn`'s does.
        """
        decided = await self._decide(store, decision, force=force, expect=expect, listener=listener)
        return decided[0]

    async def _decide(
        self,
        store: StoryStore,
        decision: Decision,
        *,
        force: bool = False,
        expect: str | None = None,
        listener: Listener | None = None,
    ) -> tuple[TurnOutcome, str | None]:
        """:meth:`decide`, and the branch its committed turn is on when a rewind took it off
        ``store``'s branch meanwhile (None: where it was decided, or nothing committed)."""
        check_bounds(note=decision.note, expect=expect)
        await store.require()
        if decision.action == "edit" and decision.text:
            self.settings.limits.check_text(decision.text, story=store.story, branch=store.branch)
        seen = await self.pending_turn(store)
        if expect is not None and (seen is None or seen.id != expect):
            raise await self._decided(store, expect, decision, seen)
        if seen is None:
            raise NotFound(
                f"story {store.story!r} has no turn awaiting approval on branch {store.branch!r}",
                story=store.story,
                branch=store.branch,
            )
        where = {"story": store.story, "branch": store.branch, "turn": seen.turn}
        kept = await read_drafts(store, seen.turn)
        if decision.choice is not None:
            option = kept.get(decision.choice) if decision.action == "approve" else None
            if option is None:
                listed = ", ".join(o.id for o in kept.options) or "none"
                raise InvalidInput(
                    f"turn {seen.turn} has no draft {decision.choice!r} to choose (its drafts: "
                    f"{listed}; `fabula run --alternatives N` writes them)",
                    **where,
                )
            decision = decision.model_copy(update={"choice": option.id})
        if force:
            decision = decision.model_copy(update={"force": True})
        async with self._turn_lock(store, seen.turn, "decision", where):
            now = await self.pending_turn(store)
            if now is None or now.turn != seen.turn:
                head = await store.head()
                what = "committed" if head >= seen.turn else "abandoned"
                raise TurnConflict(
                    f"turn {seen.turn} was decided by another decision meanwhile ({what}); "
                    f"yours ({decision.action}) changed nothing",
                    **where,
                )
            if now.checkpoint != seen.checkpoint:
                raise TurnConflict(
                    f"turn {seen.turn}'s draft was rejected and written again meanwhile; "
                    f"yours ({decision.action}) changed nothing: review it with `fabula pending`",
                    **where,
                )
            outcome = await self._drive(
                Command(resume=decision.model_dump()),
                store,
                seen.turn,
                auto=False,
                listener=listener,
            )
            if outcome == "pending" and decision.action == "edit":
                back = await self.pending_turn(store)
                raise_if_edit_not_taken(back.request if back else None, where)
            if outcome != "committed":
                return outcome, None
            # a rewind may have taken the turn off the branch the moment it was committed:
            # the branch that kept it holds it (and its drafts) now
            texts = {o.text for o in kept.options} | {seen.request.draft.text}
            if decision.text:
                texts |= {decision.text, decision.text.strip()}
            holder = await self._holder(store, seen.turn, texts)
            if holder is not None and kept.options:
                # the drafts stay with the turn: which one it is now (an edit: none)
                text = (await holder.turn_texts(seen.turn, seen.turn))[0].text
                chosen = next((o.id for o in kept.options if o.text == text), None)
                if chosen is not None:
                    await choose_draft(holder, seen.turn, chosen)
            moved = holder.branch if holder is not None and holder.branch != store.branch else None
            return outcome, moved

    async def _holder(self, store: StoryStore, turn: int, texts: set[str]) -> StoryStore | None:
        """The branch holding turn ``turn`` that a decision just committed on ``store``'s
        branch (its text one of ``texts``): that branch, or, when a rewind took the turn off
        it meanwhile, the branch that kept it (forked from it before ``turn``); failing a
        text (an edit reworded), ``store``'s branch if it has the turn, else the one branch
        that does; None if that is not known."""
        table = await store.branches()
        kept = [
            store.on_branch(name)
            for name, b in table.items()
            if b.parent == store.branch and b.fork_turn is not None and b.fork_turn < turn
        ]
        holding = [b for b in (store, *kept) if await b.head() >= turn]
        for branch in holding:
            if (await branch.turn_texts(turn, turn))[0].text in texts:
                return branch
        if holding and holding[0] is store:
            return store
        return holding[0] if len(holding) == 1 else None

    async def _decided(
        self, store: StoryStore, expect: str, decision: Decision, waiting: Pending | None
    ) -> TurnConflict:
        """The conflict of a decision about draft ``expect``, which no longer waits
        (``waiting`` is the draft that does, if any)."""
        turn_text = expect.partition(".")[0]
        turn = int(turn_text) if turn_text.isdigit() else None
        if waiting is not None and waiting.turn == turn:
            return TurnConflict(
                f"turn {turn}'s draft {expect} is no longer the one waiting (it was rejected "
                f"or edited, and {waiting.id} waits now); yours ({decision.action}) changed "
                "nothing: review it with `fabula pending`",
                story=store.story,
                branch=store.branch,
                turn=turn,
            )
        if turn is not None and await store.head() >= turn:
            what = f"turn {turn} was already committed"
        else:
            what = f"turn {turn if turn is not None else '?'} was already decided"
        return TurnConflict(
            f"{what} by another decision; yours ({decision.action}) changed nothing",
            story=store.story,
            branch=store.branch,
            turn=turn,
        )

    async def decide_turn(
        self, store: StoryStore, decision: Decision, **deciding: Unpack[Deciding]
    ) -> DecisionOut:
        """:meth:`decide`, answered as a :class:`DecisionOut` (for a commit, whether the
        server confirmed it is on disk, and the branch holding it if a rewind took it off
        the store's branch meanwhile)."""
        if decision.action == "edit" and not (decision.text or "").strip():
            raise InvalidInput("an edit needs the new text", story=store.story)
        await store.require()
        pending = await self.pending_turn(store)
        turn = pending.turn if pending is not None else await store.head() + 1
        outcome, moved_to = await self._decide(store, decision, **deciding)
        unsynced = None
        if outcome == "committed":
            state = await self.graph.aget_state(self._config(store, turn))
            unsynced = state.values.get("unsynced")
        return DecisionOut(
            story=store.story,
            branch=store.branch,
            turn=turn,
            action=decision.action,
            outcome=outcome,
            head=await store.head(),
            durable=None if outcome != "committed" else unsynced is None,
            unsynced=unsynced,
            moved_to=moved_to,
        )

    async def run(
        self,
        store: StoryStore,
        turns: int,
        *,
        auto: bool,
        direction: str | None = None,
        listener: Listener | None = None,
        progress: Callable[[int, TurnOutcome], Awaitable[None]] | None = None,
        parts: Mapping[str, Part] | None = None,
    ) -> RunOut:
        """Write up to ``turns`` turns; without ``auto``, stop at the first awaiting approval.
        With played characters, stop at the first turn that waits for a part; ``parts``
        are the first turn's (see :meth:`run_turn`).

        ``progress(done, outcome)`` is called after each turn. A story whose characters
        have nothing left to do stops early, with ``rest`` saying why.
        """
        if turns < 1:
            raise InvalidInput(f"turns must be at least 1, not {turns}", story=store.story)
        await store.require()
        written = 0
        outcome: TurnOutcome | None = None
        rest: str | None = None
        for _ in range(turns):
            try:
                outcome = await self.run_turn(
                    store, auto=auto, direction=direction, listener=listener, parts=parts
                )
                parts = None  # the parts given are the first turn's
            except StoryAtRest as stopped:
                rest = stopped.message
                break
            except StoryDeleted:  # the story was there when the run began
                await self._swept(store)
                raise store.deleted_error(meanwhile=True) from None
            if outcome in ("committed", "duplicate"):
                written += 1
            if progress is not None:
                await progress(written, outcome)
            if outcome in ("pending", "part"):
                break
        found = await self.pending_turn(store)
        return RunOut(
            story=store.story,
            branch=store.branch,
            written=written,
            outcome=outcome,
            head=await store.head(),
            rest=rest,
            pending=None
            if found is None
            else PendingSummary(
                story=store.story, branch=store.branch, turn=found.turn, pending_id=found.id
            ),
        )

    async def pending_details(self, store: StoryStore) -> PendingTurn:
        """The pending turn as an approver reads it; raises NotFound when nothing waits."""
        await store.require()
        pending = await self.pending_turn(store)
        if pending is None:
            raise NotFound(
                f"story {store.story!r} has no turn awaiting approval on branch {store.branch!r}",
                story=store.story,
                branch=store.branch,
            )
        request = pending.request
        draft, findings = request.draft, request.findings
        delta = await self._pending_delta(store, pending)
        return PendingTurn(
            id=pending.id,
            story=store.story,
            branch=store.branch,
            turn=pending.turn,
            draft=draft.text,
            revision=draft.revision,
            sentences=sentences_of(draft.text, findings),
            findings=findings,
            changes=await changes_of(store, delta),
            plan=request.plan,
            edit_problem=edit_problem(request),
        )

    async def _pending_delta(self, store: StoryStore, pending: Pending) -> TurnDelta:
        """The delta approving ``pending`` would commit: the one kept with the draft, else
        (a checkpoint older than the kept delta) built again from the draft (the same,
        with the offline engine)."""
        if pending.request.delta is not None:
            return pending.request.delta
        view = await author_view(store)
        text = pending.request.draft.text
        return enrich(view, await self.roles.memory_builder.build(store, pending.turn, text))

    async def pending_listed(self) -> list[PendingListed]:
        """Every turn awaiting approval, each with its draft, findings and changes (what
        ``fabula pending --json`` and the API's ``/pending`` list)."""
        listed = []
        for p in await self.all_pending():
            details = await self.pending_details(self.store(p.story, p.branch))
            listed.append(PendingListed(**details.model_dump(), pending_id=details.id))
        return listed

    async def all_pending(self) -> list[Pending]:
        """Every turn awaiting approval, on every branch of every story."""
        out = []
        for story in await self.stories():
            store = self.store(story)
            for branch in await store.branches():
                pending = await self.pending_turn(store.on_branch(branch))
                if pending is not None:
                    out.append(pending)
        return out

    # -- branches -------------------------------------------------------------------
    async def fork(
        self, store: StoryStore, at_turn: int, branch: str | None = None, realise: str | None = None
    ) -> StoryStore:
        """Fork ``store``'s branch at ``at_turn``; with ``realise``, pursue that hypothesis."""
        await store.require()
        if realise is not None:
            hyps = await project_hypotheses(store, as_of=at_turn)
            hyp = hyps.get(realise)
            if hyp is None or hyp.status != "open":
                raise InvalidInput(
                    f"no open hypothesis {realise!r} at turn {at_turn}", story=store.story
                )
        name = branch or (f"{realise.replace('.', '-')}" if realise else f"fork-{at_turn}")
        return await fork(store, at_turn, name, pursue=realise)

    async def _free_name(self, store: StoryStore, base: str) -> str:
        """``base``, or ``base-2``, ``base-3``, ... : the first name no branch has."""
        taken = set(await store.branches())
        name, n = base[:60], 2
        while name in taken:
            name, n = f"{base[:56]}-{n}", n + 1
        return name

    async def _refuse_if_pending(self, store: StoryStore, doing: str) -> None:
        """Conflict while a turn of the branch awaits a decision (nothing is written)."""
        waiting = await self.pending_turn(store)
        if waiting is not None:
            raise Conflict(
                f"cannot {doing} branch {store.branch!r} of {store.story!r}: turn "
                f"{waiting.turn} awaits a decision (approve, edit or reject it first)",
                story=store.story,
                branch=store.branch,
                turn=waiting.turn,
            )

    async def _plan_of(self, store: StoryStore, turn: int) -> TurnPlan:
        """The plan committed turn ``turn`` was written to (kept in its thread), or, for a
        turn written without one (scripted), a plan with every character in focus."""
        state = await self.graph.aget_state(self._config(store, turn))
        plan = state.values.get("plan") if state.values else None
        if plan:  # a TurnPlan; a checkpoint older than the typed state holds its JSON
            return TurnPlan.model_validate(plan)
        focal = tuple(await store.characters()) or ("nobody",)
        return TurnPlan(scene_goal=f"turn {turn}, as edited", focal=focal)

    async def rewind(self, store: StoryStore, to_turn: int, keep: str | None = None) -> RewindOut:
        """Make turn ``to_turn`` the head of the branch; the turns after it are kept as
        branch ``keep`` (default ``<branch>-after-<turn>``), forked from it at ``to_turn``.

        Nothing is deleted. Refused, nothing written: (:class:`Conflict`) while a turn of the
        branch awaits a decision, when a branch was forked from it after ``to_turn``, or
        (:class:`InvalidInput`) for a turn that is not one of its own before its head (see
        :func:`fabula.memory.rewind.rewind`). Its episode index and hierarchy are derived
        again from its turns; the kept branch's index from its own.
        """
        await store.require()
        await self._refuse_if_pending(store, "rewind")
        keep = keep or await self._free_name(store, f"{store.branch}-after-{to_turn}")
        # background work on the story's derived keys is done before they are replaced
        await self.indexer.wait(store.story)
        if isinstance(self.consolidate, InlineConsolidation):
            await self.consolidate.wait(store.story)
        done = await rewind(store, to_turn, keep)
        # the turns after the new head had threads of this branch: they are the kept
        # branch's now (its texts); the next turn here starts afresh
        for turn in range(to_turn + 1, done.old_head + 2):
            await self.saver.adelete_thread(thread_id(store.story, store.branch, turn))
        kept = store.on_branch(keep)
        for branch in (store, kept):
            await index_through(branch, embedder=self.embedder)
            await hierarchy.consolidate(branch)
        return RewindOut(
            story=store.story,
            branch=store.branch,
            head=await store.head(),
            kept=keep,
            kept_head=await kept.head(),
        )

    async def retcon(
        self,
        store: StoryStore,
        turn: int,
        text: str,
        *,
        branch: str | None = None,
        force: bool = False,
    ) -> RetconOut:
        """Edit committed turn ``turn``: a new branch (default ``<branch>-edit-<turn>``)
        forks the store's branch at ``turn - 1`` and commits ``text`` as its turn ``turn``,
        read by the memory-builder and checked by the critic, so memory is derived again
        from there. The store's branch is not touched.

        The critic's errors refuse it (:class:`EditRefused`, the new branch is removed
        again: nothing remains) unless ``force``; :class:`InvalidInput` for a turn that is
        not committed (a turn awaiting approval is edited with :meth:`decide`) or empty
        text, :class:`LimitExceeded` for text over the limit.
        """
        await store.require()
        text = text.strip()
        where = {"story": store.story, "branch": store.branch, "turn": turn}
        if not text:
            raise InvalidInput("an edit needs the new text", **where)
        self.settings.limits.check_text(text, **where)
        head = await store.head()
        if not 1 <= turn <= head:
            raise InvalidInput(
                f"cannot edit turn {turn} of branch {store.branch!r}: its committed turns "
                f"are 1..{head}"
                + (
                    " (a turn awaiting approval is edited with `fabula edit` without --turn)"
                    if turn == head + 1
                    else ""
                ),
                **where,
            )
        name = branch or await self._free_name(store, f"{store.branch}-edit-{turn}")
        child = await fork(store, turn - 1, name)
        try:
            view = await author_view(child)
            delta = enrich(view, await self.roles.memory_builder.build(child, turn, text))
            findings = self.roles.critic.critique(view, delta, await self._plan_of(store, turn))
            errors = [f for f in findings if f.severity == "error"]
            if errors and not force:
                listed = "; ".join(
                    f"{f.kind}: {f.message}" + (f" ({f.quote!r})" if f.quote else "")
                    for f in errors
                )
                raise EditRefused(
                    f"the critic found {len(errors)} error(s) in the new turn {turn}: {listed} "
                    "— nothing was written; commit it anyway with --force",
                    **where,
                )
            await commit_delta(CommitPath.of(self.context(auto=False)), child, delta)
        except BaseException:
            await drop_branch(child)
            raise
        return RetconOut(
            story=store.story,
            parent=store.branch,
            branch=name,
            turn=turn,
            head=await child.head(),
            findings=findings,
        )

    # -- alternative drafts -----------------------------------------------------------
    async def alternatives(
        self,
        store: StoryStore,
        count: int,
        *,
        direction: str | None = None,
        listener: Listener | None = None,
    ) -> DraftsOut:
        """``count`` drafts of the branch's next turn, side by side, each with its
        findings and changes; kept with the turn (:mod:`fabula.memory.drafts`), so any
        process shows them and approving one (``Decision.choice``) commits exactly it.

        The turn is written first if none is pending (stopping for approval); its pending
        draft is the first. The others are written by the same graph on scratch threads
        (nothing is committed), each planned with the next attempt — the planner's next
        choice of anchor and cast — and a draft whose text repeats an earlier one is
        dropped; ``note`` says why when fewer than ``count`` differ.
        """
        if not 1 <= count <= MAX_ALTERNATIVES:
            raise InvalidInput(
                f"--alternatives is 1 to {MAX_ALTERNATIVES}, not {count}", story=store.story
            )
        await store.require()
        waiting = await self.pending_turn(store)
        if waiting is None:
            outcome = await self.run_turn(store, auto=False, direction=direction, listener=listener)
            waiting = await self.pending_turn(store)
            if outcome != "pending" or waiting is None:  # pragma: no cover - auto is off
                raise InvalidInput(f"turn was {outcome}, not pending", story=store.story)
        turn = waiting.turn
        main = (await self.graph.aget_state(self._config(store, turn))).values
        first = _option(f"{turn}.d1", waiting.request)
        options = [first]
        attempt = int(main.get("attempt", 0))
        tries = count + 2 * max(1, len(await store.characters()))
        note = None
        for k in range(1, tries):
            if len(options) >= count:
                break
            option = await self._scratch_draft(
                store, turn, main, attempt + k, f"{turn}.d{len(options) + 1}"
            )
            if option is None:  # at rest for that plan: the next may have something to do
                continue
            if all(o.text != option.text for o in options):
                options.append(option)
        if len(options) < count and note is None:
            note = (
                f"{len(options)} different drafts of {count} asked for: the planner's "
                "other choices wrote the same text"
            )
        await save_drafts(store, turn, options)
        return await self.drafts(store, turn, note=note)

    async def _scratch_draft(
        self, store: StoryStore, turn: int, main: Mapping[str, Any], attempt: int, ident: str
    ) -> DraftOption | None:
        """One more draft of ``turn``, planned with ``attempt``, written on a scratch thread
        up to the approval interrupt (nothing committed; the thread is deleted). None when
        the story is at rest for that plan."""
        scratch = f"{thread_id(store.story, store.branch, turn)}~{ident}"
        config: RunnableConfig = {
            "configurable": {"thread_id": scratch},
            "max_concurrency": self.settings.model_concurrency,
        }
        start: TurnState = {
            "story": store.story,
            "branch": store.branch,
            "turn": turn,
            "direction": main.get("direction"),
            "attempt": attempt - 1,
            "notes": list(main.get("notes", [])),
            "parts": dict(main.get("parts", {})),  # the played characters' parts as given
        }
        try:
            with bound_contextvars(story=store.story, branch=store.branch, turn=turn):
                await self.graph.ainvoke(
                    start, config, context=self.context(auto=False), durability=DURABILITY
                )
            snapshot = await self.graph.aget_state(config)
        except StoryAtRest:
            return None
        finally:
            await self.saver.adelete_thread(scratch)
        pending = pending_in(store, turn, snapshot)
        return None if pending is None else _option(ident, pending.request)

    async def drafts(
        self, store: StoryStore, turn: int | None = None, *, note: str | None = None
    ) -> DraftsOut:
        """The alternative drafts kept for ``turn`` (default: the pending turn, else the
        next), as an approver compares them."""
        await store.require()
        waiting = await self.pending_turn(store)
        if turn is None:
            turn = waiting.turn if waiting is not None else await store.head() + 1
        kept = await read_drafts(store, turn)
        base = store
        out = []
        for option in kept.options:
            findings = [Finding.model_validate(f) for f in option.findings]
            delta = TurnDelta.model_validate(option.delta)
            out.append(
                DraftOut(
                    id=option.id,
                    draft=option.text,
                    sentences=sentences_of(option.text, findings),
                    findings=findings,
                    changes=await changes_of(base, delta),
                    plan=TurnPlan.model_validate(option.plan) if option.plan else None,
                )
            )
        pending_id = waiting.id if waiting is not None and waiting.turn == turn else None
        return DraftsOut(
            story=store.story,
            branch=store.branch,
            turn=turn,
            pending_id=pending_id,
            drafts=out,
            chosen=kept.chosen,
            note=note,
        )
