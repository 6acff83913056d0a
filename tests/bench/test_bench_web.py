"""`fabula bench web` end to end on a small load: the studio in its own process, real HTTP."""

from __future__ import annotations

import json
from pathlib import Path

from fabula.bench.web import run_web
from fabula.testing.redis import on_cluster


async def test_bench_web_small(redis_url: str, tmp_path: Path) -> None:
    """Every turn approved over HTTP is committed once; the JSON has the issue's shape,
    with the service's own figures as the baseline. Ten turns, the default's: the stories
    were once of a world that came to rest before them, and every turn after was an error
    ("the run did not stop at approval")."""
    out = tmp_path / "web.json"
    result = await run_web(
        2,
        10,
        clients=2,
        redis_url=redis_url,
        json_out=str(out),
        quiet=True,
        long_turn=4,
        concurrency=(20,),
    )
    assert result == json.loads(out.read_text())
    assert result["benchmark"] == "web" and (result["stories"], result["turns"]) == (2, 10)
    assert (result["errors"], result["lost"], result["doubled"]) == (0, 0, 0), result
    for key in ("pages_ms", "approve_ms", "minds_ms", "choose_ms"):
        assert set(result[key]) == {"p50", "p95"} and result[key]["p50"] > 0
        assert set(result["baselines"]["service_in_process"][key]) == {"p50", "p95"}
    assert set(result["met"]) == {"pages_ms_p95", "approve_ms_p95", "choose_ms_p95"}
    # choosing among 3 drafts: each choice committed once (counted in lost/doubled above)
    assert result["drafts"] == 3 and result["drafts_ms"]["p50"] > 0
    # 20 clients at once, each holding an event stream and loading the minds: none refused
    (burst,) = result["concurrency"]
    assert (burst["clients"], burst["errors"]) == (20, 0), burst
    assert burst["minds_ms"]["p95"] > 0 and burst["stream_hello_ms"]["p95"] > 0
    # every approval confirmed on disk, over HTTP and in process, on the test server's policy
    assert (result["unsynced"], result["baselines"]["service_in_process"]["unsynced"]) == (0, 0)
    assert on_cluster() or result["appendfsync"] == "always"
