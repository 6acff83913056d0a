"""The critic role: checks a draft against the world, the speakers' minds and story time."""

from fabula.agents.critic.symbolic import SymbolicCritic

__all__ = ["SymbolicCritic"]
