"""The writer role: composes the turn's passage from the plan, the proposals and memory."""

from fabula.agents.writer.offline import OfflineWriter, realise

__all__ = ["OfflineWriter", "realise"]
