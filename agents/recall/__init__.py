"""Planning a recall with a model (the offline planner: fabula.memory.recall.plan)."""
