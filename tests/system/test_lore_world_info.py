"""World Info as SillyTavern does it, end to end through the commands (issue 49):
``fabula import`` of a SillyTavern World Info export and a card with its own book, then
``fabula recall`` as the author and ``--as`` the card's character. Each expectation is a
rule of SillyTavern's ``world-info.js`` at release 1.12.6, named in its test; the import's
findings (an entry RE2 cannot run) are printed, one line each (issues 45 and 49).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from fabula.testing import imports as fx
from fabula.testing.cli import Cli


def world_info() -> dict[str, Any]:
    """A SillyTavern World Info export, its entries keyed by uid."""
    rows = [
        (["lamp"], "the lamp", "The lamp hangs in the tower."),
        (["tower"], "the tower", "Stone upon stone."),
        (["/Rose/"], "Rose", "A name, as written."),
        (["/lamp(?= room)/"], "ahead", "A lookahead."),
        (["power"], "power", "The glade's power."),
    ]
    return {
        "entries": {
            str(uid): {
                "uid": uid,
                "key": keys,
                "keysecondary": [],
                "comment": comment,
                "content": content,
                "constant": False,
                "selective": True,
                "order": 100,
                "disable": False,
            }
            for uid, (keys, comment, content) in enumerate(rows)
        }
    }


def bo() -> dict[str, Any]:
    """A V2 card whose own book's entry says ``use_regex: true``, as SillyTavern's card
    export writes on every entry."""
    doc = fx.v2_card("Bo")
    doc["data"]["character_book"]["entries"] = [
        {
            "id": 0,
            "keys": ["king"],
            "content": "Bo serves the king.",
            "comment": "the king",
            "enabled": True,
            "insertion_order": 100,
            "use_regex": True,
            "extensions": {},
        },
        {
            "id": 1,
            "keys": ["ship"],
            "content": "Never told.",
            "comment": "the ship",
            "enabled": True,
            "insertion_order": 100,
            "extensions": {"probability": 0},  # useProbability true by default, 4542-4543
        },
        {
            "id": 2,
            "keys": ["sea"],
            "content": "The sea is grey.",
            "comment": "sea",
            "enabled": True,
            "insertion_order": 100,
            "extensions": {"delay_until_recursion": True},  # 4536
        },
    ]
    return doc


def recall(cli: Cli, story: str, text: str, *extra: str) -> list[str]:
    shown = cli("recall", story, text, "--json", *extra)
    assert shown.exit_code == 0, shown.output
    return sorted(x["name"] for x in json.loads(shown.stdout)["lore"])


def test_import_and_recall_as_sillytavern(redis_url: str, tmp_path: Path) -> None:
    """Recursion on (3988-3992), a regex on the text as written (245-248), whole words on
    (262-263, the fresh install's settings), a card's use_regex ignored (4519-4566); the
    lookahead's entry imported disabled with one finding, the rest working."""
    cli = Cli(redis_url, tmp_path)
    files = [
        fx.write_json(tmp_path / "bo.json", bo()),
        fx.write_json(tmp_path / "wi.json", world_info()),
    ]
    made = cli("import", *map(str, files), "--id", "wi", "--json")
    assert made.exit_code == 0, made.output
    [finding] = json.loads(made.stdout)["findings"]
    assert (
        "\n" not in finding
        and "wi.json: entries[3] ('ahead'): imported disabled: key '/lamp(?= room)/'" in finding
    )
    assert recall(cli, "wi", "the lamp room") == ["the lamp", "the tower"]
    assert recall(cli, "wi", "rose and Rose") == ["Rose"]
    assert recall(cli, "wi", "What are your powers?") == []
    assert recall(cli, "wi", "not to my liking", "--as", "bo") == []
    assert recall(cli, "wi", "long live the king", "--as", "bo") == ["the king"]
    # read from the character's own keyspace: its book's extensions still apply there
    assert recall(cli, "wi", "the ship", "--as", "bo") == []
    assert recall(cli, "wi", "the sea", "--as", "bo") == []
