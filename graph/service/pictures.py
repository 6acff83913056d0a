"""Characters' pictures: an imported card's image, kept with the story, and which turn is
about which pictured character (the studio shows the picture beside it)."""

from __future__ import annotations

import re

from fabula.memory.records import slug
from fabula.memory.store.view import StoryReads
from fabula.worlds.pack import WorldPack

_NAMED_IMAGE = re.compile(r'"image"\s*:\s*"[^"]')


async def pictures(store: StoryReads) -> dict[str, str]:
    """The story's characters that have a picture: id to the asset its ``image`` names."""
    document = await store.pack_document()
    if document is None or _NAMED_IMAGE.search(document) is None:  # most packs: no parse
        return {}
    pack = WorldPack.model_validate_json(document)
    return {slug(c.name): c.image for c in pack.characters if c.image}


async def picture(store: StoryReads, character: str) -> tuple[str, bytes | None]:
    """``character``'s (id or name) name and its picture's bytes, if it has one. Raises
    :class:`~fabula.errors.NotFound` for an unknown story or character."""
    await store.require()
    entity = await store.resolve(character, "character")
    name = (await pictures(store)).get(entity.id)
    return entity.name, (await store.assets()).get(name) if name else None


async def turn_pictures(store: StoryReads, first: int, last: int) -> dict[int, str]:
    """For each turn from ``first`` to ``last``, the character with a picture that it is
    about: the first acting in its events, else the first its text names (a greeting read
    as narration)."""
    shown_of = await pictures(store)
    if not shown_of or first > last:
        return {}
    names = {e.id: e.name for e in (await store.entities()).values()}
    texts = await store.turn_texts(first, last)
    events = {e.id: e for e in await store.events([i for t in texts for i in t.events])}
    named = {c: re.compile(rf"\b{re.escape(names.get(c, c))}\b", re.IGNORECASE) for c in shown_of}
    shown: dict[int, str] = {}
    for t in texts:
        acting = [
            who
            for ident in t.events
            if (event := events.get(ident)) is not None
            for who in (event.actor, *event.participants)
        ]
        found = next((c for c in acting if c in shown_of), None)
        if found is None:
            found = next((c for c, name in named.items() if name.search(t.text)), None)
        if found is not None:
            shown[t.turn] = found
    return shown
