"""The roles: planner, character, writer, critic, memory-builder; each with an offline engine and a model back end."""
