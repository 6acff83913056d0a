"""Card texts in the shapes community cards are written in (W++, PList, Ali:Chat, <START>
examples, tag macros, instructions to a model, plain prose), read into traits, example
exchanges and prose — the markup never reaching the prose."""

from __future__ import annotations

import json
from pathlib import Path

from fabula.testing import imports as fx
from fabula.worlds.cardtext import (
    PERSONA,
    Trait,
    has_markup,
    read_card_text,
    speech_of,
    trait_sentences,
)
from fabula.worlds.imports import import_paths
from fabula.worlds.imports.cards import read_card, resolve_macros
from fabula.worlds.imports.export import character_card
from fabula.worlds.imports.limits import ImportLimits
from fabula.worlds.pack import CharacterSpec


def _data(card: dict[str, object]) -> dict[str, str]:
    data = card.get("data", card)
    assert isinstance(data, dict)
    return data


def _text(card: dict[str, object], key: str, name: str) -> str:
    return resolve_macros(_data(card)[key], name, "User")


class TestShapes:
    def test_wpp_lines_and_an_ali_chat_example_in_the_description(self) -> None:
        """The stock card's shape: ``[X's Personality= "a", "b"]`` lines are traits by
        category, the example after ``<START>`` an exchange; no prose is left."""
        read = read_card_text(
            _text(fx.seraphina_card(), "description", "Seraphina"), "Seraphina", users=("User",)
        )
        assert read.traits[0] == Trait(
            "personality", ("caring", "protective", "gentle", "watchful", "warm")
        )
        assert [t.category for t in read.traits] == ["personality", "body", "clothes"]
        (example,) = read.exchanges
        assert (example.asker, example.prompt) == ("User", '"Describe your traits?"')
        assert example.reply.startswith("*Seraphina tilts her head")
        assert read.prose == ""

    def test_a_wpp_block(self) -> None:
        """``[character("X") { Field("a" + "b") }]``: each field a trait."""
        read = read_card_text(fx.wpp_card()["description"], "Flux the Cat")
        assert {t.category: t.values for t in read.traits} == {
            "species": ("cat",),
            "personality": ("smart", "cool", "impulsive", "wary"),
            "body": ("grey fur", "green eyes", "a torn left ear"),
            "likes": ("sardines", "warm windowsills"),
            "dislikes": ("rain", "dogs"),
        }
        assert (read.prose, read.exchanges) == ("", ())

    def test_a_plist_with_ali_chat(self) -> None:
        """``[Mara: a, b; Mara's clothes: …]``: the bare list is her persona; the Ali:Chat
        turns after it are two exchanges, each reply as written."""
        read = read_card_text(_text(fx.plist_card(), "description", "Mara"), "Mara")
        assert read.traits[0] == Trait(PERSONA, ("baker", "cheerful", "nosy", "early riser"))
        assert read.traits[1] == Trait("clothes", ("flour-dusted apron", "blue scarf"))
        assert [(x.prompt, x.asker) for x in read.exchanges] == [
            ("Who are you?", "User"),
            ("What do you bake?", "User"),
        ]
        assert read.exchanges[1].reply == (
            '"Rye loaves, honey buns, and a plum cake on Sundays." *She beams.*'
        )
        assert read.prose == ""

    def test_instructions_to_a_model(self) -> None:
        """Second person to the character becomes prose about it; orders to a model are
        set apart, never prose."""
        read = read_card_text(
            _text(fx.instructed_card(), "description", "Captain Vey"), "Captain Vey"
        )
        assert read.prose == (
            "Captain Vey is the smuggler captain of the airship Kestrel. Captain Vey is gruff, "
            "dry and loyal to Captain Vey's crew. Captain Vey's ship carries spices past the "
            "customs towers."
        )
        assert read.instructions == (
            "Never speak for User.",
            "Always describe Captain Vey's actions in asterisks.",
            "Write in the third person and stay in character.",
        )

    def test_plain_prose_is_kept_as_it_is(self) -> None:
        text = _text(fx.prose_card(), "description", "Old Tom")
        read = read_card_text(text, "Old Tom")
        assert read.prose == " ".join(text.split())
        assert (read.traits, read.exchanges, read.instructions) == ((), (), ())

    def test_tags_and_start_examples(self) -> None:
        """``<USER>``/``<BOT>`` turns between ``<START>`` tags, read once resolved."""
        text = resolve_macros(fx.wpp_card()["mes_example"], "Flux the Cat", "User")
        read = read_card_text(text, "Flux the Cat", users=("User",))
        assert [x.prompt for x in read.exchanges] == ["Do you have a home?", "What do you eat?"]
        assert len(read.examples) == 2

    def test_speech_and_deeds(self) -> None:
        assert speech_of('*She smiles.* "Hello there." *She waves.*') == (
            ["She smiles.", "She waves."],
            ["Hello there."],
        )
        assert speech_of('Vey grunts. "Fine."') == (["Vey grunts."], ["Fine."])
        assert speech_of("Go away.") == ([], ["Go away."])

    def test_traits_said_in_the_first_person(self) -> None:
        traits = [
            Trait("species", ("cat",)),
            Trait("personality", ("smart", "cool")),
            Trait("clothes", ("black sundress", "boots")),
            Trait("likes", ("fish",)),
            Trait("genre", ("slice of life",)),
            Trait("home", ("the glade",)),
        ]
        assert trait_sentences(traits) == [
            "I am a cat.",
            "I am smart and cool.",
            "I wear a black sundress and boots.",
            "I like fish.",
            "My home: the glade.",
        ]

    def test_a_body_and_a_calling_said_with_their_articles(self) -> None:
        """Issue 44's replay: "My occupation: ranger and warden …", "I have tall, brown
        braid and scar on the chin"."""
        traits = [
            Trait("occupation", ("ranger", "warden of the Thornwood")),
            Trait("body", ("tall", "brown braid", "scar on the chin")),
            Trait("body", ("pink hair", "amber eyes")),
        ]
        assert trait_sentences(traits) == [
            "I am a ranger and a warden of the Thornwood.",
            "I am tall.",
            "I have a brown braid and a scar on the chin.",
            "I have pink hair and amber eyes.",
        ]

    def test_a_plists_bare_list_says_what_and_how_one_is(self) -> None:
        """Issue 44's replay: "I am blacksmith, gruff, kind, proud of his work and
        widower." — a calling with its article apart from how one is, in one's own words."""
        traits = [Trait("persona", ("blacksmith", "gruff", "proud of his work", "widower"))]
        assert trait_sentences(traits) == [
            "I am a blacksmith and a widower.",
            "I am gruff and proud of my work.",
        ]
        clever = [Trait("personality", ("clever", "loyal"))]
        assert trait_sentences(clever) == ["I am clever and loyal."]

    def test_markup_is_found(self) -> None:
        for text, found in [
            ("Hello {{user}}.", "{{user}}"),
            ("<START> hi", "<START>"),
            ("He waves. <BOT> nods.", "<BOT>"),
            ("*smiles* Hi.", "*smiles*"),
            ('[Mara\'s body= "short"]', '[Mara\'s body= "short"]'),
        ]:
            assert has_markup(text) == found
        assert has_markup('Mara smiled. "Sit, sit," said Mara.') is None


def _imported(tmp_path: Path, name: str, card: dict[str, object]) -> CharacterSpec:
    path = fx.write_json(tmp_path / f"{name}.json", card)
    pack = import_paths([path]).pack
    return next(c for c in pack.characters if not c.played)


class TestImportedCards:
    def test_no_card_leaves_markup_in_its_character(self, tmp_path: Path) -> None:
        """Each card's character: its description and voice free of markup, its lists as
        traits, its description's examples among its examples."""
        for name, card in [
            ("sera", fx.seraphina_card()),
            ("flux", fx.wpp_card()),
            ("mara", fx.plist_card()),
            ("vey", fx.instructed_card()),
            ("tom", fx.prose_card()),
        ]:
            spec = _imported(tmp_path, name, card)
            for text in (spec.description, spec.voice):
                assert has_markup(text) is None, (name, text)
        sera = _imported(tmp_path, "sera", fx.seraphina_card())
        assert sera.traits["clothes"] == ("black sundress",)
        assert sera.description == ""
        assert sera.examples[0].startswith('User: "Describe your traits?"')
        assert len(sera.examples) == 3
        mara = _imported(tmp_path, "mara", fx.plist_card())
        assert mara.traits[PERSONA] == ("baker", "cheerful", "nosy", "early riser")

    def test_the_png_card_imports_with_its_ali_chat_book(self, tmp_path: Path) -> None:
        png = tmp_path / "Seraphina.png"
        png.write_bytes(fx.seraphina_png())
        pack = import_paths([png]).pack
        (book,) = pack.lore.books
        assert book.entries[0].content.startswith('User: "What are your powers?"\nSeraphina: *')

    def test_an_export_gives_the_card_back_as_it_came(self, tmp_path: Path) -> None:
        """The markup read into traits is the card's own again on export (the story
        changed nothing of it)."""
        card = fx.seraphina_card()
        read = read_card(card, "Seraphina", "User", ImportLimits())
        assert read.description == ""
        path = fx.write_json(tmp_path / "sera.json", card)
        pack = import_paths([path]).pack
        out = character_card(pack, "Seraphina", [], {}, as_of=0)
        assert out["data"]["description"] == card["data"]["description"]
        assert out["data"]["mes_example"] == card["data"]["mes_example"]
        assert json.dumps(out)  # a document, as written
