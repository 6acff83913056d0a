"""Making and removing stories: :class:`Stories`, from a world pack or uploaded files, with
the pack's scripted opening; a story's played characters; deletion of all it holds."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Literal, TypedDict, Unpack

from fabula.agents.contracts import Finding
from fabula.agents.views import author_view
from fabula.errors import InvalidInput, InvalidWorld
from fabula.graph.commit import CommitPath, commit_text
from fabula.graph.service.core import Core
from fabula.graph.service.responses.stories import WorldInfo
from fabula.graph.service.uploads import import_uploads
from fabula.logs import get_logger
from fabula.memory.acl import drop_character_users, ensure_character_user
from fabula.memory.records import slug
from fabula.memory.store import StoryStore, list_stories
from fabula.worlds.imports.assemble import Imported
from fabula.worlds.loader import (
    builtin_worlds,
    load_world,
    minds_lore,
    pack_assets,
    setup_delta,
)
from fabula.worlds.lore import WorldInfoSettings, with_setting
from fabula.worlds.pack import WorldPack
from fabula.worlds.voice import minds_voice

log = get_logger(__name__)


class Making(TypedDict, total=False):
    """How :meth:`Stories.create_story` makes a story."""

    origin: str | None
    """What made it when no person did (``fabula demo``: ``"demo"``)."""
    assets: Mapping[str, bytes] | None
    """The files its characters' ``image`` fields name (default: read from the pack's
    folder, see :func:`~fabula.worlds.loader.pack_assets`)."""
    mode: Literal["narrative", "ticks"] | None
    """How the interfaces advance it (default: the pack's ``mode``): ``narrative``, a
    scene a turn; ``ticks``, every place's scene at once."""


def world_infos() -> list[WorldInfo]:
    """The world packs shipped with Fabula."""
    packs = [load_world(name) for name in builtin_worlds()]
    return [WorldInfo(id=p.id, title=p.title, premise=p.premise) for p in packs]


class Stories:
    """Stories made, listed and deleted, over the application's :class:`Core`."""

    def __init__(self, core: Core) -> None:
        self.core = core

    async def _make(self, pack: WorldPack, story: str | None, making: Making) -> StoryStore:
        """The story ``pack`` sets up, its characters' users made; not yet marked whole
        (:meth:`~fabula.memory.store.StoryStore.finish`): one never marked whole is refused
        by a run. A creation that fails (a write refused, a user not made) removes what it
        wrote."""
        core = self.core
        assets = making.get("assets")
        store = core.store(story or pack.id)
        await store.create(
            setup_delta(pack, limit=core.settings.limits.delta_bytes),
            world=pack.id,
            title=pack.title,
            rules=pack.rules,
            pack=pack,
            origin=making.get("origin"),
            assets=pack_assets(pack) if assets is None else assets,
            unfinished=True,
            lore=minds_lore(pack),
            voices=minds_voice(pack),
            mode=making.get("mode") or pack.mode,
        )
        try:
            for character in await store.characters():
                await ensure_character_user(core.admin, store.story, character)
            await store.set_played(slug(c.name) for c in pack.characters if c.played)
        except BaseException:
            await self.delete_story(store.story)  # never left half-made, hidden or not
            raise
        return store

    async def create_story(
        self,
        world: str | WorldPack,
        story: str | None = None,
        *,
        opening: bool = True,
        greeting: int | None = None,
        **making: Unpack[Making],
    ) -> StoryStore:
        """Create a story from a world pack (a name, a path, or a loaded pack), made as
        ``making`` says (:class:`Making`: its ``origin`` and ``assets``), and commit its
        pack's scripted opening (unless ``opening`` is False), each turn checked first.

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
                f"greeting {greeting}: the world has {len(pack.opening.greetings)} greetings "
                f"(0 to {len(pack.opening.greetings) - 1})",
                path=pack.source,
            )
        store = await self._make(pack, story, making)
        try:
            for i, text in enumerate(pack.opening.turns if opening else ()):
                errors = [
                    f for f in await self._check_scripted(store, text) if f.severity == "error"
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

    async def import_story(
        self,
        files: Sequence[tuple[str, bytes]] | Imported,
        story: str | None = None,
        *,
        user: str = "User",
        greeting: int | None = None,
    ) -> StoryStore:
        """:meth:`create_story` from character cards (JSON, PNG, CHARX) and lorebooks,
        several making one cast: uploaded files (name and bytes; see
        :func:`~fabula.graph.service.uploads.import_uploads`, ``{{user}}`` named ``user``),
        or files ``fabula import`` has read already (an :class:`Imported`). The story starts
        with ``greeting`` (default: the first, where there is one), read as any turn is.
        Raises :class:`InvalidInput` for a bad file (one line naming it) or no such
        greeting, and writes nothing then. Each of the import's findings (an entry imported
        disabled) is logged, one line each (``import_finding``)."""
        if isinstance(files, Imported):
            imported = files
        else:
            imported = await import_uploads(files, story, user=user)
        for finding in imported.findings:  # an entry imported disabled: never in silence
            log.warning("import_finding", story=story, finding=finding)
        if greeting is None and imported.pack.opening.greetings:
            greeting = 0
        return await self.create_story(
            imported.pack, story, assets=imported.assets, greeting=greeting
        )

    async def delete_story(self, story: str) -> None:
        """Delete a story: its keys on every branch, its minds and their Redis users, and its
        checkpoint threads. Nothing happens for a story that does not exist."""
        core = self.core
        await core.quiesce(story)
        store = core.store(story)
        characters = await store.characters() if await store.exists() else []
        await core.minds.forget(story)
        await store.delete()
        # the story's turn threads go too, so a story created again under this id starts clean
        from fabula.graph.checkpoint import delete_threads  # loads the checkpointer

        await delete_threads(core.saver, prefix=f"{story}/")
        await drop_character_users(core.admin, story, characters)

    async def stories(self) -> list[str]:
        """Every story id on this server, sorted."""
        return await list_stories(self.core.admin)

    async def set_played(self, store: StoryStore, characters: Sequence[str]) -> list[str]:
        """Make ``characters`` (ids or names) the ones a person plays in the story (none:
        the engine plays them all); the ids played, sorted. NotFound for an unknown one."""
        await store.require()
        ids = [(await store.resolve(c, "character")).id for c in characters]
        await store.set_played(ids)
        return await store.played()

    async def set_world_info(
        self, store: StoryStore, changes: Sequence[tuple[str, str]]
    ) -> WorldInfoSettings:
        """Set the story's World Info settings: each ``(name, value)`` of ``changes`` as a
        user types it (:func:`fabula.worlds.lore.with_setting`), in order; the settings
        now. Kept in the story's pack, with each character's copy of its lore (which
        carries them), in one transaction: every later scan reads them (timed effects are
        computed from the turns, so they follow at once). Raises :class:`InvalidInput` (one
        line) for a story with no pack or a bad name or value, :class:`Conflict` when the
        pack changed meanwhile; nothing is written then."""
        await store.require()
        document, digest = await store.pack_document(), await store.pack_digest()
        if document is None or digest is None:
            raise InvalidInput(
                f"story {store.story!r} has no world pack, so no World Info settings",
                story=store.story,
            )
        pack = WorldPack.model_validate_json(document)
        settings = pack.lore.world_info
        for name, value in changes:
            settings = with_setting(settings, name, value)
        if settings == pack.lore.world_info:
            return settings
        changed = pack.model_copy(
            update={"lore": pack.lore.model_copy(update={"world_info": settings})}
        )
        own = minds_lore(changed)
        cast: dict[str, str | None] = {slug(c.name): own.get(slug(c.name)) for c in pack.characters}
        await store.replace_pack(digest, changed.model_dump_json(), cast)
        log.info("world_info_set", story=store.story, changes=[n for n, _ in changes])
        return settings

    async def _check_scripted(self, store: StoryStore, text: str) -> list[Finding]:
        """The offline critic's findings on a scripted turn as the next turn (nothing is
        written). Scripted text is controlled English: the offline builder and critic read
        it whatever back end the roles run on."""
        from fabula.agents.critic.offline import OfflineCritic  # the reader: when read
        from fabula.agents.memory_builder.offline import OfflineMemoryBuilder

        turn = await store.head() + 1
        delta = await OfflineMemoryBuilder().build(store, turn, text)
        return OfflineCritic().critique(await author_view(store), delta, None)

    async def commit_scripted(self, store: StoryStore, text: str) -> str:
        """Commit a scripted turn of controlled English (the pack's opening).

        Scripted text is controlled English by definition, so it is always read by the
        offline memory-builder, whatever back end the roles run on.
        """
        from fabula.agents.memory_builder.offline import OfflineMemoryBuilder  # the reader

        turn = await store.head() + 1
        ctx = self.core.context(auto=True)
        offline = replace(CommitPath.of(ctx), memory_builder=OfflineMemoryBuilder())
        return (await commit_text(offline, store, turn, text)).status
