"""Doers nobody declared (issue 43, item 3), through the real path: the offline
memory-builder reads the prose, the tracker makes the doer an entity of the scene, the
store keeps it in Redis. "A stray cat" becomes a character marked an extra (it perceives
its act, takes no turn), "the wind" an object marked a force (it perceives nothing); the
act is its own, never the one declared character's, and only those present perceive it.
"""

from __future__ import annotations

from fabula.agents.contracts import PlanRequest
from fabula.agents.planner.offline import OfflinePlanner
from fabula.agents.views import author_view
from fabula.graph.service import Fabula
from fabula.memory.projections import project_beliefs
from fabula.memory.recollection import render_event
from fabula.memory.records import EXTRA, FORCE, Entity, Event, Fact, SourceSpan
from fabula.memory.sentences import fact_sentence
from fabula.memory.store import StoryStore
from fabula.worlds.pack import WorldPack

# one declared character, the only one a doer could be wrongly credited to
PACK = WorldPack.model_validate(
    {
        "id": "pantry",
        "title": "The Pantry",
        "premise": "Ann keeps a pantry.",
        "places": [{"name": "pantry"}, {"name": "yard"}],
        "characters": [{"name": "Ann", "location": "pantry", "goals": ["get the jar"]}],
        "objects": [
            {"name": "basket", "location": "pantry", "container": True},
            {"name": "jar", "location": "yard"},
            {"name": "cup", "location": "pantry"},
        ],
    }
)


async def _story(fab: Fabula, name: str, *turns: str) -> StoryStore:
    store = fab.store(await fab.create_story(PACK, name, opening=False))
    for text in turns:
        await fab.commit_scripted(store, text)
    return store


async def _condition(store: StoryStore, holder: str, subject: str) -> tuple[str, str] | None:
    """``holder``'s belief of ``subject``'s condition: (value, the acquiring event's id)."""
    beliefs = await project_beliefs(store, (holder,))
    for b in beliefs.beliefs.values():
        if b.subject == subject and b.attribute == "condition":
            return b.value, b.event
    return None


async def test_an_undeclared_animal_is_an_extra_and_the_act_is_its_own(
    offline_fab: Fabula,
) -> None:
    store = await _story(offline_fab, "cat", "A stray cat knocked over the basket.")
    cat = (await store.entities())["stray_cat"]
    assert cat.kind == "character" and cat.is_extra and cat.attributes["role"] == EXTRA
    held = await _condition(store, "ann", "basket")
    assert held is not None and held[0] == "knocked over"
    [event] = await store.events([held[1]])
    assert event.actor == "stray_cat"  # never Ann, the one declared character
    assert set(event.witnesses) == {"ann", "stray_cat"}
    assert await _condition(store, "stray_cat", "basket") == held  # it saw its own act
    view = await author_view(store)
    assert view.cast() == ["ann"] and "stray_cat" in view.characters()
    for attempt in range(4):  # each re-plan anchors on the next of the cast: Ann alone
        plan = await OfflinePlanner().plan(PlanRequest(view, attempt=attempt))
        assert plan.focal == ("ann",)
    found = await offline_fab.read(store).recall("What happened to the basket?", character="ann")
    assert "stray cat" in found.text.lower()
    minds = await offline_fab.read(store).minds()  # the studio's Minds grid
    assert {m.character: m.name for m in minds.minds} == {"ann": "Ann", "stray_cat": "stray cat"}
    [row] = [r for r in minds.grid if (r.subject, r.attribute) == ("basket", "condition")]
    assert {c.character: c.status for c in row.cells} == {"ann": "true", "stray_cat": "true"}


async def test_a_force_is_an_object_with_no_mind(offline_fab: Fabula) -> None:
    store = await _story(offline_fab, "wind", "The wind knocked the cup off the shelf.")
    wind = (await store.entities())["wind"]
    assert wind.kind == "object" and wind.is_force and wind.attributes["nature"] == FORCE
    held = await _condition(store, "ann", "cup")
    assert held is not None
    [event] = await store.events([held[1]])
    assert event.actor == "wind" and event.witnesses == ("ann",)
    assert "wind" not in (await author_view(store)).characters()


async def test_only_those_present_perceive_an_undeclared_doers_act(offline_fab: Fabula) -> None:
    store = await _story(
        offline_fab,
        "ahmed",
        "Ann went to the yard.",
        "Her colleague Ahmed emptied the basket.",
    )
    assert await _condition(store, "ann", "basket") is None  # Ann was in the yard
    held = await _condition(store, "ahmed", "basket")
    assert held is not None and held[0] == "emptied"
    [event] = await store.events([held[1]])
    assert event.actor == "ahmed" and "ann" not in event.witnesses


def test_recall_tells_a_change_by_its_doer() -> None:
    entities = {
        "stray_cat": Entity(
            id="stray_cat", kind="character", name="stray cat", attributes={"role": EXTRA}
        ),
        "basket": Entity(id="basket", kind="object", name="basket"),
    }
    fact = Fact(subject="basket", attribute="condition", value="knocked over")
    event = Event(
        id="e1",
        turn=1,
        seq=0,
        kind="state",
        actor="stray_cat",
        participants=("basket",),
        content=fact,
        span=SourceSpan(turn=1, start=0, end=4, quote="A ca"),
    )
    assert render_event(event, entities) == "The stray cat left the basket knocked over."
    belief = fact_sentence("stray_cat", "location", "basket", True, entities)
    assert belief.startswith("The stray cat is")
