"""The small slips issue 44's replay of the evening left open, each as a general rule:
a lore record answered from its text, not its header; a place the character knows
answering a question about it; a proper place name without an article; a name of several
words read whole; a question not put twice.

Real Redis, the offline engine, the real turn graph."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from fabula.agents.character.offline import OfflineCharacter
from fabula.agents.contracts import Action, CharacterBrief
from fabula.agents.reading.extract import parse_sentence
from fabula.agents.shared.replies import NO_ANSWER, place_texts, reply, said_line
from fabula.agents.views import author_view
from fabula.graph.service import Fabula
from fabula.memory.records import Entity
from fabula.memory.store import StoryStore
from fabula.memory.text import split_sentences
from fabula.settings import Settings
from fabula.testing import imports as fx
from fabula.worlds.imports import import_paths
from fabula.worlds.loader import load_world

RECORD = (
    "Falko·Weiss: friend, alumni. To Trek, Falko is a dedicated and helpful senior "
    "colleague. He keeps his distance."
)


def test_a_labelled_record_is_answered_from_its_text_not_its_header() -> None:
    """BookWorld's relations come as records ("Falko·Weiss: friend, alumni. To Trek, …"):
    the answer said "Falko·Weiss: friend, alumni." first; it says the record's text (its
    own view as its own: no "To Trek,")."""
    said = reply("What do you make of Falko·Weiss?", "Trek·Vemil", lore=[RECORD])
    assert said.startswith("Falko is a dedicated and helpful senior colleague.")
    assert "alumni" not in said and "Falko·Weiss:" not in said


def test_a_record_whose_text_opens_after_its_label_keeps_that_text() -> None:
    """A label before sentences ("Eastmere: A village on a lake. …") is dropped, the
    sentence after it is not (it is no list of the header's)."""
    said = reply(
        "What is Eastmere?", "Bram", lore=["Eastmere: A village on a lake. It has a market."]
    )
    assert said == "A village on a lake. It has a market."


def _entity(ident: str, name: str, description: str, kind: str = "place") -> Entity:
    return Entity(id=ident, name=name, kind=kind, description=description)


def test_a_place_is_answered_from_what_the_character_knows_of_it() -> None:
    """Only the places in the entities given (the character's own mind) answer, by their
    whole names: a place it does not know of is not its to describe."""
    mine = {
        "laboratory": _entity("laboratory", "Laboratory", "A high-security research lab."),
        "trek": _entity("trek", "Trek", "A researcher.", kind="character"),
    }
    assert place_texts("What do you make of the Laboratory?", mine) == [
        "A high-security research lab."
    ]
    assert place_texts("What do you make of the University?", mine) == []
    assert place_texts("What do you make of Trek?", mine) == []  # a character is no place
    said = reply("What do you make of the Laboratory?", "Lacia", places=["A research lab."])
    assert said == "A research lab."
    # a world's description, though it reads like a note to a model ("AI"), is said
    driving = "A conglomerate driving the frontier of AI."
    assert reply("What is Eldridge Corporation?", "Lacia", places=[driving]) == driving


async def _bookworld(fab: Fabula) -> StoryStore:
    """The shared BookWorld example (three researchers, three places), made a story."""
    root = Path("/work/shared/data/imports/bookworld/experiment_presets")
    if not root.is_dir():  # the repository's copy of the shared data, when run elsewhere
        root = Path(__file__).resolve().parents[3] / "shared/data/imports/bookworld"
        root = root / "experiment_presets"
    pack = import_paths([root / "example_free.json"]).pack
    return fab.store(await fab.create_story(pack, "bookworld"))


async def _answer(fab: Fabula, store: StoryStore, character: str, line: str) -> Action:
    """What ``character`` proposes once ``line`` (a sentence of the story) is said."""
    await fab.commit_scripted(store, line)
    view = await author_view(store)
    mind = await fab.minds.mind(store.story, character, store.branch)
    brief = CharacterBrief(character=character, name=view.name(character))
    proposal = await OfflineCharacter().propose(mind, brief)
    assert proposal.intent == "answer", proposal
    return proposal.actions[0]


async def test_a_bookworld_role_describes_a_place_it_knows(redis_url: str) -> None:
    """Issue 44: "What do you make of the Laboratory?" got "I cannot say": the place's
    description, in the character's own mind, answers it."""
    async with Fabula(redis_url, Settings()) as fab:
        store = await _bookworld(fab)
        await fab.commit_scripted(store, "Trek·Vemil went to Eldridge Corporation.")
        action = await _answer(
            fab, store, "lacia_eldridge", '"What do you make of the Laboratory?" said Trek·Vemil.'
        )
        assert action.line is not None
        assert action.line.startswith(
            "A high-security research lab pioneering human-machine fusion experiments"
        )


async def test_asked_to_go_somewhere_it_does_not_know(redis_url: str, tmp_path: Path) -> None:
    """ "Will you row me to the far bank?" of a card with no such place: not "I cannot
    say" but that it does not know where that is."""
    async with Fabula(redis_url, Settings()) as fab:
        path = fx.write_json(tmp_path / "prose.json", fx.evening_cards()["prose"])
        store = fab.store(await fab.create_story(import_paths([path]).pack, "prose"))
        action = await _answer(fab, store, "marta", '"Will you row me to the far bank?" said User.')
        assert action.line == "I do not know where the far bank is, User"
        assert action.line != f"{NO_ANSWER}, User"


async def test_where_are_we_names_a_proper_place_without_an_article(
    redis_url: str, tmp_path: Path
) -> None:
    """ "We are in the Sable Crossing" is "We are in Sable Crossing"."""
    async with Fabula(redis_url, Settings()) as fab:
        path = fx.write_json(tmp_path / "prose.json", fx.evening_cards()["prose"])
        store = fab.store(await fab.create_story(import_paths([path]).pack, "prose"))
        action = await _answer(fab, store, "marta", '"Where are we?" said User.')
        assert action.line == "We are in Sable Crossing, User"


def test_a_speaker_of_two_words_is_one_speaker() -> None:
    """ "said Trek Vemil" was read as Trek saying it to Vemil; beside a quotation a name
    runs to its end, and one said to someone takes "to"."""
    for sentence, speaker, to in [
        ('"Hello," said Trek Vemil.', "Trek Vemil", None),
        ('"Hello," said Old Tom to User.', "Old Tom", "User"),
        ('"Who are you?" Trek Vemil asked Lacia Eldridge.', "Trek Vemil", "Lacia Eldridge"),
        ('"Where?" Leo asked Mara.', "Leo", "Mara"),
        ('"Hi," said Leo, to Mara.', "Leo", "Mara"),
    ]:
        said = said_line(sentence)
        assert said is not None and (said.speaker, said.to) == (speaker, to), sentence


def test_a_name_of_the_cast_is_read_whole_where_a_sentence_starts() -> None:
    """Where a sentence starts, a name of several words is the cast's: read whole when
    the cast has it ("Old Tom went to the quay"), not guessed from capitals."""
    cast = ("Old Tom", "User")
    moved = parse_sentence("Old Tom went to the quay.", 0, cast)
    assert (moved.kind, moved.actors, moved.place) == ("go", ("Old Tom",), "quay")
    assert parse_sentence("Old Tom went to the quay.").kind == "narration"
    said = parse_sentence('Old Tom said to User, "Afternoon."', 0, cast)
    assert (said.actors, said.listeners) == (("Old Tom",), ("User",))


async def test_a_character_of_two_words_knows_its_own_answers(
    redis_url: str, tmp_path: Path
) -> None:
    """Old Tom's lines were read as "Old" speaking to "Tom": the critic found two
    characters out of nowhere, and Old Tom never knew he had answered User (so called him
    by name on every line). Read whole, he calls User by name once, and the story holds
    no character "Old" or "Tom"."""
    async with Fabula(redis_url, Settings()) as fab:
        path = fx.write_json(tmp_path / "tom.json", fx.prose_card())
        store = fab.store(await fab.create_story(import_paths([path]).pack, "tom"))
        first = await _answer(fab, store, "old_tom", '"Who are you?" said User.')
        await fab.commit_scripted(store, f'"{first.line}," said Old Tom.')
        second = await _answer(fab, store, "old_tom", '"How are you?" said User.')
        assert first.line is not None and first.line.endswith(", User")
        assert second.line == "I am well."
        view = await author_view(store)
        assert "old" not in view.entities and "tom" not in view.entities


async def test_the_demo_puts_no_question_twice(redis_url: str) -> None:
    """The demo had Mara ask "What are you hiding, Leo?" at turns 5 and 6 (her check for
    having asked read the line without its question mark): a question is put once, and
    waits for its answer in the turn that follows."""
    async with Fabula(redis_url, Settings()) as fab:
        pack = load_world("hollow_book")
        store = fab.store(await fab.create_story(pack, "demo", opening=False))
        for text in pack.opening.turns:
            await fab.commit_scripted(store, text)
        await fab.run(store, 20, auto=True)
        asked: Counter[tuple[str, str]] = Counter()
        for turn in await store.turn_texts():
            for start, end in split_sentences(turn.text):
                said = said_line(turn.text[start:end])
                if said is not None and said.words.endswith("?"):
                    asked[(said.speaker, said.words)] += 1
        assert asked[("Mara", "What are you hiding, Leo?")] == 1
        assert all(n == 1 for n in asked.values()), asked
