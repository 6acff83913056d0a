"""Planning a retrieval with a model (the offline planner: fabula.memory.recall.plan)."""
