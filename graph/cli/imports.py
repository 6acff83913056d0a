"""Bringing worlds in and out: ``fabula import PATH... [--id STORY] [--pack DIR] [--json]``,
and what ``fabula export --format card|lorebook`` writes (:func:`card_export`,
:func:`lorebook_export`).

Cards (V1/V2/V3 as JSON, PNG or CHARX), lorebooks and a BookWorld preset become one world
pack (:mod:`fabula.worlds.imports`): written as a folder with ``--pack``, made a story with
``--id`` (both at once is allowed). Bad input is one line naming the file and the field,
and nothing is written.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from fabula.errors import InvalidInput
from fabula.graph.cli.app import app, dump, out, run_with_app

if TYPE_CHECKING:  # the rest is imported when a command runs: `fabula --help` stays quick
    from fabula.graph.service import Fabula
    from fabula.memory.store import StoryStore
    from fabula.worlds.imports import Imported
    from fabula.worlds.pack import WorldPack

__all__ = ["card_export", "charx_export", "import_cmd", "lorebook_export", "summary"]

ICON_MEMBER = "assets/icon/image/main.png"
"""Where a CHARX export puts a character's picture that its card did not place itself."""


def summary(imported: Imported) -> dict[str, Any]:
    """What an import made, as plain data (``--json``)."""
    pack = imported.pack
    return {
        "id": pack.id,
        "title": pack.title,
        "sources": [{"path": s.path, "read_as": s.kind} for s in imported.sources],
        "characters": [{"name": c.name, "aliases": list(c.aliases)} for c in pack.characters],
        "places": [p.name for p in pack.places],
        "greetings": [
            {"character": g.character, "group_only": g.group_only} for g in pack.opening.greetings
        ],
        "books": [
            {"name": b.name, "owner": b.owner, "format": b.format, "entries": len(b.entries)}
            for b in pack.lore.books
        ],
        "assets": sorted(imported.assets),
    }


@app.command(name="import")
def import_cmd(
    paths: list[Path] = typer.Argument(..., help="Cards, lorebooks, a BookWorld preset."),
    story_id: str | None = typer.Option(None, "--id", help="Make a story with this id."),
    pack_dir: Path | None = typer.Option(None, "--pack", help="Write a world pack folder here."),
    user: str = typer.Option("User", "--user", help="The name {{user}} stands for."),
    greeting: int | None = typer.Option(
        None, "--greeting", help="With --id: start with this greeting (0: the first)."
    ),
    as_json: bool = typer.Option(False, "--json", help="Say what was made as JSON."),
) -> None:
    """Import character cards (V1/V2/V3: JSON, PNG, CHARX), lorebooks (V3, SillyTavern,
    NovelAI, Agnai, KoboldAI) and a BookWorld preset as one world: a pack folder (--pack
    DIR) a user can read and edit, or a story (--id STORY)."""
    from fabula.worlds.imports import import_paths, write_pack

    if story_id is None and pack_dir is None:
        raise InvalidInput("fabula import: say where it goes: --pack DIR, --id STORY, or both")
    if greeting is not None and story_id is None:
        raise InvalidInput("--greeting chooses how a story starts: it needs --id")
    imported = import_paths(list(paths), story_id=story_id, user=user)
    if greeting is not None and not 0 <= greeting < len(imported.pack.opening.greetings):
        count = len(imported.pack.opening.greetings)
        raise InvalidInput(f"--greeting {greeting}: the world has {count} greetings")
    result = summary(imported)
    if pack_dir is not None:
        result["pack"] = str(write_pack(imported.pack, imported.assets, pack_dir))
    if story_id is not None:

        async def go(fab: Fabula) -> str:
            store = await fab.create_story(
                imported.pack, story_id, assets=imported.assets, greeting=greeting
            )
            return store.story

        result["story"] = run_with_app(go)
    if as_json:
        dump(result)
        return
    for source in imported.sources:
        out.print(f"{source.path}: {source.kind}")
    entries = sum(b["entries"] for b in result["books"])
    made = [
        f"pack {result['pack']}" if "pack" in result else "",
        f"story {result['story']}" if "story" in result else "",
    ]
    out.print(
        f"imported {imported.pack.title!r}: {len(result['characters'])} characters, "
        f"{len(result['places'])} places, {len(result['books'])} lorebooks ({entries} entries), "
        f"{len(result['greetings'])} greetings -> {' and '.join(m for m in made if m)}"
    )


async def card_export(store: StoryStore, character: str, as_of: int | None) -> tuple[bytes, str]:
    """Character ``character`` (id or name) of the story as a V3 card holding what it
    believes as of ``as_of``: PNG bytes when it has a picture, else JSON; and which.

    Raises :class:`NotFound` for a character the story does not have.
    """
    from fabula.worlds.imports.export import card_png

    card, _, image = await _card(store, character, as_of)  # its picture: the PNG's image
    if image is not None:
        return card_png(card, image), "png"
    return (json.dumps(card, ensure_ascii=False, indent=2) + "\n").encode("utf-8"), "json"


async def charx_export(store: StoryStore, character: str, as_of: int | None) -> bytes:
    """Character ``character`` (id or name) as a CHARX archive: ``card.json`` (the V3 card
    :func:`card_export` writes) and the character's assets (what its CHARX brought, at the
    paths it had them; a picture the card does not place, as its main icon at
    :data:`ICON_MEMBER`). Imported again, it gives back the same card and members.

    Raises :class:`NotFound` for a character the story does not have.
    """
    from fabula.worlds.imports.charx import embedded_path, write_charx

    card, prefix, image = await _card(store, character, as_of)
    assets = await store.assets()
    members = {
        name.removeprefix(prefix): data
        for name, data in assets.items()
        if name.startswith(prefix) and name != f"{prefix}image.png"
    }
    listed = card["data"].get("assets")
    placed = [a for a in listed if isinstance(a, dict)] if isinstance(listed, list) else []
    icon = any(
        a.get("type") == "icon" and embedded_path(str(a.get("uri", ""))) in members for a in placed
    )
    if image is not None and not icon:
        members[ICON_MEMBER] = image
        icon_asset = {
            "type": "icon",
            "uri": f"embeded://{ICON_MEMBER}",
            "name": "main",
            "ext": "png",
        }
        card["data"]["assets"] = [*placed, icon_asset]
    return write_charx(card, members)


async def _card(
    store: StoryStore, character: str, as_of: int | None
) -> tuple[dict[str, Any], str, bytes | None]:
    """The V3 card of ``character``, the folder of its assets (``assets/<id>/``, as its
    import named them), and its picture (None: it has none)."""
    from fabula.graph.service import reading
    from fabula.memory.records import slug
    from fabula.worlds.imports.export import character_card
    from fabula.worlds.pack import CharacterSpec

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
    image = (await store.assets()).get(spec.image) if spec.image else None
    folder = spec.image.rpartition("/")[0] if spec.image.startswith("assets/") else ""
    return card, f"{folder or 'assets/' + entity.id}/", image


async def lorebook_export(store: StoryStore, as_of: int | None) -> bytes:
    """The story's world W as of ``as_of`` as a ``lorebook_v3`` (JSON bytes)."""
    from fabula.graph.service import reading
    from fabula.worlds.imports.export import world_lorebook

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
    return (json.dumps(book, ensure_ascii=False, indent=2) + "\n").encode("utf-8")


async def _pack(store: StoryStore) -> WorldPack:
    from fabula.worlds.pack import WorldPack

    await store.require()
    document = await store.pack_document()
    if document is None:
        raise InvalidInput(
            f"story {store.story!r} keeps no world pack to export from", story=store.story
        )
    return WorldPack.model_validate_json(document)
