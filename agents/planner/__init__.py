"""The planner role: chooses the next beat from goals, open developments and hypotheses."""

from fabula.agents.planner.offline import OfflinePlanner as OfflinePlanner
