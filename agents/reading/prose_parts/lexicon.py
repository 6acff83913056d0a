"""The story's entities as the words a text names them with (the prose reader's lexicon).

A character is named by its full name or, where no other shares it, its first name; a thing
(object, container, place) by its name's last word, the head, with the others as modifiers
("the donation bin"; "desk or workspace" two ways; "fruit basket in the kitchen" by
"basket"), and an owner where the name has one ("Zoe's own wardrobe"). A general noun
("fruit", "garment") names the one plain object it is a kind of, and a general word for a
place ("room") the one place it fits, by WordNet's hypernyms (:func:`.general_table`).
Words are compared in their singular (:func:`_singular`), kept once a word.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from dataclasses import dataclass

from fabula.agents.reading.prose_parts.words import _DETERMINERS, _INTERPUNCT, _POST_MODIFIERS
from fabula.memory.index.general import general_table
from fabula.memory.index.terms import terms
from fabula.memory.records import Entity, slug


@dataclass
class _Thing:
    id: str
    kind: str
    words: tuple[str, ...]
    owner: str | None
    container: bool


@functools.lru_cache(maxsize=1 << 16)
def _singular(word: str) -> str:
    """A word's singular, lower case (read for every token a sentence's mentions test:
    kept once a word, as the words of one language repeat)."""
    word = word.lower().replace("’", "'")
    if word.endswith("'s"):
        word = word[:-2]
    if len(word) > 4 and word.endswith("ves"):
        return word[:-3] + "f"
    if len(word) > 3 and word.endswith("ies"):
        return word[:-3] + "y"
    if len(word) > 3 and word.endswith(("ches", "shes", "sses", "xes", "oes")):
        return word[:-2]
    if len(word) > 2 and word.endswith("s") and not word.endswith(("ss", "us", "is")):
        return word[:-1]
    return word


@functools.lru_cache(maxsize=1 << 16)
def _terms_of(word: str) -> tuple[str, ...]:
    """The index terms of a word's singular (every token is tested against the story's
    general nouns: kept once a word)."""
    return tuple(terms(_singular(word)))


class _Lexicon:
    """The story's entities as the words a text names them with."""

    def __init__(self, entities: Mapping[str, Entity]) -> None:
        self.characters: dict[str, str] = {}
        self.names: dict[str, str] = {}  # id -> name as written
        # the characters' names as written, for the controlled grammar to read whole
        self.cast: tuple[str, ...] = tuple(
            sorted(e.name for e in entities.values() if e.kind == "character")
        )
        first: dict[str, list[str]] = {}
        self.things: dict[str, list[_Thing]] = {}
        for sid, entity in sorted(entities.items()):
            if entity.kind == "group":
                continue
            if entity.kind == "character":
                # a name's parts may be joined by an interpunct ("Lacia·Eldridge"), which
                # the text's words are split at as at a space
                spelled = _INTERPUNCT.sub(" ", entity.name).lower()
                self.characters[spelled] = sid
                head = spelled.split()[0]
                first.setdefault(head, []).append(sid)
                continue
            for words, owner in self._alternatives(entity.name, entities):
                thing = _Thing(sid, entity.kind, words, owner, entity.is_container)
                self.things.setdefault(words[-1], []).append(thing)
        for head, ids in first.items():
            if len(ids) == 1:
                self.characters.setdefault(head, ids[0])
        self.general = self._general()
        # the general words of the story's places ("room" for a kitchen)
        table = general_table()
        places: dict[str, set[str]] = {}
        for ts in self.things.values():
            for t in ts:
                if t.kind != "place":
                    continue
                for w in t.words[-1:]:
                    for g in (*terms(w), *(h for s in terms(w) for h in table.get(s, ()))):
                        places.setdefault(g, set()).add(t.id)
        self.place_words = set(places)
        # a general word that only one of the story's places is a kind of ("the room"
        # where the bedroom is the only room)
        self.place_general = {g: next(iter(ids)) for g, ids in places.items() if len(ids) == 1}

    def _general(self) -> dict[str, _Thing]:
        """A general noun's stem -> the one plain object it is a kind of (WordNet's
        hypernyms: "fruit" for a grapefruit, "garment" for a skirt); a noun that would fit
        two of the story's things, or that names one itself, fits none. Containers are
        left out: their general words ("room", "case") name places and cases too often."""
        table = general_table()
        found: dict[str, list[_Thing]] = {}
        every = [t for ts in self.things.values() for t in ts]
        for thing in every:
            for general in (g for t in terms(thing.words[-1]) for g in table.get(t, ())):
                if "_" not in general:
                    found.setdefault(general, []).append(thing)
        own = {t for thing in every for w in thing.words for t in terms(w)}
        return {
            g: ts[0]
            for g, ts in found.items()
            if len(ts) == 1 and g not in own and ts[0].kind == "object" and not ts[0].container
        }

    def _alternatives(
        self, name: str, entities: Mapping[str, Entity]
    ) -> list[tuple[tuple[str, ...], str | None]]:
        """The words each way a name names its thing, head last: "desk or workspace" two
        ways, "fruit basket in the kitchen" by "basket", the place phrase a modifier."""
        owner = None
        ways: list[list[str]] = [[]]
        after: list[str] = []  # a post-modifier's words ("in the kitchen")
        for raw in re.findall(r"[A-Za-z][A-Za-z'’-]*", name.replace("_", " ")):
            low = raw.lower().replace("’", "'")
            if low.endswith("'s"):
                sid = slug(raw[:-2]) if raw[:-2] else ""
                if sid in entities and entities[sid].kind == "character":
                    owner = sid
                    continue
            if low == "or" and ways[-1] and not after:
                ways.append([])
                continue
            if low in _POST_MODIFIERS and ways[-1]:
                after.append(low)
                continue
            if low in _DETERMINERS:
                continue
            (after if after else ways[-1]).append(_singular(low))
        modifiers = [w for w in after if w not in _POST_MODIFIERS]
        # "red or blue box": a lone word before a longer way is a modifier of its head
        for k in range(len(ways) - 1):
            if len(ways[k]) == 1 and len(ways[k + 1]) > 1:
                ways[k + 1].insert(0, ways[k].pop())
        return [(tuple([*modifiers, *way]), owner) for way in ways if way]
