"""Playing a character: a person writes a played character's part of each turn.

The real turn graph on the real Redis, offline engine. The Hollow Book at turn 3: Leo
believes the brass key is in the desk drawer (he put it there); Mara moved it into the
hollow book while he was in the hallway. A turn with a played character stops before its
draft (the ``character`` node's interrupt) until the person's part is given; the part
becomes that character's action in the committed turn; the others propose from their own
minds as before; the view shown to the person is its own mind's.
"""

from __future__ import annotations

import json

import pytest

from fabula.agents.contracts import Decision
from fabula.errors import InvalidInput
from fabula.graph.build import thread_id
from fabula.graph.service import Fabula
from fabula.graph.state import Part
from fabula.memory.acl import open_mind
from fabula.memory.projections import project_world
from fabula.memory.store import StoryStore
from fabula.settings import Settings
from fabula.testing.cli import fabula_editing
from fabula.worlds.loader import load_world

PART = "Leo searched the desk drawer."


async def _hollow(fab: Fabula, story: str = "tale", played: tuple[str, ...] = ()) -> StoryStore:
    """The Hollow Book after its opening (turn 3), ``played`` played."""
    pack = load_world("hollow_book")
    store = fab.store(await fab.create_story(pack, story, opening=False))
    for text in pack.opening.turns:
        await fab.commit_scripted(store, text)
    await fab.set_played(store, list(played))
    return store


async def _state(fab: Fabula, store: StoryStore) -> dict[str, object]:
    turn = await store.head() + 1
    config = {"configurable": {"thread_id": thread_id(store.story, store.branch, turn)}}
    values: dict[str, object] = (await fab.graph.aget_state(config)).values  # type: ignore[arg-type]
    return values


class TestPlayedTurn:
    async def test_the_run_waits_for_the_part_and_commits_it(self, redis_url: str) -> None:
        """The run stops before any draft ("part"), no approval pending; given Leo's part,
        it goes on to approval, and the committed turn has Leo's search, as he wrote it."""
        async with Fabula(redis_url, Settings()) as fab:
            store = await _hollow(fab, played=("Leo",))
            assert await store.played() == ["leo"]
            assert (await fab.run(store, auto=False)).outcome == "part"
            assert await fab.read(store).pending() is None
            (asked,) = await fab.read(store).waiting_parts()
            assert (asked.character, asked.turn) == ("leo", 4)

            outcome = (await fab.run(store, auto=False, parts={"Leo": Part(words=PART)})).outcome
            assert outcome == "pending"
            pending = await fab.read(store).pending()
            assert pending is not None and PART in pending.request.draft.text
            assert (await fab.decide(store, Decision(action="approve"))).outcome == "committed"

            (text,) = await store.turn_texts(4, 4)
            assert PART in text.text
            events = await store.events(list(text.events))
            assert any(e.kind == "search" and e.actor == "leo" for e in events)

    async def test_a_line_is_what_the_character_says(self, redis_url: str) -> None:
        """Words that tell no action are the played character's line."""
        async with Fabula(redis_url, Settings()) as fab:
            store = await _hollow(fab, played=("Leo",))
            parts = {"leo": Part(words="Has anyone seen my key?")}
            assert (await fab.run(store, auto=True, parts=parts)).outcome == "committed"
            (text,) = await store.turn_texts(4, 4)
            assert '"Has anyone seen my key?" said Leo.' in text.text
            events = await store.events(list(text.events))
            assert any(e.kind == "say" and e.actor == "leo" for e in events)

    async def test_a_line_written_with_its_speaker_is_taken_as_written(
        self, redis_url: str
    ) -> None:
        """'"Has anyone seen my key?" Leo asked.' is already a sentence of the story: it is
        not wrapped again as a line Leo says ('"…Leo asked," said Leo.')."""
        async with Fabula(redis_url, Settings()) as fab:
            store = await _hollow(fab, played=("Leo",))
            line = '"Has anyone seen my key?" Leo asked.'
            parts = {"leo": Part(words=line)}
            assert (await fab.run(store, auto=True, parts=parts)).outcome == "committed"
            (text,) = await store.turn_texts(4, 4)
            assert line in text.text and "said Leo" not in text.text
            events = await store.events(list(text.events))
            assert any(e.kind == "say" and e.actor == "leo" for e in events)

    async def test_a_part_told_as_narration_is_not_doing_nothing(self, redis_url: str) -> None:
        """A part the reader cannot read as an action is narration, with its own warning;
        the played character is not also said to do nothing: it did what was written."""
        async with Fabula(redis_url, Settings()) as fab:
            store = await _hollow(fab, played=("Leo",))
            parts = {"leo": Part(words="Leo rubbed his tired eyes and sighed.")}
            assert (await fab.run(store, auto=False, parts=parts)).outcome == "pending"
            pending = await fab.read(store).pending()
            assert pending is not None
            messages = [f.message for f in pending.request.findings]
            assert any(m.startswith("kept as narration") for m in messages), messages
            assert "Leo does nothing" not in messages, messages

    async def test_a_part_the_critic_refuses_is_kept_with_its_error(self, redis_url: str) -> None:
        """Words said to someone in another room are a contradiction: the revision does not
        drop the person's part in silence; it awaits them with the error beside it."""
        async with Fabula(redis_url, Settings()) as fab:
            store = await _hollow(fab, played=("Leo",))
            await fab.commit_scripted(store, "Leo went to the hallway.")
            await fab.commit_scripted(store, "Mara went to the study.")
            words = '"Come and see," Leo said to Mara.'
            outcome = (await fab.run(store, auto=False, parts={"leo": Part(words=words)})).outcome
            assert outcome == "pending"
            pending = await fab.read(store).pending()
            assert pending is not None and words in pending.request.draft.text
            errors = [f.message for f in pending.request.findings if f.severity == "error"]
            assert errors == ["Leo speaks to Mara, who is in the study, not in the hallway"]

    async def test_the_others_propose_from_their_own_minds_as_before(self, redis_url: str) -> None:
        """Mara played: Leo's proposal is the one his agent makes in the same story unplayed
        (toward the drawer he wrongly believes holds the key); Mara's is the person's."""
        async with Fabula(redis_url, Settings()) as fab:
            free = await _hollow(fab, "free")
            assert (await fab.run(free, auto=False)).outcome == "pending"
            unplayed = {p.character: p for p in (await _state(fab, free))["proposals"]}  # type: ignore[attr-defined]

            store = await _hollow(fab, played=("Mara",))
            parts = {"mara": Part(words="Mara went to the hallway.")}
            assert (await fab.run(store, auto=False, parts=parts)).outcome == "pending"
            state = await _state(fab, store)
            proposals = {p.character: p for p in state["proposals"]}  # type: ignore[attr-defined]
            assert state["plan"].focal[0] == "mara"  # type: ignore[attr-defined]
            assert proposals["mara"].words == "Mara went to the hallway."
            assert proposals["leo"] == unplayed["leo"]
            assert proposals["leo"].words is None and proposals["leo"].actions

    async def test_taking_the_suggestion_commits_the_agents_proposal(self, redis_url: str) -> None:
        """An empty answer in `write` takes the character's own idea, shown beside it."""
        async with Fabula(redis_url, Settings()) as fab:
            store = await _hollow(fab, played=("Leo",))
            assert (await fab.run(store, auto=False)).outcome == "part"
            (asked,) = await fab.read(store).waiting_parts()
            assert asked.suggestion is not None and asked.view.suggestion == "go to the study"
            with pytest.raises(InvalidInput):  # nothing shown yet for a fresh turn
                await fab.run(
                    await _hollow(fab, "other", ("Leo",)),
                    auto=True,
                    parts={"leo": Part(accept=True)},
                )
            outcome = (await fab.run(store, auto=True, parts={"leo": Part(accept=True)})).outcome
            assert outcome == "committed"
            (text,) = await store.turn_texts(4, 4)
            assert "Leo went to the study." in text.text

    async def test_auto_plays_the_parts_it_is_not_given(self, redis_url: str) -> None:
        """`run --auto` is played by nobody: the engine plays a played character whose part
        it was not given (a story runs on alone), takes the part it was given, and answers a
        turn already waiting for a part with the agent's proposal."""
        async with Fabula(redis_url, Settings()) as fab:
            store = await _hollow(fab, played=("Leo",))
            ran = await fab.run(store, 2, auto=True, parts={"leo": Part(words=PART)})
            assert (ran.written, ran.head) == (2, 5)
            (first,) = await store.turn_texts(4, 4)
            assert PART in first.text
            assert (await fab.run(store, auto=False)).outcome == "part"
            (asked,) = await fab.read(store).waiting_parts()
            assert (await fab.run(store, auto=True)).outcome == "committed"
            (taken,) = await store.turn_texts(6, 6)
            assert asked.suggestion is not None and asked.suggestion.words is None
            assert "Leo" in taken.text  # the agent's proposal, played
            assert not await fab.read(store).waiting_parts()


class TestSeveralOrNone:
    async def test_two_played_each_gives_a_part(self, redis_url: str) -> None:
        """Both played: the turn asks both; one part alone leaves it waiting for the other."""
        async with Fabula(redis_url, Settings()) as fab:
            store = await _hollow(fab, played=("Leo", "Mara"))
            assert (await fab.run(store, auto=False)).outcome == "part"
            asked = await fab.read(store).waiting_parts()
            assert sorted(r.character for r in asked) == ["leo", "mara"]
            leo = {"leo": Part(words=PART)}
            assert (await fab.run(store, auto=False, parts=leo)).outcome == "part"
            assert [r.character for r in await fab.read(store).waiting_parts()] == ["mara"]
            mara = {"mara": Part(words="Mara went to the hallway.")}
            assert (await fab.run(store, auto=False, parts=mara)).outcome == "pending"
            pending = await fab.read(store).pending()
            assert pending is not None
            assert PART in pending.request.draft.text
            assert "Mara went to the hallway." in pending.request.draft.text

    async def test_none_played_runs_as_today(self, redis_url: str) -> None:
        """No played character: no part is asked for, and the draft is the engine's."""
        async with Fabula(redis_url, Settings()) as fab:
            store = await _hollow(fab)
            assert await store.played() == []
            assert (await fab.run(store, auto=False)).outcome == "pending"
            assert await fab.read(store).waiting_parts() == []
            state = await _state(fab, store)
            assert all(p.words is None for p in state["proposals"])  # type: ignore[attr-defined]

    async def test_a_part_for_a_character_not_played_is_refused(self, redis_url: str) -> None:
        async with Fabula(redis_url, Settings()) as fab:
            store = await _hollow(fab, played=("Leo",))
            with pytest.raises(InvalidInput, match="'Mara' is not played"):
                await fab.run(store, auto=True, parts={"Mara": Part(words="Hello.")})
            assert await store.head() == 3


class TestTheViewIsItsOwnMind:
    async def test_a_false_belief_stays_false(self, redis_url: str) -> None:
        """Leo's view says the key is in the drawer (the world: the hollow book) and holds
        nothing Mara alone knows; it is exactly what Leo's own mind reads."""
        async with Fabula(redis_url, Settings()) as fab:
            store = await _hollow(fab, played=("Leo",))
            assert (await fab.run(store, auto=False)).outcome == "part"
            (asked,) = await fab.read(store).waiting_parts()
            view = asked.view
            assert (await project_world(store)).where("brass_key") == "hollow_book"
            assert "the brass key is in the desk drawer" in view.beliefs
            assert not any("hollow book" in line and "key" in line for line in view.beliefs)
            assert not any("Mara hid" in line for line in [*view.beliefs, *view.memories])
            assert view.place == "hallway" and view.company == ()

            mind = await open_mind(fab.admin, fab.url, store.story, "leo")
            try:
                own = await mind.beliefs()
            finally:
                await mind.close()
            assert len(view.beliefs) == len(own.beliefs)
            assert json.dumps(view.model_dump()).count("hollow_book") == 0


class TestCommandLine:
    def test_write_asks_for_the_part_beside_the_view(self, redis_url: str) -> None:
        """`fabula write --play Leo` shows Leo's own beliefs, takes his part at the prompt,
        and the approved turn has it."""
        assert (
            fabula_editing(redis_url, "new", "--world", "hollow_book", "--id", "tale").returncode
            == 0
        )
        done = fabula_editing(
            redis_url, "write", "tale", "--play", "Leo", input=f"{PART}\na\nq\n", timeout=300
        )
        assert done.returncode == 0, done.stderr
        assert "believes: the brass key is in the desk drawer" in done.stdout
        assert "Leo's part" in done.stdout
        assert "turn 4: committed" in done.stdout
        shown = json.loads(fabula_editing(redis_url, "show", "tale", "story", "--json").stdout)
        assert PART in json.dumps(shown)

    def test_run_stops_for_the_part_then_takes_it_from_as(self, redis_url: str) -> None:
        assert (
            fabula_editing(redis_url, "new", "--world", "hollow_book", "--id", "tale").returncode
            == 0
        )
        assert fabula_editing(redis_url, "play", "tale", "Leo").returncode == 0
        stopped = fabula_editing(redis_url, "run", "tale")
        assert stopped.returncode == 0, stopped.stderr
        assert "waits for a played character's part" in stopped.stdout
        ran = fabula_editing(redis_url, "run", "tale", "--auto", "--as", f"Leo: {PART}")
        assert ran.returncode == 0, ran.stderr
        assert "1 turn written" in ran.stdout
        alone = fabula_editing(redis_url, "run", "tale", "--auto")  # nobody plays: the engine
        assert "1 turn written, now at turn 5" in alone.stdout, alone.stderr
        listed = fabula_editing(redis_url, "play", "tale", "--none", "--json")
        assert json.loads(listed.stdout)["played"] == []


class TestAPartSpeaksOnlyForItsCharacter:
    """Issue 45: "Ann hands over the key. Bob sees it and takes it." moved Bob too. A played
    part commits only its character's own acts and speech; a sentence that tells what
    another does, says or perceives is left out, with a warning beside it, and the other
    acts from its own mind."""

    OWN = "Leo went to the study."
    MARAS = "Mara saw him and gave him the brass key."

    async def test_the_others_sentence_is_a_finding_not_the_passage(self, redis_url: str) -> None:
        async with Fabula(redis_url, Settings()) as fab:
            store = await _hollow(fab, played=("Leo",))
            parts = {"leo": Part(words=f"{self.OWN} {self.MARAS}")}
            assert (await fab.run(store, auto=False, parts=parts)).outcome == "pending"
            pending = await fab.read(store).pending()
            assert pending is not None
            assert self.OWN in pending.request.draft.text
            assert self.MARAS not in pending.request.draft.text
            [found] = [f for f in pending.request.findings if f.quote == self.MARAS]
            assert found.severity == "warning" and "speaks for Mara" in found.message
            assert (await fab.decide(store, Decision(action="approve"))).outcome == "committed"
            world = await project_world(store)
            assert (world.where("leo"), world.where("brass_key")) == ("study", "hollow_book")

    async def test_an_auto_run_commits_no_act_of_another(self, redis_url: str) -> None:
        """With ``--auto`` nothing is reviewed: the part is cut all the same."""
        async with Fabula(redis_url, Settings()) as fab:
            store = await _hollow(fab, played=("Leo",))
            words = f'{self.OWN} {self.MARAS} "Thank you," said Mara.'
            parts = {"leo": Part(words=words)}
            assert (await fab.run(store, auto=True, parts=parts)).outcome == "committed"
            (text,) = await store.turn_texts(4, 4)
            assert self.OWN in text.text
            assert self.MARAS not in text.text and '"Thank you," said Mara.' not in text.text
            events = await store.events(list(text.events))
            assert not any(e.kind == "give" for e in events)
            assert (await project_world(store)).where("brass_key") == "hollow_book"

    async def test_words_said_to_another_are_the_characters_own(self, redis_url: str) -> None:
        async with Fabula(redis_url, Settings()) as fab:
            store = await _hollow(fab, played=("Mara",))
            line = '"Leo, give me the key," Mara said.'
            parts = {"mara": Part(words=line)}
            assert (await fab.run(store, auto=True, parts=parts)).outcome == "committed"
            (text,) = await store.turn_texts(4, 4)
            assert line in text.text
