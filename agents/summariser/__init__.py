"""Summarising the hierarchy's closed scenes and plotlines with a model (offline: consolidation's
extractive summaries, fabula.memory.hierarchy)."""
