"""Rough edges of the writer's desk, each reproduced first: a reject note is optional on the
command line as in the studio, and ``export --format json`` carries the premise, the
characters and every character's beliefs."""

from __future__ import annotations

import json

from fabula.testing.cli import fabula_editing as _cli


class TestEdges:
    def test_reject_without_a_note(self, redis_url: str) -> None:
        """`reject` without --note was refused ("Missing option '--note'"); now the turn is
        planned again, as the studio's reject with an empty note does."""
        assert _cli(redis_url, "new", "--world", "hollow_book", "--id", "tale").returncode == 0
        assert _cli(redis_url, "run", "tale").returncode == 0
        first = json.loads(_cli(redis_url, "pending", "--json").stdout)[0]["pending_id"]
        done = _cli(redis_url, "reject", "tale")
        assert done.returncode == 0, done.stderr
        again = json.loads(_cli(redis_url, "pending", "--json").stdout)
        assert [p["turn"] for p in again] == [4] and again[0]["pending_id"] != first

    def test_export_json_has_premise_characters_and_minds(self, redis_url: str) -> None:
        """The JSON export had the text, W, D and H only; now the premise, the characters
        and B[c] of each (Leo still believes the key is in the drawer)."""
        assert _cli(redis_url, "new", "--world", "hollow_book", "--id", "tale").returncode == 0
        done = _cli(redis_url, "export", "tale", "--format", "json")
        assert done.returncode == 0, done.stderr
        data = json.loads(done.stdout)
        assert data["premise"] and "key" in data["premise"].lower()
        assert [(c["id"], c["name"]) for c in data["characters"]] == [
            ("leo", "Leo"),
            ("mara", "Mara"),
        ]
        leo = {
            (b["subject"], b["attribute"]): b["value"] for b in data["beliefs"]["leo"]["beliefs"]
        }
        assert leo[("brass_key", "location")] == "desk_drawer"
        assert set(data["beliefs"]) == {"leo", "mara"}

    def test_pending_json_has_the_draft_findings_and_changes(self, redis_url: str) -> None:
        """`pending --json` listed story, branch, turn and id only; now each turn has what
        the API's pending gives: its draft, findings and changes."""
        assert _cli(redis_url, "new", "--world", "hollow_book", "--id", "tale").returncode == 0
        assert _cli(redis_url, "run", "tale").returncode == 0
        listed = json.loads(_cli(redis_url, "pending", "--json").stdout)
        assert len(listed) == 1
        one = listed[0]
        assert (one["story"], one["turn"], one["pending_id"]) == ("tale", 4, one["id"])
        assert one["draft"] and isinstance(one["findings"], list)
        assert one["changes"]["events"]
