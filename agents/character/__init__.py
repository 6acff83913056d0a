"""The character role: one agent per focal character, reading only its own mind."""

from fabula.agents.character.offline import OfflineCharacter as OfflineCharacter
