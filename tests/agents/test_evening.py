"""The evening of issue 44, replayed on cards in four formats (W++, PList, Ali:Chat, plain
prose, each with a small book: :func:`fabula.testing.imports.evening_cards`): the user
asks about the lore, about the character, makes small talk; each question is answered
once, in the next turn, from the character's own mind or its card's own words.

Real Redis, the offline engine, the real turn graph."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from fabula.agents.character.offline import OfflineCharacter
from fabula.agents.contracts import Action, CharacterBrief
from fabula.agents.shared.replies import NO_ANSWER, Company, gesture_of, reply, situated
from fabula.agents.views import author_view
from fabula.graph.service import Fabula
from fabula.graph.state import Part
from fabula.memory.index.general import the_place
from fabula.memory.store import StoryStore
from fabula.settings import Settings
from fabula.testing import imports as fx
from fabula.testing.cards import card_story, said_to
from fabula.worlds.cardtext import has_markup

CHARACTERS = {"wpp": "wren", "plist": "bram", "alichat": "ilsa", "prose": "marta"}


async def _story(fab: Fabula, tmp_path: Path, card: str) -> StoryStore:
    return await card_story(fab, tmp_path, card, fx.evening_cards()[card])


async def _answer(fab: Fabula, store: StoryStore, character: str, question: str) -> Action:
    """What ``character`` proposes once User has asked ``question`` aloud: a line to User."""
    action = await said_to(fab, store, character, question)
    assert action.kind == "say" and action.listener == "user"
    return action


async def _place(store: StoryStore, character: str) -> str:
    """Where the story puts ``character``, as a sentence names it."""
    view = await author_view(store)
    place = view.place_of(character)
    assert place is not None
    return the_place(view.name(place))


@pytest.mark.parametrize("card", ["wpp", "plist", "prose"])
async def test_where_are_we_is_answered_from_its_own_mind(
    redis_url: str, tmp_path: Path, card: str
) -> None:
    """Issue 44: "Where are we?" was "I cannot say" though the character knows where it
    is: it says the place it believes it is in, with the one who asked."""
    async with Fabula(redis_url, Settings()) as fab:
        store = await _story(fab, tmp_path, card)
        action = await _answer(fab, store, CHARACTERS[card], "Where are we?")
        assert action.line == f"We are in {await _place(store, CHARACTERS[card])}, User"


async def test_a_card_example_of_the_same_shape_answers_where_we_are(
    redis_url: str, tmp_path: Path
) -> None:
    """Its card's own "Where am I?" answers "Where are we?": the author's words first."""
    async with Fabula(redis_url, Settings()) as fab:
        store = await _story(fab, tmp_path, "alichat")
        action = await _answer(fab, store, "ilsa", "Where are we?")
        assert action.line == (
            "In Greyhaven lighthouse, on the point. The sea can't reach us up here, User"
        )
        assert action.gesture == "Ilsa stirred the fire."


@pytest.mark.parametrize("card", ["wpp", "plist", "prose"])
async def test_are_you_alone_is_answered_in_the_first_person(
    redis_url: str, tmp_path: Path, card: str
) -> None:
    """Issue 44: "Are you alone out here?" got a description (or an example that shared
    only "here"); it is answered from who it believes is with it."""
    async with Fabula(redis_url, Settings()) as fab:
        store = await _story(fab, tmp_path, card)
        action = await _answer(fab, store, CHARACTERS[card], "Are you alone out here?")
        assert action.line == "No one is here but you and me, User"


@pytest.mark.parametrize("card", ["wpp", "prose"])
async def test_how_are_you_is_small_talk(redis_url: str, tmp_path: Path, card: str) -> None:
    """ "How are you?" said the whole description; it is answered as people do."""
    async with Fabula(redis_url, Settings()) as fab:
        store = await _story(fab, tmp_path, card)
        action = await _answer(fab, store, CHARACTERS[card], "How are you?")
        assert action.line == "I am well, User"


@pytest.mark.parametrize("card", ["wpp", "plist", "prose"])
async def test_a_question_about_what_its_card_does_not_hold(
    redis_url: str, tmp_path: Path, card: str
) -> None:
    """ "What are your powers?" of a card that names none: not its whole description
    again, but that it cannot say."""
    async with Fabula(redis_url, Settings()) as fab:
        store = await _story(fab, tmp_path, card)
        action = await _answer(fab, store, CHARACTERS[card], "What are your powers?")
        assert action.line == f"{NO_ANSWER}, User"


@pytest.mark.parametrize(
    ("card", "lore", "who"),
    [
        ("wpp", "What is the Thornwood?", "I am Wren. I am a human. I am a ranger and a warden"),
        ("prose", "What is the river Sable?", "I am the ferrywoman of the river Sable."),
    ],
)
async def test_lore_asked_before_does_not_answer_the_next_question(
    redis_url: str, tmp_path: Path, card: str, lore: str, who: str
) -> None:
    """Issue 44's replay: once a lore entry was asked about, the chat scan kept it lit and
    it answered every later question ("Who are you?" → "The Thornwood is an old
    forest…"). A question is answered by the lore it names itself."""
    async with Fabula(redis_url, Settings()) as fab:
        store = await _story(fab, tmp_path, card)
        me = CHARACTERS[card]
        first = await _answer(fab, store, me, lore)
        view = await author_view(store)
        await fab.commit_scripted(store, f'"{first.line}," said {view.name(me)}.')
        second = await _answer(fab, store, me, "Who are you?")
        assert second.line is not None and second.line.startswith(who), second.line
        assert first.line is not None and first.line.split(",")[0] not in second.line


async def test_lore_named_by_the_question_beats_an_example_sharing_a_word(
    redis_url: str, tmp_path: Path
) -> None:
    """ "Are there wolves here?" names the wolves' entry: that answers, not the example
    "What do you do here?", which shares only "here"."""
    async with Fabula(redis_url, Settings()) as fab:
        store = await _story(fab, tmp_path, "wpp")
        action = await _answer(fab, store, "wren", "Are there wolves here?")
        assert action.line == "Grey wolves hunt the northern edge of the Thornwood in winter, User"
        assert action.gesture is None


QUESTIONS = [
    "Who are you?",
    "What are your powers?",
    "Where are we?",
    "Are you alone out here?",
    "How are you?",
    "Can we go somewhere else?",
    "What do you do?",
]
_WRONG = re.compile(r"said me\b|\bthe somewhere\b|\b1 turns\b|\b(?:is|are) in \w+'s\b")


@pytest.mark.parametrize("card", ["wpp", "plist", "alichat", "prose"])
async def test_an_evening_of_questions_is_answered_once_each_in_clean_lines(
    redis_url: str, tmp_path: Path, card: str
) -> None:
    """The user plays, asking a question a turn; the character answers each once, in the
    turn after it, with no card markup, no question ending in a comma, no "said me"."""
    async with Fabula(redis_url, Settings()) as fab:
        store = await _story(fab, tmp_path, card)
        await fab.set_played(store, ["user"])
        name = (await author_view(store)).name(CHARACTERS[card])
        for words in [*QUESTIONS, "Thank you."]:
            out = await fab.run(store, auto=True, parts={"User": Part(words=words)})
            assert out.outcome == "committed", out
        texts = [t.text for t in await store.turn_texts(1)]
        for question in QUESTIONS:
            (i,) = [i for i, t in enumerate(texts) if f'"{question}" said User.' in t]
            after = texts[i + 1]
            assert after.count(f"said {name}.") == 1, (question, after)  # answered once
            assert has_markup(after) is None, after
            assert _WRONG.search(after) is None, after
            assert _COMMA_QUESTION.search(after) is None, after


_COMMA_QUESTION = re.compile(
    r'"(?:What|Who|Where|When|Why|How|Are|Is|Can|Could|Do|Does|Will|Would)\b[^"]*," said'
)


def test_situated_answers() -> None:
    """What it says of the moment, from what it believes of it only."""
    glade = Company(place="the glade")
    assert situated("Where are we?", glade) == "We are in the glade."
    assert situated("Where am I?", glade) == "You are in the glade."
    assert situated("Where are you?", Company(place="Eldoria")) == "I am in Eldoria."
    assert situated("Where are we?", Company(place=None)) == "I do not know where we are."
    gone = Company(place="the glade", asker_here=False)
    assert situated("Where are we?", gone) == "I am in the glade."
    assert situated("Are you alone?", gone) == "Yes, I am alone."
    assert situated("Is anyone else here?", Company("the glade", ("Mara", "Ben"))) == (
        "No: Mara and Ben are here with me."
    )
    assert situated("How are you?", Company("the glade", feeling="tired")) == "I am tired."
    assert situated("What is Eldoria?", glade) is None


def test_gestures_and_first_person_grammar() -> None:
    """A card's action told in the past, its second verb too, a short verb's consonant
    doubled; a description's later "she has" in the first person."""
    assert gesture_of("Ilsa pulls her shawl tighter and smiles.", "Ilsa", "User") == (
        "Ilsa pulled her shawl tighter and smiled."
    )
    assert gesture_of("She stirs the fire.", "Ilsa", "User") == "Ilsa stirred the fire."
    assert gesture_of("She looks at the boots and socks.", "Ilsa", "User") == (
        "Ilsa looked at the boots and socks."
    )
    said = reply(
        "Who are you?",
        "Marta",
        description="Marta is a ferrywoman. She is old, and she has rowed for forty years.",
    )
    assert said == "I am a ferrywoman. I am old, and I have rowed for forty years."


async def test_asked_to_go_somewhere_it_knows_it_goes(redis_url: str, tmp_path: Path) -> None:
    """A card character acts on what it is asked: "Can we go to Eastmere?" — it says so
    and goes; asked to go where it is, it says it is there already."""
    async with Fabula(redis_url, Settings()) as fab:
        store = await _story(fab, tmp_path, "plist")
        await fab.commit_scripted(store, '"Can we go to Eastmere?" said User.')
        mind = await fab.minds.mind(store.story, "bram", store.branch)
        brief = CharacterBrief(character="bram", name="Bram")
        proposal = await OfflineCharacter().propose(mind, brief)
        said, went = proposal.actions
        assert (said.kind, said.line, said.listener) == ("say", "Come with me, User", "user")
        assert (went.kind, went.target) == ("go", "eastmere")
        here = await _place(store, "bram")
        action = await _answer(fab, store, "bram", f"Can we go to {here}?")
        assert action.line == f"We are in {here} already, User"


@pytest.mark.parametrize("card", ["plist", "prose"])
async def test_chat_answers_of_the_moment_and_of_what_it_does_not_hold(
    redis_url: str, tmp_path: Path, card: str
) -> None:
    """`fabula chat`: "Where are we?" was "I don't know where the we is."; "What are your
    powers?" of a card naming none, everything it remembered (with "said me")."""
    async with Fabula(redis_url, Settings()) as fab:
        store = await _story(fab, tmp_path, card)
        me = CHARACTERS[card]
        name = (await author_view(store)).name(me)
        await fab.commit_scripted(store, f'"How do you do?" said User. "Hello," said {name}.')
        chat = fab.read(store).chat
        assert (await chat(name, "Where are we?")).answer == f"I am in {await _place(store, me)}."
        assert (await chat(name, "Are you alone out here?")).answer == "No: User is here with me."
        assert (await chat(name, "How are you?")).answer == "I am well."
        assert (await chat(name, "What are your powers?")).answer == f"{NO_ANSWER}."
        said = (await chat(name, "What did you say?")).answer
        assert '"Hello," I said.' in said and "said me" not in said, said
