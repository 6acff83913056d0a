"""Other processes writing the same story: real `fabula` processes on one real Redis.

- `fabula delete` while `fabula run --auto` writes the story: the deletion fences the
  runner (the commit function refuses a story marked deleted), every key of the story goes
  (no index key, checkpoint or character user left behind by the runner), and the runner
  says in one line that the story was deleted;
- three `fabula run --auto` on one story at once: the story stays consistent, and a run that
  loses a turn to another says that another process is writing the story.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
from pathlib import Path

import redis

from fabula.bench.loop import synthetic_world
from fabula.errors import StoryDeleted, TurnConflict
from fabula.graph.service import Fabula
from fabula.memory import keys
from fabula.memory.connection import connect
from fabula.settings import Settings
from fabula.testing.stories import check_story


def _start(url: str, home: Path, *args: str) -> subprocess.Popen[str]:
    env = {**os.environ, "FABULA_REDIS_URL": url, "FABULA_HOME": str(home), "COLUMNS": "200"}
    env["FABULA_CONSOLIDATE"] = "off"
    return subprocess.Popen(
        [sys.executable, "-m", "fabula", *args],
        env=env,
        text=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )


async def _new_story(url: str, home: Path, story: str) -> None:
    async with Fabula(url, Settings(home=home, consolidate="off")) as fab:
        await fab.create_story(synthetic_world(3), story)  # never at rest


def _leftovers(client: redis.Redis, story: str) -> list[str]:
    """Whatever of ``story`` is on the server: its keys (but its deletion mark), checkpoint
    keys of its threads, and its characters' users."""
    found = [k for k in client.scan_iter(match=keys.story_pattern(story), count=1000)]
    found = [k for k in found if k != keys.deleted(story)]
    found += [k for k in client.scan_iter(match="fab:ckpt:*", count=1000) if f"{{{story}%2F" in k]
    found += [m for m in client.smembers("fab:ckpt:threads") if m.startswith(f"{story}/")]
    found += [u for u in client.acl_users() if u.startswith(keys.acl_user(story, ""))]
    return sorted(found)


class TestDeleteWhileRunning:
    def test_delete_fences_the_runner_and_leaves_nothing(
        self, redis_url: str, tmp_path: Path
    ) -> None:
        """Two rounds, the deletion at two moments of the run: the runner exits 3 with one
        line saying the story was deleted, and nothing of the story is left."""
        client = connect(redis_url)
        for round_, after in enumerate((2, 5)):
            story = f"gone{round_}"
            asyncio.run(_new_story(redis_url, tmp_path, story))
            runner = _start(redis_url, tmp_path, "run", story, "--turns", "500", "--auto")
            deadline = time.monotonic() + 120
            while int(client.hget(keys.head(story, "main"), "turn") or -1) < after:
                assert runner.poll() is None and time.monotonic() < deadline, runner.stderr
                time.sleep(0.01)
            deleter = _start(redis_url, tmp_path, "delete", story, "--yes")
            assert deleter.wait(120) == 0, deleter.communicate()
            _, stderr = runner.communicate(timeout=120)
            assert runner.returncode == StoryDeleted.exit_code, stderr
            assert len(stderr.strip().splitlines()) == 1, stderr
            assert f"story {story!r} was deleted by another command" in stderr, stderr
            assert _leftovers(client, story) == []
            assert story not in client.smembers(keys.STORIES)
        client.close()


class TestThreeRuns:
    def test_three_runs_at_once_stay_consistent_and_the_losers_say_why(
        self, redis_url: str, tmp_path: Path
    ) -> None:
        """Each run either writes its turns or stops with one line saying another process
        is writing the story (never a bare "already committed with other text")."""
        asyncio.run(_new_story(redis_url, tmp_path, "three"))
        runs = [
            _start(redis_url, tmp_path, "run", "three", "--turns", "12", "--auto") for _ in range(3)
        ]
        for run in runs:
            _, stderr = run.communicate(timeout=300)
            if run.returncode == 0:
                continue
            assert run.returncode == TurnConflict.exit_code, stderr
            assert len(stderr.strip().splitlines()) == 1, stderr
            assert "another process is writing this story" in stderr, stderr
        assert check_story(redis_url, "three") >= 12
