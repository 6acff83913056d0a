"""A story's mode (issue 47: "narrative mode stays the default; ticks are chosen per
story"): a pack says how its stories advance (the shipped town: in ticks), ``fabula new
--mode`` chooses otherwise, and ``fabula run`` advances each story its own way."""

from __future__ import annotations

from pathlib import Path

from fabula.testing.cli import Cli


def test_run_advances_each_story_in_its_own_mode(redis_url: str, tmp_path: Path) -> None:
    cli = Cli(redis_url, tmp_path)
    assert cli("new", "--world", "town", "--id", "harvest").exit_code == 0
    ran = cli("run", "harvest", "--turns", "2", "--auto", COLUMNS="200")
    assert ran.exit_code == 0, ran.output
    assert "tick 1" in ran.stdout and "tick 2" in ran.stdout  # two ticks, every place
    assert "awaits approval" not in ran.stdout
    listed = cli("pending")
    assert "harvest" not in listed.stdout  # autonomous ticks are committed as they run

    # the same pack as a narrative: one scene a turn, waiting for approval
    assert cli("new", "--world", "town", "--id", "novel", "--mode", "narrative").exit_code == 0
    turn = cli("run", "novel")
    assert turn.exit_code == 0 and "turn 1 awaits approval" in turn.stdout

    # and any pack in ticks
    assert cli("new", "--world", "hollow_book", "--id", "tale", "--mode", "ticks").exit_code == 0
    ticked = cli("run", "tale", COLUMNS="200")  # without --auto: a tick for approval
    assert ticked.exit_code == 0 and "tick 1 awaits approval" in ticked.stdout


def test_what_ticks_cannot_take_is_refused_in_one_line(redis_url: str, tmp_path: Path) -> None:
    """Drafts to choose from or a direction belong to one scene a turn: on a story in
    ticks each is refused, naming it, and nothing is written (a played character's part
    is played in its scene: tests/graph/test_tick_review.py)."""
    cli = Cli(redis_url, tmp_path)
    assert cli("new", "--world", "town", "--id", "harvest").exit_code == 0
    for args in (
        ("--alternatives", "2"),
        ("--direction", "Mara goes to the inn"),
    ):
        said = cli.fails("run", "harvest", *args)
        assert "runs in ticks" in said and args[0] in said
    shown = cli("show", "harvest", "world", "--json")
    assert shown.exit_code == 0
    assert cli("stories", "--json").stdout.count('"head": 0') == 1  # still at its setup
    refused = cli("new", "--world", "town", "--id", "other", "--mode", "sideways")
    assert refused.exit_code == 2 and "sideways" in refused.output
