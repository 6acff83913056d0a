"""What the text says of perception overrides where the tracker places everyone.

``seen_by`` adds a perceiver, ``unseen_by`` removes a present one, ``unaware_of`` makes a
perceiver covert (its own chains learn, the doer's view of it does not), each applied by
the same handlers, through the real builder, store and views in Redis.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import redis.asyncio as aredis

from fabula.agents.memory_builder import OfflineMemoryBuilder
from fabula.agents.memory_builder.extract import extract
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


def test_the_model_schema_leaves_the_readers_fields_out() -> None:
    properties = StoryAction.model_json_schema()["properties"]
    assert not {"seen_by", "unseen_by", "unaware_of", "unsure"} & set(properties)
