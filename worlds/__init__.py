"""World packs (cast, places, objects, premise, goals, secrets) and their loader."""
