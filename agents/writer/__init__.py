"""The writer role: composes the turn's passage from the plan, the proposals and memory."""

from fabula.agents.writer.offline import OfflineWriter as OfflineWriter
from fabula.agents.writer.offline import realise as realise
