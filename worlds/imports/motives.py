"""What an imported character wants and where it is: goals and places from its own text.

A card has no goals and names no places as a world pack does, so an imported world would
not move: the offline planner pursues goals of the goal language (:mod:`fabula.worlds.goals`)
across places. This module reads them from what the sources say, and from nothing else:

- **places** (:func:`world_places`): the places the cards' greetings, scenarios,
  descriptions and lore name (:mod:`.places`); none named, the one place ``scene``;
- **where each starts** (:func:`home_of`): the first place of the world its greeting names,
  else its scenario, description or profile; else the world's first;
- **goals** (:func:`goals_of`), in this order: its own motivation (a BookWorld role's
  ``motivation``), each sentence a goal as written — read as the language reads it or as a
  goal about the one character or place it names, else kept as a motive the planner shows
  (the import says so once); then meeting each other character of the cast its text names
  or it has a relation with, and asking each one it has a relation with about the others
  it is related to and about what the story opens on ("ask Trek·Vemil about the enigmatic
  signal"), which the one asked answers from its own lore; then, for a BookWorld role,
  visiting each other place of the world — those its own text names first, as a role roams
  its map — and coming back to where it started. A card's character gets no place to
  visit: without goals it attends to the player (stays, answers, goes where it is asked).

A character that already has goals (a pack exported by Fabula) keeps them as they are.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence

from fabula.memory.index.general import the_place
from fabula.memory.records import slug
from fabula.worlds.imports.places import MOTION_VERBS as _MOTION
from fabula.worlds.imports.places import named_places, things_named
from fabula.worlds.lore import LoreBook
from fabula.worlds.pack import PlaceSpec

DEFAULT_PLACE = "scene"
"""The one place of a world whose sources name none."""

_WANTS = re.compile(
    r"^(?:(?:he|she|they|it|[A-Z][\w'’·-]*(?:\s+[A-Z][\w'’·-]*)*)\s+)?"
    r"(?:wants|want|hopes|hope|aims|aim|seeks|seek|plans|plan|intends|intend|needs|need"
    r"|wishes|wish|longs|long|strives|strive|tries|try|is determined|is trying|yearns)\s+to\s+",
    re.I,
)


def lore_entries(books: Iterable[LoreBook]) -> list[tuple[str, Sequence[str], str]]:
    """(name, keys, content) of each entry of ``books``: what :func:`.places.named_places`
    reads lore as."""
    return [(e.name or "", e.keys, e.content) for b in books for e in b.entries if e.enabled]


def world_places(
    texts: Sequence[str], books: Iterable[LoreBook], people: Iterable[str]
) -> list[PlaceSpec]:
    """The places ``texts`` and ``books`` name (see :mod:`.places`), as place specs: one the
    lore defines keeps that entry's text as its description and the noun it is a kind of
    as an alias ("forest" for the Thornwood). None named: no places."""
    lore = lore_entries(books)
    found = named_places(texts, lore, people)
    names = {slug(p.name) for p in found}
    out = []
    for place in found:
        content = next((c for n, k, c in lore if place.name in (n, *k)), "")
        named_by = place.name.lower().endswith(place.noun)  # "old chapel": no alias needed
        alias = (place.noun,) if not named_by and slug(place.noun) not in names else ()
        out.append(PlaceSpec(name=place.name, description=content, aliases=alias))
    return out


def names_in(text: str, names: Mapping[str, Sequence[str]]) -> list[str]:
    """The names (keys of ``names``, each with its aliases) ``text`` mentions, in the order
    of ``names``: a name or alias as whole words, or its first word where no other name
    starts with it ("Lacia" for Lacia·Eldridge)."""
    joined = f"_{slug(text)}_" if any(ch.isalnum() for ch in text) else ""
    heads: dict[str, int] = {}
    for name in names:
        head = _slug(name).split("_")[0]
        heads[head] = heads.get(head, 0) + 1
    out = []
    for name, aliases in names.items():
        spelled = [s for s in (_slug(n) for n in (name, *aliases)) if s]
        head = _slug(name).split("_")[0]
        if any(f"_{s}_" in joined for s in spelled) or (
            heads[head] == 1 and head and f"_{head}_" in joined
        ):
            out.append(name)
    return out


def _slug(name: str) -> str:
    try:
        return slug(name)
    except ValueError:
        return ""


def home_of(texts: Sequence[str], places: Sequence[PlaceSpec], scene: str = "") -> str:
    """Where a character starts: the last of ``places`` its ``scene`` (a card's scenario,
    which tells how the moment came about) names as where someone goes ("was hurt in the
    forest of Eldoria; carried to her glade": the glade), else the first its ``texts`` name
    (the first text first: the scenario, "comes into the forge in the village of
    Eastmere": the forge), else the first place."""
    known = {p.name: p.aliases for p in places}
    went = _gone_to(scene, known)
    if went is not None:
        return went
    for text in texts:
        for place in in_order(text, known):
            return place
    return places[0].name


# "into", "to" ... and at most three words more (none a preposition) before a place's name
_INTO = re.compile(
    r"\b(?:into|onto|inside|to|toward|towards)\s+"
    r"(?:(?!(?:in|on|at|of|by|near|from|to|into)\s)[\w'’-]+\s+){0,3}$"
)


def _gone_to(text: str, known: Mapping[str, Sequence[str]]) -> str | None:
    """The last of ``known`` that ``text`` names as where someone goes ("into the forge",
    "carried her to the glade"), or None."""
    low = text.lower()
    last: tuple[int, str] | None = None
    for name, aliases in known.items():
        for spelled in (name, *aliases):
            pattern = rf"(?<![\w-]){re.escape(spelled.lower())}(?:e?s)?(?![\w-])"
            if not spelled.isascii():
                pattern = re.escape(spelled.lower())
            for m in re.finditer(pattern, low):
                before = low[max(0, m.start() - 60) : m.start()]
                into = _INTO.search(before)
                if into is None:
                    continue
                verb = into.group(0).split()[0]
                moved = (verb != "to" and not verb.startswith("toward")) or bool(
                    set(re.findall(r"[a-z]+", low[max(0, m.start() - 90) : m.start()])) & _MOTION
                )
                if moved and (last is None or m.start() > last[0]):
                    last = (m.start(), name)
    return last[1] if last else None


def in_order(text: str, known: Mapping[str, Sequence[str]], *, last: bool = False) -> list[str]:
    """The names of ``known`` that ``text`` mentions, in the order it first mentions them
    (``last``: the order it last mentions them)."""
    low = text.lower()
    at: dict[str, int] = {}
    for name, aliases in known.items():
        for spelled in (name, *aliases):
            pattern = rf"(?<![\w-]){re.escape(spelled.lower())}(?:e?s)?(?![\w-])"
            if not spelled.isascii():  # a script written without spaces has no word bounds
                pattern = re.escape(spelled.lower())
            for m in re.finditer(pattern, low):
                if name not in at:
                    at[name] = m.start()
                else:
                    at[name] = max(at[name], m.start()) if last else min(at[name], m.start())
    return sorted(at, key=lambda n: at[n])


def opening_topics(openings: Sequence[str], people: Iterable[str]) -> list[str]:
    """What a story opens on, for its characters to ask each other about: the first thing
    the first opening (a BookWorld preset's ``intervention``) names ("the enigmatic
    signal"); none where it names none."""
    for text in openings:
        found = things_named(text, people)
        if found:
            return found[:1]
    return []


def motivation_goals(text: str) -> list[str]:
    """A motivation's sentences as goals: "Lacia wants to stop Trek." is "stop Trek" (the
    one who wants, and wanting, left out), each as written otherwise."""
    out = []
    for sentence in re.split(r"(?<=[.!?;])\s+|\n+", text.strip()):
        goal = _WANTS.sub("", sentence.strip()).strip().rstrip(".!;").strip()
        if goal:
            out.append(goal)
    return out


def goals_of(
    name: str,
    texts: Sequence[str],
    *,
    cast: Mapping[str, Sequence[str]],
    places: Sequence[PlaceSpec],
    home: str,
    related: Sequence[str] = (),
    motivation: str = "",
    topics: Sequence[str] = (),
    roams: bool = True,
) -> tuple[str, ...]:
    """``name``'s goals (see the module docstring) from its own ``texts`` (description,
    scenario, greeting, its book), its ``motivation``, the ``related`` characters its
    source gives it, the ``cast`` (each name with its aliases) and the world's ``places``;
    ``home`` is where it starts. Each of the cast it is related to it asks about the others
    it is related to and about each of ``topics`` (what the story opens on). ``roams``
    False (a card's character, which attends to the player): no place to visit."""
    goals = motivation_goals(motivation)
    joined = "\n".join(texts)
    others = {n: a for n, a in cast.items() if n != name}
    close = [n for n in related if n in others]
    met = close + [n for n in names_in(joined, others) if n not in close]
    for n in met:
        goals.append(f"meet {n}")
        if n in close:
            about = list(dict.fromkeys([r for r in related if r not in (n, name)] + [*topics]))
            # each of the cast starts elsewhere in the list: two who ask each other at once
            # ask of different things
            k = list(cast).index(name) % len(about) if about and name in cast else 0
            goals += [f"ask {n} about {t}" for t in about[k:] + about[:k]]
    if roams and len(places) > 1:
        known = {p.name: p.aliases for p in places}
        seen = [p for t in texts for p in in_order(t, known)] + list(known)
        visits = [p for p in dict.fromkeys(seen) if p != home]
        goals += [f"visit {the_place(p)}" for p in visits]
        if visits:
            goals.append(f"return to {the_place(home)}")
    return tuple(dict.fromkeys(goals))
