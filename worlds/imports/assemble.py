"""Several sources made one world pack: one cast, one set of lorebooks, one opening.

Cards make the cast (in the order given), a BookWorld preset brings its places, roles and
world lore, lorebooks join the world's lore. A world with no places (cards only) gets the
places its cards and lore name, else one, ``scene``; each character starts where its own
text puts it, and one without goals gets the goals its text gives it
(:mod:`~fabula.worlds.imports.motives`); the premise is the preset's description or the
cards' scenarios. A card that speaks of ``{{user}}`` brings the user (``--user``, "User" by
default) into the cast where the others start, as a character a person plays. Pictures (a
card PNG's image, a CHARX's assets, a role's icon) travel as assets, named
``assets/<character id>/...`` (a character's picture by its format: ``image.png``,
``icon.jpeg``). All the files of one import share one
:class:`~fabula.worlds.imports.limits.Budget`: what the story will hold is bounded whole.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from fabula.errors import InvalidInput
from fabula.memory.index.general import the_place
from fabula.memory.records import CONTAINER, slug
from fabula.worlds.imports.bookworld import BookWorldRead, RoleRead
from fabula.worlds.imports.cards import CardRead
from fabula.worlds.imports.charx import CharxError, safe_member, tree_clash
from fabula.worlds.imports.fields import BadSource
from fabula.worlds.imports.limits import Budget, ImportLimits
from fabula.worlds.imports.motives import (
    DEFAULT_PLACE,
    goals_of,
    home_of,
    in_order,
    opening_topics,
    world_places,
)
from fabula.worlds.imports.places import setting_of
from fabula.worlds.imports.png import picture_format
from fabula.worlds.imports.sources import Source, read_source
from fabula.worlds.lore import (
    ENTITY_EXTENSION,
    STATE_EXTENSION,
    WORLD_EXTENSION,
    Greeting,
    KeptCard,
    Lore,
    LoreBook,
    extension,
)
from fabula.worlds.pack import CharacterSpec, ObjectSpec, Opening, PlaceSpec, WorldPack


@dataclass(frozen=True)
class Imported:
    """An import's result: the pack, its assets (name to bytes) and what each file was."""

    pack: WorldPack
    assets: dict[str, bytes] = field(default_factory=dict)
    sources: tuple[Source, ...] = ()

    @property
    def findings(self) -> tuple[str, ...]:
        """What the import changed to make its files work, one line each, naming the file
        and the entry (an entry imported disabled, and why)."""
        return tuple(f"{s.path}: {f}" for s in self.sources for f in s.findings)


@dataclass
class _Own:
    """A character's own text (greeting, scenario, description, its book; a role's
    profile), its motivation and the characters its source relates it to."""

    texts: list[str]
    motivation: str = ""
    related: list[str] = field(default_factory=list)
    scene: str = ""
    """Its card's scenario: the last place it names is where the character starts."""
    setting: list[str] = field(default_factory=list)
    """Its card's scenario and first greeting: where a card sets its scene."""
    roams: bool = True
    """Whether it visits the world's places (a BookWorld role); a card's character does
    not: it attends to the player."""


@dataclass
class _Exported:
    """What a lorebook Fabula exported says of the world (its ``fabula/entity`` and
    ``fabula/state`` entries), and the books without those entries."""

    books: list[LoreBook]
    places: list[PlaceSpec] = field(default_factory=list)
    objects: list[ObjectSpec] = field(default_factory=list)
    names: dict[str, str] = field(default_factory=dict)  # entity id -> name
    where: dict[str, str] = field(default_factory=dict)  # entity id -> location id


def _exported_world(books: list[LoreBook]) -> _Exported:
    """Places, objects and where everything is, from exported lorebooks: the world comes
    back as it was exported (its other entries stay lore)."""
    found = _Exported(books=[])
    entities: list[tuple[dict[str, Any], tuple[str, ...]]] = []
    states: list[dict[str, Any]] = []
    for book in books:
        rest = []
        for entry in book.entries:
            entity = extension(entry, ENTITY_EXTENSION)
            state = extension(entry, STATE_EXTENSION)
            if isinstance(entity, dict) and isinstance(entity.get("name"), str):
                entities.append((entity, entry.keys[1:]))
            elif isinstance(state, dict) and isinstance(state.get("subject"), str):
                states.append(state)
            else:
                rest.append(entry)
        found.books.append(book.model_copy(update={"entries": tuple(rest)}))
    found.names = {slug(e["name"]): e["name"] for e, _ in entities}
    attrs: dict[str, dict[str, str]] = {}
    for st in states:
        if st.get("valid_to") is not None or st.get("polarity") is False:
            continue
        value = str(st.get("value"))
        if st.get("attribute") == "location":
            found.where[st["subject"]] = value
        else:
            attrs.setdefault(st["subject"], {})[str(st.get("attribute"))] = value
    for entity, aliases in entities:
        ident, name = slug(entity["name"]), entity["name"]
        description = str(entity.get("description") or "")
        if entity.get("kind") == "place":
            found.places.append(PlaceSpec(name=name, description=description, aliases=aliases))
        elif entity.get("kind") == "object" and found.where.get(ident) in found.names:
            role = (entity.get("attributes") or {}).get("role")
            found.objects.append(
                ObjectSpec(
                    name=name,
                    location=found.names[found.where[ident]],
                    description=description,
                    container=role == CONTAINER,
                    attributes=attrs.get(ident, {}),
                )
            )
    return found


def _story_id(title: str) -> str:
    try:
        ident = slug(title)
    except ValueError:
        ident = "imported"
    return ident[:64].strip("_") or "imported"


def import_paths(
    paths: list[Path],
    *,
    story_id: str | None = None,
    user: str = "User",
    limits: ImportLimits | None = None,
) -> Imported:
    """Read every file of ``paths`` and make one world pack of them.

    ``user`` is the name ``{{user}}`` stands for. Raises :class:`InvalidInput` — one line
    naming the file and the field — for any file that cannot be imported, or a world that
    would not validate (no character, two with one name, ...); nothing is written either way.
    """
    sources = _read_all(paths, user, limits or ImportLimits())
    worlds = [s.world for s in sources if s.world is not None]
    if len(worlds) > 1:
        raise InvalidInput("more than one BookWorld preset: import one world at a time")
    world = worlds[0] if worlds else None
    cast = _Cast(places=list(world.places) if world else [])
    if world:
        cast.greetings += world.greetings
        cast.books += world.books
    home = cast.places[0].name if cast.places else DEFAULT_PLACE
    cards = [s.card for s in sources if s.card is not None]
    for card in cards:
        cast.add_card(card, home)
    for role in world.roles if world else ():
        cast.add_role(role, home)
    found = _exported_world([s.book for s in sources if s.book is not None])
    cast.books += found.books
    for place in found.places:
        if all(slug(place.name) != slug(p.name) for p in cast.places):
            cast.places.append(place)
    if not cast.characters:
        raise InvalidInput(
            f"{', '.join(str(p) for p in paths)}: no character: a world needs at least one "
            "(import a card or a BookWorld preset with the lorebooks)"
        )
    places = cast.world_places(user)
    people = [user, *(n for c in cast.characters for n in (c.name, *c.aliases))]
    # what those related ask each other about: what the story opens on, then its places
    topics = opening_topics([g.text for g in world.greetings], people) if world else []
    topics += [the_place(p.name) for p in places] if world else []
    characters = cast.placed(places, found, topics)
    place_ids = {slug(p.name) for p in places}
    holders = place_ids | {slug(c.name) for c in characters} | {slug(o.name) for o in found.objects}
    objects = [o for o in found.objects if slug(o.location) in holders]
    title, premise = _title(world, cast, characters)  # of the cast, the user not named
    characters = _with_user(characters, cards, user, places[0].name)
    pack = _pack(
        world, cast, story_id or _story_id(title), title, premise, places, characters, objects
    )
    pack = _world_of_cards(pack, world, cards)
    settings = [s.settings for s in sources if s.settings is not None]
    if len(settings) > 1:
        raise InvalidInput("more than one SillyTavern settings.json: import one at a time")
    if settings:
        pack = pack.model_copy(
            update={"lore": pack.lore.model_copy(update={"world_info": settings[0]})}
        )
    check_asset_names(cast.assets)
    return Imported(pack=pack, assets=cast.assets, sources=tuple(sources))


def _world_of_cards(
    pack: WorldPack, world: BookWorldRead | None, cards: list[CardRead]
) -> WorldPack:
    """With no BookWorld preset, the world's title, style, outline and rules from the first
    card Fabula exported that carries them (``fabula/world``): a card round-trips with
    them. :class:`InvalidInput` names a field that does not validate."""
    found = next((c.world for c in cards if c.world is not None), None)
    if world is not None or found is None:
        return pack
    update = {k: found[k] for k in ("title", "style", "outline", "rules") if k in found}
    try:
        return WorldPack.model_validate({**pack.model_dump(), **update})
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise InvalidInput(
            f"data.extensions[{WORLD_EXTENSION!r}].{where}: {first['msg']}"
        ) from None


def _read_all(paths: list[Path], user: str, limits: ImportLimits) -> list[Source]:
    """Every file read, within one budget; the first that cannot be is refused, named."""
    budget = Budget(limits)
    sources: list[Source] = []
    for path in paths:
        try:
            sources.append(read_source(path, user, limits, budget))
        except BadSource as exc:
            raise InvalidInput(f"{path}: {exc}", path=str(path)) from None
    return sources


@dataclass
class _Cast:
    """The world gathered from the sources: its characters (cards first, in the order
    given, then the preset's roles), greetings, books, kept cards, pictures and places."""

    places: list[PlaceSpec]
    characters: list[CharacterSpec] = field(default_factory=list)
    greetings: list[Greeting] = field(default_factory=list)
    books: list[LoreBook] = field(default_factory=list)
    cards: list[KeptCard] = field(default_factory=list)
    assets: dict[str, bytes] = field(default_factory=dict)
    scenarios: list[str] = field(default_factory=list)
    own: dict[str, _Own] = field(default_factory=dict)
    """Each character's own text, what moves it."""

    def add_card(self, card: CardRead, home: str) -> None:
        ident = slug(card.name)
        image = ""
        for name, data in card.assets.items():
            self.assets[f"assets/{ident}/{name}"] = data
        if card.image is not None:
            image = f"assets/{ident}/image.{picture_format(card.image) or 'png'}"
            self.assets[image] = card.image
        self.characters.append(
            CharacterSpec(
                name=card.name,
                location=home,
                description=card.description,
                voice=card.voice,
                aliases=card.aliases,
                examples=card.examples,
                traits=card.traits,
                image=image,
                secrets=card.secrets,
                goals=card.goals,
            )
        )
        self.greetings += card.greetings
        self.own[card.name] = _Own(
            texts=[  # where it starts: the scenario sets the scene, then the greeting's
                card.scenario,
                *(g.text for g in card.greetings[:1]),
                card.description,
                *(e.content for e in (card.book.entries if card.book else ())),
            ],
            scene=card.scenario,
            setting=[t for t in (card.scenario, *(g.text for g in card.greetings[:1])) if t],
            roams=False,
        )
        if card.book is not None:
            self.books.append(card.book)
        self.cards.append(card.kept.model_copy(update={"image": image or None}))
        if card.scenario.strip() and card.scenario.strip() not in self.scenarios:
            self.scenarios.append(card.scenario.strip())

    def add_role(self, role: RoleRead, home: str) -> None:
        ident = slug(role.name)
        image = ""
        if role.image is not None:
            image = f"assets/{ident}/icon.{picture_format(role.image) or 'png'}"
            self.assets[image] = role.image
        self.characters.append(
            CharacterSpec(
                name=role.name,
                location=home,
                description=role.description,
                aliases=role.aliases,
                examples=role.examples,
                image=image,
            )
        )
        motivation = role.kept.data.get("motivation")
        self.own[role.name] = _Own(
            texts=[role.description],
            motivation=motivation if isinstance(motivation, str) else "",
            related=[k for e in (role.book.entries if role.book else ()) for k in e.keys],
        )
        if role.book is not None:
            self.books.append(role.book)
        self.cards.append(role.kept.model_copy(update={"image": image or None}))

    def world_places(self, user: str) -> list[PlaceSpec]:
        """The world's places: its own, else those its texts name (:mod:`.places`: only
        where a text puts something there, or its lore defines one) and, for a card whose
        scenario and greeting name none of them, the one they set the scene in ("A
        storm-bound island"), else one, :data:`DEFAULT_PLACE`."""
        places = self.places
        if not places:
            people = [user, *(n for c in self.characters for n in (c.name, *c.aliases))]
            named = [g.text for g in self.greetings] + self.scenarios
            named += [c.description for c in self.characters]
            places = world_places(named, self.books, people)
            known = {p.name: p.aliases for p in places}
            for own in self.own.values():
                if not own.setting or any(in_order(t, known) for t in own.setting):
                    continue
                found = setting_of(own.setting, people)
                if found is not None and slug(found.name) not in {slug(p.name) for p in places}:
                    places.append(PlaceSpec(name=found.name, description=own.setting[0]))
                    known[found.name] = ()
        if not places:
            places = [PlaceSpec(name=DEFAULT_PLACE, description="\n\n".join(self.scenarios))]
        return places

    def placed(
        self, places: list[PlaceSpec], found: _Exported, topics: Sequence[str] = ()
    ) -> list[CharacterSpec]:
        """Each character where it starts, with its goals (its own, else its text's;
        ``topics``: what the story opens on, which those related ask each other about)."""
        place_ids = {slug(p.name) for p in places}
        cast = {c.name: c.aliases for c in self.characters}
        moved = []
        for c in self.characters:
            mine = self.own.get(c.name, _Own(texts=[c.description]))
            # where each starts: where an exported lorebook says, else where its text puts it
            where = found.where.get(slug(c.name))
            home = (
                found.names[where]
                if where in place_ids
                else home_of(mine.texts, places, mine.scene)
            )
            goals = c.goals or goals_of(
                c.name,
                mine.texts,
                cast=cast,
                places=places,
                home=home,
                related=mine.related,
                motivation=mine.motivation,
                topics=topics,
                roams=mine.roams,
            )
            moved.append(c.model_copy(update={"location": home, "goals": goals}))
        return moved


def _title(
    world: BookWorldRead | None, cast: _Cast, characters: list[CharacterSpec]
) -> tuple[str, str]:
    """The world's title and premise: the preset's, else made of the characters' names
    and the cards' scenarios."""
    names = [c.name for c in characters]
    title = world.title if world else " & ".join(names)
    premise = (
        world.premise
        if world
        else ("\n\n".join(cast.scenarios) or f"A story of {', '.join(names)}.")
    )
    return title, premise


def _pack(
    world: BookWorldRead | None,
    cast: _Cast,
    story_id: str,
    title: str,
    premise: str,
    places: list[PlaceSpec],
    characters: list[CharacterSpec],
    objects: list[ObjectSpec],
) -> WorldPack:
    """The world pack, validated: :class:`InvalidInput` naming the first bad field."""
    kept = dict(world.kept) if world else {}
    try:
        return WorldPack(
            id=story_id,
            title=title,
            premise=premise,
            outline=world.outline if world else (),
            places=tuple(places),
            characters=tuple(characters),
            objects=tuple(objects),
            opening=Opening(greetings=tuple(cast.greetings)),
            lore=Lore(books=tuple(cast.books), cards=tuple(cast.cards), kept=kept),
        )
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        cause = first.get("ctx", {}).get("error")
        message = str(cause) if cause is not None else first["msg"]
        raise InvalidInput(
            f"the imported world does not validate: {where + ': ' if where else ''}{message}"
        ) from None


def _with_user(
    characters: list[CharacterSpec], cards: list[CardRead], user: str, home: str
) -> list[CharacterSpec]:
    """The cast with ``user`` (the name ``{{user}}`` stands for) played by a person, when a
    card speaks of ``{{user}}``: a character of the cast already so named becomes played;
    else the user joins the cast where the first card speaking to it starts (``home``
    failing that)."""
    speaking = [c.name for c in cards if c.names_user]
    if not speaking:
        return characters
    try:
        ident = slug(user)
    except ValueError:  # a name with nothing to make an id of: {{user}} stays a name
        return characters
    if any(slug(c.name) == ident for c in characters):
        return [
            c.model_copy(update={"played": True}) if slug(c.name) == ident else c
            for c in characters
        ]
    description = f"The person playing: {', '.join(speaking)}'s {{{{user}}}}."
    home = next((c.location for c in characters if c.name == speaking[0]), home)
    you = CharacterSpec(name=user, location=home, description=description, played=True)
    return [*characters, you]


def check_asset_names(assets: dict[str, bytes]) -> None:
    """Raise :class:`InvalidInput` when an asset's name could not be a file's in a pack
    folder, or one asset's name is a folder of another's (a CHARX member ``image.png/x``
    beside the card's picture ``image.png``)."""
    for name in assets:
        try:
            safe_member(name)
        except CharxError as exc:
            raise InvalidInput(f"asset {name[:80]!r}: {exc}") from None
    clash = tree_clash(assets)
    if clash is not None:
        raise InvalidInput(f"asset {clash[1][:80]!r} is inside {clash[0][:80]!r}, which is a file")
