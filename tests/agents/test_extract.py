"""The controlled-English extractor: every sentence form, exact spans, narration fallback."""

from __future__ import annotations

import pytest

from fabula.agents.memory_builder import extract, parse_clause, parse_sentence
from fabula.memory.actions import Clause
from fabula.memory.text import split_sentences


class TestSplitSentences:
    def test_periods_and_line_breaks_end_sentences(self) -> None:
        """A line break ends a sentence even without a period (ToMi's bare lines)."""
        text = "Aiden loves the tangerine\nAva entered the den. Ben exited the den."
        spans = [text[s:e] for s, e in split_sentences(text)]
        assert spans == ["Aiden loves the tangerine", "Ava entered the den.", "Ben exited the den."]

    def test_quoted_punctuation_does_not_split(self) -> None:
        """A period or question mark inside quotation marks does not end the sentence."""
        text = '"Wait. Is it here?" asked Leo. Mara went to the attic.'
        spans = [text[s:e] for s, e in split_sentences(text)]
        assert spans == ['"Wait. Is it here?" asked Leo.', "Mara went to the attic."]


class TestSentenceForms:
    @pytest.mark.parametrize(
        ("sentence", "kind", "fields"),
        [
            ("Ella entered the garage.", "enter", {"actors": ("Ella",), "place": "garage"}),
            (
                "Avery, Charlotte and Owen entered the living_room.",
                "enter",
                {"actors": ("Avery", "Charlotte", "Owen"), "place": "living_room"},
            ),
            ("Ava and Ben entered the hall.", "enter", {"actors": ("Ava", "Ben")}),
            ("Ella exited the garage.", "exit", {"actors": ("Ella",), "place": "garage"}),
            ("Ella left the garage.", "exit", {"place": "garage"}),
            ("Wren went to the kitchen.", "go", {"actors": ("Wren",), "place": "kitchen"}),
            ("Leo is in the study.", "locate", {"actors": ("Leo",), "place": "study"}),
            # a story told in the past says where its cast was the same way
            ("Leo was in the study.", "locate", {"actors": ("Leo",), "place": "study"}),
            ("Noa and Mia were in the attic.", "locate", {"actors": ("Noa", "Mia")}),
            (
                "Isla made no movements and stayed in the sunroom for 1 minute.",
                "stay",
                {"actors": ("Isla",), "place": "sunroom"},
            ),
            (
                "Avery moved the spinach to the green_treasure_chest.",
                "move",
                {"obj": "spinach", "target": "green_treasure_chest"},
            ),
            (
                "Tomas put the recorder in the hollow_book.",
                "put",
                {"obj": "recorder", "target": "hollow_book"},
            ),
            ("Leo picked up the key.", "take", {"obj": "key"}),
            ("Leo took the key.", "take", {"obj": "key"}),
            ("Mara gave the key to Leo.", "give", {"obj": "key", "target": "Leo"}),
            ("Leo dropped the key.", "drop", {"obj": "key"}),
            ("Aiden loves the tangerine", "feel", {"verb": "loves", "obj": "tangerine"}),
            ("Owen dislikes the green_pepper.", "feel", {"verb": "dislikes"}),
            ("Evelyn saw a dog.", "see", {"utterance": "dog"}),
            ("Leo thought about the dye for a while.", "think", {"obj": "dye"}),
        ],
    )
    def test_form(self, sentence: str, kind: str, fields: dict[str, object]) -> None:
        """Each controlled form becomes its typed action with the names as written."""
        action = parse_sentence(sentence)
        assert action.kind == kind
        for name, value in fields.items():
            assert getattr(action, name) == value

    def test_bare_location_statement(self) -> None:
        action = parse_sentence("The spinach is in the green_crate.")
        assert action.kind == "state"
        assert action.clause == Clause(subject="spinach", attribute="location", value="green_crate")

    def test_bare_attribute_statement_keeps_the_whole_value(self) -> None:
        action = parse_sentence("The formula of the dye is two parts ash to one part salt.")
        assert action.clause == Clause(
            subject="dye", attribute="formula", value="two parts ash to one part salt"
        )

    def test_seeing_that_names_every_seer(self) -> None:
        action = parse_sentence("Leo and Mara saw that the flavour of the wafers is glowmint.")
        assert action.kind == "perceive"
        assert action.actors == ("Leo", "Mara")
        assert action.clause == Clause(subject="wafers", attribute="flavour", value="glowmint")

    def test_private_telling_and_public_claim(self) -> None:
        told = parse_sentence(
            "Ava privately told Isla that the sweet_potato is in the green_drawer."
        )
        assert (told.kind, told.actors, told.listeners) == ("tell", ("Ava",), ("Isla",))
        claim = parse_sentence("Ben publicly claimed that cherry is in the blue_box.")
        assert claim.kind == "claim"
        assert claim.clause == Clause(subject="cherry", attribute="location", value="blue_box")

    def test_dialogue_is_an_utterance_and_a_claim_only_when_it_is_a_clause(self) -> None:
        plain = parse_sentence('"That was strange," said Leo.')
        assert (plain.kind, plain.actors, plain.utterance, plain.clause) == (
            "say",
            ("Leo",),
            "That was strange",
            None,
        )
        claim = parse_sentence('"The key is in the drawer," said Mara.')
        assert claim.clause == Clause(subject="key", attribute="location", value="drawer")

    @pytest.mark.parametrize(
        "sentence",
        [
            '"What are your powers?" Ann asked.',
            '"What are your powers?" Ann asked Leo.',
            "“What are your powers?” Ann asked.",
            'Ann asked Leo, "What are your powers?"',
            '"What are your powers?" said Ann to Leo.',
        ],
    )
    def test_dialogue_attributed_after_or_with_a_listener(self, sentence: str) -> None:
        """The orders a person writes dialogue in: the name before its verb, a listener
        named (read as the listener), curly quotes."""
        said = parse_sentence(sentence)
        assert (said.kind, said.actors, said.utterance) == (
            "say",
            ("Ann",),
            "What are your powers?",
        )
        # whom it was said to, when the sentence names them
        assert said.listeners == (("Leo",) if "Leo" in sentence else ())

    @pytest.mark.parametrize(
        ("sentence", "words"),
        [
            ("Ann asked Leo about his letter.", "What about your letter?"),
            ("Ann asked Leo what he was reading.", "What were you reading?"),
            ("Ann asked Leo whether the door is locked.", "Is the door locked?"),
        ],
    )
    def test_a_question_told_as_narration_is_said_to_its_listener(
        self, sentence: str, words: str
    ) -> None:
        """A reported question is an utterance to the one it names, its words as said to
        them; "asked B where the O is" stays the grammar's question of where a thing is."""
        said = parse_sentence(sentence)
        assert (said.kind, said.actors, said.listeners, said.utterance) == (
            "say",
            ("Ann",),
            ("Leo",),
            words,
        )
        assert parse_sentence("Ann asked Leo where the key is.").kind == "ask"
        assert parse_sentence("Ann asked Leo where the key was.").obj == "key"  # as told
        assert parse_sentence("Ann asked Leo to stay.").kind == "narration"


class TestNarration:
    @pytest.mark.parametrize(
        "sentence",
        [
            "A cold wind came off the hills.",
            "The lamps were lit early that evening.",
            "The clock in the hall struck the hour.",
            "Noah lost his gloves.",
            "***",
        ],
    )
    def test_unparsable_sentence_is_narration(self, sentence: str) -> None:
        """A sentence no form matches is narration, never an error."""
        assert parse_sentence(sentence).kind == "narration"

    def test_spans_are_exact_and_nothing_is_dropped(self) -> None:
        """Every sentence yields one action whose span quotes it exactly."""
        text = (
            'Iona exited the attic. A cold wind came off the hills. "We should hurry," '
            "said Mara. The name of the boat is Gull."
        )
        actions = extract(text)
        assert [a.kind for a in actions] == ["exit", "narration", "say", "state"]
        assert text[actions[1].start : actions[1].end] == "A cold wind came off the hills."
        assert text[actions[2].start : actions[2].end] == '"We should hurry," said Mara.'


def test_parse_clause_refuses_other_text() -> None:
    assert parse_clause("it rained all day") is None


def test_a_name_joined_by_an_interpunct_is_one_name() -> None:
    """BookWorld writes a whole name with an interpunct ("Lacia·Eldridge"): the grammar
    reads it as one name, so the line is heard and its speaker known."""
    said = parse_sentence('"What do you make of the signal?" said Trek·Vemil.')
    assert (said.kind, said.actors, said.utterance) == (
        "say",
        ("Trek·Vemil",),
        "What do you make of the signal?",
    )
    went = parse_sentence("Lacia·Eldridge went to the Laboratory.")
    assert (went.kind, went.actors) == ("go", ("Lacia·Eldridge",))
