"""The roles: planner, character, writer, critic, memory-builder.

Each role has an offline engine and a model back end with the same typed contracts.
"""
