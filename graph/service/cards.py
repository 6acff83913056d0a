"""A story's characters and world as the files other tools read: a V3 character card
(PNG or JSON), a CHARX archive, a ``lorebook_v3`` of W.

What ``fabula export --format card|charx|lorebook`` writes, read through
:class:`~fabula.graph.service.reader.Reader`. A card holds what its character believes as
of a turn; the lorebook, what the world is.
"""

from __future__ import annotations

import json
from typing import Any

from fabula.errors import InvalidInput, Remedy
from fabula.graph.service import reading
from fabula.memory.records import slug
from fabula.memory.store.view import StoryReads
from fabula.worlds.imports.charx import embedded_path, write_charx
from fabula.worlds.imports.export import card_png, character_card, world_info, world_lorebook
from fabula.worlds.imports.png import picture_format
from fabula.worlds.pack import CharacterSpec, WorldPack

ICON_MEMBER = "assets/icon/images/main.png"
"""Where a picture the card did not place goes: the V3 spec's ``assets/{type}/images/``."""
"""Where a CHARX export puts a character's picture that its card did not place itself (a
JPEG or WebP picture with its own extension: ``main.jpeg``)."""


async def card_export(store: StoryReads, character: str, as_of: int | None) -> tuple[bytes, str]:
    """Character ``character`` (id or name) of the story as a V3 card holding what it
    believes as of ``as_of``: PNG bytes when it has a picture, else JSON; and which.

    Raises :class:`NotFound` for a character the story does not have, and
    :class:`InvalidInput` for one whose picture is not a PNG (a BookWorld role's JPEG:
    ``charx`` carries it; no image library converts it here).
    """
    card, _, image, _ = await _card(store, character, as_of)  # its picture: the PNG's image
    if image is not None:
        found = picture_format(image)
        if found != "png":  # a card PNG is written into its picture: a JPEG cannot take it
            raise InvalidInput(
                f"{card['data']['name']}'s picture is {f'a {found.upper()}' if found else 'no PNG'}"
                ", and a card PNG is written into a PNG picture",
                story=store.story,
                remedy=Remedy("export_charx"),
            )
        return card_png(card, image), "png"
    return (json.dumps(card, ensure_ascii=False, indent=2) + "\n").encode("utf-8"), "json"


async def charx_export(store: StoryReads, character: str, as_of: int | None) -> bytes:
    """Character ``character`` (id or name) as a CHARX archive: ``card.json`` (the V3 card
    :func:`card_export` writes) and the character's assets (what its CHARX brought, at the
    paths it had them; a picture the card does not place, as its main icon at
    :data:`ICON_MEMBER`). Imported again, it gives back the same card and members.

    Raises :class:`NotFound` for a character the story does not have.
    """
    card, prefix, image, picture = await _card(store, character, as_of)
    assets = await store.assets()
    members = {
        name.removeprefix(prefix): data
        for name, data in assets.items()
        if name.startswith(prefix) and name != picture  # the picture goes as the icon
    }
    listed = card["data"].get("assets")
    placed = [a for a in listed if isinstance(a, dict)] if isinstance(listed, list) else []
    icon = any(
        a.get("type") == "icon" and embedded_path(str(a.get("uri", ""))) in members for a in placed
    )
    if image is not None and not icon:
        ext = picture_format(image) or "png"
        member = ICON_MEMBER.removesuffix(".png") + f".{ext}"
        members[member] = image
        icon_asset = {"type": "icon", "uri": f"embeded://{member}", "name": "main", "ext": ext}
        card["data"]["assets"] = [*placed, icon_asset]
    return write_charx(card, members)


async def _card(
    store: StoryReads, character: str, as_of: int | None
) -> tuple[dict[str, Any], str, bytes | None, str]:
    """The V3 card of ``character``, the folder of its assets (``assets/<id>/``, as its
    import named them), its picture (None: it has none) and the picture's asset name."""
    pack = await _pack(store)
    entity = await store.resolve(character, "character")
    spec = next((c for c in pack.characters if slug(c.name) == entity.id), None)
    if spec is None:  # a character the story brought in after its start
        spec = CharacterSpec(
            name=entity.name, location=pack.places[0].name, description=entity.description
        )
        pack = pack.model_copy(update={"characters": (*pack.characters, spec)})
    held = await reading.beliefs(store, [entity.id], as_of)
    names = {e.id: e.name for e in (await store.entities(as_of)).values()}
    beliefs = [b.model_dump(mode="json", exclude={"holder"}) for b in held.beliefs]
    card = character_card(pack, spec.name, beliefs, names, as_of=as_of)
    turn = as_of if as_of is not None else await store.head()
    written = await store.turn_texts(turn or 0, turn or 0)
    if written and written[0].committed_at is not None:
        # the V3 spec's modification date: when the turn the card holds was written (so
        # the same story, as of the same turn, gives the same card)
        card["data"]["modification_date"] = int(written[0].committed_at)
    image = (await store.assets()).get(spec.image) if spec.image else None
    folder = spec.image.rpartition("/")[0] if spec.image.startswith("assets/") else ""
    return card, f"{folder or 'assets/' + entity.id}/", image, spec.image


async def lorebook_export(store: StoryReads, as_of: int | None, fmt: str = "sillytavern") -> bytes:
    """The story's world W as of ``as_of`` as JSON bytes: SillyTavern's World Info format
    (``fmt="sillytavern"``, which its World Info import takes:
    :func:`~fabula.worlds.imports.export.world_info`) or a ``lorebook_v3``."""
    pack = await _pack(store)
    entities = [
        {
            "id": e.id,
            "kind": e.kind,
            "name": e.name,
            "description": e.description,
            "attributes": dict(e.attributes),
        }
        for e in (await store.entities(as_of)).values()
    ]
    facts = [f.model_dump(mode="json") for f in (await reading.world(store, as_of)).facts]
    book = world_lorebook(pack, entities, facts, as_of=as_of)
    if fmt == "sillytavern":
        book = world_info(book)
    return (json.dumps(book, ensure_ascii=False, indent=2) + "\n").encode("utf-8")


async def _pack(store: StoryReads) -> WorldPack:
    """The story's world pack, as it was made; :class:`InvalidInput` when it keeps none."""
    await store.require()
    document = await store.pack_document()
    if document is None:
        raise InvalidInput(
            f"story {store.story!r} keeps no world pack to export from", story=store.story
        )
    return WorldPack.model_validate_json(document)
