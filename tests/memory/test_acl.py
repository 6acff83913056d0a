"""Per-character Redis ACL users: a mind reads itself and common knowledge, nothing else."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import redis.asyncio as aredis
from redis.exceptions import NoPermissionError

from fabula.errors import AccessDenied
from fabula.memory import keys
from fabula.memory.acl import CharacterMind, MindPool, ensure_character_user, open_mind
from fabula.memory.delta import DeltaBuilder, TurnDelta
from fabula.memory.projections import project_beliefs, project_world
from fabula.memory.server import EmbeddedRedis, without_credentials
from fabula.memory.store import StoryStore
from fabula.worlds.loader import load_world, setup_delta

STORY = "hb"
TEXT = "Leo put the brass key in the desk drawer."
READ_KEY = "return redis.call('HGETALL', KEYS[1])"


def turn1() -> TurnDelta:
    b = DeltaBuilder(1, TEXT)
    put = b.event("put", b.span(0, len(TEXT)), actor="leo", place="study", witnesses=["leo"])
    b.state("brass_key", "location", "desk_drawer", event=put)
    b.belief(["leo"], "brass_key", "location", "desk_drawer", mode="participated", event=put)
    b.belief(["mara"], "leo", "location", "study", mode="observed", event=put)
    b.belief(["leo", "mara"], "brass_key", "location", "leo", mode="inferred", event=put)
    return b.build()


async def new_story(client: aredis.Redis, story: str = STORY) -> StoryStore:
    store = StoryStore(client, story)
    await store.create(setup_delta(load_world("hollow_book")), world="hollow_book", title="T")
    await store.commit(turn1())
    return store


@pytest.fixture()
async def store(aredis_client: aredis.Redis) -> StoryStore:
    return await new_story(aredis_client)


@pytest.fixture()
async def leo(store: StoryStore, redis_url: str) -> AsyncIterator[CharacterMind]:
    mind = await open_mind(store.client, redis_url, STORY, "leo")
    yield mind
    await mind.close()


class TestOwnMind:
    async def test_reads_its_own_beliefs(self, leo: CharacterMind) -> None:
        """The handle reads the character's current beliefs on its own connection."""
        view = await leo.beliefs()
        assert view.holder == ("leo",)
        assert view.where("brass_key") == "desk_drawer"
        assert view.get("brass_key", "location").event == "e1.0"  # type: ignore[union-attr]

    async def test_reads_its_own_beliefs_as_of(self, leo: CharacterMind) -> None:
        """as_of runs the read-only history function with the character's own rights."""
        assert (await leo.beliefs(as_of=0)).where("brass_key") == "leo"
        assert (await leo.beliefs(as_of=1)).where("brass_key") == "desk_drawer"

    async def test_reads_its_nested_beliefs(self, leo: CharacterMind) -> None:
        """Chains rooted at the character (what Leo thinks Mara believes) are its own."""
        assert (await leo.beliefs(["mara"])).where("brass_key") == "leo"
        assert (await leo.beliefs(["mara"], as_of=0)).beliefs == {}

    async def test_reads_common_knowledge(self, leo: CharacterMind) -> None:
        """What a character knows of (the pack's places and cast, what it met) is in its own
        mind, readable by it."""
        entities = await leo.entities()
        assert {"leo", "mara", "brass_key", "study"} <= set(entities)

    async def test_own_keys_through_a_project_function(self, leo: CharacterMind) -> None:
        """A registered read-only function may read keys of the character's own mind."""
        reply = await leo.client.fcall_ro(  # type: ignore[no-untyped-call]
            "fabula_as_of",
            3,
            keys.belief_records(STORY, "main", "leo"),
            keys.belief_from(STORY, "main", "leo"),
            keys.beliefs_current(STORY, "main", "leo"),
            1,
            "",
        )
        assert any("brass_key" in r for r in reply)

    async def test_user_is_idempotent(self, store: StoryStore) -> None:
        """Ensuring the user twice keeps the same secret (an open handle keeps working)."""
        first = await ensure_character_user(store.client, STORY, "leo")
        second = await ensure_character_user(store.client, STORY, "leo")
        assert first == second
        assert first.username == keys.acl_user(STORY, "leo")


class TestDenied:
    async def test_world_keys(self, leo: CharacterMind) -> None:
        """The shared world is not the character's: reading W is refused by Redis."""
        with pytest.raises(NoPermissionError):
            await leo.client.hgetall(keys.world_current(STORY, "main"))  # type: ignore[misc]
        with pytest.raises(NoPermissionError):
            await project_world(StoryStore(leo.client, STORY))
        with pytest.raises(NoPermissionError):
            await project_world(StoryStore(leo.client, STORY), as_of=1)
        with pytest.raises(NoPermissionError):
            await leo.client.hgetall(keys.events(STORY, "main"))  # type: ignore[misc]

    async def test_other_mind(self, leo: CharacterMind) -> None:
        """Another character's mind is refused, directly and through the library."""
        with pytest.raises(NoPermissionError):
            await leo.client.hgetall(keys.beliefs_current(STORY, "main", "mara"))  # type: ignore[misc]
        with pytest.raises(NoPermissionError):
            await project_beliefs(StoryStore(leo.client, STORY), "mara")

    async def test_other_mind_via_handle_is_access_denied(self, leo: CharacterMind) -> None:
        """A handle pointed at another character raises AccessDenied (now and as of a turn)."""
        wrong = CharacterMind(leo.client, STORY, "mara")
        with pytest.raises(AccessDenied) as info:
            await wrong.beliefs()
        assert info.value.context == {"story": STORY, "character": "mara"}
        with pytest.raises(AccessDenied):
            await wrong.beliefs(as_of=1)

    async def test_other_story(self, leo: CharacterMind, store: StoryStore) -> None:
        """The same character name in another story is another mind."""
        await new_story(store.client, "hb2")
        with pytest.raises(NoPermissionError):
            await leo.client.hgetall(keys.beliefs_current("hb2", "main", "leo"))  # type: ignore[misc]
        with pytest.raises(NoPermissionError):
            await leo.client.hgetall(keys.entities("hb2"))  # type: ignore[misc]

    async def test_own_secret_and_meta(self, leo: CharacterMind) -> None:
        """The user cannot read its own password key, the story's meta, or list keys."""
        with pytest.raises(NoPermissionError):
            await leo.client.get(keys.acl_secret(STORY, "leo"))
        with pytest.raises(NoPermissionError):
            await leo.client.hgetall(keys.meta(STORY))  # type: ignore[misc]
        with pytest.raises(NoPermissionError):
            await leo.client.keys("*")
        with pytest.raises(NoPermissionError):
            await leo.client.scan(0)

    async def test_writes(self, leo: CharacterMind) -> None:
        """Nothing can be written, not even in the character's own mind."""
        own = keys.beliefs_current(STORY, "main", "leo")
        with pytest.raises(NoPermissionError):
            await leo.client.hset(own, "brass_key|location", "{}")  # type: ignore[misc]
        with pytest.raises(NoPermissionError):
            await leo.client.delete(own)
        with pytest.raises(NoPermissionError):
            await leo.client.hset(keys.entities(STORY), "x", "{}")  # type: ignore[misc]
        with pytest.raises(NoPermissionError):
            await leo.client.eval("return 1", 0)  # type: ignore[no-untyped-call]
        with pytest.raises(NoPermissionError):
            await leo.client.fcall("fabula_commit", 1, keys.head(STORY, "main"))  # type: ignore[no-untyped-call]
        fence = [keys.turns(STORY, "main"), keys.fence(STORY, "main", 1), 1, "x", 60]
        with pytest.raises(NoPermissionError):  # nor settle a commit (a write)
            await leo.client.fcall("fabula_fence", 2, *fence)  # type: ignore[no-untyped-call]
        with pytest.raises(NoPermissionError):
            await leo.client.fcall_ro("fabula_fence", 2, *fence)  # type: ignore[no-untyped-call]
        with pytest.raises(NoPermissionError):
            await leo.client.flushall()
        with pytest.raises(NoPermissionError):
            await leo.client.fcall_ro(  # type: ignore[no-untyped-call]
                "fabula_commit", 1, keys.head(STORY, "main")
            )

    async def test_no_free_form_scripts(self, leo: CharacterMind, store: StoryStore) -> None:
        """EVAL_RO/EVALSHA_RO are refused outright, even for a script reading its own keys."""
        own = keys.beliefs_current(STORY, "main", "leo")
        for key in (own, keys.world_current(STORY, "main")):
            with pytest.raises(NoPermissionError, match="'eval_ro' command"):
                await leo.client.eval_ro(READ_KEY, 1, key)  # type: ignore[no-untyped-call]
        sha = await store.client.script_load(READ_KEY)
        with pytest.raises(NoPermissionError, match="'evalsha_ro' command"):
            await leo.client.evalsha_ro(sha, 1, own)  # type: ignore[no-untyped-call]

    async def test_history_function_on_other_keys(self, leo: CharacterMind) -> None:
        """The read-only history function cannot be pointed at keys outside the mind."""
        with pytest.raises(NoPermissionError):
            await leo.client.fcall_ro(  # type: ignore[no-untyped-call]
                "fabula_as_of",
                2,
                keys.world_records(STORY, "main"),
                keys.world_from(STORY, "main"),
                1,
                "",
            )
        with pytest.raises(NoPermissionError):  # its own history, another's current beliefs
            await leo.client.fcall_ro(  # type: ignore[no-untyped-call]
                "fabula_as_of",
                3,
                keys.belief_records(STORY, "main", "leo"),
                keys.belief_from(STORY, "main", "leo"),
                keys.beliefs_current(STORY, "main", "mara"),
                1,
                "",
            )


class TestPersistence:
    async def test_users_survive_a_restart(self) -> None:
        """Users are saved to the ACL file and their secrets to the AOF: a restart keeps both."""
        directory = Path(tempfile.mkdtemp(prefix="fa-", dir="/tmp"))
        server = EmbeddedRedis(directory / "r")
        try:
            url = server.ensure_started()
            admin = aredis.Redis.from_url(url, decode_responses=True)
            await new_story(admin)
            creds = await ensure_character_user(admin, STORY, "leo")
            await admin.aclose()
            server.stop()
            assert not server.is_running()

            assert server.ensure_started() == url
            mind = CharacterMind(
                aredis.Redis.from_url(
                    without_credentials(url),
                    username=creds.username,
                    password=creds.password,
                    decode_responses=True,
                ),
                STORY,
                "leo",
            )
            try:
                assert (await mind.beliefs()).where("brass_key") == "desk_drawer"
                assert (await mind.beliefs(as_of=0)).where("brass_key") == "leo"
                with pytest.raises(NoPermissionError):
                    await mind.client.hgetall(keys.world_current(STORY, "main"))  # type: ignore[misc]
                with pytest.raises(AccessDenied):
                    await CharacterMind(mind.client, STORY, "mara").beliefs()
                with pytest.raises(NoPermissionError):
                    await mind.client.hset(  # type: ignore[misc]
                        keys.beliefs_current(STORY, "main", "leo"), "x", "y"
                    )
            finally:
                await mind.close()
        finally:
            server.stop()
            shutil.rmtree(directory, ignore_errors=True)


class TestMindPool:
    async def test_at_most_limit_minds_stay_open(
        self, aredis_client: aredis.Redis, redis_url: str
    ) -> None:
        """Many stories' minds keep a bounded number of connections open: the least recently
        used is closed, and a mind handed out before it was closed still answers."""
        stores = [await new_story(aredis_client, f"pool{i}") for i in range(3)]
        pool = MindPool(aredis_client, redis_url, limit=2)

        async def connected(story: str, character: str) -> int:
            user = keys.acl_user(story, character)
            return sum(1 for c in await aredis_client.client_list() if c.get("user") == user)

        first = await pool.mind("pool0", "leo")
        assert (await first.beliefs()).holder == ("leo",)
        assert await connected("pool0", "leo") == 1
        again = await pool.mind("pool0", "leo")
        assert again is first
        for store in stores[1:]:
            await (await pool.mind(store.story, "leo")).beliefs()
        assert len(pool) == 2
        assert await connected("pool0", "leo") == 0  # the oldest was closed
        assert await connected("pool2", "leo") == 1
        assert (await first.beliefs()).holder == ("leo",)  # still usable: it reconnects
        await first.close()
        await pool.aclose()
        assert len(pool) == 0


class TestRoster:
    async def test_a_character_knows_of_only_what_it_met(self, redis_url: str) -> None:
        """After "Mara put the silver letter in the hollow book." while Leo is in the
        hallway, the letter is in the story (W) and in Mara's roster, but not in Leo's: not
        in his mind's entities (read through his own Redis user, which cannot read the
        story's full list), not under "Things you know of" in his model prompt, and his
        recall does not read "silver letter" as naming it. The pack's places and cast, and
        what he met, he knows of."""
        from fabula.agents.character.model import render_mind
        from fabula.agents.contracts import TurnPlan
        from fabula.agents.shared.brief import brief_for
        from fabula.agents.views import author_view
        from fabula.graph.service import Fabula
        from fabula.settings import Settings

        async with Fabula(redis_url, Settings(home=Path("/nonexistent"))) as fab:
            pack = load_world("hollow_book")
            store = fab.store(await fab.create_story(pack, "hb", opening=False))
            for text in pack.opening.turns:  # Leo ends in the hallway
                await fab.commit_scripted(store, text)
            assert await fab.commit_scripted(
                store, "Mara put the silver letter in the hollow book."
            )
            assert "silver_letter" in await store.entities()
            view = await author_view(store)
            assert view.world.where("leo") == "hallway"
            leo = await fab.minds.mind("hb", "leo")
            mara = await fab.minds.mind("hb", "mara")
            known = await leo.entities()
            assert "silver_letter" not in known
            assert {"leo", "mara", "study", "hallway", "brass_key", "desk_drawer"} <= set(known)
            assert "silver_letter" in await mara.entities()
            assert "silver_letter" not in await leo.entities(as_of=await store.head())
            assert "silver_letter" not in await mara.entities(as_of=await store.head() - 1)
            with pytest.raises(NoPermissionError):
                await leo.client.hgetall(keys.entities("hb"))
            brief = brief_for(view, "leo", TurnPlan(scene_goal="g", focal=("leo",)))
            prompt = render_mind(brief, await leo.beliefs(), await leo.memories(), known)
            assert "silver" not in prompt.lower()
            recalled = await leo.recall("Where is the silver letter?", budget=1000)
            assert "silver_letter" not in recalled.plan.entities
            told = await mara.recall("Where is the silver letter?", budget=1000)
            assert "silver_letter" in told.plan.entities
