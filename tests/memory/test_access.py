"""The access tracker's rules, through the real builder, store and views in Redis."""

from __future__ import annotations

from collections.abc import Sequence
from typing import get_args

import pytest
import redis.asyncio as aredis
from pydantic import ValidationError

from fabula.agents.memory_builder import OfflineMemoryBuilder
from fabula.graph.commit import CommitPath, commit_text
from fabula.memory.actions import ActionKind, StoryAction
from fabula.memory.answer import UNKNOWN, answer
from fabula.memory.projections import project_beliefs, project_world
from fabula.memory.rules import WorldRules
from fabula.memory.store import StoryStore
from fabula.memory.tracking import HANDLERS, chains_over
from fabula.testing.stories import KEY_STORY, tell_story


async def where(store: StoryStore, chain: Sequence[str], obj: str) -> str | None:
    if not chain:
        return (await project_world(store)).where(obj)
    return (await project_beliefs(store, list(chain))).where(obj)


class TestFalseBelief:
    async def test_leo_still_believes_the_drawer(self, aredis_client: aredis.Redis) -> None:
        """Leo was away when Mara moved the key: the world and Mara say the hollow book,
        Leo says the drawer, and Mara knows Leo is wrong."""
        store = await tell_story(aredis_client, [KEY_STORY])
        assert await where(store, [], "key") == "hollow_book"
        assert await where(store, ["leo"], "key") == "desk_drawer"
        assert await where(store, ["mara"], "key") == "hollow_book"
        assert await where(store, ["mara", "leo"], "key") == "desk_drawer"
        assert await where(store, ["leo", "mara"], "key") == "desk_drawer"

    async def test_access_links_record_how_it_was_learned(
        self, aredis_client: aredis.Redis
    ) -> None:
        store = await tell_story(aredis_client, [KEY_STORY])
        leo = (await project_beliefs(store, "leo")).get("key", "location")
        mara = (await project_beliefs(store, "mara")).get("key", "location")
        assert leo is not None and leo.mode == "participated"
        assert mara is not None and mara.mode == "participated"
        [put] = await store.events([leo.event])
        assert put.kind == "put" and set(put.witnesses) == {"leo", "mara"}

    async def test_closed_containers_keep_the_false_belief_on_return(
        self, aredis_client: aredis.Redis
    ) -> None:
        """With closed containers (the default) coming back does not reveal the move."""
        store = await tell_story(aredis_client, [KEY_STORY, "Leo entered the study."])
        assert await where(store, ["leo"], "key") == "desk_drawer"

    async def test_open_containers_reveal_it_on_return(self, aredis_client: aredis.Redis) -> None:
        store = await tell_story(
            aredis_client, [KEY_STORY, "Leo entered the study."], WorldRules(open_containers=True)
        )
        assert await where(store, ["leo"], "key") == "hollow_book"
        assert await where(store, ["mara", "leo"], "key") == "hollow_book"


class TestSecondOrder:
    async def test_only_what_both_witnessed_changes_a_model(
        self, aredis_client: aredis.Redis
    ) -> None:
        """Ava saw Ben leave before the move, and was gone when he came back and saw it."""
        store = await tell_story(
            aredis_client,
            [
                "Ava entered the kitchen.\nBen entered the kitchen.\n"
                "The apple is in the red_box.\nBen exited the kitchen.\n"
                "Ava moved the apple to the blue_box.\nAva exited the kitchen.\n"
                "Ben entered the kitchen."
            ],
            WorldRules(open_containers=True),
        )
        assert await where(store, ["ben"], "apple") == "blue_box"
        assert await where(store, ["ava", "ben"], "apple") == "red_box"
        assert await where(store, ["ben", "ava"], "apple") == "red_box"  # he saw no move

    async def test_a_bare_statement_is_made_in_the_latest_scene(
        self, aredis_client: aredis.Redis
    ) -> None:
        """Those in the place of the most recent entry witness it; others do not."""
        store = await tell_story(
            aredis_client,
            ["Ava entered the kitchen. Ben entered the garden. The pear is in the basket."],
        )
        assert await where(store, ["ben"], "pear") == "basket"
        assert await where(store, ["ava"], "pear") is None
        assert (await project_world(store)).where("basket") == "garden"


class TestCommunication:
    async def test_a_lie_does_not_change_the_speakers_belief(
        self, aredis_client: aredis.Redis
    ) -> None:
        store = await tell_story(
            aredis_client,
            [
                "Iona entered the kitchen. Iona saw that the state of the lamp is broken.",
                "Iona privately told Leo that the state of the lamp is working.",
            ],
        )
        iona = await project_beliefs(store, "iona")
        leo = await project_beliefs(store, "leo")
        assert iona.value("lamp", "state") == "broken"
        assert leo.value("lamp", "state") == "working"
        assert (await project_world(store)).value("lamp", "state") == "broken"
        # the listener takes it as the speaker's belief; the speaker expects the uptake
        assert (await project_beliefs(store, ["leo", "iona"])).value("lamp", "state") == "working"
        assert (await project_beliefs(store, ["iona", "leo"])).value("lamp", "state") == "working"
        told = leo.get("lamp", "state")
        assert told is not None and told.mode == "told_private" and told.speaker == "iona"

    async def test_a_private_telling_reaches_only_its_listener(
        self, aredis_client: aredis.Redis
    ) -> None:
        store = await tell_story(
            aredis_client,
            [
                "Ava, Ben and Cal entered the hall. "
                "Ava privately told Ben that the ring is in the vase."
            ],
        )
        assert await where(store, ["ben"], "ring") == "vase"
        assert await where(store, ["cal"], "ring") is None
        assert await where(store, ["cal", "ben"], "ring") is None
        texts = await store.turn_texts(1, 1)
        events = await store.events(list(texts[0].events))
        [tell] = [e for e in events if e.kind == "tell"]
        assert tell.private_to == ("ben",) and set(tell.witnesses) == {"ava", "ben"}

    async def test_a_public_claim_reaches_everyone_present(
        self, aredis_client: aredis.Redis
    ) -> None:
        store = await tell_story(
            aredis_client,
            [
                "Ava entered the hall. Ben entered the hall. Cal entered the cellar. "
                "Ava publicly claimed that the ring is in the vase."
            ],
        )
        assert await where(store, ["ben"], "ring") == "vase"
        assert await where(store, ["cal"], "ring") is None
        assert await where(store, ["ava"], "ring") is None

    async def test_dialogue_that_is_a_clause_is_a_public_claim(
        self, aredis_client: aredis.Redis
    ) -> None:
        store = await tell_story(
            aredis_client,
            ['Ava entered the hall. Ben entered the hall. "The ring is in the vase," said Ava.'],
        )
        assert await where(store, ["ben"], "ring") == "vase"
        assert await where(store, [], "ring") is None  # an utterance is a claim, not a fact


# Ava leaves the room before Ben: Ben's information about the pear is fresher.
ROOM = (
    "Ava and Ben entered the pantry.\nThe pear is in the red_box.\nAva exited the pantry.\n"
    "Ben exited the pantry.\nAva, Ben and Cal entered the waiting_room.\n"
)


class TestTrustPolicy:
    async def test_fresher_trusts_who_left_later(self, aredis_client: aredis.Redis) -> None:
        """The default: a listener adopts a claim only from someone whose information is
        fresher than its own; one with no belief of its own adopts it."""
        store = await tell_story(
            aredis_client,
            [
                ROOM + "Ava publicly claimed that the pear is in the tin.\n"
                "Ben privately told Ava that the pear is in the jar."
            ],
            WorldRules(open_containers=True),
        )
        assert await where(store, ["ben"], "pear") == "red_box"  # Ava left earlier
        assert await where(store, ["cal"], "pear") == "tin"  # Cal knew nothing
        assert await where(store, ["ava"], "pear") == "jar"  # Ben left later

    async def test_a_relayed_belief_keeps_its_source_freshness(
        self, aredis_client: aredis.Redis
    ) -> None:
        """Cal heard Ava's claim; Ben, who left after Ava, is fresher than that."""
        store = await tell_story(
            aredis_client,
            [
                ROOM + "Ava publicly claimed that the pear is in the tin.",
                "Ben privately told Cal that the pear is in the jar.",
            ],
            WorldRules(open_containers=True),
        )
        assert await where(store, ["cal"], "pear") == "jar"

    async def test_always_and_never(self, aredis_client: aredis.Redis) -> None:
        claim = ROOM + "Ava publicly claimed that the pear is in the tin."
        always = await tell_story(
            aredis_client, [claim], WorldRules(open_containers=True, trust="always"), "a"
        )
        never = await tell_story(
            aredis_client, [claim], WorldRules(open_containers=True, trust="never"), "n"
        )
        assert await where(always, ["ben"], "pear") == "tin"
        assert await where(never, ["ben"], "pear") == "red_box"
        assert await where(never, ["cal"], "pear") is None


class TestNestedDepth:
    STORY = (
        "Ava, Ben, Cal and Dan entered the hall. The coin is in the cup. "
        "Dan exited the hall. Ava moved the coin to the bowl."
    )

    async def test_depth_four_chains(self, aredis_client: aredis.Redis) -> None:
        """Co-presence builds chains to depth 4 and only over those who were there."""
        store = await tell_story(aredis_client, [self.STORY])
        assert await where(store, ["ava", "ben", "cal", "dan"], "coin") == "cup"
        assert await where(store, ["ava", "ben", "cal", "ben"], "coin") == "bowl"
        question = "Where does Ava think Ben thinks Cal thinks Dan thinks the coin is?"
        assert await answer(store, question) == "cup"

    async def test_depth_is_a_world_setting(self, aredis_client: aredis.Redis) -> None:
        store = await tell_story(aredis_client, [self.STORY], WorldRules(belief_depth=2))
        assert await where(store, ["ava", "ben"], "coin") == "bowl"
        assert await answer(store, "Where does Ava think Ben thinks Cal thinks the coin is?") == (
            UNKNOWN
        )

    def test_chain_count_is_bounded(self) -> None:
        """n witnesses, depth d: n·Σ(n−1)^k chains, no adjacent repeats."""
        chains = chains_over(("a", "b", "c", "d", "e"), 4)
        assert len(chains) == 5 + 20 + 80 + 320
        assert all(c[i] != c[i + 1] for c in chains for i in range(len(c) - 1))


class TestIngestion:
    async def test_narration_is_kept_with_its_span(self, aredis_client: aredis.Redis) -> None:
        text = "Ava entered the hall. A cold wind came off the hills."
        store = await tell_story(aredis_client, [text])
        [turn] = await store.turn_texts(1, 1)
        events = await store.events(list(turn.events))
        [narration] = [e for e in events if e.kind == "narration"]
        assert narration.span.quote == "A cold wind came off the hills."
        assert text[narration.span.start : narration.span.end] == narration.span.quote

    async def test_per_sentence_and_whole_turn_agree(self, aredis_client: aredis.Redis) -> None:
        """One sentence a turn or the whole story as one turn: the same views."""
        sentences = [
            "Ava entered the kitchen.",
            "Ben entered the kitchen.",
            "The apple is in the red_box.",
            "Ben exited the kitchen.",
            "Ava moved the apple to the blue_box.",
            "Ava publicly claimed that the apple is in the tin.",
            "Ben entered the kitchen.",
        ]
        rules = WorldRules(open_containers=True)
        whole = await tell_story(aredis_client, ["\n".join(sentences)], rules, "whole")
        split = await tell_story(aredis_client, sentences, rules, "split")
        for chain in (["ava"], ["ben"], ["ava", "ben"], ["ben", "ava"], ["ava", "ben", "ava"]):
            assert await where(whole, chain, "apple") == await where(split, chain, "apple")
        assert await where(split, ["ben", "ava"], "apple") == "blue_box"

    async def test_a_turn_sent_again_is_a_duplicate(self, aredis_client: aredis.Redis) -> None:
        store = await tell_story(aredis_client, [KEY_STORY, "Leo entered the study."])
        assert (await commit_text(CommitPath(), store, 1, KEY_STORY)).status == "duplicate"
        # rebuilt from the views before it, the turn is the same delta: the store agrees
        result = await store.commit(await OfflineMemoryBuilder().build(store, 1, KEY_STORY))
        assert result.status == "duplicate"

    async def test_new_entities_get_kinds_from_their_sentence(
        self, aredis_client: aredis.Redis
    ) -> None:
        """A feeling does not decide what its object is; a later entry makes it a place."""
        store = await tell_story(
            aredis_client, ["Aria likes the workshop.\nAria entered the workshop."]
        )
        entities = await store.entities()
        assert entities["aria"].kind == "character"
        assert entities["workshop"].kind == "place"


class TestVocabulary:
    def test_every_kind_of_action_has_a_handler(self) -> None:
        """The dispatch table covers the whole vocabulary: no kind falls through."""
        assert set(HANDLERS) == set(get_args(ActionKind))

    def test_an_action_missing_what_its_kind_needs_is_refused(self) -> None:
        """Validation, not the tracker, refuses an incomplete action (a model's, say)."""
        with pytest.raises(ValidationError, match="a tell action needs listeners, clause"):
            StoryAction(kind="tell", start=0, end=4, actors=("Ava",))
        with pytest.raises(ValidationError, match="ends before it starts"):
            StoryAction(kind="narration", start=5, end=4)
