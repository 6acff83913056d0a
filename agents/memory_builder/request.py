"""What the memory-builder's model is asked about, and with what: the sentences the
offline reader leaves to it (:func:`read_first`; one that may tell nothing, :func:`may_tell`,
is never asked about), where the turn starts (:class:`Setting`, :func:`setting_of`) and
the request's text (:func:`render_text`)."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from fabula.agents.memory_builder.offline import Reader
from fabula.agents.memory_builder.referents import Referents
from fabula.agents.reading.phases import read_story
from fabula.memory.actions import StoryAction
from fabula.memory.projections import project_world
from fabula.memory.records import Entity
from fabula.memory.store.view import StoryReads
from fabula.memory.text import has_word, split_sentences


@dataclass(frozen=True)
class Setting:
    """Where a turn starts, for resolving its pronouns: the scene (the place of the latest
    entry), where each character is, and the previous turn's text."""

    scene: str | None = None
    whereabouts: tuple[tuple[str, str], ...] = ()  # (character, place), by character
    previous: str = ""


def read_first(
    text: str, entities: Mapping[str, Entity], reader: Reader = read_story
) -> tuple[list[StoryAction], list[tuple[int, int]]]:
    """What the offline ``reader`` (the phased reader unless told) reads of ``text``: the
    actions whose names are all entities of the story of the right kinds (as the reader
    gives them), and the spans of the other sentences, left to the model."""
    referents = Referents(entities)
    names = set().union(*(_name_words(e.name) for e in entities.values()))
    read: list[StoryAction] = []
    unread: list[tuple[int, int]] = []
    for action in reader(text, entities):
        if action.kind != "narration" and not referents.check(action, "")[1]:
            read.append(action)
        elif may_tell(text[action.start : action.end], names):
            unread.append((action.start, action.end))
    return read, unread


# the words that can stand for an entity in a sentence that does not name one
_STANDS_FOR = frozenset(
    {"he", "she", "him", "her", "his", "hers", "himself", "herself", "it", "its", "itself"}
    | {"they", "them", "their", "theirs", "themselves", "i", "me", "my", "mine", "myself"}
    | {"we", "us", "our", "ours", "ourselves", "you", "your", "yours", "yourself"}
)
CAPITALISED = re.compile(r"\b[A-Z][\w'-]*")
"""A capitalised word: a name, unless it opens a sentence."""
_OPENS = tuple(".!?:;\"“”‘'([—–-*_")  # what may come before a word that opens a sentence
_LETTERS = re.compile(r"[a-z0-9]+")
_ARTICLE_WORDS = frozenset({"the", "a", "an", "of", "and", "to", "in", "on", "at"})


def _name_words(name: str) -> set[str]:
    """The words of an entity's name that can name it in part ("bin" of "donation bin")."""
    return set(_LETTERS.findall(name.lower())) - _ARTICLE_WORDS


def may_tell(sentence: str, names: set[str]) -> bool:
    """Whether a sentence the offline reader left as narration may still tell an action a
    model could read: it names a known entity (one word of its name is enough), stands for
    one with a pronoun, or brings in a name (a capitalised word not opening the sentence).
    Any other sentence ("The wind rose over the sea.", "**") tells nobody anything: it stays
    narration and the model is not asked about it, which saves a model call a turn where
    nothing else is left."""
    if not has_word(sentence):
        return False
    said = set(_LETTERS.findall(sentence.lower()))
    if said & names or said & _STANDS_FOR:
        return True
    for word in CAPITALISED.finditer(sentence):
        before = sentence[: word.start()].rstrip()
        if before and not before.endswith(_OPENS):
            return True
    return False


def render_text(
    text: str,
    entities: dict[str, Entity],
    setting: Setting | None = None,
    *,
    unread: Sequence[tuple[int, int]] | None = None,
) -> str:
    """The extraction request: known entities, where the turn starts, the text, and the
    sentences to read with their spans (``unread``; default: every sentence)."""
    known = []
    for kind in ("character", "place", "object"):
        names = sorted(e.name for e in entities.values() if e.kind == kind)
        if names:
            known.append(f"{kind}s: {', '.join(names)}")
    spans = list(split_sentences(text) if unread is None else unread)
    sentences = "\n".join(f"[{s}:{e}] {text[s:e]}" for s, e in spans)
    heading = "Sentences, with their spans [start:end]"
    if unread is not None and len(spans) < len(list(split_sentences(text))):
        heading = "Sentences to read, with their spans [start:end] (the others are read)"
    scene: list[str] = []
    if setting is not None:

        def name(i: str) -> str:
            return entities[i].name if i in entities else i

        if setting.scene:
            scene.append(f"latest entry: {name(setting.scene)}")
        scene += [f"{name(c)} is in {name(p)}" for c, p in setting.whereabouts]
    sections = [
        ("Known entities", "\n".join(known)),
        ("Scene", "\n".join(scene)),
        ("Previous turn", setting.previous if setting is not None else ""),
        (f"Text ({len(text)} characters)", text),
        (heading, sentences),
    ]
    return "\n\n".join(f"## {title}\n{body}" for title, body in sections if body)


async def setting_of(
    store: StoryReads, as_of: int | None, entities: Mapping[str, Entity]
) -> Setting:
    """Where a turn after ``as_of`` (None: the head) starts: the previous turn's scene,
    where each character is in W (the pack's setup places them before the first turn),
    and the previous turn's text."""
    last = await store.head() if as_of is None else as_of
    previous = await store.turn_texts(last, last) if last >= 1 else []
    world = await project_world(store, as_of)
    whereabouts = tuple(
        (c, place)
        for c in sorted(i for i, e in entities.items() if e.kind == "character")
        if (place := world.where(c)) is not None
    )
    if not previous:
        return Setting(whereabouts=whereabouts)
    return Setting(scene=previous[0].scene, whereabouts=whereabouts, previous=previous[0].text)
