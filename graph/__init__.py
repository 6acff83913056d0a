"""LangGraph wiring: turn state, graph, checkpointer, approval, command line."""
