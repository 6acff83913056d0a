"""Reading English into story actions, shared by the roles: the controlled grammar
(:mod:`.extract`), the prose reader of where things go (:mod:`.prose`), the reader of
states, perception and mental states built in phases (:mod:`.phases`), the WordNet verb
table (:mod:`.verbs`) and the cues of not perceiving (:mod:`.unseen`).

The memory-builder reads a turn with it; the character reads what was said to it with the
grammar, the writer reads its own draft. Reading is not a role: it is here, outside the
roles' packages, so that no role imports another (the independence contract in
``pyproject.toml``).
"""
