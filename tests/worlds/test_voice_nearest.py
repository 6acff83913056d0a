"""The exemplars of a voice nearest a situation (:func:`fabula.worlds.voice.nearest`)."""

from __future__ import annotations

import json

from fabula.worlds.loader import load_world
from fabula.worlds.pack import WorldPack
from fabula.worlds.voice import VOICE_CHARS, VOICE_KEPT, Exemplar, minds_voice, nearest, parse_voice

LINES = [
    Exemplar("The lamp wants oil."),
    Exemplar("Ben, the logbook stays dry."),
    Exemplar("Storm tonight, Cora."),
    Exemplar("灯塔的灯需要油。"),
]


def texts(found: list[Exemplar]) -> list[str]:
    return [x.text for x in found]


def test_the_exemplars_sharing_most_with_the_situation_come_first() -> None:
    assert texts(nearest(LINES, "Cora at the tower in a storm", k=1)) == ["Storm tonight, Cora."]
    found = nearest(LINES, "Ben and the logbook, the lamp", k=2)
    assert texts(found) == ["Ben, the logbook stays dry.", "The lamp wants oil."]


def test_a_chinese_situation_finds_a_chinese_line_by_its_character_pairs() -> None:
    assert texts(nearest(LINES, "灯塔", k=1)) == ["灯塔的灯需要油。"]


def test_with_nothing_shared_the_first_are_given_and_stop_words_match_nothing() -> None:
    assert texts(nearest(LINES, "the and you", k=2)) == texts(LINES[:2])


def test_the_budget_skip_and_duplicates_are_kept_to() -> None:
    twice = [*LINES, Exemplar("The  lamp wants oil.", "said")]
    found = nearest(twice, "lamp oil", k=5, skip=["Storm tonight, Cora."])
    assert texts(found).count("The lamp wants oil.") == 1 and len(found) == 3
    assert all(len(x.text.split()) <= 4 for x in nearest(LINES, "lamp", budget=4, k=5))


def test_a_packs_examples_are_written_per_character_cut_and_bounded() -> None:
    pack = load_world("lighthouse")
    data = pack.model_dump()
    data["characters"][0]["examples"] = ("x " * VOICE_CHARS, *(f"line {i}" for i in range(300)))
    docs = minds_voice(WorldPack.model_validate(data))
    assert list(docs) == [pack.characters[0].name.lower()]
    held = parse_voice(docs[pack.characters[0].name.lower()])
    assert len(held) == VOICE_KEPT and len(held[0].text) <= VOICE_CHARS + 2
    assert json.loads(docs[pack.characters[0].name.lower()])["examples"][1] == "line 0"
    assert parse_voice("not json") == () and parse_voice(None) == ()
