"""Summarising the hierarchy's closed scenes and plotlines with a model (offline: the fold's
extractive summaries, fabula.memory.hierarchy)."""
