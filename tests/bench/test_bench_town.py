"""``fabula bench town`` at a small size, in this process, through real Redis: the JSON the
issue asks for, with the narrative loop's baseline, and bad options refused in one line."""

from __future__ import annotations

import asyncio

import pytest

from fabula.bench.town import run_town, town_world
from fabula.errors import InvalidInput


class TestBenchTown:
    async def test_a_small_generated_town_reports_every_figure(self, redis_url: str) -> None:
        """Eight characters in three places for three ticks: every key is there, the ticks
        played scenes with no leak, duplicate or loss, the spread has one share per
        completed tick and starts from the one holder, and the baseline ran as many turns
        as the ticks played scenes."""
        result = await run_town(redis_url, 8, 3, 3, 0, False, None)
        for key in (
            "characters", "places", "ticks", "completed_ticks", "scenes", "leaks",
            "duplicates", "lost", "killed_workers", "tick_ms", "spread", "baseline",
        ):  # fmt: skip
            assert key in result, key
        assert (result["characters"], result["places"], result["ticks"]) == (8, 3, 3)
        assert result["completed_ticks"] >= 1 and result["scenes"] >= result["completed_ticks"]
        assert (result["leaks"], result["duplicates"], result["lost"]) == (0, 0, 0)
        assert len(result["spread"]) == result["completed_ticks"]
        assert result["spread_start"] == pytest.approx(1 / 8)
        assert set(result["tick_ms"]) >= {"p50", "p95"}
        loop = result["baseline"]["narrative_loop"]
        assert loop["turns"] == result["scenes"]

    def test_the_shipped_town_is_the_twenty_five(self) -> None:
        """25 characters in 10 places is the shipped pack; other sizes are generated, with
        one holder of the news."""
        assert town_world(25, 10).id == "town"
        generated = town_world(40, 5)
        assert (len(generated.characters), len(generated.places)) == (40, 5)
        assert [c.name for c in generated.characters if c.secrets or c.news] == ["Agent0"]

    async def test_killing_a_worker_needs_another(self, redis_url: str) -> None:
        """--kill-worker with fewer than two workers is refused in one line, before any
        story is made."""
        with pytest.raises(InvalidInput, match="--workers 2 or more"):
            await run_town(redis_url, 8, 3, 1, 1, True, None)

    async def test_two_runs_on_workers_in_one_redis_both_finish(self, redis_url: str) -> None:
        """Two runs with two workers each (one killed mid-scene, if it is caught in one),
        back to back on one Redis, as two bench runs are: the first's workers, killed, are
        still registered when the second starts its own, which must start all the same
        (their names are the run's), so both runs play every tick, losing nothing."""
        for _ in range(2):
            result = await asyncio.wait_for(
                run_town(redis_url, 8, 3, 2, 2, True, None, baseline_turns=1), 180
            )
            assert result["completed_ticks"] == 2 and result["killed_workers"] <= 1
            assert (result["leaks"], result["duplicates"], result["lost"]) == (0, 0, 0)
