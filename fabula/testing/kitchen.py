"""The kitchen of the leak properties: Ann, Ben and Cal share a kitchen (and a garden), a
drawer, a basket and a box, a scarf and a key; each has a goal the others cross. Shared by
tests/system/test_prose_leak_property.py (moves) and test_state_leak_property.py (changes
of state)."""

from __future__ import annotations

from fabula.worlds.pack import WorldPack

PEOPLE = ("Ann", "Ben", "Cal")
THINGS = ("scarf", "key")
BOXES = ("drawer", "basket", "box")
START_IN = {"scarf": "drawer", "key": "basket"}
GOALS = {"Ann": "keep the key hidden", "Ben": "get the key", "Cal": "get the scarf"}
SELF = {"Ann": "herself", "Ben": "himself", "Cal": "himself"}
PRONOUN = {"Ann": "she", "Ben": "he", "Cal": "he"}

PACK = WorldPack.model_validate(
    {
        "id": "kitchen",
        "title": "The Kitchen",
        "premise": "Ann, Ben and Cal share a kitchen, and each keeps things from the others.",
        "places": [{"name": "kitchen"}, {"name": "garden"}],
        "characters": [
            {
                "name": n,
                "location": "kitchen",
                "goals": [GOALS[n]],
                "examples": [f"VOICE-{n} talks"],
            }
            for n in PEOPLE
        ],
        "objects": [
            *({"name": b, "location": "kitchen", "container": True} for b in BOXES),
            *({"name": t, "location": START_IN[t]} for t in THINGS),
        ],
    }
)
