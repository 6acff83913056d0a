"""Loading world packs (built-in by name, or from a path) and turning one into turn 0.

Turn 0 of a story is its setup: the pack's entities, their starting states, the developments
it opens, and what each character knows at the start — the whereabouts and properties of
everything in the character's own place, and (common knowledge) where every fixed
container of the world stands.
"""

from __future__ import annotations

import json
import tomllib
from pathlib import Path
from typing import Any, get_args

from pydantic import ValidationError

from fabula.errors import InvalidWorld, NotFound
from fabula.limits import FILE_BYTES, read_bounded
from fabula.logs import get_logger
from fabula.memory.delta import DeltaBuilder, TurnDelta
from fabula.memory.places import place_of
from fabula.memory.records import (
    CONTAINER,
    AcquisitionMode,
    Attitude,
    Event,
    secret_attribute,
    secret_text,
    slug,
)
from fabula.worlds.lore import BELIEF_EXTENSION, extension, known_to
from fabula.worlds.pack import WorldPack

_BUILTIN = Path(__file__).resolve().parent
log = get_logger(__name__)


def builtin_worlds() -> list[str]:
    """Names of the packs shipped with Fabula."""
    return sorted(p.parent.name for p in _BUILTIN.glob("*/world.toml"))


def _field_of(error: ValidationError) -> str:
    first = error.errors()[0]
    cause = first.get("ctx", {}).get("error")
    if not first["loc"] and cause is not None:
        # the pack's cross-reference checks raise "<field>: <why>"; name that field
        field, sep, _ = str(cause).partition(": ")
        if sep:
            return field
    loc = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in first["loc"])
    return loc.lstrip(".") or "(pack)"


def load_world(name_or_path: str | Path) -> WorldPack:
    """Load and validate a pack: a built-in name, a pack folder, or a ``.toml`` file.

    Raises :class:`NotFound` when there is no such pack and :class:`InvalidWorld`, naming
    the file and the field, when it does not validate.
    """
    path = Path(name_or_path)
    if not path.exists() and (_BUILTIN / str(name_or_path) / "world.toml").exists():
        path = _BUILTIN / str(name_or_path)
    if path.is_dir():
        path = path / "world.toml"
    if not path.is_file():
        raise NotFound(
            f"no world pack {str(name_or_path)!r} (built-in: {', '.join(builtin_worlds())})",
            path=str(path),
        )
    try:
        text = read_bounded(path, FILE_BYTES, "a world pack").decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InvalidWorld(f"{path}: not valid TOML: {exc}", path=str(path)) from None
    return parse_world(text, str(path), folder=path.parent)


def parse_world(text: str, source: str, folder: Path | None = None) -> WorldPack:
    """Validate a pack given as the text of its ``world.toml``; ``source`` names it in errors.

    ``folder`` is where the files it names (``lore = "lore.json"``, images) are; a pack with
    no folder (an upload) may name none. Raises :class:`InvalidWorld`, naming ``source`` and
    the field, when it does not validate. A goal the offline engine cannot pursue is logged
    as a warning (the pack still loads: a model may pursue it), as
    :attr:`WorldPack.goal_warnings` says it.
    """
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise InvalidWorld(f"{source}: not valid TOML: {exc}", path=source) from None
    except RecursionError:  # arrays or tables nested thousands deep: no pack is
        raise InvalidWorld(f"{source}: not a world pack: nested too deeply", path=source) from None
    if isinstance(data.get("lore"), str):
        data["lore"] = _read_lore(data["lore"], source, folder)
    try:
        pack = WorldPack.model_validate(data)
    except RecursionError:
        raise InvalidWorld(f"{source}: not a world pack: nested too deeply", path=source) from None
    except ValidationError as exc:
        field = _field_of(exc)
        message = exc.errors()[0]["msg"]
        raise InvalidWorld(f"{source}: {field}: {message}", path=source, field=field) from None
    pack._source = source
    pack._folder = folder
    for line in pack.goal_warnings:
        log.warning("unreadable goal", detail=line)
    return pack


def _read_lore(name: str, source: str, folder: Path | None) -> Any:
    """The lore file ``name`` (``lore = "lore.json"``), beside the pack's ``world.toml``."""
    path = (folder or Path("/nonexistent")) / name
    if folder is None or Path(name).is_absolute() or ".." in Path(name).parts or not path.is_file():
        raise InvalidWorld(
            f"{source}: lore: {name!r} is not a file beside the pack", path=source, field="lore"
        )
    try:
        return json.loads(read_bounded(path, FILE_BYTES, "a lore file").decode("utf-8"))
    except RecursionError:
        raise InvalidWorld(
            f"{path}: lore: nested too deeply", path=str(path), field="lore"
        ) from None
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InvalidWorld(
            f"{path}: lore: not valid JSON: {exc}", path=str(path), field="lore"
        ) from None


def pack_assets(pack: WorldPack) -> dict[str, bytes]:
    """The files a pack loaded from a folder names (its characters' images), by name.

    Raises :class:`InvalidWorld` for an image that is not a file inside the pack's folder.
    """
    if pack._folder is None:
        return {}
    folder = pack._folder.resolve()
    found: dict[str, bytes] = {}
    for i, char in enumerate(pack.characters):
        if not char.image:
            continue
        path = (folder / char.image).resolve()
        if not path.is_relative_to(folder) or not path.is_file():
            raise InvalidWorld(
                f"{pack.source}: characters[{i}].image: {char.image!r} is not a file in the "
                "pack's folder",
                path=pack.source,
                field=f"characters[{i}].image",
            )
        found[char.image] = read_bounded(path, FILE_BYTES, "a character's picture")
    return found


_MODES = frozenset(get_args(AcquisitionMode))


def _imported_beliefs(pack: WorldPack, b: DeltaBuilder, setup: Event) -> None:
    """The beliefs an exported card brought (its book's ``fabula/belief`` entries), each its
    character's from turn 0 when the pack has the entity it is about; how it was learned
    (mode, speaker) as the card says, a speaker the pack lacks left out."""
    names = [p.name for p in pack.places] + [c.name for c in pack.characters]
    ids = {slug(n) for n in names + [o.name for o in pack.objects]}
    people = {slug(c.name) for c in pack.characters}
    for char in pack.characters:
        for book in pack.lore.books_of(char.name):
            for entry in book.entries:
                held = extension(entry, BELIEF_EXTENSION)
                if not isinstance(held, dict) or held.get("subject") not in ids:
                    continue
                if held.get("mode") not in _MODES or not isinstance(held.get("value"), str):
                    continue
                speaker = held.get("speaker")
                attitude: Attitude = (
                    held["attitude"] if held.get("attitude") in _ATTITUDES else "believes"
                )
                b.belief(
                    [slug(char.name)],
                    held["subject"],
                    str(held.get("attribute")),
                    held["value"],
                    mode=held["mode"],
                    event=setup,
                    polarity=held.get("polarity") is not False,
                    attitude=attitude,
                    speaker=speaker if speaker in people else None,
                )


_ATTITUDES = frozenset(get_args(Attitude))


def minds_lore(pack: WorldPack) -> dict[str, str]:
    """Each character's own lore, by character id, as the document its keyspace holds
    (:func:`~fabula.worlds.lore.known_to`): its card's book and what the author made
    known to it; characters who know no lore have none."""
    cast = [c.name for c in pack.characters]
    out = {}
    for name in cast:
        own = known_to(pack.lore, name, cast)
        if own.books:
            out[slug(name)] = own.model_dump_json(exclude_defaults=True)
    return out


def _entities(b: DeltaBuilder, pack: WorldPack) -> None:
    """The pack's places, characters (with their voice) and objects (a container marked)
    as entities of turn 0."""
    for place in pack.places:
        b.entity("place", place.name, description=place.description)
    for char in pack.characters:
        b.entity(
            "character",
            char.name,
            description=char.description,
            attributes={"voice": char.voice} if char.voice else None,
        )
    for obj in pack.objects:
        attrs = {"role": CONTAINER} if obj.container else {}
        b.entity("object", obj.name, description=obj.description, attributes=attrs)


def _seen_at_start(
    b: DeltaBuilder,
    pack: WorldPack,
    setup: Event,
    location: dict[str, str],
    properties: list[tuple[str, str, str]],
) -> None:
    """What each character believes at the start: where the fixtures are (common
    knowledge), and where everything in its place is and what it is like (observed)."""
    places = {slug(p.name) for p in pack.places}
    fixtures = [slug(o.name) for o in pack.objects if o.container and slug(o.location) in places]
    for char in pack.characters:
        me = slug(char.name)
        here = slug(char.location)
        # the layout is common knowledge: everyone knows where the fixtures are
        for fixture in fixtures:
            if place_of(fixture, location.get, places.__contains__) != here:
                b.belief([me], fixture, "location", location[fixture], mode="common", event=setup)
        for subject, where in location.items():
            if place_of(subject, location.get, places.__contains__) == here:
                b.belief([me], subject, "location", where, mode="observed", event=setup)
        for subject, attr, value in properties:
            if place_of(subject, location.get, places.__contains__) == here:
                b.belief([me], subject, attr, value, mode="observed", event=setup)


def setup_delta(pack: WorldPack, *, limit: int | None = None) -> TurnDelta:
    """Turn 0 of a story started from ``pack``.

    With ``limit`` (the largest payload a commit may send), a pack whose turn 0 would be
    larger is refused while it is being built (:class:`~fabula.errors.LimitExceeded`,
    one line naming the pack), before the rest of it is made.
    """
    b = DeltaBuilder(0, pack.premise, limit=limit, context={"world": pack.id})
    _entities(b, pack)
    setup = b.event("setup", b.span(0, len(pack.premise)), place=slug(pack.places[0].name))
    location: dict[str, str] = {}
    for char in pack.characters:
        location[slug(char.name)] = slug(char.location)
        b.state(slug(char.name), "location", slug(char.location), event=setup)
    properties: list[tuple[str, str, str]] = []
    for obj in pack.objects:
        location[slug(obj.name)] = slug(obj.location)
        b.state(slug(obj.name), "location", slug(obj.location), event=setup)
        for attr, value in obj.attributes.items():
            b.state(slug(obj.name), attr, value, event=setup)
            properties.append((slug(obj.name), attr, value))
    _seen_at_start(b, pack, setup, location, properties)
    # a secret is a fact of W that its character alone holds at the start
    for char in pack.characters:
        me = slug(char.name)
        # its news after its secrets: held alike, told on in ticks (fabula.graph.ticks)
        for i, secret in enumerate((*char.secrets, *char.news)):
            attribute, text = secret_attribute(i), secret_text(secret)
            b.state(me, attribute, text, event=setup)
            b.belief([me], me, attribute, text, mode="participated", attitude="knows", event=setup)
    _imported_beliefs(pack, b, setup)
    for dev in pack.developments:
        b.open_development(
            dev.kind,
            dev.title,
            participants=[slug(p) for p in dev.participants],
            description=dev.description,
            event=setup,
        )
    return b.build()
