"""The critic role: checks a draft against the world, the speakers' minds and story time."""

from fabula.agents.critic.offline import OfflineCritic as OfflineCritic
