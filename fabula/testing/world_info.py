"""SillyTavern World Info as its editor saves it, for the tests that compare Fabula's
activation with SillyTavern's own (tests/worlds/test_world_info_st.py and its chat cases):
an entry, a book of entries, a ``settings.json``."""

from __future__ import annotations

from typing import Any

BIG = 100_000  # a budget nothing reaches


def entry(uid: int, keys: list[str], comment: str, content: str, **extra: Any) -> dict[str, Any]:
    """A SillyTavern World Info entry as its editor saves it (the fields a case needs)."""
    return {
        "uid": uid,
        "key": keys,
        "keysecondary": [],
        "comment": comment,
        "content": content,
        "constant": False,
        "selective": True,
        "selectiveLogic": 0,
        "order": 100,
        "disable": False,
        **extra,
    }


def book(*entries: dict[str, Any]) -> dict[str, Any]:
    """A World Info file holding ``entries``, keyed by their uid as SillyTavern keys them."""
    return {"entries": {str(e["uid"]): e for e in entries}}


def st_settings(**world_info: Any) -> dict[str, Any]:
    """A SillyTavern ``settings.json`` (the parts a case needs), its World Info settings
    ``world_info`` over a fresh install's."""
    return {
        "username": "User",
        "world_info_settings": {
            "world_info": {"globalSelect": []},
            "world_info_depth": 2,
            "world_info_budget": 25,
            "world_info_recursive": True,
            "world_info_case_sensitive": False,
            "world_info_match_whole_words": True,
            **world_info,
        },
    }
