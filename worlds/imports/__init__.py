"""Importing worlds people already have: character cards (V1, V2, V3 as JSON, PNG or
CHARX), lorebooks (character-card V3, SillyTavern, NovelAI, Agnai, KoboldAI) and BookWorld
presets, made into one world pack (:func:`import_paths`), written as a pack folder
(:func:`write_pack`). Export back to cards and lorebooks: :mod:`fabula.worlds.imports.export`.
"""

from fabula.worlds.imports.assemble import DEFAULT_PLACE, Imported, import_paths
from fabula.worlds.imports.limits import ImportLimits
from fabula.worlds.imports.packdir import write_pack

__all__ = ["DEFAULT_PLACE", "ImportLimits", "Imported", "import_paths", "write_pack"]
