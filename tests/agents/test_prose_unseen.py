"""Cues of not seeing, read by the prose reader and kept by the store (issue 45, item 3).

Each form of :data:`fabula.testing.unseen_forms.FORMS` tells Ann slipping the key into the
box, in a kitchen where Ben and Cal are too, with a cue that Ben (or nobody) saw it. Each is
committed through the real path (the prose reader, the tracker, the store's commit) and
then each mind is read as ``fabula show S beliefs C`` reads it: whoever did not see keeps
the key in the basket.
"""

from __future__ import annotations

import itertools

import pytest

from fabula.agents.reading import unseen
from fabula.graph.service import Fabula
from fabula.memory.projections import project_beliefs
from fabula.memory.store import StoryStore
from fabula.testing.unseen_forms import FORMS, UnseenForm
from fabula.worlds.pack import WorldPack

PACK = WorldPack.model_validate(
    {
        "id": "kitchen",
        "title": "The Kitchen",
        "premise": "Ann, Ben and Cal share a kitchen.",
        "places": [{"name": "kitchen"}, {"name": "garden"}],
        "characters": [{"name": n, "location": "kitchen"} for n in ("Ann", "Ben", "Cal")],
        "objects": [
            *({"name": b, "location": "kitchen", "container": True} for b in ("basket", "box")),
            {"name": "drawer", "location": "kitchen", "container": True},
            {"name": "key", "location": "basket"},
            {"name": "scarf", "location": "drawer"},
        ],
    }
)
_ids = itertools.count()


async def told(app: Fabula, *turns: str) -> StoryStore:
    store = app.store(await app.create_story(PACK, f"unseen{next(_ids)}", opening=False))
    for text in turns:
        await app.commit_scripted(store, text)
    return store


async def believed(store: StoryStore, thing: str = "key") -> dict[str, str | None]:
    """Where each character believes ``thing`` is (``fabula show S beliefs C``)."""
    return {c: (await project_beliefs(store, [c])).where(thing) for c in ("ann", "ben", "cal")}


@pytest.mark.parametrize("form", FORMS, ids=[f.name for f in FORMS])
async def test_who_did_not_see_the_deed_keeps_the_old_place(
    offline_fab: Fabula, form: UnseenForm
) -> None:
    store = await told(offline_fab, form.write("Ann", "Ben", "key", "box"))
    assert await believed(store) == {
        "ann": "box",
        "ben": "basket",
        "cal": "basket" if form.nobody else "box",
    }


async def test_the_same_deed_watched_is_seen(offline_fab: Fabula) -> None:
    store = await told(offline_fab, "Ben watched as Ann slipped the key into the box.")
    assert await believed(store) == {"ann": "box", "ben": "box", "cal": "box"}


async def test_a_denied_cue_is_seeing(offline_fab: Fabula) -> None:
    """ "Not unnoticed" is noticed (from OpenToM: "had not gone unnoticed by Amir")."""
    store = await told(
        offline_fab, "Ann slipped the key into the box. It did not go unnoticed by Ben."
    )
    assert await believed(store) == {"ann": "box", "ben": "box", "cal": "box"}


async def test_a_state_of_not_seeing_lasts_until_its_end(offline_fab: Fabula) -> None:
    """Asleep, Ben misses each deed after it until he wakes; then he sees again."""
    store = await told(
        offline_fab,
        "Ben dozed off. Ann slipped the key into the box. Cal moved the scarf to the basket. "
        "Ben woke up. Cal moved the scarf to the box.",
    )
    assert (await believed(store))["ben"] == "basket"
    assert (await believed(store, "scarf")) == {"ann": "box", "ben": "box", "cal": "box"}
    store = await told(offline_fab, "Ben dozed off. Ann slipped the key into the box.")
    assert (await believed(store))["ben"] == "basket"


async def test_a_state_told_after_its_act_is_of_that_act_not_an_earlier_one(
    offline_fab: Fabula,
) -> None:
    """ "Ben turned away" is no news about an act told before its sentence."""
    store = await told(
        offline_fab,
        "Cal moved the scarf to the box. Ben turned away, and Ann slipped the key into the box.",
    )
    assert await believed(store, "scarf") == {"ann": "box", "ben": "box", "cal": "box"}
    assert (await believed(store))["ben"] == "basket"


class TestCues:
    """:func:`unseen.find_cues` on words alone."""

    def test_the_longest_cue_at_a_word_wins(self) -> None:
        [cue] = unseen.find_cues(["unseen", "by", "ben", ",", "ann", "left"], lambda w: False)
        assert (cue.kind, cue.role, cue.at, cue.end) == ("event", "after", 0, 2)

    def test_nobody_counts_only_before_perceiving(self) -> None:
        assert unseen.find_cues(["nobody", "saw", "it"], lambda w: False)
        assert not unseen.find_cues(["nobody", "else", "wanted", "it"], lambda w: False)

    def test_a_manner_adverb_of_a_watching_is_not_about_an_act(self) -> None:
        assert not unseen.find_cues(["ben", "secretly", "watched"], {"watched"}.__contains__)
        assert unseen.find_cues(["ann", "secretly", "moved", "it"], {"watched"}.__contains__)

    def test_nobody_told_as_a_state_is_a_state(self) -> None:
        [cue] = unseen.find_cues(["no", "one", "was", "watching"], lambda w: False)
        assert (cue.kind, cue.role) == ("state", "everyone")
