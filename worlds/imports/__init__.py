"""Importing worlds people already have: character cards (V1, V2, V3 as JSON, PNG or
CHARX), lorebooks (character-card V3, SillyTavern, NovelAI, Agnai, KoboldAI) and BookWorld
presets, made into one world pack (:func:`import_paths`), written as a pack folder
(:func:`write_pack`). Export back to cards and lorebooks: :mod:`fabula.worlds.imports.export`.

The names below are imported when first asked for (:mod:`fabula.lazy`): a story command
reads lore through :mod:`fabula.worlds.imports.keys`, and importing that submodule runs
this package first, which otherwise loaded every importer (cards, lorebooks, BookWorld,
PNG and CHARX reading): ~0.3 s of CPU for ``show``, ``recall`` or ``chat``, which import
nothing.
"""

from typing import TYPE_CHECKING

from fabula.lazy import exports as _exports

if TYPE_CHECKING:
    from fabula.worlds.imports.assemble import Imported as Imported
    from fabula.worlds.imports.assemble import import_paths as import_paths
    from fabula.worlds.imports.limits import ImportLimits as ImportLimits
    from fabula.worlds.imports.packdir import write_pack as write_pack

_HOMES = {
    "Imported": "fabula.worlds.imports.assemble",
    "import_paths": "fabula.worlds.imports.assemble",
    "ImportLimits": "fabula.worlds.imports.limits",
    "write_pack": "fabula.worlds.imports.packdir",
}
__getattr__ = _exports(__name__, _HOMES)[0]
