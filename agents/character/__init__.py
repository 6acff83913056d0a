"""The character role: one agent per focal character, reading only its own mind.

The offline character loads when first asked for (:mod:`fabula.lazy`): what only needs the
role's records (a played character's view, kept in a turn's checkpoint) loads none of its
reading of a mind.
"""

from typing import TYPE_CHECKING

from fabula.lazy import exports as _exports

if TYPE_CHECKING:
    from fabula.agents.character.offline import OfflineCharacter as OfflineCharacter

_HOMES = {"OfflineCharacter": "fabula.agents.character.offline"}
__getattr__, __dir__ = _exports(__name__, _HOMES)
