"""The world pack format: a validated description of a story's starting world.

A pack is a folder with a ``world.toml`` (or a single ``.toml`` file). Example::

    id = "hollow_book"
    title = "The Hollow Book"
    premise = "Leo and Mara share a study ..."
    outline = ["Leo hides the key", "Mara moves it", "Leo searches"]

    [rules]                      # rules of knowledge (memory.rules.WorldRules)
    open_containers = false

    [[places]]
    name = "study"
    description = "A quiet study lined with books."

    [[characters]]
    name = "Leo"
    location = "study"           # a place
    goals = ["keep the brass key safe"]   # the goal language: see below
    secrets = []
    voice = "brisk"

    [[objects]]
    name = "desk drawer"
    location = "study"           # a place, a container object, or a character
    container = true
    [objects.attributes]
    colour = "oak brown"

    [[developments]]
    kind = "goal"                # goal, conflict, promise, plan, mystery, relationship
    title = "Leo keeps the brass key safe"
    participants = ["Leo"]

    [opening]                    # scripted opening turns, in controlled English
    turns = ["Leo put the brass key in the desk drawer."]

What an import (``fabula import``: character cards, lorebooks, BookWorld presets) brings
that the fields above have no place for has a few more, all optional: ``aliases`` of a
place or character (a name in another script, a nickname), a character's ``examples``
(example dialogues: how it speaks) and ``image`` (its picture, a file beside the pack),
``opening.greetings`` (prose openings to choose from, each by a character or the narrator;
``fabula import --greeting N`` starts the story with one), and ``lore`` — the name of a JSON
file beside ``world.toml`` holding the lorebooks and every source field kept for export
(see :mod:`fabula.worlds.lore`)::

    lore = "lore.json"

    [[characters]]
    name = "Tywin Lannister"
    aliases = ["泰温·兰尼斯特", "泰温"]
    examples = ["{{user}}: Hello\nTywin: ..."]

    [[opening.greetings]]
    character = "Tywin Lannister"
    text = "The wedding is over."

Names are turned into identifiers by :func:`fabula.memory.records.slug`; every reference must name
a place, object or character of the pack.

A character's ``goals`` are written in the goal language of :mod:`fabula.worlds.goals`
(``O`` an object, ``C`` a character, ``P`` a place of the pack)::

    get the O            find the O               keep the O hidden     give the O to C
    learn where the O is learn C's secret         tell C where the O is hide the O from C
    meet C               avoid C                  go to the P
    tell C D's secret    tell C my secret         keep my secret

A character's ``secrets`` are knowledge: each becomes a fact of W (its first
``(character, "secret", <the text>)``, then ``secret 2``, ...) that the character alone
holds at the start, and that travels as any fact does (told, overheard, lied about). Its
``news`` are held the same way, after its secrets (``secret N+1``, ...), but are meant to
travel: in ticks, whoever holds a piece of news tells it to each one in its scene it has
neither told nor heard it from, once (and, asked for it, tells rather than refuses).

A character's ``routine`` is its day, hour by hour: the place it keeps to at each hour, the
day repeating. In ticks, tick ``t`` is hour ``(t - 1) mod len(routine)``: a character not
at its hour's place, with nothing else to do, goes there (never counted as going round in
circles); narration (one scene a turn) has no hours and ignores it::

    [[characters]]
    name = "Tom"
    location = "mill"
    routine = ["bakery", "bakery", "market", "inn"]
    news = ["Tom is leaving town at the end of the month"]

The offline engine pursues them from what the character believes; any other goal is a
motive it cannot pursue, and :attr:`WorldPack.goal_warnings` says so (the loader logs each
one, and ``fabula new`` prints them), naming the goal, its field and the forms it reads.

A character with ``played = true`` is played by a person: its part of each turn is the
person's, the others propose theirs (``fabula play`` chooses them for a story; an imported
card's ``{{user}}`` is one).
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, model_validator

from fabula.memory.records import DevelopmentKind, slug
from fabula.memory.rules import WorldRules
from fabula.worlds.goals import parse_goal, unreadable_goals
from fabula.worlds.lore import Greeting, Lore, audience


class _Spec(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class PlaceSpec(_Spec):
    """A place of the world."""

    name: str = Field(min_length=1)
    description: str = ""
    aliases: tuple[str, ...] = ()


class CharacterSpec(_Spec):
    """A character: where it starts, its goals, secrets and voice."""

    name: str = Field(min_length=1)
    location: str
    description: str = ""
    goals: tuple[str, ...] = ()
    secrets: tuple[str, ...] = ()
    voice: str = ""
    aliases: tuple[str, ...] = ()  # other names: a nickname, the name in another script
    examples: tuple[str, ...] = ()  # example dialogues (a card's mes_example, split)
    # what its card lists of it, by category ("personality": "caring", "protective"):
    # a W++, PList or labelled list, read by fabula.worlds.cardtext
    traits: dict[str, tuple[str, ...]] = Field(default_factory=dict)
    image: str = ""  # its picture: a file, relative to the pack's folder
    # a person plays it: its part of each turn is theirs, not the engine's (`fabula play`;
    # an imported card's {{user}} is one)
    played: bool = False
    # its day, hour by hour: the place it keeps to at each hour, the day repeating (in
    # ticks, tick t is hour (t - 1) mod len; see fabula.graph.ticks)
    routine: tuple[str, ...] = ()
    # news it starts with: knowledge held as its secrets are (after them: `secret N`), but
    # meant to travel: in ticks, whoever holds it tells each one in its scene it has not
    # told or heard it from, once
    news: tuple[str, ...] = ()


class ObjectSpec(_Spec):
    """An object: where it starts (a place, a container or a character), whether things are
    put in it, its attributes."""

    name: str = Field(min_length=1)
    location: str
    description: str = ""
    container: bool = False
    attributes: dict[str, str] = Field(default_factory=dict)


class DevelopmentSpec(_Spec):
    """A development open at the start (a goal, conflict, promise, ...)."""

    kind: DevelopmentKind
    title: str = Field(min_length=1)
    participants: tuple[str, ...] = ()
    description: str = ""


class Opening(_Spec):
    """The scripted opening: turns of controlled English committed when the story is made,
    and prose greetings to choose from (an imported card's first messages)."""

    turns: tuple[str, ...] = ()
    greetings: tuple[Greeting, ...] = ()


class WorldPack(_Spec):
    """A whole world pack; references are checked when it is built."""

    id: str = Field(pattern=r"^[a-z0-9][a-z0-9_\-]{0,63}$")
    title: str = Field(min_length=1)
    premise: str = Field(min_length=1)
    style: str = ""  # one line on how the prose reads (a model writer follows it)
    # how a story of it advances by default: "narrative", one scene a turn where the planner
    # looks; "ticks", every place's scene at once (a town: see docs/guides/town.md)
    mode: Literal["narrative", "ticks"] = "narrative"
    outline: tuple[str, ...] = ()
    rules: WorldRules = Field(default_factory=WorldRules)
    places: tuple[PlaceSpec, ...] = Field(min_length=1)
    characters: tuple[CharacterSpec, ...] = Field(min_length=1)
    objects: tuple[ObjectSpec, ...] = ()
    developments: tuple[DevelopmentSpec, ...] = ()
    opening: Opening = Field(default_factory=Opening)
    lore: Lore = Field(default_factory=Lore)  # in world.toml: the name of a JSON file beside it
    # the file it was loaded from (set by the loader), so errors can name it
    _source: str | None = PrivateAttr(default=None)
    # the folder the files it names are in (None: an upload, which may name none)
    _folder: Path | None = PrivateAttr(default=None)

    @property
    def source(self) -> str:
        """The file the pack was loaded from, or ``"(world pack <id>)"``."""
        return self._source or f"(world pack {self.id})"

    @property
    def goal_warnings(self) -> list[str]:
        """One line for each character goal the offline engine cannot pursue (see the
        module docstring), naming the file, the goal's field and the forms it reads."""
        goals = [
            (f"characters[{i}].goals[{j}]", goal)
            for i, char in enumerate(self.characters)
            for j, goal in enumerate(char.goals)
        ]
        return [
            f"{self.source}: {line}"
            for line in unreadable_goals(
                goals,
                objects=(slug(o.name) for o in self.objects),
                characters=(slug(c.name) for c in self.characters),
                places=(slug(p.name) for p in self.places),
            )
        ]

    @property
    def idle_warning(self) -> str | None:
        """One line when nobody in the world has anything to do: no character is played by
        a person and none has a goal the offline engine pursues (its story would be at rest
        from its first turn); None otherwise."""
        if any(c.played for c in self.characters):
            return None
        objects = {slug(o.name) for o in self.objects}
        characters = {slug(c.name) for c in self.characters}
        places = {slug(p.name) for p in self.places}
        if any(
            parse_goal(g, objects, characters, places).kind != "motive"
            for c in self.characters
            for g in c.goals
        ):
            return None
        return (
            f"{self.source}: nobody has anything to do: no character has a goal the offline "
            "engine pursues and none is played; give one goals (world.toml) or play one "
            "(`fabula play`)"
        )

    @model_validator(mode="after")
    def _references_resolve(self) -> WorldPack:
        seen: dict[str, str] = {}
        groups: list[tuple[str, tuple[_Spec, ...]]] = [
            ("places", self.places),
            ("characters", self.characters),
            ("objects", self.objects),
        ]
        for group, specs in groups:
            for i, spec in enumerate(specs):
                name = spec.name  # type: ignore[attr-defined]
                ident = slug(name)
                if ident in seen:
                    raise ValueError(
                        f"{group}[{i}].name: {name!r} is already the name of a {seen[ident]}"
                    )
                seen[ident] = group[:-1]
        self._check_locations()
        self._check_cast_references()
        return self

    def _check_locations(self) -> None:
        """Every character is in a place, every object in a place, character or container,
        and no object is inside itself."""
        place_ids = {slug(p.name) for p in self.places}
        for i, char in enumerate(self.characters):
            if slug(char.location) not in place_ids:
                raise ValueError(f"characters[{i}].location: {char.location!r} is not a place")
            for j, hour in enumerate(char.routine):
                if slug(hour) not in place_ids:
                    raise ValueError(f"characters[{i}].routine[{j}]: {hour!r} is not a place")
        holders = place_ids | {slug(c.name) for c in self.characters}
        holders |= {slug(o.name) for o in self.objects if o.container}
        for i, obj in enumerate(self.objects):
            if slug(obj.location) not in holders:
                raise ValueError(
                    f"objects[{i}].location: {obj.location!r} is not a place, "
                    "character or container"
                )
        inside = {slug(o.name): slug(o.location) for o in self.objects}
        for i, obj in enumerate(self.objects):
            chain = [slug(obj.name)]
            while chain[-1] in inside:
                nxt = inside[chain[-1]]
                if nxt in chain:
                    names = " in ".join([*chain[chain.index(nxt) :], nxt])
                    raise ValueError(
                        f"objects[{i}].location: {obj.location!r} is inside {obj.name!r} "
                        f"itself: a containment cycle ({names})"
                    )
                chain.append(nxt)

    def _check_cast_references(self) -> None:
        """Every greeting, lore book owner and development participant names a character,
        and every lore entry's audience is of the cast."""
        characters = {slug(c.name) for c in self.characters}
        cast = {c.name for c in self.characters}
        for i, greeting in enumerate(self.opening.greetings):
            if greeting.character is not None and greeting.character not in cast:
                raise ValueError(
                    f"opening.greetings[{i}].character: {greeting.character!r} is not a character"
                )
        for i, book in enumerate(self.lore.books):
            if book.owner is not None and book.owner not in cast:
                raise ValueError(f"lore.books[{i}].owner: {book.owner!r} is not a character")
            for j, entry in enumerate(book.entries):
                try:
                    audience(book, entry, sorted(cast))
                except ValueError as exc:
                    raise ValueError(f"lore.books[{i}].entries[{j}]: {exc}") from None
        for i, dev in enumerate(self.developments):
            for j, p in enumerate(dev.participants):
                if slug(p) not in characters:
                    raise ValueError(
                        f"developments[{i}].participants[{j}]: {p!r} is not a character"
                    )
