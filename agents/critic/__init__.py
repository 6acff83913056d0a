"""The critic role: checks a draft against the world, the speakers' minds and story time."""

from fabula.agents.critic.offline import OfflineCritic

__all__ = ["OfflineCritic"]
