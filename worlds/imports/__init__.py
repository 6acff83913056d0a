"""Importing worlds people already have: character cards (V1, V2, V3 as JSON, PNG or
CHARX), lorebooks (character-card V3, SillyTavern, NovelAI, Agnai, KoboldAI) and BookWorld
presets, made into one world pack (:func:`import_paths`), written as a pack folder
(:func:`write_pack`). Export back to cards and lorebooks: :mod:`fabula.worlds.imports.export`.
"""

from fabula.worlds.imports.assemble import Imported as Imported
from fabula.worlds.imports.assemble import import_paths as import_paths
from fabula.worlds.imports.limits import ImportLimits as ImportLimits
from fabula.worlds.imports.packdir import write_pack as write_pack
