"""What the text says of perception overrides where the tracker places everyone.

``seen_by`` adds a perceiver, ``unseen_by`` removes a present one, ``unaware_of`` makes a
perceiver covert (its own chains learn, the doer's view of it does not),
``believed_seen_by`` names those the doer wrongly believes saw it (the doer's view of them
learns, nothing of theirs does), each applied by the same handlers, through the real
builder, store and views in Redis.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import redis.asyncio as aredis

from fabula.agents.memory_builder import OfflineMemoryBuilder
from fabula.agents.reading.extract import extract
from fabula.graph.commit import CommitPath, commit_text
from fabula.memory.actions import StoryAction
from fabula.memory.delta import DeltaBuilder
from fabula.memory.projections import project_beliefs, project_world
from fabula.memory.records import Entity
from fabula.memory.store import StoryStore

OPENING = "Ann entered the study. Ben entered the study. Ann put the key in the drawer."


def annotated(last: Mapping[str, object]) -> OfflineMemoryBuilder:
    """A builder whose reader reads controlled English and annotates the last sentence."""

    def reader(text: str, entities: Mapping[str, Entity]) -> list[StoryAction]:
        del entities
        actions = extract(text)
        return [*actions[:-1], actions[-1].model_copy(update=dict(last))]

    return OfflineMemoryBuilder(reader=reader)


async def told(client: aredis.Redis, text: str, last: Mapping[str, object]) -> StoryStore:
    store = StoryStore(client, "s")
    await store.create(DeltaBuilder(0, "").build(), world="test", title="test")
    await commit_text(CommitPath(memory_builder=annotated(last)), store, 1, text)
    return store


async def where(store: StoryStore, chain: Sequence[str]) -> str | None:
    if not chain:
        return (await project_world(store)).where("key")
    return (await project_beliefs(store, list(chain))).where("key")


async def test_a_present_character_who_did_not_notice_keeps_its_false_belief(
    aredis_client: aredis.Redis,
) -> None:
    store = await told(
        aredis_client, OPENING + " Ann moved the key to the book.", {"unseen_by": ("Ben",)}
    )
    assert await where(store, []) == "book"
    assert await where(store, ["ann"]) == "book"
    assert await where(store, ["ben"]) == "drawer"
    assert await where(store, ["ann", "ben"]) == "drawer"


async def test_the_doer_perceives_its_own_act_whatever_the_text_says(
    aredis_client: aredis.Redis,
) -> None:
    store = await told(
        aredis_client, OPENING + " Ann moved the key to the book.", {"unseen_by": ("Ann",)}
    )
    assert await where(store, ["ann"]) == "book"
    assert await where(store, ["ben"]) == "book"


async def test_a_covert_watcher_learns_and_the_doer_does_not_know(
    aredis_client: aredis.Redis,
) -> None:
    """Ben left, yet watched Ann move the key; Ann did not know he did."""
    text = OPENING + " Ben exited the study. Ann moved the key to the book."
    store = await told(aredis_client, text, {"seen_by": ("Ben",), "unaware_of": ("Ben",)})
    assert await where(store, ["ben"]) == "book"
    assert await where(store, ["ben", "ann"]) == "book"
    assert await where(store, ["ann", "ben"]) == "drawer"


async def test_a_watcher_the_doer_knew_of_shares_the_chains(
    aredis_client: aredis.Redis,
) -> None:
    text = OPENING + " Ben exited the study. Ann moved the key to the book."
    store = await told(aredis_client, text, {"seen_by": ("Ben",)})
    assert await where(store, ["ben"]) == "book"
    assert await where(store, ["ann", "ben"]) == "book"


async def test_without_annotations_the_absent_character_misses_it(
    aredis_client: aredis.Redis,
) -> None:
    text = OPENING + " Ben exited the study. Ann moved the key to the book."
    store = await told(aredis_client, text, {})
    assert await where(store, ["ben"]) == "drawer"
    assert await where(store, ["ann", "ben"]) == "drawer"


async def test_a_doer_who_believes_it_was_seen_when_it_was_not(
    aredis_client: aredis.Redis,
) -> None:
    """Ben was there but did not see Ann move the key; Ann believes he did: her view of
    Ben has the book, Ben's own belief (and his view of Ann) the drawer, and the move is
    none of Ben's events."""
    text = OPENING + " Ann moved the key to the book."
    store = await told(aredis_client, text, {"unseen_by": ("Ben",), "believed_seen_by": ("Ben",)})
    assert await where(store, []) == "book"
    assert await where(store, ["ann"]) == "book"
    assert await where(store, ["ann", "ben"]) == "book"
    assert await where(store, ["ben"]) == "drawer"
    assert await where(store, ["ben", "ann"]) == "drawer"
    held = (await project_beliefs(store, ["ann", "ben"])).get("key", "location")
    assert held is not None
    [move] = await store.events([held.event])
    assert move.kind == "move" and "ben" not in move.witnesses


async def test_a_doer_believes_an_absent_character_saw_it(aredis_client: aredis.Redis) -> None:
    """Ben had left; Ann believes he saw her move the key all the same."""
    text = OPENING + " Ben exited the study. Ann moved the key to the book."
    store = await told(aredis_client, text, {"believed_seen_by": ("Ben",)})
    assert await where(store, ["ann", "ben"]) == "book"
    assert await where(store, ["ben"]) == "drawer"
    assert await where(store, ["ben", "ann"]) == "drawer"


async def test_a_shared_sight_after_a_believed_one_reaches_the_doers_view(
    aredis_client: aredis.Redis,
) -> None:
    """In one turn: both see the key in the drawer, Ann moves it to the book believing Ben
    saw (he did not), then moves it back in front of him: her view of Ben is the drawer
    again, though the drawer was the group's last shared fact before."""
    text = OPENING + " Ann moved the key to the book. Ann moved the key to the drawer."

    def reader(text: str, entities: Mapping[str, Entity]) -> list[StoryAction]:
        del entities
        actions = extract(text)
        update = {"unseen_by": ("Ben",), "believed_seen_by": ("Ben",)}
        return [*actions[:-2], actions[-2].model_copy(update=update), actions[-1]]

    store = StoryStore(aredis_client, "s")
    await store.create(DeltaBuilder(0, "").build(), world="test", title="test")
    await commit_text(
        CommitPath(memory_builder=OfflineMemoryBuilder(reader=reader)), store, 1, text
    )
    assert await where(store, ["ben"]) == "drawer"
    assert await where(store, ["ann", "ben"]) == "drawer"


def test_the_model_schema_leaves_the_readers_fields_out() -> None:
    properties = StoryAction.model_json_schema()["properties"]
    readers = {"seen_by", "unseen_by", "unaware_of", "believed_seen_by", "unsure"}
    assert not readers & set(properties)
