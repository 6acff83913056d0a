"""A story made before per-character rosters (``c:<C>:<branch>:ent``) still runs, and its
characters' rebuilt rosters name nothing the commits would not have given them.

The old shape is made for real: a story written by today's code, its rosters deleted (what
an older Fabula left: no roster at all). Opening a character's mind rebuilds its roster
from its own beliefs and memories; it must equal, id for id and turn for turn, the roster the
commits had written (which the leak property test checks against what it witnessed), and
the story must go on (without a roster its characters cannot even read their goals).
"""

from __future__ import annotations

import json
from pathlib import Path

import redis.asyncio as aredis

from fabula.bench.loop import synthetic_world
from fabula.graph.service import Fabula
from fabula.memory import keys
from fabula.settings import Settings
from fabula.worlds.loader import load_world


async def _rosters(admin: aredis.Redis, story: str, cast: list[str]) -> dict[str, dict[str, int]]:
    out = {}
    for c in cast:
        raw = await admin.hgetall(keys.known_entities(story, "main", c))
        out[c] = {i: json.loads(v)["known_from"] for i, v in raw.items()}
    return out


class TestOldStories:
    async def test_a_story_without_rosters_gets_them_back_and_goes_on(
        self, redis_url: str, tmp_path: Path
    ) -> None:
        async with Fabula(redis_url, Settings(home=tmp_path, consolidate="off")) as fab:
            for story, world in (("hb", load_world("hollow_book")), ("ring", synthetic_world(4))):
                store = await fab.create_story(world, story)
                await fab.run(store, 4, auto=True)
                cast = await store.characters()
                written = await _rosters(fab.admin, story, cast)
                assert all(written.values()), written
                for c in cast:  # the old shape: no roster at all
                    await fab.admin.delete(keys.known_entities(story, "main", c))
                await fab.minds.forget(story)
                head = await store.head()
                for c in cast:
                    await fab.minds.mind(story, c)  # opening a mind rebuilds its roster
                assert await _rosters(fab.admin, story, cast) == written
                out = await fab.run(store, 2, auto=True)
                assert out.written == 2 and await store.head() == head + 2, out
